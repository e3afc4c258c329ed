#!/usr/bin/python3
"""The upstream of it_scanbudget.c: answers built to be costly to scan
(redteam4 hole 1). GET .../big/<kib> answers <kib> KiB of "sk_live" as
UTF-16LE, repeated (each byte read many ways by the reflection scanner,
never past its steps' budget), then the value given with --key raw and
as UTF-16LE, so that the job's copy must come back redacted; any other
path answers "ok". Every answer closes the connection. Writes its port
to --port-file once it listens."""
import argparse
import os
import socketserver

KEY = b""


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            more = self.request.recv(4096)
            if not more:
                return
            data += more
        target = data.split(b" ", 2)[1].split(b"?")[0]
        if b"/big/" in target:
            n = int(target.rsplit(b"/", 1)[-1]) * 1024
            unit = "sk_live".encode("utf-16-le")
            body = (unit * (n // len(unit) + 1))[:n]
            body += b"[" + KEY + b"][" + KEY.decode().encode("utf-16-le") + b"]"
        else:
            body = b"ok"
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain"
                             b"\r\nConnection: close\r\nContent-Length: " +
                             str(len(body)).encode() + b"\r\n\r\n")
        self.request.sendall(body)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 256


def main():
    global KEY
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--key", default="")
    args = ap.parse_args()
    KEY = args.key.encode()
    srv = Server(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


main()
