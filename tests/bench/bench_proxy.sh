#!/usr/bin/env bash
# cordon-proxy as a job's forward proxy against Debian's squid
# (squid-openssl, ssl_bump), tinyproxy and mitmproxy, and against nginx
# direct, all on loopback, every server with one worker where it has a
# count (cordon-proxy is single-threaded; nginx, the upstream, has two):
#
#   plain HTTP, 100-byte file, 50 connections (wrk), keep-alive and a new
#   connection per request: cordon, squid, tinyproxy, nginx direct, and
#   nginx through the relay below (what the relay alone costs);
#   HTTPS terminated by the proxy (CONNECT, then TLS with a leaf of the
#   proxy's CA), 50 connections (tlsload.c), requests over kept-alive
#   tunnels and one new tunnel per request: cordon, squid ssl_bump,
#   mitmproxy;
#   resident memory with 1,000 idle terminated tunnels: cordon (target:
#   under 64 MiB), squid, mitmproxy;
#   injection (issue 18): the terminated path three ways, one after the
#   other on the same upstream and load, kept-alive and a tunnel per
#   request: plain (bench.test), with the job's crd_ token on a rule of
#   its audience (tok.test: one introspection a request), both in a job
#   that was released nothing, and on a rule that swaps that token for a
#   secret of the broker's (inject.test: the introspection and a release
#   a request, both cached by the proxy) in another;
#   instructions a request (part "instr", not run unless asked): the
#   inject part's three rows, kept-alive, with a second proxy run under
#   valgrind's callgrind, its counters zeroed after a warm-up and dumped
#   after a fixed count of answers: the proxy's instructions (Ir, user
#   space, its libraries included) a request, which the load does not
#   move, and the functions an injected request runs more than a plain
#   one (callgrind_diff.py);
#   transparent capture (issue 19): inside a real `cordon run` job (a
#   hatch and a launcher beside the broker and the proxy), tlsload through
#   HTTPS_PROXY (CONNECT to the launcher's 127.0.0.1:3128) and tlsload
#   ignoring it (bench.test from the job's resolver, its 127.3.x.y
#   captured), one after the other, kept-alive and a tunnel per request.
#
# cordon is measured the way a sandbox reaches it: through a relay
# (relay.c) from TCP 127.0.0.1 to the job's channel, as the launcher relays
# the sandbox's 127.0.0.1:3128; its decision log stays on (one JSON line
# per request to var/proxy/log/decisions.log and to stderr, a file here).
# The name bench.test resolves to 127.0.0.1 for everyone: a line in
# /etc/hosts for the peers (removed on exit), the same in cordon's
# hosts_file, where inject.test is 127.0.0.2 (no secret is bound to
# bench.test's host or address). Leaf keys are ECDSA P-256 everywhere
# (cordon's own; squid's and mitmproxy's take their CA's key, made P-256
# here), as is nginx's.
#
#   BENCH_SECONDS (default 10) per run
#   BENCH_BROKER_TMPFS=1  the broker's state (its sqlite database) on a
#                 tmpfs: its fsyncs cost nothing (to tell what the
#                 injection's audited release costs)
#   BENCH_ONLY    the parts to run, of "memory throughput inject capture
#                 instr" (default: all of them but instr)
#   BENCH_ROUNDS, BENCH_NEW_ROUNDS, BENCH_ROUND_SECONDS  the inject part's
#                 rounds, kept-alive (6) and a tunnel per request (2), each
#                 row of a round BENCH_SECONDS / 2 long; its figures are the
#                 median of the rounds' ratios (injected over plain, and
#                 over token, each within one round)
#   BENCH_PIN=1   the inject part with the proxy alone on CPU 1, the rest
#                 of the bench on CPU 0
#   BENCH_INSTR_REQUESTS (3000), BENCH_INSTR_CONNS (10 tunnels: under
#                 callgrind 50 would wait a second a request, and a loaded
#                 machine took some past the proxy's timeouts),
#                 BENCH_INSTR_WARM (20 on each tunnel), BENCH_INSTR_ROWS
#                 ("plain token inject"),
#                 BENCH_INSTR_TOP (15 functions), BENCH_INSTR_OUT=dir (the
#                 dumps and the profile kept there)
#   BENCH_SECRET  the injected secret's value (default: 40 random hex
#                 digits each run; the scan's work on an answer depends on
#                 the value's bytes: the same value for runs compared by
#                 instructions)
#   BENCH_TOKEN_CACHE  the proxy's token_cache_seconds (default: the
#                 proxy's own, 5; 0: every request's token introspected
#                 at the broker)
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_proxy
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
secs=${BENCH_SECONDS:-10}
only=" ${BENCH_ONLY:-memory throughput inject capture} "
part() { [[ $only == *" $1 "* ]]; }
# squid runs as "proxy" and nginx's workers as "nobody": they read here.
chmod 755 "$tmp"
mark='# cordon-bench'
# The idle tunnels' fifo closed and /etc/hosts as it was, then the rest.
cleanup() {
	exec 9>&- 2>/dev/null || true
	if grep -q "$mark\$" /etc/hosts 2>/dev/null; then
		# In place: /etc/hosts may be a mount point.
		grep -v "$mark\$" /etc/hosts >"$tmp/hosts.orig" || true
		cat "$tmp/hosts.orig" >/etc/hosts
	fi
	bench_cleanup
}
trap cleanup EXIT
need wrk nginx squid tinyproxy mitmdump curl cc openssl python3
need_bin cordon-broker cordon-proxy
! part capture || need_bin cordon cordon-hatch

