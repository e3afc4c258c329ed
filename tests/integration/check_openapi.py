"""docs/openapi.yaml against the code and against real answers.

Run by it_openapi.c with the four services up (their addresses and key
files in the environment). Two checks:

1. Every route the C code serves (the http_route tables of broker/api.c,
   proxy/control.c, hatch/api.c, launcher/serve.c, and /healthz and
   /metrics of every service) is an operation of that service's document,
   and every operation documented is served.
2. Real calls to every operation of every service, answered and failing:
   each answer's status must be one the operation lists, its content type
   the one listed, and a JSON body must validate against the listed
   schema (JSON Schema 2020-12). Every operation must have been called.

docs/openapi.yaml holds four OpenAPI 3.1 documents, one per service
(their paths overlap: /v1/jobs is the broker's, the proxy's and serve's).
"""

import http.client
import json
import os
import re
import sys
import time
import urllib.parse

import jsonschema
import yaml

ENV = os.environ
SRC = ENV["CORDON_SOURCE_DIR"]
FILES = {
    "cordon-broker": "broker/api.c",
    "cordon-proxy": "proxy/control.c",
    "cordon-hatch": "hatch/api.c",
    "cordon serve": "launcher/serve.c",
}
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def key(role):
    with open(ENV[f"CORDON_{role.upper()}_KEY_FILE"]) as f:
        return f.readline().strip()


with open(ENV["CORDON_OPENAPI"]) as f:
    DOCS = {d["info"]["title"]: d for d in yaml.safe_load_all(f)}


def template(p):
    """/v1/jobs/{job}/log -> /v1/jobs/*/log"""
    return re.sub(r"\{[^}]+\}", "*", p)


# --- 1. the routes -----------------------------------------------------------

for title, path in FILES.items():
    doc = DOCS.get(title)
    if doc is None:
        fail(f"no document titled {title!r}")
        continue
    if not str(doc.get("openapi", "")).startswith("3.1"):
        fail(f"{title}: openapi is {doc.get('openapi')!r}, not 3.1")
    with open(os.path.join(SRC, path)) as f:
        code = f.read()
    table = code[code.index("struct http_route"):]
    served = set(re.findall(r'\{\s*"([A-Z]+)",\s*"(/[^"]*)"', table))
    served |= {("GET", "/healthz"), ("GET", "/metrics")}
    documented = {(m.upper(), template(p))
                  for p, item in doc["paths"].items() for m in item
                  if m in ("get", "put", "post", "delete", "patch")}
    for m, p in sorted(served - documented):
        fail(f"{title}: {m} {p} is served ({path}) but not in docs/openapi.yaml")
    for m, p in sorted(documented - served):
        fail(f"{title}: {m} {p} is documented but not served ({path})")


# --- 2. real answers ---------------------------------------------------------

def resolve(doc, node, seen=0):
    """node with every local $ref replaced by what it names."""
    if seen > 20:
        raise ValueError("$ref too deep")
    if isinstance(node, dict):
        if "$ref" in node:
            target = doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            return resolve(doc, target, seen + 1)
        return {k: resolve(doc, v, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(doc, v, seen) for v in node]
    return node


def find_op(doc, method, path):
    for p, item in doc["paths"].items():
        rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)) + "$"
        if re.match(rx, path) and method.lower() in item:
            return p, item[method.lower()]
    return None, None


called = set()


