#!/usr/bin/env bash
# Soak: SOAK_JOBS (default 1,000) jobs run back to back through `cordon
# serve`, each `/bin/true` with a 10-file input, the broker, proxy, hatch
# and serve started here on free loopback ports (root: namespaces, mounts).
# Each job is POST /v1/jobs, then GET /v1/jobs/{job} every 10 ms until it
# is done; its result must say exit_code 0 and revoked true. The figures:
# each job's wall time as seen by the client (POST to the first "done"
# answer; serve reaps its children every 100 ms) and the launcher's own
# "ms.total" from the result.
#
# SOAK_WARMUP_JOBS (default 10) jobs come first; file descriptors and VmRSS
# of the four daemons are read after them and after the soak. Also shown:
# mounts under the soak's directory and workspaces left by the hatch,
# serve's child processes, jobs the broker revoked (one per job) and left to lapse
# (none). Errors: failed jobs. Exit status 1 if there was any.
#
# Every 100 jobs the proxy's VmRSS and the jobs it still keeps (its
# /healthz) are sampled: a closed job's log stays in the proxy for
# closed_job_linger_seconds, so its memory should grow for that long and
# then stay level. SOAK_PROXY_LINGER sets it (default 600, the proxy's own
# default); a run longer than the linger shows the level.
#
#   SOAK_JOBS=1000 ./tests/bench/soak_serve.sh        (as root)
#   SOAK_WORKSPACES_TMPFS=1  the hatch's workspaces on a tmpfs
#   SOAK_JOBS=6000 SOAK_PROXY_LINGER=60 ./tests/bench/soak_serve.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
script=soak_serve
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
njobs=${SOAK_JOBS:-1000}
nwarm=${SOAK_WARMUP_JOBS:-10}
linger=${SOAK_PROXY_LINGER:-600}

[ "$(id -u)" = 0 ] || die "must run as root (namespaces, mounts)"
need curl python3
need_bin cordon cordon-serve cordon-broker cordon-proxy cordon-hatch

# --- the services ------------------------------------------------------------------

mkdir -p "$tmp/broker" "$tmp/proxy" "$tmp/hatch" "$tmp/launcher" "$tmp/in/repo"
if [ "${SOAK_WORKSPACES_TMPFS:-0}" = 1 ]; then
	mkdir -p "$tmp/hatch/var/hatch/workspaces"
	mount -t tmpfs -o size=1g,mode=0700 tmpfs "$tmp/hatch/var/hatch/workspaces"
fi
start_service broker "$tmp/broker" "$bin/cordon-broker"
broker_pid=$started broker=$addr
K=$tmp/broker/var/broker/keys
cat >"$tmp/proxy/proxy.json" <<JSON
{"broker": "$broker", "broker_key_file": "$K/verifier.key",
 "launcher_key_file": "$K/launcher.key", "closed_job_linger_seconds": $linger}
JSON
start_service proxy "$tmp/proxy" "$bin/cordon-proxy" --config "$tmp/proxy/proxy.json"
proxy_pid=$started proxy=$addr
cat >"$tmp/hatch/hatch.json" <<JSON
{"input_roots": ["$tmp/in"], "launcher_key_file": "$K/launcher.key",
 "broker": "$broker", "broker_key_file": "$K/launcher.key"}
JSON
start_service hatch "$tmp/hatch" "$bin/cordon-hatch" --config "$tmp/hatch/hatch.json"
hatch_pid=$started hatch=$addr
cat >"$tmp/launcher/launcher.json" <<JSON
{"broker": "$broker", "proxy": "$proxy", "hatch": "$hatch",
 "launcher_key_file": "$K/launcher.key", "state_dir": "$tmp/launcher/var",
 "uid_base": 400000, "uid_count": 100}
JSON
start_service serve "$tmp/launcher" "$bin/cordon" serve --config "$tmp/launcher/launcher.json"
serve_pid=$started serve=$addr

# The input: 10 small files; the manifest: /bin/true, no egress.
for i in $(seq 1 10); do printf 'line %d\n' "$i" >"$tmp/in/repo/f$i.txt"; done
curl -sf -X PUT -H "Authorization: Bearer $(cat "$K/admin.key")" \
	"$broker/v1/manifests/soak" -d '{"name": "soak",
	"command": ["/bin/true"], "egress": [], "limits": {"wall_seconds": 60}}' \
	>/dev/null || die "the manifest was refused"

# --- the jobs ------------------------------------------------------------------------

