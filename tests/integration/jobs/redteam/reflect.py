#!/usr/bin/python3
# An upstream that hands back what it was sent in the places a reflection
# scanner could forget (it_redteam_inject.c): informational answers, trailers,
# redirects, cookies, challenges, a HEAD's fields, and later answers. Keep-alive.
# "V" below is the value of the X-Api-Key field of the request (or "none").
# By the request's path (any prefix: /case/, /open/, /other/):
#   .../early     103 Early Hints with X-Echo: V, then 200 "ok"
#   .../continue  100 Continue with X-Echo: V, then 200 "ok"
#   .../early-login  103 Early Hints with Set-Cookie: JSESSIONID=..., then
#                 200 "ok" (a session handed out before the answer)
#   .../trailer   200 chunked, "ok" and a trailer X-Echo: V
#   .../location  302 with Location: https://x.test/cb?k=V
#   .../cookie    200 with Set-Cookie: k=V
#   .../wwwauth   401 with WWW-Authenticate quoting V
#   .../fields    200 with X-Echo: V (HEAD: the fields alone)
#   .../reason    401 with V as the status line's reason phrase
#   .../trunc     400 quoting the first 200 bytes of the request's head, as
#                 an error page that cuts what it quotes
#   .../login     200 with a session of its own for whoever sent the key
#                 (Set-Cookie: JSESSIONID=..., as Jenkins answers a request
#                 with an API token): a credential derived from the key
#   .../whoami    200 {"user": ..., "password": ...} of the request's
#                 Authorization: Basic, decoded (as httpbin's basic-auth)
#   .../echo      200 with the request's own head (and body: a POST, PUT or
#                 PATCH's Content-Length is read; other methods' bodies
#                 are not, as a server that expects none there)
#   .../last      200 with the previous request's head on this connection
#   .../log       200 with every head this upstream was ever sent
#   anything else 200 "public"
import argparse
import base64
import os
import re
import socketserver
import threading

LOG = []
LOCK = threading.Lock()


def value(head):
    m = re.search(rb"\r\nX-Api-Key: ([^\r\n]*)\r\n", head)
    return m.group(1) if m else b"none"


def plain(body, status=b"200 OK", extra=b""):
    return (b"HTTP/1.1 " + status + b"\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


class H(socketserver.BaseRequestHandler):
    def answer(self, head, last, body=b""):
        line = head.split(b"\r\n", 1)[0].split(b" ")
        if len(line) != 3:
            return plain(b"bad request line\n", b"400 Bad Request")
        method, target = line[0], line[1]
        v = value(head)
        if target.endswith(b"/early"):
            return (b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; "
                    b"rel=preload\r\nX-Echo: " + v + b"\r\n\r\n" +
                    plain(b"ok\n"))
        if target.endswith(b"/early-login"):
            return (b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; "
                    b"rel=preload\r\nSet-Cookie: JSESSIONID=node0early42; "
                    b"Path=/\r\n\r\n" + plain(b"ok\n"))
        if target.endswith(b"/continue"):
            return (b"HTTP/1.1 100 Continue\r\nX-Echo: " + v + b"\r\n\r\n" +
                    plain(b"ok\n"))
        if target.endswith(b"/trailer"):
            return (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                    b"Trailer: X-Echo\r\n\r\n3\r\nok\n\r\n0\r\nX-Echo: " + v +
                    b"\r\n\r\n")
        if target.endswith(b"/location"):
            return plain(b"moved\n", b"302 Found",
                         b"Location: https://x.test/cb?k=" + v + b"\r\n")
        if target.endswith(b"/cookie"):
            return plain(b"ok\n", extra=b"Set-Cookie: k=" + v +
                         b"; Path=/\r\n")
        if target.endswith(b"/wwwauth"):
            return plain(b"no\n", b"401 Unauthorized",
                         b"WWW-Authenticate: Bearer error=\"invalid_token\", "
                         b"error_description=\"bad key " + v + b"\"\r\n")
        if target.endswith(b"/fields"):
            if method == b"HEAD":
                return (b"HTTP/1.1 200 OK\r\nX-Echo: " + v +
                        b"\r\nContent-Length: 3\r\n\r\n")
            return plain(b"ok\n", extra=b"X-Echo: " + v + b"\r\n")
        if target.endswith(b"/reason"):
            return plain(b"no\n", b"401 bad key " + v)
        if b"/trunc" in target:
            return plain(b"bad request: " + head[:200] + b"\n",
                         b"400 Bad Request")
        if target.endswith(b"/login"):
            return plain(b'{"session": "sess_derived_from_the_key_42"}\n',
                         extra=b"Set-Cookie: JSESSIONID=node0derived42; "
                         b"Path=/; HttpOnly\r\n")
        if target.endswith(b"/whoami"):
            m = re.search(rb"\r\nAuthorization: Basic ([A-Za-z0-9+/=]+)\r\n",
                          head)
            user, _, pw = (base64.b64decode(m.group(1)) if m else
                           b"").partition(b":")
            return plain(b'{"user": "%s", "password": "%s"}\n' % (user, pw))
        if target.endswith(b"/echo"):
            return plain(b"echo: " + head + body)
        if target.endswith(b"/last"):
            return plain(b"last: " + last)
        if target.endswith(b"/log"):
            with LOCK:
                body = b"".join(LOG)
            return plain(b"log: " + body)
        return plain(b"public\n")

    def handle(self):
        data, last = b"", b"(none)"
        while True:
            while b"\r\n\r\n" not in data:
                try:
                    more = self.request.recv(4096)
                except OSError:
                    return
                if not more:
                    return
                data += more
            i = data.index(b"\r\n\r\n") + 4
            head, data = data[:i], data[i:]
            body = b""
            m = re.search(rb"\r\ncontent-length: *(\d+)\r\n", head, re.I)
            if m and head.split(b" ", 1)[0] in (b"POST", b"PUT", b"PATCH"):
                n = int(m.group(1))
                while len(data) < n:
                    try:
                        more = self.request.recv(4096)
                    except OSError:
                        return
                    if not more:
                        return
                    data += more
                body, data = data[:n], data[n:]
            with LOCK:
                LOG.append(head)
                del LOG[:-16]
            try:
                self.request.sendall(self.answer(head, last, body))
            except OSError:
                return  # the proxy closed: it wanted no more
            last = head


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