def call(title, base, method, path, key_=None, body=None, headers=None, raw_body=None):
    """Calls and checks the answer against the document: (status, parsed)."""
    doc = DOCS[title]
    u = urllib.parse.urlsplit(base)
    h = dict(headers or {})
    if key_:
        h["Authorization"] = f"Bearer {key_}"
    data = raw_body
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    payload = r.read()
    ctype = (r.getheader("Content-Type") or "").split(";")[0].strip()
    conn.close()
    bare = path.split("?")[0]
    tpl, op = find_op(doc, method, bare)
    where = f"{title}: {method} {path} -> {r.status}"
    print(where, payload[:200] if ctype == "application/json" else ctype)
    if op is None:
        fail(f"{where}: no such operation in the document")
        return r.status, None
    called.add((title, method.upper(), tpl))
    responses = op.get("responses", {})
    spec = responses.get(str(r.status)) or responses.get(f"{str(r.status)[0]}XX") \
        or responses.get("default")
    if spec is None:
        fail(f"{where}: status not listed (listed: {sorted(responses)})")
        return r.status, None
    spec = resolve(doc, spec)
    content = spec.get("content", {})
    if not content:
        if payload:
            fail(f"{where}: a body the document does not describe")
        return r.status, None
    if ctype not in content:
        fail(f"{where}: Content-Type {ctype!r} not in {sorted(content)}")
        return r.status, None
    parsed = None
    if ctype == "application/json":
        try:
            parsed = json.loads(payload)
        except ValueError:
            fail(f"{where}: not JSON")
            return r.status, None
        schema = content[ctype].get("schema")
        if schema is not None:
            err = jsonschema.exceptions.best_match(
                jsonschema.Draft202012Validator(schema).iter_errors(parsed))
            if err is not None:
                fail(f"{where}: {err.message[:300]} at {list(err.absolute_path)}")
    else:
        parsed = payload
    return r.status, parsed


A, L, V = key("admin"), key("launcher"), key("verifier")
B, P, H, S = ENV["CORDON_BROKER"], ENV["CORDON_PROXY"], ENV["CORDON_HATCH"], ENV["CORDON_SERVE"]
BR, PX, HT, SV = "cordon-broker", "cordon-proxy", "cordon-hatch", "cordon serve"
repo = os.path.join(ENV["CORDON_INPUTS"], "repo")

manifest = {
    "name": "oa-job", "command": ["/bin/true"], "env": {"LANG": "C.UTF-8"},
    "capabilities": [{"name": "x.read", "audience": "api", "params": {"t": ["1"]},
                      "ttl_seconds": 900, "reason": "read x"}],
    "egress": [{"host": "api.test", "port": 9, "methods": ["GET"], "paths": ["/ok/"],
                "reason": "the api", "allow_cidrs": ["127.0.0.0/8"], "audience": "api"}],
    "limits": {"wall_seconds": 60, "memory_mb": 512, "pids": 64, "output_kb": 256},
    "return": {"protected": [".github/**"]},
}

for title, base in ((BR, B), (PX, P), (HT, H), (SV, S)):
    call(title, base, "GET", "/healthz")
    call(title, base, "GET", "/metrics")

# The broker.
call(BR, B, "PUT", "/v1/manifests/oa-job", A, manifest)
call(BR, B, "PUT", "/v1/manifests/oa-job", A, {"name": "oa-job", "env": {"GITHUB_TOKEN": "x"}})
call(BR, B, "PUT", "/v1/manifests/oa-job", None, manifest)
call(BR, B, "PUT", "/v1/manifests/oa-job", L, manifest)
call(BR, B, "GET", "/v1/manifests/oa-job?version=1", L)
call(BR, B, "GET", "/v1/manifests/oa-none", L)
call(BR, B, "GET", "/v1/manifests?limit=1", A)
call(BR, B, "GET", "/v1/manifests?after=oa-job", L)
call(BR, B, "GET", "/v1/manifests?limit=0", A)
call(BR, B, "GET", "/v1/manifests", None)
call(BR, B, "GET", "/v1/manifests", V)
st, job = call(BR, B, "POST", "/v1/jobs", L, {"manifest": "oa-job"})
call(BR, B, "POST", "/v1/jobs", L, {"manifest": "oa-none"})
call(BR, B, "POST", "/v1/jobs", L, {"manifest": "oa-job", "extra": 1})
jid = job["job"]
call(BR, B, "GET", f"/v1/jobs/{jid}", A)
call(BR, B, "GET", "/v1/jobs/job_none", A)
call(BR, B, "POST", f"/v1/jobs/{jid}/heartbeat", L)
call(BR, B, "GET", f"/v1/jobs/{jid}/egress", V)
call(BR, B, "GET", f"/v1/jobs/{jid}/return", L)
st, tok = call(BR, B, "POST", "/v1/token", V, {"capability": "x.read", "params": {"t": "1"}},
               headers={"X-Cordon-Job": jid})
