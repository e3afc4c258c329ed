#!/usr/bin/python3
# Latency of a job's request through the proxy while GET /v1/decisions
# pages a big log (100,000 lines that all name job_needle and none of
# which is its, so each is parsed and none kept), for one build's
# cordon-broker and cordon-proxy: 200 requests idle, then 8 s of one
# request every 5 ms while another thread follows the pages' next.
#
#   tests/bench/decisions_loop.py BUILD/bin       (docs/performance.md)
import hashlib, json, os, socket, subprocess, sys, tempfile, threading, time, urllib.request

bindir = sys.argv[1]
top = tempfile.mkdtemp(prefix="ph-measure-")
procs = []

def start(name, cfg=None):
    d = os.path.join(top, name); os.makedirs(d)
    args = [os.path.join(bindir, "cordon-" + name), "--listen", "127.0.0.1:0"]
    if cfg is not None:
        with open(os.path.join(d, "c.json"), "w") as f: json.dump(cfg, f)
        args += ["--config", os.path.join(d, "c.json")]
    log = open(os.path.join(d, "log"), "w")
    p = subprocess.Popen(args, cwd=d, stdout=log, stderr=log, env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    procs.append(p)
    for _ in range(200):
        time.sleep(0.05)
        for line in open(os.path.join(d, "log")):
            try: j = json.loads(line)
            except ValueError: continue
            if j.get("event") == "listening": return d, "http://" + j["addr"]
    raise SystemExit(name + " did not start")

def call(base, method, path, key, body=None):
    req = urllib.request.Request(base + path, method=method, headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"},
                                 data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=30) as r: return json.loads(r.read() or b"{}")

try:
    bdir, B = start("broker")
    keys = {r: open(os.path.join(bdir, "var/broker/keys/%s.key" % r)).read().strip() for r in ("admin", "launcher", "verifier")}
    with open(os.path.join(top, "verifier.key"), "w") as f: f.write(keys["verifier"])
    sha = lambda k: hashlib.sha256(k.encode()).hexdigest()
    pdir, P = start("proxy", {"broker": B, "broker_key_file": os.path.join(top, "verifier.key"),
                              "launcher_key_sha256": sha(keys["launcher"]), "admin_key_sha256": sha(keys["admin"]), "follower": "m"})
    call(B, "PUT", "/v1/manifests/m", keys["admin"], {"name": "m", "command": ["/bin/true"], "egress": [
        {"host": "api.test", "port": 80, "methods": ["GET"], "paths": ["/"], "reason": "m"}]})
    job = call(B, "POST", "/v1/jobs", keys["launcher"], {"manifest": "m"})["job"]
    chan = call(P, "POST", "/v1/jobs/" + job, keys["launcher"])["channel"]
    with open(os.path.join(pdir, "var/proxy/log/decisions.log.1"), "w") as f:
        for i in range(100000):
            f.write(json.dumps({"ts": "2026-11-30T10:%02d:%02d.%03dZ" % ((i // 2000) % 60, (i // 40) % 60, i % 1000), "job": "job_other",
                                "conn": i, "req": 1, "kind": "http", "method": "GET", "host": "api.test", "port": 80,
                                "path": "/job_needle/%d" % i, "decision": "deny", "reason": "path", "status": 403}, separators=(",", ":")) + "\n")
    pages, stop = [], threading.Event()
    def pager():
        cur = None
        while not stop.is_set():
            t = time.monotonic()
            r = call(P, "GET", "/v1/decisions?job=job_needle&limit=10" + ("&cursor=" + cur if cur else ""), keys["admin"])
            pages.append(time.monotonic() - t)
            cur = r.get("next")
    def one():
        s = socket.socket(socket.AF_UNIX); s.connect(chan)
        t = time.monotonic()
        s.sendall(b"GET http://elsewhere.test/ HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            d = s.recv(4096)
            if not d: break
            data += d
        s.close()
        return time.monotonic() - t
    idle = sorted(one() for _ in range(200))
    th = threading.Thread(target=pager); th.start()
    time.sleep(0.2)
    busy = []
    end = time.monotonic() + 8
    while time.monotonic() < end:
        busy.append(one()); time.sleep(0.005)
    stop.set(); th.join()
    busy.sort()
    q = lambda a, f: a[min(len(a) - 1, int(len(a) * f))] * 1000
    print("%s: idle p50 %.1f p99 %.1f ms; while paging (%d pages, median %.0f ms): %d requests, p50 %.1f p99 %.1f max %.1f ms" % (
        bindir, q(idle, .5), q(idle, .99), len(pages), q(sorted(pages), .5), len(busy), q(busy, .5), q(busy, .99), busy[-1] * 1000))
finally:
    for p in procs: p.terminate()
    for p in procs: p.wait()