cpu_ticks() { # pid: its and its children's user + system time, in ticks
	local p t=0
	for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# 1,000 tunnels and their upstreams: two descriptors each, in every process.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 4096 ] || die "ulimit -n $(ulimit -n): need 4096"

cc -O2 -o "$tmp/relay" "$here/relay.c"
cc -O2 -o "$tmp/tlsload" "$here/tlsload.c" -lssl -lcrypto -lpthread

# --- names, certificates, the upstream ---------------------------------------

if ! getent hosts bench.test >/dev/null; then
	# bench.test alone: the proxy reads /etc/hosts before its
	# hosts_file, which puts inject.test elsewhere.
	echo "127.0.0.1 bench.test $mark" >>/etc/hosts ||
		die "cannot add bench.test to /etc/hosts"
fi
[ "$(getent hosts bench.test | awk '{print $1}')" = 127.0.0.1 ] ||
	die "bench.test does not resolve to 127.0.0.1"
# inject.test on an address of its own (nginx listens there too): the
# proxy scans every job's answers from a host or address a secret was
# injected at (proxy/guard.c), so the plain and token rows go to a name
# and an address no secret is bound to, and measure the plain path.
printf '127.0.0.1 bench.test tok.test\n127.0.0.2 inject.test\n' >"$tmp/hosts"

# One P-256 CA: it signs nginx's certificate, and squid and mitmproxy mint
# their leaves with it (cordon makes its own CA per job).
mkdir -p "$tmp/ca"
(
	cd "$tmp/ca"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out ca.key 2>/dev/null
	openssl req -x509 -new -key ca.key -subj "/CN=cordon bench CA" \
		-days 2 -out ca.pem -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out bench.key 2>/dev/null
	openssl req -new -key bench.key -subj "/CN=bench.test" \
		-out bench.csr 2>/dev/null
	printf 'subjectAltName=DNS:bench.test,DNS:tok.test,DNS:inject.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext
	openssl x509 -req -in bench.csr -CA ca.pem -CAkey ca.key \
		-CAcreateserial -days 2 -extfile ext -out bench.pem 2>/dev/null
)
chmod 644 "$tmp/ca"/*

np=$(free_port)
ntp=$(free_port)
mkdir -p "$tmp/www"
head -c 99 /dev/zero | tr '\0' x >"$tmp/www/f100"
echo >>"$tmp/www/f100"
chmod 755 "$tmp/www" && chmod 644 "$tmp/www/f100"
nginx_start 8192 "
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	server {
		listen 127.0.0.1:$np;
		listen unix:$tmp/nginx/nginx.sock;
		listen 127.0.0.1:$ntp ssl;
		listen 127.0.0.2:$ntp ssl;
		ssl_certificate $tmp/ca/bench.pem;
		ssl_certificate_key $tmp/ca/bench.key;
		root $tmp/www;
	}"
wait_for curl -sf "http://bench.test:$np/f100" || die "nginx did not start"
wait_for curl -sf --cacert "$tmp/ca/ca.pem" "https://bench.test:$ntp/f100" ||
	die "nginx (TLS) did not start"

# --- cordon: broker, proxy, a job, its channel, the relay --------------------

mkdir -p "$tmp/broker" "$tmp/proxy"
# A long lease: the benchmark sends no heartbeats.
echo '{"lease_seconds": 3600}' >"$tmp/broker/broker.json"
if [ "${BENCH_BROKER_TMPFS:-0}" = 1 ]; then
	mkdir -p "$tmp/broker/var"
	mount -t tmpfs -o size=256m,mode=0700 tmpfs "$tmp/broker/var"
fi
start_service broker "$tmp/broker" "$bin/cordon-broker" \
	--config "$tmp/broker/broker.json"
broker=$addr
broker_pid=$started
keys=$tmp/broker/var/broker/keys
admin=$(cat "$keys/admin.key")
launcher=$(cat "$keys/launcher.key")

token_cache=
if [[ -n ${BENCH_TOKEN_CACHE:-} ]]; then
	token_cache=", \"token_cache_seconds\": $BENCH_TOKEN_CACHE"
fi
cat >"$tmp/proxy/proxy.json" <<CONF
{"broker": "$broker", "broker_key_file": "$keys/verifier.key",
 "launcher_key_file": "$keys/launcher.key",
 "upstream_ca_file": "$tmp/ca/ca.pem", "hosts_file": "$tmp/hosts"$token_cache}
CONF
start_service proxy "$tmp/proxy" "$bin/cordon-proxy" \
	--config "$tmp/proxy/proxy.json"
cordon_pid=$started
control=$addr

# The secret the inject.test rule swaps the job's token for.
curl -sf -X PUT -H "Authorization: Bearer $admin" \
	"$broker/v1/secrets/bench-key" \
	-d "{\"value\": \"${BENCH_SECRET:-$(openssl rand -hex 20)}\"}" >/dev/null ||
	die "the secret was refused"
# Three names for nginx's one TLS port: bench.test plainly, tok.test
# wanting a token of its audience, inject.test swapping it for the secret.
cat >"$tmp/manifest.json" <<JSON
{"name": "bench", "command": ["/bin/true"],
 "capabilities": [{"name": "bench.call", "audience": "bench",
   "params": {"t": ["1"]}, "ttl_seconds": 900, "reason": "bench"}],
 "egress": [
  {"host": "bench.test", "port": $np, "methods": ["GET"],
   "paths": ["/"], "reason": "bench", "allow_cidrs": ["127.0.0.0/8"]},
  {"host": "bench.test", "port": $ntp, "tls": "terminate",
   "methods": ["GET"], "paths": ["/"], "reason": "bench tls",
   "allow_cidrs": ["127.0.0.0/8"]},
  {"host": "tok.test", "port": $ntp, "tls": "terminate",
   "methods": ["GET"], "paths": ["/"], "reason": "bench token",
   "allow_cidrs": ["127.0.0.0/8"], "audience": "bench"},
  {"host": "inject.test", "port": $ntp, "tls": "terminate",
   "methods": ["GET"], "paths": ["/"], "reason": "bench injection",
   "allow_cidrs": ["127.0.0.0/8"], "audience": "bench",
   "inject": {"secret": "bench-key", "header": "X-Api-Key",
    "format": "Key {secret}", "capability": "bench.call"}}],
 "limits": {"wall_seconds": 3600}}
JSON
curl -sf -X PUT -H "Authorization: Bearer $admin" \
	"$broker/v1/manifests/bench" -d @"$tmp/manifest.json" >/dev/null ||
	die "manifest refused: $(curl -s -X PUT -H "Authorization: Bearer $admin" \
		"$broker/v1/manifests/bench" -d @"$tmp/manifest.json")"
job=$(curl -sf -X POST -H "Authorization: Bearer $launcher" \
	"$broker/v1/jobs" -d '{"manifest": "bench"}' |
	json_get job)
curl -sf -X POST -H "Authorization: Bearer $launcher" \
	"$control/v1/jobs/$job" >"$tmp/proxy/channel.json" ||
	die "no channel for $job: $(tail -5 "$tmp/proxy.log")"
channel=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["channel"])' "$tmp/proxy/channel.json")
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ca_pem"], end="")' \
	"$tmp/proxy/channel.json" >"$tmp/proxy/job-ca.pem"

relay() { # name, unix socket path: starts a relay (relay_pid), its port in $tmp/name
	"$tmp/relay" 0 "$2" >"$tmp/$1" &
	relay_pid=$!
	pids+=("$relay_pid")
	wait_for grep -q '^ready' "$tmp/$1" || die "relay to $2 did not start"
}
relay relay.cordon "$channel"
relay relay.nginx "$tmp/nginx/nginx.sock"
relay_nginx_pid=$relay_pid
rp=$(awk '/^ready/ {print $2}' "$tmp/relay.cordon")
rnp=$(awk '/^ready/ {print $2}' "$tmp/relay.nginx")

# --- the peers ---------------------------------------------------------------

# squid: one worker, no cache, no access log; an ssl_bump port whose leaves
# its certificate generator mints with the bench CA, and which verifies
# nginx against that CA as cordon does.
sp=$(free_port)
sbp=$(free_port)
sq=$tmp/squid
mkdir -p "$sq"
cp "$tmp/ca/ca.pem" "$tmp/ca/ca.key" "$sq/"
/usr/lib/squid/security_file_certgen -c -s "$sq/ssl_db" -M 16MB >/dev/null
cat >"$sq/squid.conf" <<CONF
workers 1
http_port 127.0.0.1:$sp
http_port 127.0.0.1:$sbp ssl-bump tls-cert=$sq/ca.pem tls-key=$sq/ca.key generate-host-certificates=on dynamic_cert_mem_cache_size=16MB
sslcrtd_program /usr/lib/squid/security_file_certgen -s $sq/ssl_db -M 16MB
sslcrtd_children 4 startup=1 idle=1
acl step1 at_step SslBump1
ssl_bump peek step1
ssl_bump bump all
tls_outgoing_options cafile=$tmp/ca/ca.pem
http_access allow localhost
http_access deny all
cache deny all
access_log none
cache_log $sq/cache.log
pid_filename none
coredump_dir $sq
hosts_file $tmp/hosts
visible_hostname bench
max_filedescriptors 16384
shutdown_lifetime 0 seconds
cache_effective_user proxy
CONF
chown -R proxy:proxy "$sq"
squid -N -f "$sq/squid.conf" 2>"$sq/stderr.log" &
squid_pid=$!
pids+=("$squid_pid")

# tinyproxy: its defaults (a thread per connection, up to MaxClients).
tp=$(free_port)
mkdir -p "$tmp/tinyproxy"
chown nobody "$tmp/tinyproxy"
cat >"$tmp/tinyproxy/tinyproxy.conf" <<CONF
User nobody
Group nogroup
Port $tp
Listen 127.0.0.1
Timeout 600
MaxClients 100
LogLevel Critical
LogFile "$tmp/tinyproxy/tinyproxy.log"
DisableViaHeader Yes
Allow 127.0.0.1
CONF
tinyproxy -d -c "$tmp/tinyproxy/tinyproxy.conf" \
	>"$tmp/tinyproxy/stderr.log" 2>&1 &
tiny_pid=$!
pids+=("$tiny_pid")

# mitmproxy: mitmdump, quiet, its CA the bench CA (a P-256 key: its
# leaves reuse it), verifying nginx against that CA.
mp=$(free_port)
mkdir -p "$tmp/mitm"
cat "$tmp/ca/ca.key" "$tmp/ca/ca.pem" >"$tmp/mitm/mitmproxy-ca.pem"
mitmdump -q --listen-host 127.0.0.1 -p "$mp" --set confdir="$tmp/mitm" \
	--set ssl_verify_upstream_trusted_ca="$tmp/ca/ca.pem" \
	--set termlog_verbosity=error --set flow_detail=0 \
	>"$tmp/mitm/stderr.log" 2>&1 &
mitm_pid=$!
pids+=("$mitm_pid")

# Every path answers the file before anything is measured; HTTPS with
# the certificate checked against the CA that minted the proxy's leaf.
url=http://bench.test:$np/f100
surl=https://bench.test:$ntp/f100
fetch() { # proxy port, url, [cacert]
	local body
	body=$(curl -sf --max-time 5 --proxy "http://127.0.0.1:$1" \
		${3:+--cacert "$3"} "$2") && [ ${#body} -eq 99 ]
}
wait_for fetch "$rp" "$url" || die "cordon (plain) failed: $(tail -3 "$tmp/proxy.log")"
wait_for fetch "$rp" "$surl" "$tmp/proxy/job-ca.pem" ||
	die "cordon (TLS) failed: $(tail -3 "$tmp/proxy.log")"
wait_for fetch "$sp" "$url" || die "squid failed: $(cat "$sq/cache.log")"
wait_for fetch "$sbp" "$surl" "$tmp/ca/ca.pem" ||
	die "squid ssl_bump failed: $(tail -5 "$sq/cache.log")"
wait_for fetch "$tp" "$url" ||
	die "tinyproxy failed: $(cat "$tmp/tinyproxy/stderr.log")"
wait_for fetch "$mp" "$surl" "$tmp/ca/ca.pem" ||
	die "mitmproxy failed: $(cat "$tmp/mitm/stderr.log")"
wait_for curl -sf -H "Host: bench.test:$np" "http://127.0.0.1:$rnp/f100" ||
	die "relay to nginx failed"

# --- memory: 1,000 idle terminated tunnels ------------------------------------

# Each proxy, before any other load, holds 1,000 tunnels that have done
# CONNECT and the TLS handshake (and so each an upstream TLS connection
# too), then idle; twice, closing them in between. The figure is the
# second: a fresh heap counts buffers reserved but never written as not
# resident, and a proxy that has run a while has no such heap.
idle_rss() { # proxy port, pid: sets rss (MiB)
	local ready
	rm -f "$tmp/hold"
	mkfifo "$tmp/hold"
	"$tmp/tlsload" -m idle -c 1000 -d 120 -x "$1" -h bench.test \
		-p "$ntp" <"$tmp/hold" >"$tmp/idle.out" &
	local lp=$!
	exec 9>"$tmp/hold"
	for _ in $(seq 1 600); do
		grep -q '^ready' "$tmp/idle.out" && break
		sleep 0.1
	done
	ready=$(awk '/^ready/ {print $2}' "$tmp/idle.out")
	[ "${ready:-0}" -eq 1000 ] ||
		die "idle tunnels on port $1: $(cat "$tmp/idle.out")"
	sleep 1
	rss=$(rss_mib "$2")
	exec 9>&-
	wait "$lp" || true
	sleep 1 # the proxies see the 1,000 closes
}
idle_twice() { # name, proxy port, pid: sets rss
	local r0 r1
	r0=$(rss_mib "$3")
	idle_rss "$2" "$3"
	r1=$rss
	idle_rss "$2" "$3"
	say "$1 RSS (MiB): $r0 idle, $r1 with 1000 tunnels," \
		"$rss with 1000 tunnels again"
}
if part memory; then
	idle_twice cordon "$rp" "$cordon_pid"
	c_rss=$rss
	idle_twice squid "$sbp" "$squid_pid"
	s_rss=$rss
	idle_twice mitmproxy "$mp" "$mitm_pid"
	m_rss=$rss
fi

# --- throughput ----------------------------------------------------------------

lua() { # path, host header, [close]: a wrk script
	printf 'wrk.path = "%s"\nwrk.headers["Host"] = "%s"\n' "$1" "$2"
	[ -z "${3:-}" ] || printf 'wrk.headers["Connection"] = "close"\n'
}
lua "$url" "bench.test:$np" >"$tmp/proxy.lua"
lua "$url" "bench.test:$np" close >"$tmp/proxy-close.lua"
lua /f100 "bench.test:$np" >"$tmp/direct.lua"
lua /f100 "bench.test:$np" close >"$tmp/direct-close.lua"

# The share of one core a process used since cpu_mark.
cpu_mark() { t0=$(cpu_ticks "$1"); }
cpu_since() { # pid
	echo "$(cat "/proc/$1/comm") $(((($(cpu_ticks "$1") - t0) * 100 / $(getconf CLK_TCK)) / secs))%"
}

# wrk's 200 answers per second (answers that were not 200 are taken out
# and reported), and the CPU the server used.
wrk_rps() { # label, lua, port, server pid
	local out
	cpu_mark "$4"
	out=$(wrk -t2 -c50 -d"${secs}s" -s "$2" "http://127.0.0.1:$3/")
	awk -v label="$1" -v cpu="$(cpu_since "$4")" '
		/requests in/ {n = $1}
		/^Requests\/sec:/ {rps = $2}
		/Non-2xx or 3xx responses:/ {bad = $NF}
		/Socket errors:/ {errs = $0}
		END {
			ok = (n > 0) ? rps * (n - bad) / n : 0
			printf "%s: %.1f req/s (%d answers, %d not 200%s), CPU: %s of a core\n",
			    label, ok, n, bad, errs ? "; " errs : "", cpu > "/dev/stderr"
			printf "%.1f\n", ok
		}' <<<"$out"
}
tls_rps() { # label, mode, port, server pid
	local out
	cpu_mark "$4"
	out=$("$tmp/tlsload" -m "$2" -c 50 -t 2 -d "$secs" -x "$3" \
		-h bench.test -p "$ntp" -u /f100)
	say "$1: $out, CPU: $(cpu_since "$4") of a core"
	awk '{print $8}' <<<"$out"
}

decisions() { wc -l <"$tmp/proxy/var/proxy/log/decisions.log"; }
d0=$(decisions)

if part throughput; then
	c_ka=$(wrk_rps "cordon, keep-alive" "$tmp/proxy.lua" "$rp" "$cordon_pid")
	s_ka=$(wrk_rps "squid, keep-alive" "$tmp/proxy.lua" "$sp" "$squid_pid")
	t_ka=$(wrk_rps "tinyproxy, keep-alive" "$tmp/proxy.lua" "$tp" "$tiny_pid")
	n_ka=$(wrk_rps "nginx direct, keep-alive" "$tmp/direct.lua" "$np" "$nginx_pid")
	r_ka=$(wrk_rps "nginx via relay, keep-alive" "$tmp/direct.lua" "$rnp" "$relay_nginx_pid")

	c_nk=$(wrk_rps "cordon, new connections" "$tmp/proxy-close.lua" "$rp" "$cordon_pid")
	s_nk=$(wrk_rps "squid, new connections" "$tmp/proxy-close.lua" "$sp" "$squid_pid")
	t_nk=$(wrk_rps "tinyproxy, new connections" "$tmp/proxy-close.lua" "$tp" "$tiny_pid")
	n_nk=$(wrk_rps "nginx direct, new connections" "$tmp/direct-close.lua" "$np" "$nginx_pid")
	r_nk=$(wrk_rps "nginx via relay, new connections" "$tmp/direct-close.lua" "$rnp" "$relay_nginx_pid")

	c_tk=$(tls_rps "cordon, TLS keep-alive" keepalive "$rp" "$cordon_pid")
	s_tk=$(tls_rps "squid, TLS keep-alive" keepalive "$sbp" "$squid_pid")
	m_tk=$(tls_rps "mitmproxy, TLS keep-alive" keepalive "$mp" "$mitm_pid")

	c_tn=$(tls_rps "cordon, TLS new tunnels" new "$rp" "$cordon_pid")
	s_tn=$(tls_rps "squid, TLS new tunnels" new "$sbp" "$squid_pid")
	m_tn=$(tls_rps "mitmproxy, TLS new tunnels" new "$mp" "$mitm_pid")

	d1=$(decisions)
	# Denials are expected only from tunnels tlsload leaves mid-handshake when
	# its time is up (kind mitm, reason tls).
	denied=$(tail -n +$((d0 + 1)) "$tmp/proxy/var/proxy/log/decisions.log" |
		grep '"decision":"deny"' |
		grep -o '"kind":"[a-z]*".*"reason":"[a-z_]*"' |
		sed 's/"kind":"\([a-z]*\)".*"reason":"\([a-z_]*\)"/\1:\2/' |
		sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}' ||
		true)
	say "cordon decision log: $((d1 - d0)) lines during the runs," \
		"denials: ${denied:-none}; RSS after the runs $(rss_mib "$cordon_pid") MiB"
fi

if part throughput; then
	what="proxy: HTTP keep-alive, 50 conns, 100 B"
	result "$what" req/s higher "$c_ka" squid "$s_ka"
	result "$what" req/s higher "$c_ka" tinyproxy "$t_ka"
	result "$what" req/s higher "$c_ka" nginx "$n_ka"
	result "$what" req/s higher "$c_ka" nginx-relay "$r_ka"
	what="proxy: HTTP new conn per request, 50 conns"
	result "$what" req/s higher "$c_nk" squid "$s_nk"
	result "$what" req/s higher "$c_nk" tinyproxy "$t_nk"
	result "$what" req/s higher "$c_nk" nginx "$n_nk"
	result "$what" req/s higher "$c_nk" nginx-relay "$r_nk"
	what="proxy: HTTPS terminated, kept-alive tunnels"
	result "$what" req/s higher "$c_tk" squid "$s_tk"
	result "$what" req/s higher "$c_tk" mitmproxy "$m_tk"
	what="proxy: HTTPS terminated, tunnel per request"
	result "$what" req/s higher "$c_tn" squid "$s_tn"
	result "$what" req/s higher "$c_tn" mitmproxy "$m_tn"
fi
if part memory; then
	what="proxy: RSS, 1000 idle TLS tunnels"
	result "$what" MiB lower "$c_rss" target 64
	result "$what" MiB lower "$c_rss" squid "$s_rss"
	result "$what" MiB lower "$c_rss" mitmproxy "$m_rss"
fi

# --- injection: the terminated path with a token, and with the swap -----------

# One run of tlsload through a proxy port or none (""), $rsecs seconds
# long, the CPU the proxy and the broker used: prints tlsload's line
# ("requests N errors E seconds S rps R p50_ms P p99_ms Q") and says it
# with the label.
share() { # ticks since, pid, seconds: the share of a core, in %
	awk -v d="$(($(cpu_ticks "$2") - $1))" -v hz="$(getconf CLK_TCK)" -v s="$3" \
		'BEGIN {printf "%.0f", d * 100 / hz / s}'
}
tls_fig() { # label, mode, proxy port, host, [header]
	local out b0 p0 us0
	b0=$(cpu_ticks "$broker_pid") p0=$(cpu_ticks "$cordon_pid")
	us0=$(awk '{print $14, $15}' "/proc/$cordon_pid/stat")
	if [ "${BENCH_SYSCALLS:-0}" = 1 ]; then
		perf stat -x, -o "$tmp/perf.$$" -p "$cordon_pid" \
			-e "$perf_events" -- sleep "$rsecs" 2>/dev/null &
		perf_pid=$!
	fi
	if [ -n "${BENCH_PERF_RECORD:-}" ]; then
		perf record -g -o "$BENCH_PERF_RECORD/perf.$2.$4.$(date +%s).data" -p "$cordon_pid" \
			-- sleep "$rsecs" 2>/dev/null >/dev/null &
		rec_pid=$!
	fi
	out=$(${pin_load:+taskset -c "$pin_load"} "$tmp/tlsload" -m "$2" -c 50 \
		-t 2 -d "$rsecs" ${3:+-x "$3"} -h "$4" -p "$ntp" -u /f100 ${5:+-H "$5"})
	[ -z "${BENCH_PERF_RECORD:-}" ] || wait "$rec_pid" || true
	if [ "${BENCH_SYSCALLS:-0}" = 1 ]; then
		wait "$perf_pid" || true
		local reqs per
		reqs=$(field requests <<<"$out")
		per=$(awk -F, -v n="$reqs" \
			'$3 == "task-clock" && n > 0 {printf "cpu_us %.1f ", $1 * 1000 / n}
			$3 ~ /sys_enter/ && n > 0 && $1 > 0 {sub(/.*sys_enter_?/, "", $3);
			printf "%s %.2f ", ($3 == "" ? "syscalls" : $3), $1 / n}' "$tmp/perf.$$")
		say "$1: the proxy's, a request: $per"
		out="$out cpu_us $(field cpu_us <<<"$per")"
	fi
	# The proxy's user and system time a request (/proc, in ticks).
	out="$out $(awk -v a="$us0" -v hz="$(getconf CLK_TCK)" \
		-v n="$(field requests <<<"$out")" '{split(a, t, " ")
		printf "user_us %.1f sys_us %.1f", n ? ($14 - t[1]) * 1e6 / hz / n : 0,
		    n ? ($15 - t[2]) * 1e6 / hz / n : 0}' "/proc/$cordon_pid/stat")"
	say "$1: $out, CPU: cordon-proxy $(share "$p0" "$cordon_pid" "$rsecs")%," \
		"cordon-broker $(share "$b0" "$broker_pid" "$rsecs")% of a core"
	echo "$out"
}
# BENCH_SYSCALLS=1: the proxy's CPU time (cpu_us) and system calls
# (perf stat, all its threads) while tlsload runs, each divided by its
# requests, and its user and system time apart (user_us, sys_us, from
# /proc in ticks: what the injection adds should be user time); BENCH_PERF_RECORD=dir: a perf record -g of the proxy a run.
perf_events=task-clock,raw_syscalls:sys_enter
for e in read readv write writev sendmsg recvfrom epoll_wait epoll_ctl \
	epoll_pwait timerfd_settime getrandom openat close accept4 fdatasync fsync; do
	perf_events+=,syscalls:sys_enter_$e
done
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}'; }
injections() {
	curl -sf "$control/metrics" | awk '$1 == "cordon_proxy_injections_total" {print $2}'
}
# The mean of a figure over the rounds' lines.
mean_of() { # key, file
	field "$1" <"$2" | awk '{s += $1; n++} END {printf "%.2f", n ? s / n : 0}'
}
# Each round's ratio of a figure, line by line of two files of the same
# rounds (a figure where higher is better: a over b; lower: b over a).
ratios() { # key, better, file a, file b
	paste -d' ' <(field "$1" <"$3") <(field "$1" <"$4") |
		awk -v hi="$([ "$2" = higher ] && echo 1)" '$1 > 0 && $2 > 0 {
			printf "%.3f\n", hi ? $1 / $2 : $2 / $1 }'
}
# The median of the numbers on stdin (the mean of the middle two of an
# even count).
median_of() {
	sort -g | awk '{a[NR] = $1} END {
		if (!NR) print 0
		else if (NR % 2) printf "%.3f", a[(NR + 1) / 2]
		else printf "%.3f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# The rounds: BENCH_ROUNDS kept-alive (default 6) and BENCH_NEW_ROUNDS
# with a tunnel per request (default 2), each of the three rows in turn,
# every other round in the reverse order (plain token inject, inject token
# plain, ...), each row BENCH_ROUND_SECONDS long (default half of
# BENCH_SECONDS). The figures are the median of the rounds' ratios, each
# round's injected row over the same round's plain (or token) row: the
# machine's drift between rounds falls on both sides of each ratio.
# BENCH_PIN=1: the proxy alone on CPU 1, tlsload, nginx, the relays and
# the broker on CPU 0 (taskset; everything else on the machine is left
# where it is).
rsecs=${BENCH_ROUND_SECONDS:-$(awk -v s="$secs" 'BEGIN {print s / 2}')}
pin_load=
pin() { # cpu, pid: the process, its threads and its children
	local p
	for p in "$2" $(cat /proc/"$2"/task/*/children 2>/dev/null); do
		taskset -a -cp "$1" "$p" >/dev/null 2>&1 || say "taskset $1 $p failed"
	done
}