call(BR, B, "POST", "/v1/token", V, {"capability": "x.read", "params": {"t": "2"}},
     headers={"X-Cordon-Job": jid})
call(BR, B, "POST", "/v1/token", A, {"capability": "x.read", "params": {"t": "1"}})
call(BR, B, "POST", "/v1/introspect", V, {"token": tok["access_token"]})
call(BR, B, "POST", "/v1/introspect", V, {"token": "crd_nope"})
call(BR, B, "POST", "/v1/revoke", A, {"token": tok["access_token"]})
call(BR, B, "GET", "/v1/revocations?after=0&wait=0&follower=oa", V)
call(BR, B, "PUT", "/v1/secrets/oa-secret", A, {"value": "sk_openapi_0123456789"})
call(BR, B, "PUT", "/v1/secrets/oa-secret", A, {"value": "two\nlines"})
call(BR, B, "GET", "/v1/secrets", A)
call(BR, B, "GET", "/v1/secrets/oa-secret", A)
call(BR, B, "GET", "/v1/secrets/oa-none", A)
call(BR, B, "POST", f"/v1/jobs/{jid}/secrets/oa-secret/release", V)
call(BR, B, "POST", "/v1/jobs/job_none/secrets/oa-secret/release", V)
call(BR, B, "PUT", "/v1/secrets/oa-secret", A, {"value": "sk_openapi_0123456789",
                                                 "guard_hosts": ["www.api.test"]})
call(BR, B, "PUT", "/v1/secrets/oa-secret", A, {"value": "sk_openapi_0123456789",
                                                 "guard_hosts": ["*.api.test"]})
call(BR, B, "GET", "/v1/bindings", V)
call(BR, B, "GET", "/v1/bindings", L)
call(BR, B, "POST", "/v1/bindings", V, {"secret": "oa-secret", "job": jid, "addr": "127.0.0.1:9"})
call(BR, B, "POST", "/v1/bindings", V, {"secret": "oa-secret", "job": jid, "addr": "nope"})
call(BR, B, "POST", "/v1/bindings", V, {"secret": "oa-secret", "job": "job_none",
                                         "addr": "127.0.0.1:9"})
call(BR, B, "POST", f"/v1/jobs/{jid}/secrets/oa-secret/release?purpose=scan&host=www.api.test", V)
call(BR, B, "POST", f"/v1/jobs/{jid}/secrets/oa-secret/release?purpose=scan", V)
call(BR, B, "POST", f"/v1/jobs/{jid}/secrets/oa-secret/reflections", V,
     {"version": 1, "event": "reflected", "count": 1})
call(BR, B, "POST", f"/v1/jobs/{jid}/secrets/oa-secret/reflections", V, {"event": "nope"})
call(BR, B, "POST", "/v1/jobs/job_none/secrets/oa-secret/reflections", V,
     {"version": 1, "event": "reflected"})
call(BR, B, "DELETE", "/v1/secrets/oa-secret", A)
call(BR, B, "DELETE", "/v1/secrets/oa-secret", A)
call(BR, B, "GET", "/v1/audit?limit=5", A)
call(BR, B, "GET", "/v1/audit?verify=1", A)
call(BR, B, "GET", "/v1/whoami", L)
call(BR, B, "GET", "/v1/whoami", None)

# The proxy, on the broker's job.
call(PX, P, "POST", f"/v1/jobs/{jid}", L, {})
call(PX, P, "POST", f"/v1/jobs/{jid}", L, {})
call(PX, P, "POST", "/v1/jobs/job_none", L, {})
call(PX, P, "GET", f"/v1/jobs/{jid}/log", L)
call(PX, P, "GET", "/v1/jobs/job_none/log", L)
call(PX, P, "GET", "/v1/decisions?limit=5", A)  # no admin_key_file here: 401
call(PX, P, "GET", "/v1/decisions", None)
call(PX, P, "DELETE", f"/v1/jobs/{jid}", L)

call(BR, B, "POST", f"/v1/jobs/{jid}/revoke", A, {"reason": "openapi"})
call(BR, B, "POST", f"/v1/jobs/{jid}/heartbeat", L)
call(BR, B, "POST", "/v1/jobs/job_none/revoke", A)

