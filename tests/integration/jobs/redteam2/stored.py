#!/usr/bin/python3
# A stored reflection in the places of an answer a scanner could forget
# (it_redteam2_reflect.c): it keeps the last X-Api-Key any request carried
# ("S" below, "none" before) and hands it back on later requests, whatever
# their host. By the path's end:
#   /early    103 Early Hints with X-Echo: S, then 200 "ok"
#   /fields   200 with X-Echo: S (HEAD: the fields alone)
#   /http10   an HTTP/1.0 answer with no Content-Length: "S" until close
#   /trailer  200 chunked, "ok" and a trailer X-Echo: S
#   /reason   401 with S as the status line's reason phrase
#   /upgrade  101 Switching Protocols with X-Echo: S, then S raw
#   anything else 200 "stored" (a request with the key: the key stored)
import argparse
import re
import socketserver

STORED = [b"none"]


def plain(body, status=b"200 OK", extra=b""):
    return (b"HTTP/1.1 " + status + b"\r\n" + extra +
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" %
            len(body)) + body


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
            STORED[0] = m.group(1)
        s = STORED[0]
        line = head.split(b"\r\n", 1)[0].split(b" ")
        method, target = line[0], line[1]
        if target.endswith(b"/early"):
            out = (b"HTTP/1.1 103 Early Hints\r\nX-Echo: " + s +
                   b"\r\n\r\n" + plain(b"ok\n"))
        elif target.endswith(b"/fields"):
            out = (b"HTTP/1.1 200 OK\r\nX-Echo: " + s +
                   b"\r\nContent-Length: 3\r\nConnection: close\r\n\r\n")
            if method != b"HEAD":
                out += b"ok\n"
        elif target.endswith(b"/http10"):
            out = b"HTTP/1.0 200 OK\r\n\r\nstored: " + s + b"\n"
        elif target.endswith(b"/trailer"):
            out = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                   b"Connection: close\r\n\r\n3\r\nok\n\r\n0\r\nX-Echo: " +
                   s + b"\r\n\r\n")
        elif target.endswith(b"/reason"):
            out = plain(b"no\n", b"401 bad key " + s)
        elif target.endswith(b"/upgrade"):
            out = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                   b"Connection: Upgrade\r\nX-Echo: " + s + b"\r\n\r\n" + s)
        else:
            out = plain(b"stored\n")
        try:
            self.request.sendall(out)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
