"""Clients for cordon serve and cordon-broker, over http.client.

Each call carries `Authorization: Bearer <key>`; an answer that is not a
2xx raises the error's class (errors.py). Bodies are JSON except the
patch (bytes) and /metrics (text).
"""

import hashlib
import hmac
import http.client
import json
import time
import urllib.parse

from .errors import NoAnswer, Timeout, error_for


def read_key(path):
    """The key in a key file (its first line)."""
    with open(path, encoding="ascii") as f:
        return f.readline().strip()


def verify_callback(body, signature, key):
    """Whether signature (the X-Cordon-Signature header: "sha256=<hex>")
    is serve's HMAC-SHA256 of body (bytes, as received) with key."""
    if not isinstance(signature, str) or not signature.startswith("sha256="):
        return False
    if isinstance(key, str):
        key = key.encode()
    want = hmac.new(key, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, signature[len("sha256="):])


class _Service:
    def __init__(self, url, key, timeout=30.0):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"not an http:// URL: {url!r}")
        self.url = url.rstrip("/")
        self._host = u.hostname
        self._port = u.port or 80
        self._key = key
        self.timeout = timeout

    def request(self, method, path, body=None, query=None, headers=None,
                raw=False, timeout=None):
        """One call: the parsed JSON (or bytes when raw), and the answer's
        headers as a dict with lower-case names."""
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                path += "?" + urllib.parse.urlencode(q)
        h = {"Authorization": f"Bearer {self._key}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        conn = http.client.HTTPConnection(self._host, self._port,
                                          timeout=timeout or self.timeout)
        try:
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            payload = resp.read()
            status = resp.status
            rh = {k.lower(): v for k, v in resp.getheaders()}
        except (OSError, http.client.HTTPException) as e:
            raise NoAnswer(self.url + path, str(e)) from e
        finally:
            conn.close()
        if not 200 <= status < 300:
            try:
                parsed = json.loads(payload)
            except ValueError:
                parsed = None
            raise error_for(status, parsed)
        if raw:
            return payload, rh
        return (json.loads(payload) if payload else None), rh

    def call(self, method, path, **kw):
        return self.request(method, path, **kw)[0]

    def health(self):
        """GET /healthz (no key needed)."""
        return self.call("GET", "/healthz")

    def metrics(self):
        """GET /metrics, the Prometheus text."""
        return self.request("GET", "/metrics", raw=True)[0].decode()


def _seg(s):
    """A path segment: refused unless it is one."""
    if not isinstance(s, str) or not s or "/" in s or s.startswith("."):
        raise ValueError(f"not a name: {s!r}")
    return urllib.parse.quote(s, safe="")


class Serve(_Service):
    """cordon serve: the launcher's API (the launcher's key)."""

    def run(self, manifest, inputs=(), command=None, callback=None,
            idempotency_key=None):
        """Starts a job: serve's answer, {"job", "state": "running", ...}.
        inputs are (src, dst) pairs or {"src", "dst"} dicts. Raises
        JobNotStarted when the broker, hatch or proxy refused it."""
        body = {"manifest": manifest}
        ins = [i if isinstance(i, dict) else {"src": i[0], "dst": i[1]}
               for i in inputs]
        if ins:
            body["inputs"] = ins
        if command is not None:
            body["command"] = list(command)
        if callback is not None:
            body["callback"] = callback
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.call("POST", "/v1/jobs", body=body, headers=headers)

    def job(self, job):
        """The job: {"job", "state", "manifest", "started", "ended",
        "result", "error"}."""
        return self.call("GET", f"/v1/jobs/{_seg(job)}")

    def jobs(self, state=None, manifest=None, limit=None, after=None):
        """One page of GET /v1/jobs: {"jobs": [...], "next": id | None}."""
        return self.call("GET", "/v1/jobs", query={
            "state": state, "manifest": manifest, "limit": limit, "after": after})

    def iter_jobs(self, state=None, manifest=None, page=100):
        """Every job serve holds, newest first, page after page."""
        after = None
        while True:
            p = self.jobs(state=state, manifest=manifest, limit=page, after=after)
            yield from p["jobs"]
            after = p.get("next")
            if not after:
                return

    def stop(self, job):
        """Runs the job's stop path; the job with its result."""
        return self.call("POST", f"/v1/jobs/{_seg(job)}/stop",
                         timeout=max(self.timeout, 20))

    def wait(self, job, timeout=900.0, interval=0.2):
        """Polls until the job is done (or lost: serve restarted while it
        ran, and its error says what finishes it): the job with its
        result. Raises Timeout after timeout seconds."""
        end = time.monotonic() + timeout
        while True:
            j = self.job(job)
            if j.get("state") in ("done", "lost"):
                return j
            if time.monotonic() >= end:
                raise Timeout(job, timeout)
            time.sleep(interval)

    def output(self, job):
        """The untrusted output envelope of a finished job."""
        return self.call("GET", f"/v1/jobs/{_seg(job)}/output")

    def follow(self, job, wait=25):
        """Yields the job's output as it comes, ("stdout" | "stderr",
        text), cleaned of escape sequences, while the job runs (serve's
        long-polled GET .../output?follow=1), and returns the envelope
        once it stopped (the generator's return value: StopIteration's
        value, or `yield from`)."""
        offset = 0
        while True:
            page = self.call("GET", f"/v1/jobs/{_seg(job)}/output",
                             query={"follow": 1, "offset": offset, "wait": wait},
                             timeout=max(self.timeout, wait + 10))
            for c in page["chunks"]:
                yield c["stream"], c["text"]
            offset = page["next"]
            if page["state"] != "running":
                return page.get("envelope")

    def patch(self, job):
        """A finished job's patch, bytes (text/x-diff)."""
        return self.request("GET", f"/v1/jobs/{_seg(job)}/patch", raw=True)[0]

    def report(self, job):
        """A finished job's verdict, flags, changes and patch digest."""
        return self.call("GET", f"/v1/jobs/{_seg(job)}/report")


class Broker(_Service):
    """cordon-broker (the admin key, or the launcher's for what it may)."""

    def put_manifest(self, manifest, name=None):
        """Stores manifest (a dict) as its next version: {"name",
        "version", "sha256", "planes", "warnings", "new_version"}."""
        return self.call("PUT", f"/v1/manifests/{_seg(name or manifest['name'])}",
                         body=manifest)

    def get_manifest(self, name, version=None):
        """A stored version: {"name", "version", "sha256", "created",
        "manifest"}."""
        return self.call("GET", f"/v1/manifests/{_seg(name)}",
                         query={"version": version})

    def job(self, job):
        """The job at the broker: its state, stop reason and tokens (ids)."""
        return self.call("GET", f"/v1/jobs/{_seg(job)}")

    def revoke(self, job, reason=None):
        """Revokes the job and all its tokens; returns once every proxy
        acknowledged (or is gone)."""
        body = {"reason": reason} if reason is not None else None
        return self.call("POST", f"/v1/jobs/{_seg(job)}/revoke", body=body)

    def audit(self, job=None, after=None, limit=None):
        """Audit records (the admin key)."""
        return self.call("GET", "/v1/audit",
                         query={"job": job, "after": after, "limit": limit})["records"]