# Runs N jobs one after another; one line per job on stdout:
#   ok WALL_MS TOTAL_MS JOB    or    fail JOB REASON
run_jobs() { # n
	python3 - "$serve" "$K/launcher.key" "$1" "$tmp/in/repo" <<'PY'
import http.client, json, sys, time, urllib.parse

base, keyfile, n, src = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
key = open(keyfile).read().strip()
u = urllib.parse.urlsplit(base)
hdr = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
conn = None

def call(method, path, body=None):
    global conn
    for attempt in (1, 2):
        try:
            if conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
            conn.request(method, path, body, hdr)
            r = conn.getresponse()
            data = r.read()
            return r.status, data
        except (http.client.HTTPException, OSError):
            # A kept-alive connection the server closed: once more on a
            # new one (only for a request that was never answered).
            conn = None
            if attempt == 2:
                raise

body = json.dumps({"manifest": "soak", "inputs": [{"src": src, "dst": "repo"}],
                   "command": ["/bin/true"]})
for i in range(n):
    t0 = time.monotonic()
    try:
        st, data = call("POST", "/v1/jobs", body)
    except Exception as e:
        print("fail - post: %s" % e, flush=True)
        continue
    if st != 201:
        print("fail - post: %d %s" % (st, data[:300].decode(errors="replace")), flush=True)
        continue
    job = json.loads(data)["job"]
    res, why = None, "not done in 120 s"
    while time.monotonic() - t0 < 120:
        try:
            st, data = call("GET", "/v1/jobs/" + job)
        except Exception as e:
            why = "get: %s" % e
            break
        if st != 200:
            why = "get: %d %s" % (st, data[:300].decode(errors="replace"))
            break
        d = json.loads(data)
        if d.get("state") == "done":
            res = d.get("result")
            why = "done without a result"
            break
        time.sleep(0.01)
    wall = (time.monotonic() - t0) * 1000
    if res is None:
        print("fail %s %s" % (job, why), flush=True)
    elif res.get("exit_code") != 0 or res.get("revoked") is not True:
        print("fail %s exit_code %s revoked %s stop_reason %s revoke_error %s" % (
            job, res.get("exit_code"), res.get("revoked"), res.get("stop_reason"),
            res.get("revoke_error")), flush=True)
    else:
        print("ok %.1f %.1f %s" % (wall, res.get("ms", {}).get("total", 0), job), flush=True)
PY
}
mounts() { grep -c " $tmp/" /proc/self/mounts || true; }
workspaces() { find "$tmp/hatch/var/hatch/workspaces" -mindepth 1 -maxdepth 1 | wc -l; }
children() { cat /proc/"$serve_pid"/task/*/children 2>/dev/null | wc -w; }
metric() { # name: the broker's counter
	curl -sf "$broker/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
daemons=(broker="$broker_pid" proxy="$proxy_pid" hatch="$hatch_pid" serve="$serve_pid")

say "warm-up: $nwarm jobs"
run_jobs "$nwarm" >"$tmp/warm.out"
grep -q '^fail' "$tmp/warm.out" && say "warm-up failures: $(grep '^fail' "$tmp/warm.out" | head -3)"
sleep 1
sample start "${daemons[@]}"
m0=$(mounts) c0=$(children) w0=$(workspaces)
revoked0=$(metric cordon_broker_jobs_revoked_total)
lapsed0=$(metric cordon_broker_jobs_lapsed_total)

say "soak: $njobs jobs, one after another"
t0=$(date +%s)
run_jobs "$njobs" | tee "$tmp/soak.out" | awk -v n="$njobs" -v soak="$script" \
	-v pid="$proxy_pid" -v health="$proxy/healthz" -v series="$tmp/series" -v t0="$t0" '
	{ done++ }
	/^fail/ { print soak ": " $0 > "/dev/stderr" }
	done % 100 == 0 {
		rss = "-"; kept = "-"
		while ((getline line < ("/proc/" pid "/status")) > 0)
			if (line ~ /^VmRSS:/) { split(line, f); rss = sprintf("%.1f", f[2] / 1024) }
		close("/proc/" pid "/status")
		cmd = "curl -sf " health; cmd | getline h; close(cmd)
		if (match(h, /"jobs_closed":[0-9]+/)) kept = substr(h, RSTART + 14, RLENGTH - 14)
		"date +%s" | getline now; close("date +%s")
		printf "%d %d %s %s\n", done, now - t0, rss, kept >> series
		printf "%s: %d of %d jobs, %d s: proxy RSS %s MiB, %s closed jobs kept\n",
			soak, done, n, now - t0, rss, kept > "/dev/stderr"
	}'
t1=$(date +%s)
sleep 1
sample end "${daemons[@]}"
m1=$(mounts) c1=$(children) w1=$(workspaces)
revoked=$(($(metric cordon_broker_jobs_revoked_total) - revoked0))
lapsed=$(($(metric cordon_broker_jobs_lapsed_total) - lapsed0))

ok=$(grep -c '^ok' "$tmp/soak.out" || true)
failed=$((njobs - ok))
pct() { # column, percentile: of the jobs that ran
	awk -v c="$1" '/^ok/ {print $c}' "$tmp/soak.out" | sort -n |
		awk -v p="$2" '{a[NR] = $1} END {
			if (NR == 0) { print "-"; exit }
			i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1
			print a[i] }'
}
soak_row "jobs ok (per second)" - "$ok ($(awk -v n="$ok" -v s=$((t1 - t0)) 'BEGIN {printf "%.1f", s ? n / s : 0}')/s)"
soak_row "jobs revoked, lapsed (broker)" - "$revoked, $lapsed"
soak_row "mounts under the soak's dir" "$m0" "$m1"
soak_row "hatch workspaces left" "$w0" "$w1"
soak_row "serve's child processes" "$c0" "$c1"
soak_row "job wall (client) p50 ms" - "$(pct 2 50)"
soak_row "job wall (client) p99 ms" - "$(pct 2 99)"
soak_row "job ms.total (launcher) p50 ms" - "$(pct 3 50)"
soak_row "job ms.total (launcher) p99 ms" - "$(pct 3 99)"
if [ -s "$tmp/series" ]; then
	# The proxy's memory over the run: a tenth of the samples, and the last.
	step=$(( ($(wc -l <"$tmp/series") + 9) / 10 ))
	soak_row "proxy RSS MiB / closed jobs kept (linger ${linger}s)" - \
		"$(awk -v s="$step" 'NR % s == 0 {printf "%s%d s: %s/%s", sep, $2, $3, $4; sep = ", "}' "$tmp/series")"
fi
table "$njobs jobs through cordon serve, one after another" "$failed" \
	"failed jobs $failed of $njobs" broker proxy hatch serve
[ "$failed" -eq 0 ]
