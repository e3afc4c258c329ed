# A job of it_inject_tls: calls an HTTPS API that wants a key (the proxy
# injects it), then looks for the key everywhere a job can look. It never
# holds the key whole: argv gives it in two halves (argv[1], argv[2]), and
# a match is a first half followed by the second, compared in place, so
# the scanner's own memory cannot be what it finds. One JSON line out.
#
#   keyless.py HALF1 HALF2 URL START [OLD_TOKEN]
#
# With OLD_TOKEN, it only compares the old token's answer with its own's.
import json
import os
import sys
import urllib.error
import urllib.request

h1, h2 = sys.argv[1].encode(), sys.argv[2].encode()
url, start = sys.argv[3], float(sys.argv[4])
old = sys.argv[5] if len(sys.argv) > 5 else None
n = len(h1) + len(h2)


def hits(data, a=h1, b=h2):
    """Occurrences of a immediately followed by b in data (bytes)."""
    count, at = 0, data.find(a)
    while at >= 0:
        if data[at + len(a):at + len(a) + len(b)] == b:
            count += 1
        at = data.find(a, at + 1)
    return count


def call(token):
    """GET url with token: (status, body text)."""
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def mint():
    body = json.dumps({"capability": "api.read",
                       "params": {"t": "1"}}).encode()
    req = urllib.request.Request("http://broker.cordon/v1/token", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read())["access_token"]


out = {}
token = mint()
out["token"] = token
if old is not None:
    out["old_status"] = call(old)[0]
    out["new_status"] = call(token)[0]
    print(json.dumps(out), flush=True)
    sys.exit(0)

status, text = call(token)
out["status"] = status
try:
    echo = json.loads(text)
    out["echo_key"] = [v for k, v in echo["headers"]
                       if k.lower() == "x-api-key"]
except (ValueError, KeyError, TypeError):
    out["echo_key"] = None
out["echo_hits"] = hits(text.encode())

# The environment.
out["env"] = sum(hits((k + "=" + v).encode()) for k, v in os.environ.items())

# Every file on every file system but /proc and /sys; in /usr (the host's,
# read-only, 9 GB) only what changed since the test started: the key was
# made then, so no older file can hold it.
files = scanned = 0
for root, dirs, names in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
    for name in names:
        path = os.path.join(root, name)
        try:
            st = os.lstat(path)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            if path.startswith("/usr/") and \
                    max(st.st_mtime, st.st_ctime) < start:
                continue
            with open(path, "rb") as f:
                data = f.read(64 << 20)
        except OSError:
            continue
        scanned += 1
        if hits(data) > 0:
            files += 1
out["files"], out["files_scanned"] = files, scanned

# /proc of every process the job can see: environ, cmdline, and the
# memory its maps say is readable.
proc = pids = mem_pids = mem_bytes = mem_hits = 0
# A control: a string made whole only at run time, on the heap; the scan
# must find it in this process, or it proves nothing.
c1, c2 = b"control-half-one/", b"control-half-two"
control = c1 + c2
control_seen = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    pids += 1
    for leaf in ("environ", "cmdline"):
        try:
            with open("/proc/%s/%s" % (pid, leaf), "rb") as f:
                proc += hits(f.read())
        except OSError:
            pass
    try:
        maps = open("/proc/%s/maps" % pid).read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", buffering=0)
    except OSError:
        continue
    read_any = False
    for line in maps:
        parts = line.split()
        if len(parts) < 2 or parts[1][0] != "r" or \
                (len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]")):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        at = lo
        while at < hi:
            size = min(hi - at, 4 << 20)
            try:
                mem.seek(at)
                chunk = mem.read(size + n - 1 if at + size < hi else size)
            except (OSError, OverflowError, ValueError):
                break
            if not chunk:
                break
            read_any = True
            mem_bytes += len(chunk)
            mem_hits += hits(chunk)
            if pid == str(os.getpid()):
                control_seen += hits(chunk, c1, c2)
            at += size
    mem.close()
    if read_any:
        mem_pids += 1
out.update(proc=proc, pids=pids, mem_pids=mem_pids, mem_bytes=mem_bytes,
           mem_hits=mem_hits, control_seen=control_seen,
           control_len=len(control))
print(json.dumps(out), flush=True)
