#!/usr/bin/python3
"""An upstream that reflects the credential it was sent, escaped as real
services escape what they quote (it_inject_reflect.c): an error message
quoting the X-Api-Key header as PHP's json_encode writes it ("\\/"), as
\\u escapes, as HTML entities (numeric and named), as UTF-16 (LE and BE),
in upper case, as quoted-printable with a soft line break inside it,
with every escaping mixed, as base64 with JSON's "\\/", chunked, and cut
across writes. GET /case/<name> picks the escaping. Each answer says where
the escaped value is in its body (X-Form-At, X-Form-Length: bytes of the
body, after any chunk framing is taken off), so the test can check that
every one of those bytes was overwritten. "near" reflects the value less
its last byte, a slice redacted too; "costly" sends 256 KiB of "6161..."
(for a value of the tokens "61" and "a": the scan's budget ends it). Every answer
closes the
connection. Writes its port to --port-file once it listens."""
import argparse
import base64
import os
import socket
import socketserver
import time


def php_json(s):
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("/", "\\/")


def json_u(s):
    return "".join("\\u%04x" % ord(c) for c in s)


def html_num(s):
    return "".join(c if c.isalnum() else "&#x%X;" % ord(c) for c in s)


NAMED = {"/": "&sol;", "+": "&plus;", "=": "&equals;", "?": "&quest;",
         "_": "&lowbar;", "~": "&#126;", " ": "&#32;"}


def html_named(s):
    return "".join(NAMED.get(c, c) for c in s)


def qp(s):
    out = ""
    for i, c in enumerate(s):
        if i == len(s) // 2:
            out += "=\r\n"
        out += "=%02X" % ord(c) if c in "=?~" else c
    return out


def mixed(s):
    encs = [lambda c: c.upper(), lambda c: "\\u%04X" % ord(c),
            lambda c: "&#%d;" % ord(c), lambda c: "%%%02x" % ord(c),
            lambda c: "=%02X" % ord(c), lambda c: "\\" + c if not
            c.isalnum() else c, lambda c: "&#x%x;" % ord(c)]
    return "".join(encs[i % len(encs)](c) for i, c in enumerate(s))


TEXT = {
    # name: (before, escape, after, content type)
    "json_slash": ('{"error": "bad key", "got": "', php_json, '"}',
                   "application/json"),
    "json_u": ('{"error": "bad key", "got": "', json_u, '"}',
               "application/json"),
    "html": ("<html><p>bad key: <code>", html_num, "</code></p></html>",
             "text/html"),
    "html_named": ("<p>bad key: <code>", html_named, "</code></p>",
                   "text/html"),
    "upper": ("BAD KEY: ", str.upper, "\n", "text/plain"),
    "qp": ("bad key: ", qp, "\r\n", "text/plain; charset=utf-8"),
    "mixed": ("bad key: ", mixed, "\n", "text/plain"),
    "near": ('{"error": "bad key", "got": "', php_json, '"}',
             "application/json"),
}


def body_of(case, header):
    """The body, and where the escaped value sits in it."""
    prefix, value = header[:4], header[4:]  # "Key ", the credential
    if case == "near":
        value = value[:-1]
    if case in ("utf16le", "utf16be"):
        codec = "utf-16-le" if case == "utf16le" else "utf-16-be"
        before = ("bad key: " + prefix).encode(codec)
        form = value.encode(codec)
        return before + form + "\n".encode(codec), len(before), len(form), \
            "text/plain; charset=" + codec
    if case == "base64_json":
        b64 = php_json(base64.b64encode(header.encode()).decode())
        before = '{"blob": "'
        return (before + b64 + '"}').encode(), len(before), len(b64), \
            "application/json"
    before, esc, after, ctype = TEXT.get(case, TEXT["json_slash"])
    head = (before + esc(prefix)).encode()
    form = esc(value).encode()
    return head + form + after.encode(), len(head), len(form), ctype


def chunked(body, size=3):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


def answer(case, header):
    if case == "costly":
        # Text read many ways at once ("61" or hex "a" at each pair)
        # for a value of those tokens: the scan's budget of steps ends
        # the answer.
        body = b"61" * (128 * 1024)
        return [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                % len(body) + body]
    if case == "costly_late":
        # The same, its head first and alone: the client has it all when
        # the scan gives up, so the connection ends at once.
        body = b"61" * (128 * 1024)
        return [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                % len(body), body]
    base = case[:-len("_chunked")] if case.endswith("_chunked") else case
    base = base[:-len("_split")] if base.endswith("_split") else base
    body, at, n, ctype = body_of(base, header)
    fields = (b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype.encode() +
              b"\r\nX-Form-At: %d\r\nX-Form-Length: %d\r\n" % (at, n) +
              b"Connection: close\r\n")
    if case.endswith("_chunked"):
        return [fields + b"Transfer-Encoding: chunked\r\n\r\n" +
                chunked(body)]
    whole = fields + b"Content-Length: %d\r\n\r\n" % len(body) + body
    if case.endswith("_split"):
        # Cut inside the escaped value, three times: separate reads.
        start = len(whole) - len(body) + at
        cuts = [start + n // 4, start + n // 2, start + 3 * n // 4]
        return [whole[:cuts[0]], whole[cuts[0]:cuts[1]],
                whole[cuts[1]:cuts[2]], whole[cuts[2]:]]
    return [whole]


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            more = self.request.recv(4096)
            if not more:
                return
            data += more
        head = data[:data.index(b"\r\n\r\n")].decode("latin-1")
        target = head.split(" ", 2)[1]
        case = target.split("?")[0].rsplit("/", 1)[-1]
        header = ""
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "x-api-key":
                header = value.strip()
        if not header.startswith("Key "):
            self.request.sendall(b"HTTP/1.1 400 Bad Request\r\n"
                                 b"Content-Length: 0\r\n"
                                 b"Connection: close\r\n\r\n")
            return
        for i, part in enumerate(answer(case, header)):
            if i > 0:
                time.sleep(0.05)  # separate reads at the proxy
            self.request.sendall(part)
        self.request.shutdown(socket.SHUT_WR)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


main()
