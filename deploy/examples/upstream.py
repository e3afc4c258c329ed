#!/usr/bin/python3
"""The quickstart's example upstreams, on loopback, outside any sandbox.

Two listeners of one process (Python's standard library only):

* http://127.0.0.1:7780, the invoices API: serves the JSON files under
  --root (deploy/examples/invoices), GET and HEAD only. The proxy has
  already checked the job's capability token (its audience) before a
  request gets here.
* https://127.0.0.1:7781, the tickets API, as a real third-party API
  behaves: every request must carry its API key (X-Api-Key: Key <key>,
  the key read from --api-key-file), else 401. It serves the tickets
  (GET /tickets/, GET /tickets/<id>.json) and, as many real APIs do
  (httpbin's /headers, a debugging route), GET /tickets/headers echoes
  the request's headers as JSON: {"headers": [[name, value], ...]}. The
  job never holds the key: cordon-proxy swaps the job's capability token
  for it (docs/credentials.md), and redacts it in that echo.
* GET /status on the tickets listener, no key needed: a public status
  page that, like a careless debug page, shows the method, path and
  headers of the last request the API served (so the last X-Api-Key it
  was sent, in clear). HOSTILE ON PURPOSE, for the drill (docs/drill.md,
  inject_stored): the example manifest reaches it under another name,
  status.tickets.internal, on a rule that injects nothing, and the proxy
  must redact there the key another job's request left behind.

Usage: upstream.py --bind 127.0.0.1 --plain 7780 --root DIR --tls 7781
       --cert PEM --key PEM --api-key-file FILE [--idle-timeout 30]
       [--name-cert NAME PEM KEY]... [--port-file FILE]

--name-cert serves another certificate to a client whose SNI is NAME
(status.tickets.internal's). With --port-file, ports may be 0: the ports
bound, "PLAIN TLS", are written there once both listen (tests).

Both keep connections alive (HTTP/1.1, as real APIs do; the proxy pools
its upstreams) and close one that stays silent for --idle-timeout
seconds. Each log line names the client's address and port: a
connection used again repeats its port.
"""
import argparse
import hmac
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TICKETS = {
    "T-1042": {"id": "T-1042", "queue": "support", "customer": "4182",
               "subject": "invoice INV-2026-0117 charged twice",
               "status": "open"},
    "T-1043": {"id": "T-1043", "queue": "support", "customer": "5120",
               "subject": "cannot log in after the password reset",
               "status": "open"},
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the proxy pools upstreams
    timeout = 30  # a silent client's thread ends (--idle-timeout)
    server_version = "cordon-example-upstream"
    sys_version = ""

    def log_message(self, fmt, *args):
        # The client's port names its connection: a reused one repeats.
        sys.stderr.write("%s %s %s:%d %s\n" % (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
            self.server.name, self.client_address[0],
            self.client_address[1], fmt % args))

    def answer(self, status, obj, head_only=False):
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def drain(self):
        n = self.headers.get("Content-Length")
        if n is not None and n.isdigit() and int(n) <= 1 << 20:
            self.rfile.read(int(n))
        elif n is not None or self.headers.get("Transfer-Encoding"):
            self.close_connection = True

    def do_GET(self):
        self.drain()
        if self.server.name == "tickets":
            self.tickets()
        else:
            self.invoices(self.command == "HEAD")

    do_HEAD = do_GET

    def do_POST(self):
        self.drain()
        self.answer(405, {"error": "read only"})

    do_PUT = do_DELETE = do_PATCH = do_POST

    def invoices(self, head_only):
        path = self.path.split("?", 1)[0]
        name = path[len("/invoices/"):] if path.startswith("/invoices/") else ""
        if name == "" or "/" in name or name.startswith("."):
            return self.answer(404, {"error": "no such invoice"}, head_only)
        try:
            with open(os.path.join(self.server.root, "invoices", name),
                      "rb") as f:
                obj = json.load(f)
        except (OSError, ValueError):
            return self.answer(404, {"error": "no such invoice"}, head_only)
        self.answer(200, obj, head_only)

    def tickets(self):
        path = self.path.split("?", 1)[0]
        if path == "/status":
            # Hostile on purpose (the drill's inject_stored): no key
            # asked, and the last request's headers shown as they came.
            with self.server.lock:
                last = self.server.last
            return self.answer(200, {"service": "tickets", "status": "ok",
                                     "last_request": last})
        with self.server.lock:
            self.server.last = {"method": self.command, "path": path,
                                "headers": [[k, v] for k, v in
                                            self.headers.items()]}
        got = self.headers.get("X-Api-Key", "")
        want = "Key " + self.server.api_key
        if not hmac.compare_digest(got.encode(), want.encode()):
            return self.answer(401, {"error": "missing or wrong API key"})
        if path == "/tickets/headers":
            return self.answer(200, {"headers": [[k, v] for k, v in
                                                 self.headers.items()]})
        if path == "/tickets/":
            return self.answer(200, {"tickets": sorted(TICKETS)})
        if path.startswith("/tickets/") and path.endswith(".json"):
            t = TICKETS.get(path[len("/tickets/"):-len(".json")])
            if t is not None:
                return self.answer(200, t)
        self.answer(404, {"error": "no such ticket"})


class TLSServer(ThreadingHTTPServer):
    """The handshake in each connection's own thread, before the handler
    reads, with the handler's timeout: never in accept(), where one
    silent client would stall every other."""

    def finish_request(self, request, client_address):
        try:
            request.settimeout(Handler.timeout)
            request.do_handshake()
        except (OSError, ssl.SSLError) as e:
            sys.stderr.write("%s tickets handshake failed: %s\n" % (
                time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), e))
            return
        super().finish_request(request, client_address)


