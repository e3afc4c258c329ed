#!/usr/bin/env bash
# Soak: SOAK_CONNS (default 2,000) concurrent keep-alive connections
# through cordon-proxy, all on one job's channel, for SOAK_SECONDS (default
# 120), fetching a 100-byte file from nginx (two workers) on 127.0.0.1.
# As in bench_proxy.sh the proxy is reached through the relay (relay.c),
# from TCP 127.0.0.1 to the job's channel, as the launcher relays the
# sandbox's 127.0.0.1:3128; the job comes from a real broker; the decision
# log stays on. The name soak.test resolves to 127.0.0.1 from the proxy's
# own hosts_file only (/etc/hosts is not touched).
#
# A warm-up of SOAK_WARMUP seconds (default 10) at the same load comes
# first; file descriptors and VmRSS of the proxy and the broker are read
# once it is over and the proxy holds no connection (pooled upstreams
# expire after 30 s), and again the same way after the soak; what the proxy
# holds half-way through is shown too. Errors:
# wrk's non-2xx answers and socket errors (connect, read, write, timeout
# after SOAK_TIMEOUT seconds, default 10), and the proxy's denials during
# the soak. Exit status 1 if there was any.
#
#   SOAK_SECONDS=120 SOAK_CONNS=2000 ./tests/bench/soak_proxy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
script=soak_proxy
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
secs=${SOAK_SECONDS:-120}
warm=${SOAK_WARMUP:-10}
conns=${SOAK_CONNS:-2000}
timeout=${SOAK_TIMEOUT:-10}
# nginx's workers run as "nobody": they read the file here.
chmod 755 "$tmp"

need wrk nginx curl cc python3
need_bin cordon-broker cordon-proxy

# Every connection is a descriptor in wrk, two in the relay, and in the
# proxy one for the job's side and one for its upstream.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge $((2 * conns + 1024)) ] ||
	die "ulimit -n $(ulimit -n): need $((2 * conns + 1024))"

cc -O2 -o "$tmp/relay" "$here/relay.c"

# --- the upstream: nginx -----------------------------------------------------

np=$(free_port)
mkdir -p "$tmp/www"
head -c 99 /dev/zero | tr '\0' x >"$tmp/www/f100"
echo >>"$tmp/www/f100"
chmod 755 "$tmp/www" && chmod 644 "$tmp/www/f100"
nginx_start $((2 * conns + 1024)) "
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	server {
		listen 127.0.0.1:$np;
		root $tmp/www;
	}"
wait_for curl -sf "http://127.0.0.1:$np/f100" ||
	die "nginx did not start: $(cat "$tmp/nginx/error.log")"
echo "127.0.0.1 soak.test" >"$tmp/hosts"

# --- cordon: broker, proxy, a job, its channel, the relay --------------------

mkdir -p "$tmp/broker" "$tmp/proxy"
echo '{"lease_seconds": 3600}' >"$tmp/broker/broker.json"
start_service broker "$tmp/broker" "$bin/cordon-broker" \
	--config "$tmp/broker/broker.json"
broker_pid=$started broker=$addr
keys=$tmp/broker/var/broker/keys
admin=$(cat "$keys/admin.key")
launcher=$(cat "$keys/launcher.key")

cat >"$tmp/proxy/proxy.json" <<CONF
{"broker": "$broker", "broker_key_file": "$keys/verifier.key",
 "launcher_key_file": "$keys/launcher.key", "hosts_file": "$tmp/hosts",
 "max_conns_per_job": $((conns + 1000))}
CONF
start_service proxy "$tmp/proxy" "$bin/cordon-proxy" \
	--config "$tmp/proxy/proxy.json"
proxy_pid=$started control=$addr

wall=$((secs + warm + 600))
[ "$wall" -le 86400 ] || die "SOAK_SECONDS: at most 85,000"
curl -sf -X PUT -H "Authorization: Bearer $admin" \
	"$broker/v1/manifests/soak" -d '{"name": "soak",
 "command": ["/bin/true"],
 "egress": [{"host": "soak.test", "port": '"$np"', "methods": ["GET"],
   "paths": ["/"], "reason": "soak", "allow_cidrs": ["127.0.0.0/8"]}],
 "limits": {"wall_seconds": '"$wall"'}}' >/dev/null ||
	die "manifest refused"
job=$(curl -sf -X POST -H "Authorization: Bearer $launcher" \
	"$broker/v1/jobs" -d '{"manifest": "soak"}' | json_get job)
