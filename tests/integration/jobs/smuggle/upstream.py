#!/usr/bin/python3
# An upstream for it_smuggle.c built on python's http.server, as many small
# services are: keep-alive (HTTP/1.1), Connection: close honoured, and a
# body read only where the handler asks for one (POST). By method and path:
#   GET  .../log      200 with every request line it was sent, in order
#   GET  .../trailer  200 chunked "ok" with the trailer X-Checksum: c0ffee
#   POST anything     200 with the body it read
#   DELETE, OPTIONS   200 "done", the body never read (a server that
#                     expects none there takes it as its next request)
#   GET  anything     200 "public"
import argparse
import http.server
import os
import threading

LINES = []
LOCK = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def note(self):
        with LOCK:
            LINES.append(self.requestline)

    def plain(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.note()
        if self.path.endswith("/log"):
            with LOCK:
                body = ("\n".join(LINES) + "\n").encode()
            return self.plain(b"log:\n" + body)
        if self.path.endswith("/trailer"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "X-Checksum")
            self.end_headers()
            self.wfile.write(b"3\r\nok\n\r\n0\r\nX-Checksum: c0ffee\r\n\r\n")
            return
        self.plain(b"public\n")

    def do_POST(self):
        self.note()
        n = int(self.headers.get("Content-Length", "0"))
        self.plain(self.rfile.read(n))

    def do_DELETE(self):
        self.note()
        self.plain(b"done\n")

    do_OPTIONS = do_DELETE


class S(http.server.ThreadingHTTPServer):
    def handle_error(self, *a):
        pass  # the proxy closed: it wanted no more


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    s = S(("127.0.0.1", 0), H)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % s.server_address[1])
    os.rename(tmp, a.port_file)
    s.serve_forever()


if __name__ == "__main__":
    main()
