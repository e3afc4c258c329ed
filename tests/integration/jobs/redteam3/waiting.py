#!/usr/bin/python3
# A service that stores what it is sent and hands it to a caller that
# asked BEFORE it was sent (it_redteam3_*.c): it keeps the last X-Api-Key
# any request carried, and by the path's end:
#   /wait     holds the answer until a key is stored (15 s at most), then
#             200 "stored: KEY" with a Content-Length
#   /stream   200 chunked at once ("waiting\n"), then, once a key is
#             stored, a chunk "stored: KEY\n" and the end
#   /upgrade  101 Switching Protocols at once, then, once a key is stored,
#             "stored: KEY\n" raw and a close
#   /waiters  200 "waiters: N", the callers that waited for a key so far
#   /echo/X   200 with the request's target in the body
#   anything else 200 "stored\n" (a request with the key: the key stored)
# --addr binds another loopback address than 127.0.0.1.
import argparse
import os
import re
import socketserver
import threading

STORED = [None]
WAITERS = [0]
COND = threading.Condition()


def plain(body, status=b"200 OK"):
    return (b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % len(body)) + body


def wait_key():
    with COND:
        WAITERS[0] += 1
        COND.wait_for(lambda: STORED[0] is not None, timeout=15)
        return STORED[0] if STORED[0] is not None else b"none"


class H(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data:
            more = self.request.recv(4096)
            if not more:
                return
            data += more
        head = data[:data.index(b"\r\n\r\n") + 4]
        m = re.search(rb"\r\nX-Api-Key: ([^\r\n]*)\r\n", head)
        if m:
            with COND:
                STORED[0] = m.group(1)
                COND.notify_all()
        target = head.split(b"\r\n", 1)[0].split(b" ")[1]
        try:
            if target.endswith(b"/wait"):
                self.request.sendall(plain(b"stored: " + wait_key() + b"\n"))
            elif target.endswith(b"/stream"):
                self.request.sendall(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                    b"Connection: close\r\n\r\n8\r\nwaiting\n\r\n")
                body = b"stored: " + wait_key() + b"\n"
                self.request.sendall(b"%x\r\n" % len(body) + body +
                                     b"\r\n0\r\n\r\n")
            elif target.endswith(b"/upgrade"):
                self.request.sendall(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    b"Connection: Upgrade\r\n\r\n")
                self.request.sendall(b"stored: " + wait_key() + b"\n")
            elif target.endswith(b"/waiters"):
                with COND:
                    n = WAITERS[0]
                self.request.sendall(plain(b"waiters: %d\n" % n))
            elif b"/echo/" in target:
                self.request.sendall(plain(target + b"\n"))
            else:
                self.request.sendall(plain(b"stored\n"))
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--addr", default="127.0.0.1")
    args = ap.parse_args()
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    srv = socketserver.ThreadingTCPServer((args.addr, 0), H)
    srv.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
