#!/usr/bin/python3
# An upstream that reflects what it was sent, the ways an injected request's
# answer was found to carry the credential past the scanner (issue 18,
# it_inject_holes.c). Keep-alive. By the request's path:
#   /case/range      a Range header: 206 with those bytes of the request's
#                    own head; none: 200 with the whole head
#   /case/partial    206 with 8 bytes of the X-Api-Key value, Range or not
#   /case/multipart  200 multipart/byteranges with those 8 bytes as a part
#   /case/head       200 with the whole head (the scanner's job)
#   /case/204        204 and, in the same write, a whole second answer
#                    "smuggled" and the head
#   anything else    200 "public"
import argparse
import os
import re
import socketserver


def key_piece(head):
    i = head.find(b"X-Api-Key: Key ")
    return head[i + 15:i + 23] if i >= 0 else b"none"


class H(socketserver.BaseRequestHandler):
    def answer(self, head, data):
        target = head.split(b" ", 2)[1]
        if b"/case/range" in target:
            m = re.search(rb"\r\nRange: bytes=(\d+)-(\d+)\r\n", head)
            if m is None:
                return (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" %
                        len(head)) + head
            a, b = int(m.group(1)), int(m.group(2))
            part = head[a:b + 1]
            return (b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
                    b"%d-%d/%d\r\nContent-Length: %d\r\n\r\n" %
                    (a, b, len(head), len(part))) + part
        if b"/case/partial" in target:
            part = key_piece(head)
            return (b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
                    b"0-7/999\r\nContent-Length: %d\r\n\r\n" % len(part)) + part
        if b"/case/multipart" in target:
            body = (b"--b\r\nContent-Range: bytes 0-7/999\r\n\r\n" +
                    key_piece(head) + b"\r\n--b--\r\n")
            return (b"HTTP/1.1 200 OK\r\nContent-Type: multipart/byteranges;"
                    b" boundary=b\r\nContent-Length: %d\r\n\r\n" %
                    len(body)) + body
        if b"/case/head" in target:
            return (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" %
                    len(head)) + head
        if b"/case/204" in target:
            body = b"smuggled " + head
            return (b"HTTP/1.1 204 No Content\r\n\r\n"
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" %
                    len(body)) + body
        return b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\npublic\n"

    def handle(self):
        data = b""
        while True:
            while b"\r\n\r\n" not in data:
                more = self.request.recv(4096)
                if not more:
                    return
                data += more
            i = data.index(b"\r\n\r\n") + 4
            head, data = data[:i], data[i:]
            self.request.sendall(self.answer(head, data))


class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


ap = argparse.ArgumentParser()
ap.add_argument("--port-file", required=True)
a = ap.parse_args()
srv = S(("127.0.0.1", 0), H)
with open(a.port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(a.port_file + ".tmp", a.port_file)
srv.serve_forever()