# A job's token of bench.call, minted on its channel as a job does
# (broker.cordon, through the proxy).
mint() { # relay port
	curl -sf --max-time 60 --proxy "http://127.0.0.1:$1" -X POST \
		-H 'Content-Type: application/json' \
		-d '{"capability": "bench.call", "params": {"t": "1"}}' http://broker.cordon/v1/token |
		json_get access_token
}

if part inject; then
	# The plain and token rows in a second job of the manifest, to which
	# nothing is released: once a job was released a value, every answer
	# it reads is scanned for it (credentials.md), so the first job's
	# plain rows would pay for the scan too.
	job2=$(curl -sf -X POST -H "Authorization: Bearer $launcher" \
		"$broker/v1/jobs" -d '{"manifest": "bench"}' | json_get job)
	curl -sf -X POST -H "Authorization: Bearer $launcher" \
		"$control/v1/jobs/$job2" >"$tmp/proxy/channel2.json" ||
		die "no channel for $job2: $(tail -5 "$tmp/proxy.log")"
	relay relay.cordon2 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["channel"])' "$tmp/proxy/channel2.json")"
	rp2=$(awk '/^ready/ {print $2}' "$tmp/relay.cordon2")
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ca_pem"], end="")' \
		"$tmp/proxy/channel2.json" >"$tmp/proxy/job2-ca.pem"
	tok=$(mint "$rp") || die "no token: $(tail -3 "$tmp/proxy.log")"
	tok2=$(mint "$rp2") || die "no token: $(tail -3 "$tmp/proxy.log")"
	auth="Authorization: Bearer $tok" auth2="Authorization: Bearer $tok2"
	for h in tok.test inject.test; do
		body=$(curl -sf --max-time 5 --proxy "http://127.0.0.1:$rp" \
			--cacert "$tmp/proxy/job-ca.pem" -H "$auth" \
			"https://$h:$ntp/f100") || body=
		[ ${#body} -eq 99 ] ||
			die "cordon ($h) failed: $(tail -3 "$tmp/proxy.log")"
	done
	body=$(curl -sf --max-time 5 --proxy "http://127.0.0.1:$rp2" \
		--cacert "$tmp/proxy/job2-ca.pem" -H "$auth2" \
		"https://tok.test:$ntp/f100") || body=
	[ ${#body} -eq 99 ] || die "cordon (job 2) failed: $(tail -3 "$tmp/proxy.log")"
	i0=$(injections)
	if [ "${BENCH_PIN:-0}" = 1 ]; then
		[ "$(nproc)" -ge 2 ] || die "BENCH_PIN=1 needs two CPUs"
		pin 1 "$cordon_pid"
		for p in "$nginx_pid" "$broker_pid" "${pids[@]}"; do
			[ "$p" = "$cordon_pid" ] || pin 0 "$p"
		done
		pin_load=0
		say "pinned: cordon-proxy on CPU 1, the rest of the bench on CPU 0"
	fi
	rounds=()
	for ((k = 0; k < ${BENCH_ROUNDS:-6}; k++)); do
		if ((k % 2)); then rounds+=("keepalive inject token plain")
		else rounds+=("keepalive plain token inject"); fi
	done
	for ((k = 0; k < ${BENCH_NEW_ROUNDS:-2}; k++)); do
		if ((k % 2)); then rounds+=("new inject token plain")
		else rounds+=("new plain token inject"); fi
	done
	for round in "${rounds[@]}"; do
		read -r mode vs <<<"$round"
		for v in $vs; do
			case $v in
			plain) h=bench.test a='' port=$rp2 ;;
			token) h=tok.test a=$auth2 port=$rp2 ;;
			inject) h=inject.test a=$auth port=$rp ;;
			esac
			tls_fig "cordon, TLS $mode, $v ($h)" "$mode" "$port" "$h" "$a" \
				>>"$tmp/inject.$mode.$v"
		done
	done
	n_inj=$(cat "$tmp"/inject.*.inject | field requests | awk '{s += $1} END {print s}')
	say "injections counted by the proxy: $(($(injections) - i0))," \
		"answers to inject.test: $n_inj"
	# The plain and token rows are not guarded (proxy/guard.c): their
	# host and address are bound to no secret. Else they measure the
	# scan too.
	say "bindings: $(curl -s -H "Authorization: Bearer $admin" \
		"$broker/v1/bindings")"
	if grep -qE '"host":"(bench|tok)\.test".*"guard":' \
		"$tmp/proxy/var/proxy/log/decisions.log"; then
		die "the plain or token rows were guarded (scanned)"
	fi
	for mode in keepalive new; do
		what="proxy: injection, kept-alive tunnels"
		[ "$mode" = keepalive ] || what="proxy: injection, tunnel per request"
		figs="rps p50_ms p99_ms"
		[ "${BENCH_SYSCALLS:-0}" != 1 ] || figs+=" cpu_us user_us sys_us"
		[ -s "$tmp/inject.$mode.plain" ] || continue
		n_r=$(wc -l <"$tmp/inject.$mode.plain")
		for f in $figs; do
			better=higher
			[ "$f" = rps ] || better=lower
			name=${f%_ms}
			[ "$name" != cpu_us ] || name="proxy CPU a request"
			[ "$name" != user_us ] || name="proxy user CPU a request"
			[ "$name" != sys_us ] || name="proxy system CPU a request"
			for peer in plain token; do
				r=$(ratios "$f" "$better" "$tmp/inject.$mode.inject" \
					"$tmp/inject.$mode.$peer")
				m=$(median_of <<<"$r")
				say "$what, $name, injected vs $peer by round" \
					"(>1: injected better): $(tr '\n' ' ' <<<"$r")median $m"
				label=terminated
				[ "$peer" = plain ] || label=token-only
				# The ratio itself against 1: ./tests/bench/run's
				# last column is then the median round's ratio.
				result "$what, $name, median of $n_r rounds' ratios" \
					ratio higher "$m" "$label" 1
			done
		done
	done
fi

# --- instructions a request: the proxy under callgrind ------------------------

# A second proxy of the same broker, configuration, upstream and manifest,
# run under callgrind (valgrind's instruction counter: no PMU is needed,
# and the count does not move with the machine's load). Its own two jobs,
# as the inject part's: plain and token rows in one that was released
# nothing, injected in the other. Each row: tlsload opens 10 kept-alive
# tunnels and makes BENCH_INSTR_WARM requests on each (handshakes, first
# requests, the release, the caches filled), all wait, the counters are
# zeroed, BENCH_INSTR_REQUESTS requests are made, all answers come, the
# counters are dumped; only then do the tunnels close. Instructions a
# request: the dump's Ir over the requests answered (tlsload's count,
# checked against the proxy's own allowed decisions). An idle window of
# the same proxy says what its timers cost a second with no request.
vg_wait_line() { # pattern, file, seconds, [pid that must live]
	local _
	for _ in $(seq 1 $((10 * $3))); do
		grep -q "$1" "$2" && return 0
		[ -z "${4:-}" ] || kill -0 "$4" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
vg_allows() {
	curl -sf --max-time 60 "$vg_control/metrics" |
		awk '$1 == "cordon_proxy_decisions_total{decision=\"allow\"}" {print $2}'
}
vg_dump() { # name: the counters since the last zero, in $vg/name.cg
	local f
	rm -f "$vg"/callgrind.out.*.[0-9]*
	callgrind_control --dump="$1" "$vg_pid" >/dev/null 2>&1 ||
		die "callgrind_control --dump failed"
	f=$(find "$vg" -maxdepth 1 -name 'callgrind.out.*.[0-9]*' | head -1)
	[ -n "$f" ] || die "no callgrind dump for $1"
	mv "$f" "$vg/$1.cg"
}
vg_ir() { # dump: its total Ir (totals: the sum of its cost lines, every thread)
	awk '$1 == "totals:" {print $2; exit}' "$1"
}
vg_job() { # name: a job with a channel at the callgrind proxy, its relay port in vp
	local j
	j=$(curl -sf -X POST -H "Authorization: Bearer $launcher" \
		"$broker/v1/jobs" -d '{"manifest": "bench"}' | json_get job)
	curl -sf --max-time 120 -X POST -H "Authorization: Bearer $launcher" \
		"$vg_control/v1/jobs/$j" >"$vg/$1.json" ||
		die "no channel for $j at the callgrind proxy: $(tail -5 "$tmp/proxy-vg.log")"
	relay "vg.$1" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["channel"])' "$vg/$1.json")"
	vp=$(awk '/^ready/ {print $2}' "$tmp/vg.$1")
}
vg_row() { # row, host, relay port, [header]: Ir a request in $vg/row.ir
	local out=$vg/$1.out gate=$vg/$1.gate a0 a1 n e ir lp
	rm -f "$gate"
	mkfifo "$gate"
	"$tmp/tlsload" -m keepalive -c "$vg_conns" -t 2 -d 7200 -w "$vg_warm" \
		-n "$vg_n" -x "$3" -h "$2" -p "$ntp" -u /f100 ${4:+-H "$4"} \
		<"$gate" >"$out" &
	lp=$!
	pids+=("$lp")
	exec 8>"$gate"
	vg_wait_line '^warm' "$out" 3600 "$lp" || die "$1: no warm-up: $(cat "$out")"
	! grep -q '^warm.*timeout' "$out" || die "$1: the warm-up timed out"
	a0=$(vg_allows)
	callgrind_control --zero "$vg_pid" >/dev/null 2>&1 ||
		die "callgrind_control --zero failed"
	echo go >&8
	vg_wait_line '^requests' "$out" 7200 "$lp" || die "$1: no figures: $(cat "$out")"
	vg_dump "$1"
	a1=$(vg_allows)
	exec 8>&-
	wait "$lp" || true
	n=$(grep '^requests' "$out" | field requests)
	e=$(grep '^requests' "$out" | field errors)
	if [ "$e" != 0 ] || [ "$n" != "$vg_n" ]; then
		die "$1: $(grep '^requests' "$out") (wanted $vg_n requests, 0 errors)"
	fi
	[ $((a1 - a0)) = "$n" ] ||
		die "$1: the proxy allowed $((a1 - a0)) requests in the window, tlsload counted $n"
	ir=$(vg_ir "$vg/$1.cg")
	awk -v ir="$ir" -v n="$n" 'BEGIN {printf "%.1f\n", ir / n}' >"$vg/$1.ir"
	say "instr $1 ($2): $(grep '^requests' "$out"), the proxy's Ir" \
		"$ir, $(cat "$vg/$1.ir") a request"
}

if part instr; then
	need valgrind callgrind_control callgrind_annotate
	vg=$tmp/vg vg_n=${BENCH_INSTR_REQUESTS:-3000} vg_warm=${BENCH_INSTR_WARM:-20}
	vg_conns=${BENCH_INSTR_CONNS:-10}
	mkdir -p "$vg"
	# The caches as long as they go: at the native proxy's 10,000
	# requests a second a 5 s token cache is one introspection (of each
	# tunnel's token, ~50) in 50,000 requests; under callgrind's ~100 a
	# second it would be one in 500, and its broker calls would count
	# for tenfold their share of a request. The broker calls still in a
	# window are counted (callgrind_diff -c).
	python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))
