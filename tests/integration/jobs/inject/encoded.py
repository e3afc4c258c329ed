#!/usr/bin/python3
"""An upstream that answers in encodings the proxy's reflection scanner
cannot read (it_inject_encoded.c): each answer's body is the request's own
head (so the injected credential is in it), compressed or otherwise
transformed, as an upstream the job partly controls (one that echoes what
it was sent) could do. GET /case/<name> picks the answer; every answer
closes the connection. Writes its port to --port-file once it listens."""
import argparse
import gzip
import socket
import socketserver
import time
import zlib


def chunked(body, size=7):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


def answer(case, head, method):
    gz = gzip.compress(head)
    rev = head[::-1]  # a coding the scanner does not know, as br or zstd

    def fixed(fields, body, status=b"200 OK"):
        return [b"HTTP/1.1 " + status + b"\r\n" + fields +
                b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
                + (b"" if method == b"HEAD" else body)]

    if case == "identity":
        return fixed(b"Content-Encoding: identity\r\n", head)
    if case == "plain":
        return fixed(b"", head)
    if case == "gzip":
        return fixed(b"Content-Encoding: gzip\r\n", gz)
    if case == "GZIP":
        return fixed(b"Content-Encoding: GZIP\r\n", gz)
    if case == "deflate":
        return fixed(b"Content-Encoding: deflate\r\n", zlib.compress(head))
    if case == "br":
        return fixed(b"Content-Encoding: br\r\n", rev)
    if case == "zstd":
        return fixed(b"Content-Encoding: zstd\r\n", rev)
    if case == "unknown":
        return fixed(b"Content-Encoding: x-cordon-reverse\r\n", rev)
    if case == "stacked":
        return fixed(b"Content-Encoding: identity, gzip\r\n", gz)
    if case == "two-fields":
        return fixed(b"Content-Encoding: identity\r\n"
                     b"Content-Encoding: gzip\r\n", gz)
    if case == "empty":
        return fixed(b"Content-Encoding: \r\n", rev)
    if case == "chunked":
        return [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                chunked(gz)]
    if case == "close":
        return [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
                b"Connection: close\r\n\r\n" + gz]
    if case == "interim":
        return [b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"] + \
            fixed(b"Content-Encoding: gzip\r\n", gz)
    if case == "split":
        whole = fixed(b"Content-Encoding: gzip\r\n", gz)[0]
        at = whole.index(b"Content-Encoding") + 10
        return [whole[:at], whole[at:at + 5], whole[at + 5:]]
    if case == "te":
        return [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n"
                b"Connection: close\r\n\r\n" + chunked(gz)]
    if case == "204":
        return [b"HTTP/1.1 204 No Content\r\nContent-Encoding: gzip\r\n"
                b"Connection: close\r\n\r\n"]
    if case == "304":
        return [b"HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip\r\n"
                b"Connection: close\r\n\r\n"]
    return fixed(b"", b"no such case\n", b"404 Not Found")


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            more = self.request.recv(4096)
            if not more:
                return
            data += more
        head = data[:data.index(b"\r\n\r\n") + 4]
        method, target = head.split(b" ", 2)[:2]
        case = target.split(b"?")[0].rsplit(b"/", 1)[-1].decode()
        parts = answer(case, head, method)
        for i, part in enumerate(parts):
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
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


main()
