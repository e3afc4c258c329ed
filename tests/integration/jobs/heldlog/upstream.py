#!/usr/bin/python3
"""The upstream of it_heldlog.c: GET .../s/<status> answers with that
status (200..599), anything else 200 "ok"; every answer closes the
connection. Writes its port to --port-file once it listens."""
import argparse
import os
import socketserver


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            more = self.request.recv(4096)
            if not more:
                return
            data += more
        target = data.split(b" ", 2)[1].split(b"?")[0]
        status = 200
        if b"/s/" in target:
            status = int(target.rsplit(b"/", 1)[-1])
        body = b"ok"
        self.request.sendall(b"HTTP/1.1 %d Status\r\nContent-Type: text/plain"
                             b"\r\nConnection: close\r\nContent-Length: %d"
                             b"\r\n\r\n" % (status, len(body)) + body)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 256


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--key", default="")
    args = ap.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


main()