def serve(name, server):
    server.name = name
    server.serve_forever()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--plain", type=int, default=7780)
    ap.add_argument("--root", required=True)
    ap.add_argument("--tls", type=int, default=7781)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--api-key-file", required=True)
    ap.add_argument("--idle-timeout", type=float, default=Handler.timeout,
                    help="seconds a kept-alive connection may stay silent")
    ap.add_argument("--name-cert", nargs=3, action="append", default=[],
                    metavar=("NAME", "PEM", "KEY"),
                    help="the certificate for a client whose SNI is NAME")
    ap.add_argument("--port-file",
                    help="where to write the ports bound, PLAIN TLS")
    a = ap.parse_args()
    Handler.timeout = a.idle_timeout

    with open(a.api_key_file) as f:
        api_key = f.read().strip()
    if not api_key:
        sys.exit("upstream.py: %s is empty" % a.api_key_file)
    plain = ThreadingHTTPServer((a.bind, a.plain), Handler)
    plain.root = os.path.abspath(a.root)
    tls = TLSServer((a.bind, a.tls), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(a.cert, a.key)
    by_name = {}
    for name, cert, key in a.name_cert:
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        c.minimum_version = ssl.TLSVersion.TLSv1_2
        c.load_cert_chain(cert, key)
        by_name[name.lower()] = c

    def by_sni(sock, server_name, _ctx):
        c = by_name.get((server_name or "").lower())
        if c is not None:
            sock.context = c

    if by_name:
        ctx.sni_callback = by_sni
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True,
                                 do_handshake_on_connect=False)
    tls.api_key = api_key
    tls.lock = threading.Lock()
    tls.last = None  # the last request the API served, for /status
    if a.port_file:
        with open(a.port_file + ".new", "w") as f:
            f.write("%d %d\n" % (plain.server_address[1],
                                  tls.server_address[1]))
        os.rename(a.port_file + ".new", a.port_file)
    threading.Thread(target=serve, args=("tickets", tls), daemon=True).start()
    serve("invoices", plain)


if __name__ == "__main__":
    main()