# The hatch, on a job of its own.
hj = "job_openapi0000000001"
call(HT, H, "POST", "/v1/workspaces", L, {"job": hj, "inputs": [{"src": repo, "dst": "repo"}]})
call(HT, H, "POST", "/v1/workspaces", L, {"job": hj, "inputs": [{"src": repo, "dst": "repo"}]})
call(HT, H, "POST", "/v1/workspaces", L, {"job": "job_x", "inputs": [{"src": "/etc", "dst": "e"}]})
call(HT, H, "GET", f"/v1/workspaces/{hj}/patch", L)
call(HT, H, "POST", f"/v1/workspaces/{hj}/seal", L, {"stdout": "aGkK"})
call(HT, H, "GET", f"/v1/workspaces/{hj}/patch", L)
call(HT, H, "GET", f"/v1/workspaces/{hj}/report", L)
call(HT, H, "GET", "/v1/workspaces/job_none/report", L)
call(HT, H, "DELETE", f"/v1/workspaces/{hj}", L)
call(HT, H, "DELETE", f"/v1/workspaces/{hj}", L)

# cordon serve.
st, sj = call(SV, S, "POST", "/v1/jobs", L,
              {"manifest": "oa-job", "inputs": [{"src": repo, "dst": "repo"}],
               "command": ["/bin/sh", "-c", "echo x > repo/X.md; echo out"]},
              headers={"Idempotency-Key": "oa-1"})
call(SV, S, "POST", "/v1/jobs", L,
     {"manifest": "oa-job", "inputs": [{"src": repo, "dst": "repo"}],
      "command": ["/bin/sh", "-c", "echo x > repo/X.md; echo out"]},
     headers={"Idempotency-Key": "oa-1"})
call(SV, S, "POST", "/v1/jobs", L, {"manifest": "oa-none"})
call(SV, S, "POST", "/v1/jobs", L, {"manifest": 3})
sid = sj["job"]
for _ in range(400):
    st, j = call(SV, S, "GET", f"/v1/jobs/{sid}", L)
    if j and j.get("state") == "done":
        break
    time.sleep(0.05)
call(SV, S, "GET", "/v1/jobs", L)
call(SV, S, "GET", "/v1/jobs?state=done&limit=1", L)
call(SV, S, "GET", "/v1/jobs?state=odd", L)
call(SV, S, "GET", f"/v1/jobs/{sid}/output", L)
call(SV, S, "GET", f"/v1/jobs/{sid}/output?follow=1", L)
call(SV, S, "GET", f"/v1/jobs/{sid}/patch", L)
call(SV, S, "GET", f"/v1/jobs/{sid}/report", L)
call(SV, S, "GET", "/v1/jobs/job_none", L)
st, rj = call(SV, S, "POST", "/v1/jobs", L,
              {"manifest": "oa-job", "inputs": [{"src": repo, "dst": "repo"}],
               "command": ["/bin/sh", "-c", "sleep 60"]})
call(SV, S, "GET", f"/v1/jobs/{rj['job']}/output", L)
call(SV, S, "GET", f"/v1/jobs/{rj['job']}/output?follow=1&offset=0&wait=1", L)
call(SV, S, "GET", f"/v1/jobs/{rj['job']}/output?follow=1&wait=99", L)
call(SV, S, "GET", f"/v1/jobs/{rj['job']}/patch", L)
call(SV, S, "GET", f"/v1/jobs/{rj['job']}/report", L)
call(SV, S, "POST", f"/v1/jobs/{rj['job']}/stop", L)
call(SV, S, "POST", f"/v1/jobs/{rj['job']}/stop", L, {"x": 1})
call(SV, S, "GET", "/v1/jobs", A)

for title, doc in DOCS.items():
    for p, item in doc["paths"].items():
        for m in item:
            if m in ("get", "put", "post", "delete") and (title, m.upper(), p) not in called:
                fail(f"{title}: {m.upper()} {p} was never called here")

print(f"check_openapi: {len(called)} operations called, {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