channel=$(curl -sf -X POST -H "Authorization: Bearer $launcher" \
	"$control/v1/jobs/$job" | json_get channel) ||
	die "no channel for $job: $(tail -5 "$tmp/proxy.log")"
# The lease is an hour; heartbeats keep a longer soak's job alive.
(
	trap 'kill $! 2>/dev/null; exit 0' TERM
	while :; do
		sleep 60 &
		wait $!
		curl -sf -o /dev/null -X POST -H "Authorization: Bearer $launcher" \
			"$broker/v1/jobs/$job/heartbeat" || say "heartbeat failed"
	done
) &
pids+=("$!")

"$tmp/relay" 0 "$channel" >"$tmp/relay.out" &
relay_pid=$!
pids+=("$relay_pid")
wait_for grep -q '^ready' "$tmp/relay.out" || die "the relay did not start"
rp=$(awk '/^ready/ {print $2}' "$tmp/relay.out")

url=http://soak.test:$np/f100
body=$(curl -sf --max-time 5 --proxy "http://127.0.0.1:$rp" "$url") ||
	die "no answer through the proxy: $(tail -3 "$tmp/proxy.log")"
[ ${#body} -eq 99 ] || die "through the proxy, not the file: $body"

# --- the load ------------------------------------------------------------------

printf 'wrk.path = "%s"\nwrk.headers["Host"] = "soak.test:%s"\n' "$url" "$np" \
	>"$tmp/soak.lua"
load() { # seconds, output file
	wrk -t2 -c"$conns" -d"$1s" --timeout "${timeout}s" --latency \
		-s "$tmp/soak.lua" "http://127.0.0.1:$rp/" >"$2" ||
		die "wrk failed: $(cat "$2")"
}
# The proxy's open and pooled connections, as its /healthz says.
held() {
	curl -sf "$control/healthz" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["connections"], d["pooled"])'
}
# Waits up to 60 s for the proxy to hold nothing; says what it held.
settle() {
	local h _
	for _ in $(seq 1 120); do
		h=$(held)
		[ "$h" = "0 0" ] && break
		sleep 0.5
	done
	sleep 1
	echo "$h"
}
decisions() { # allow|deny: the proxy's count so far
	curl -sf "$control/metrics" |
		awk -v d="decision=\"$1\"" 'index($0, "cordon_proxy_decisions_total{" d "}") == 1 {print $2}'
}

say "warm-up: $conns connections for $warm s"
load "$warm" "$tmp/warm.out"
say "warm-up: $(wrk_figures "$tmp/warm.out" | awk '{print $1}') answers; waiting for the proxy to hold nothing"
held0=$(settle)
sample start proxy="$proxy_pid" broker="$broker_pid"
allow0=$(decisions allow)
deny0=$(decisions deny)

say "soak: $conns connections for $secs s"
wrk -t2 -c"$conns" -d"${secs}s" --timeout "${timeout}s" --latency \
	-s "$tmp/soak.lua" "http://127.0.0.1:$rp/" >"$tmp/soak.out" &
lp=$!
pids+=("$lp")
# Half-way: the connections the proxy holds, its fds and RSS under load.
sleep $((secs / 2))
held_mid=$(held)
mid="$(fds "$proxy_pid") fds, $(rss_mib "$proxy_pid") MiB"
wait "$lp" || die "wrk failed: $(cat "$tmp/soak.out")"
read -r n bad e_conn e_read e_write e_time p50 p99 < <(wrk_figures "$tmp/soak.out")
allowed=$(($(decisions allow) - allow0))
denied=$(($(decisions deny) - deny0))
held1=$(settle)
sample end proxy="$proxy_pid" broker="$broker_pid"
rps=$(awk '/^Requests\/sec:/ {printf "%d", $2}' "$tmp/soak.out")
say "the proxy's decisions during the soak: $allowed allowed, $denied denied"

errors=$((bad + e_conn + e_read + e_write + e_time + denied))
soak_row "proxy held: open, pooled" "${held0// /, }" "${held1// /, }"
soak_row "  half-way through the soak" - "${held_mid// /, }"
soak_row "proxy half-way: fds, VmRSS" - "$mid"
soak_row "requests (per second)" - "$n ($rps/s)"
soak_row "latency p50 ms" - "$p50"
soak_row "latency p99 ms" - "$p99"
table "$conns connections through the proxy for $secs s" "$errors" \
	"non-2xx $bad; socket: connect $e_conn, read $e_read, write $e_write, timeout $e_time; denied $denied" \
	proxy broker
[ "$errors" -eq 0 ]