c.update(token_cache_seconds=60, inject_cache_seconds=3600)
json.dump(c, open(sys.argv[2], "w"))' "$tmp/proxy/proxy.json" "$vg/proxy.json"
	# valgrind 3.19 cannot run a seccomp filter: noseccomp.c says why
	# the proxy here runs without one.
	cc -O2 -shared -fPIC -o "$tmp/noseccomp.so" "$here/noseccomp.c"
	(cd "$vg" && LD_PRELOAD=$tmp/noseccomp.so exec valgrind --tool=callgrind \
		--callgrind-out-file="$vg/callgrind.out.%p" \
		"$bin/cordon-proxy" --config "$vg/proxy.json" \
		--listen 127.0.0.1:0) 2>"$tmp/proxy-vg.log" &
	vg_pid=$!
	pids+=("$vg_pid")
	vg_wait_line '"event":"listening"' "$tmp/proxy-vg.log" 300 "$vg_pid" ||
		die "the proxy under callgrind did not start: $(tail -5 "$tmp/proxy-vg.log")"
	vg_control=http://$(listening "$tmp/proxy-vg.log")
	vg_job inject
	vg_rp=$vp
	vg_job plain
	vg_rp2=$vp
	vg_tok=$(mint "$vg_rp") || die "no token: $(tail -3 "$tmp/proxy-vg.log")"
	vg_tok2=$(mint "$vg_rp2") || die "no token: $(tail -3 "$tmp/proxy-vg.log")"
	# Idle: what the proxy does a second with no request (its timers, the
	# bindings list and feed), to set against the rows' windows.
	callgrind_control --zero "$vg_pid" >/dev/null 2>&1
	idle_t0=$(date +%s.%N)
	sleep "${BENCH_INSTR_IDLE:-20}"
	vg_dump idle
	idle_s=$(awk -v a="$idle_t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
	idle_rate=$(awk -v ir="$(vg_ir "$vg/idle.cg")" -v s="$idle_s" \
		'BEGIN {printf "%.0f", ir / s}')
	say "instr idle: $(vg_ir "$vg/idle.cg") Ir in ${idle_s} s: $idle_rate Ir a second"
	for row in ${BENCH_INSTR_ROWS:-plain token inject}; do
		case $row in
		plain) vg_row plain bench.test "$vg_rp2" ;;
		token) vg_row token tok.test "$vg_rp2" "Authorization: Bearer $vg_tok2" ;;
		inject) vg_row inject inject.test "$vg_rp" "Authorization: Bearer $vg_tok" ;;
		*) die "BENCH_INSTR_ROWS: $row is not plain, token or inject" ;;
		esac
		say "instr $row: the idle proxy's Ir over the window's" \
			"$(grep '^requests' "$vg/$row.out" | field seconds) s:" \
			"$(grep '^requests' "$vg/$row.out" | awk -v r="$idle_rate" \
				-v n="$vg_n" '{printf "%.1f", $6 * r / n}') a request"
	done
	# The inject.test rows guarded, the others not (as the inject part).
	if grep -qE '"host":"(bench|tok)\.test".*"guard":' \
		"$vg/var/proxy/log/decisions.log"; then
		die "the plain or token rows were guarded (scanned)"
	fi
	what="proxy: instructions a request, kept-alive tunnels (callgrind)"
	if [ -f "$vg/inject.ir" ] && [ -f "$vg/plain.ir" ]; then
		result "$what" Ir lower "$(cat "$vg/inject.ir")" terminated "$(cat "$vg/plain.ir")"
	fi
	if [ -f "$vg/inject.ir" ] && [ -f "$vg/token.ir" ]; then
		result "$what" Ir lower "$(cat "$vg/inject.ir")" token-only "$(cat "$vg/token.ir")"
	fi
	if [ -f "$vg/inject.cg" ] && [ -f "$vg/plain.cg" ]; then
		rows=(plain="$vg/plain.cg:$vg_n")
		[ ! -f "$vg/token.cg" ] || rows+=(token="$vg/token.cg:$vg_n")
		rows+=(inject="$vg/inject.cg:$vg_n")
		python3 "$here/callgrind_diff.py" -n "${BENCH_INSTR_TOP:-15}" \
			-c brokerclient_call -c call_done \
			"${rows[@]}" >"$vg/profile.txt" ||
			die "callgrind_diff failed"
		say "instr: the functions an injected request runs more than a plain one, Ir a request:"
		sed "s/^/$script: /" "$vg/profile.txt" >&2
		[ -z "${BENCH_INSTR_OUT:-}" ] || {
			mkdir -p "$BENCH_INSTR_OUT"
			cp "$vg"/*.cg "$vg"/*.ir "$vg/profile.txt" "$BENCH_INSTR_OUT/"
		}
	fi
fi

# --- transparent capture inside a real job -----------------------------------

if part capture; then
	[ "$(id -u)" = 0 ] || die "the capture part must run as root (namespaces)"
	mkdir -p "$tmp/hatch" "$tmp/launcher" "$tmp/in/repo"
	cp "$tmp/tlsload" "$tmp/in/repo/"
	cat >"$tmp/hatch/hatch.json" <<JSON
{"input_roots": ["$tmp/in"], "launcher_key_file": "$keys/launcher.key",
 "broker": "$broker", "broker_key_file": "$keys/launcher.key"}
JSON
	start_service hatch "$tmp/hatch" "$bin/cordon-hatch" \
		--config "$tmp/hatch/hatch.json"
	hatch=$addr
	# Two cores for the job: tlsload runs two threads.
	curl -sf -X PUT -H "Authorization: Bearer $admin" \
		"$broker/v1/manifests/bench-capture" -d '{"name": "bench-capture",
 "command": ["/bin/true"],
 "egress": [{"host": "bench.test", "port": '"$ntp"', "tls": "terminate",
   "methods": ["GET"], "paths": ["/"], "reason": "bench tls",
   "allow_cidrs": ["127.0.0.0/8"]}],
 "limits": {"wall_seconds": '"$((4 * secs + 120))"', "cpus": 2}}' \
		>/dev/null || die "the capture manifest was refused"
	cat >"$tmp/launcher/launcher.json" <<JSON
{"broker": "$broker", "proxy": "$control", "hatch": "$hatch",
 "launcher_key_file": "$keys/launcher.key",
 "state_dir": "$tmp/launcher/var", "uid_base": 270000}
JSON
	# Inside the job: through HTTPS_PROXY (the launcher's 127.0.0.1:3128,
	# CONNECT), then ignoring it (bench.test resolved by the job's
	# resolver, the connection captured), kept-alive then a tunnel per
	# request.
	run="./repo/tlsload -c 50 -t 2 -d $secs -h bench.test -p $ntp -u /f100"
	# Each twice, explicit captured captured explicit, so that the
	# machine's drift falls on both alike.
	job_script="for m in keepalive new; do
	echo \"explicit \$m \$($run -m \$m -x 3128)\"
	echo \"captured \$m \$($run -m \$m)\"
	echo \"captured \$m \$($run -m \$m)\"
	echo \"explicit \$m \$($run -m \$m -x 3128)\"
done"
	"$bin/cordon" run --config "$tmp/launcher/launcher.json" \
		--manifest bench-capture --input "$tmp/in/repo:repo" \
		-- /bin/sh -c "$job_script" >"$tmp/capture.out" 2>"$tmp/capture.err" ||
		die "cordon run failed: $(tail -5 "$tmp/capture.err")"
	grep -E '^(explicit|captured) ' "$tmp/capture.out" | while read -r l; do
		say "inside a job: $l"
	done
	say "cordon run: $(tail -1 "$tmp/capture.err")"
	for mode in keepalive new; do
		[ "$(grep -c "^[a-z]* $mode requests" "$tmp/capture.out")" = 4 ] ||
			die "no figures from the job: $(cat "$tmp/capture.out" "$tmp/capture.err" | tail -8)"
		what="launcher: capture, kept-alive tunnels"
		[ "$mode" = keepalive ] || what="launcher: capture, tunnel per request"
		figs="rps p50_ms p99_ms"
		[ "${BENCH_SYSCALLS:-0}" != 1 ] || figs+=" cpu_us"
		for f in $figs; do
			grep "^explicit $mode " "$tmp/capture.out" >"$tmp/explicit.$mode"
			grep "^captured $mode " "$tmp/capture.out" >"$tmp/captured.$mode"
			e=$(mean_of "$f" "$tmp/explicit.$mode")
			c=$(mean_of "$f" "$tmp/captured.$mode")
			u=req/s better=higher
			[ "$f" = rps ] || u=${f#*_} better=lower
			[ "$f" = rps ] || f=${f%_ms}
			[ "$f" != cpu_us ] || f="proxy CPU a request"
			result "$what, $f" "$u" "$better" "$c" HTTPS_PROXY "$e"
		done
	done
fi
