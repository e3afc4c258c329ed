#!/usr/bin/python3
# A WSGI upstream for it_inject_session.c (python's wsgiref, as a CGI or
# WSGI server maps fields: X-Api-Key and X_Api_Key are both HTTP_X_API_KEY,
# joined by a comma). It answers which value it took for HTTP_X_API_KEY,
# the key given by --key written <KEY> so that nothing is redacted.
import argparse
import os
from wsgiref.simple_server import WSGIRequestHandler, make_server

KEY = ""


def app(env, start):
    v = env.get("HTTP_X_API_KEY", "(none)")
    body = ("took: %s\n" % v.replace(KEY, "<KEY>")).encode()
    start("200 OK", [("Content-Type", "text/plain"),
                     ("Content-Length", str(len(body)))])
    return [body]


class Quiet(WSGIRequestHandler):
    def log_message(self, *a):
        pass


def main():
    global KEY
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--key", required=True)
    a = ap.parse_args()
    KEY = a.key
    s = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % s.server_address[1])
    os.rename(tmp, a.port_file)
    s.serve_forever()


if __name__ == "__main__":
    main()
