#!/usr/bin/python3
"""A credential issuer for it_issuers, on 127.0.0.1 over TLS (Python stdlib).

It implements the documented endpoints the broker calls:
  POST   /oauth/token     RFC 6749 4.4 client credentials (client_secret_basic
                          or client_secret_post); answers an access token
  POST   /oauth/revoke    RFC 7009 token revocation (same client auth)
  POST   /app/installations/{id}/access_tokens
                          GitHub App: the Bearer JWT is verified with the App's
                          public key (RS256 signature by the openssl tool, iss,
                          iat, exp at most 10 minutes ahead); answers 201 with
                          a token and expires_at
  DELETE /installation/token
                          GitHub: revokes the installation token it carries
Every request is appended to --events as one JSON line, so that the test sees
what the issuer saw. The chosen port is written to --port-file.
"""
import argparse
import base64
import datetime
import http.server
import json
import os
import secrets
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("--cert", required=True)
ap.add_argument("--key", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--events", required=True)
ap.add_argument("--client-id", default="cordon-test")
ap.add_argument("--client-secret", default="s3cret-client")
ap.add_argument("--app-id", default="4242")
ap.add_argument("--public-key", default=None)
ap.add_argument("--expires-in", type=int, default=3600)
ap.add_argument("--port", type=int, default=0,
                help="listen on this port (0: any free one)")
ap.add_argument("--hang-revoke", action="store_true",
                help="answer no revocation (hold it 30 s), as a hung issuer")
ap.add_argument("--refuse-revoke", action="store_true",
                help="answer every revocation 503 temporarily_unavailable")
args = ap.parse_args()

lock = threading.Lock()
live = set()  # tokens given and not revoked


def record(ev):
    with lock:
        with open(args.events, "a") as f:
            f.write(json.dumps(ev) + "\n")


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def verify_jwt(jwt):
    """(claims, None) when the JWT holds, else (None, why)."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return None, "not three parts"
    try:
        head = json.loads(b64url(parts[0]))
        claims = json.loads(b64url(parts[1]))
        sig = b64url(parts[2])
    except Exception as e:  # noqa: BLE001
        return None, "undecodable: %s" % e
    if head.get("alg") != "RS256":
        return None, "alg is not RS256"
    with tempfile.NamedTemporaryFile() as data, \
            tempfile.NamedTemporaryFile() as sigf:
        data.write((parts[0] + "." + parts[1]).encode())
        data.flush()
        sigf.write(sig)
        sigf.flush()
        r = subprocess.run(["openssl", "dgst", "-sha256", "-verify",
                            args.public_key, "-signature", sigf.name,
                            data.name], capture_output=True)
    if r.returncode != 0:
        return None, "bad signature"
    now = int(time.time())
    if claims.get("iss") != args.app_id:
        return None, "iss is not the app id"
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or not isinstance(exp, int):
        return None, "no iat or exp"
    if iat > now + 5 or exp <= now or exp > now + 600 or exp - iat > 660:
        return None, "iat/exp out of range"
    return claims, None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def answer(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def client_ok(self, form):
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Basic "):
            idp, _, sec = base64.b64decode(auth[6:]).decode().partition(":")
            cid, csec = urllib.parse.unquote_plus(idp), \
                urllib.parse.unquote_plus(sec)
            how = "basic"
        else:
            cid = form.get("client_id", [""])[0]
            csec = form.get("client_secret", [""])[0]
            how = "post"
        return cid == args.client_id and csec == args.client_secret, how

    def do_POST(self):
        raw = self.body()
        path = self.path
        if path in ("/oauth/token", "/oauth/revoke"):
            ctype = self.headers.get("Content-Type") or ""
            form = urllib.parse.parse_qs(raw.decode(), keep_blank_values=True)
            ok, how = self.client_ok(form)
            ev = {"event": path[7:], "auth": how, "client_ok": ok,
                  "form_ctype": ctype.startswith(
                      "application/x-www-form-urlencoded")}
            if path == "/oauth/token":
                ev["grant_type"] = form.get("grant_type", [None])[0]
                ev["scope"] = form.get("scope", [None])[0]
                if not ok:
                    record(ev)
                    return self.answer(401, {"error": "invalid_client"})
                if ev["grant_type"] != "client_credentials":
                    record(ev)
                    return self.answer(400,
                                       {"error": "unsupported_grant_type"})
                tok = "oat_" + secrets.token_hex(16)
                with lock:
                    live.add(tok)
                ev["token"] = tok
                record(ev)
                return self.answer(200, {"access_token": tok,
                                         "token_type": "Bearer",
                                         "expires_in": args.expires_in})
            ev["token"] = form.get("token", [None])[0]
            ev["hint"] = form.get("token_type_hint", [None])[0]
            if args.hang_revoke:
                record(dict(ev, hung=True))
                time.sleep(30)
                return self.answer(503, {"error": "temporarily_unavailable"})
            if args.refuse_revoke:
                record(ev)
                return self.answer(503, {"error": "temporarily_unavailable"})
            if not ok:
                record(ev)
                return self.answer(401, {"error": "invalid_client"})
            with lock:
                ev["was_live"] = ev["token"] in live
                live.discard(ev["token"])
            record(ev)
            return self.answer(200)
        parts = path.split("/")
        if len(parts) == 5 and parts[1] == "app" and \
                parts[2] == "installations" and parts[4] == "access_tokens":
            auth = self.headers.get("Authorization") or ""
            ev = {"event": "gh_token", "installation": parts[3],
                  "accept": self.headers.get("Accept")}
            claims, why = (verify_jwt(auth[7:]) if auth.startswith("Bearer ")
                           else (None, "no bearer"))
            ev["jwt_ok"] = claims is not None
            ev["jwt_why"] = why
            if claims is not None:
                ev["iss"] = claims["iss"]
                ev["span"] = claims["exp"] - claims["iat"]
            try:
                ev["body"] = json.loads(raw or b"{}")
            except ValueError:
                ev["body"] = None
            if claims is None:
                record(ev)
                return self.answer(401, {
                    "message": "A JSON web token could not be decoded"})
            tok = "ghs_" + secrets.token_hex(18)
            with lock:
                live.add(tok)
            ev["token"] = tok
            record(ev)
            exp = datetime.datetime.utcfromtimestamp(
                int(time.time()) + 3600).strftime("%Y-%m-%dT%H:%M:%SZ")
            out = {"token": tok, "expires_at": exp}
            out.update(ev["body"] or {})
            return self.answer(201, out)
        record({"event": "unknown", "path": path})
        return self.answer(404, {"message": "Not Found"})

    def do_DELETE(self):
        self.body()
        if self.path != "/installation/token":
            return self.answer(404, {"message": "Not Found"})
        auth = self.headers.get("Authorization") or ""
        tok = auth.split(" ", 1)[1] if " " in auth else ""
        if args.refuse_revoke:
            record({"event": "gh_revoke", "token": tok, "refused": True})
            return self.answer(503, {"message": "Service unavailable"})
        with lock:
            was = tok in live
            live.discard(tok)
        record({"event": "gh_revoke", "token": tok, "was_live": was})
        return self.answer(204 if was else 401,
                           None if was else {"message": "Bad credentials"})


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


Server.allow_reuse_address = True
srv = Server(("127.0.0.1", args.port), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(args.cert, args.key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
tmp = args.port_file + ".tmp"
with open(tmp, "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(tmp, args.port_file)
srv.serve_forever()
