#!/usr/bin/env bash
# The README's first command. On a fresh Debian 12 machine: installs what
# cordon needs, builds it, starts cordon-broker, cordon-proxy and
# cordon-hatch on loopback with state under ./var/, serves the example
# APIs (deploy/examples/upstream.py: invoices on http://127.0.0.1:7780, a
# tickets API on https://127.0.0.1:7781 that wants its API key), and walks
# one job through the three planes: a capability, its egress through the
# proxy, the key the proxy adds, the revoke, and the patch of what it
# wrote.
#
#   ./deploy/quickstart.sh          install, build, (re)start, show
#   ./deploy/quickstart.sh stop     stop the services it started
#   ./deploy/quickstart.sh status   show whether they answer
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

services="broker proxy hatch"
declare -A port=([broker]=7701 [proxy]=7702 [hatch]=7703)
build=${CORDON_BUILD:-build}
var=$top/var

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '%s==> %s%s\n' "$bold" "$*" "$plain"; }
fail() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }

pidfile() { echo "$var/$1.pid"; }

# Writes stdin (a JSON object) to the configuration file $1; when the file
# is there already it is the user's: their keys and values are kept, and
# only the keys it lacks are added (a new setting the services need).
config_once() {
	local f=$1 fresh
	fresh=$(cat)
	if [ ! -e "$f" ]; then
		printf '%s\n' "$fresh" >"$f"
		return
	fi
	python3 - "$f" "$fresh" <<'PY' || fail "${f#"$top"/} is not a JSON object: fix it or remove it"
import json, os, sys
path, fresh = sys.argv[1], json.loads(sys.argv[2])
with open(path) as f:
    mine = json.load(f)
if not isinstance(mine, dict):
    sys.exit(1)
added = [k for k in fresh if k not in mine]
if added:
    mine.update({k: fresh[k] for k in added})
    with open(path + ".new", "w") as f:
        json.dump(mine, f, indent=1)
        f.write("\n")
    os.rename(path + ".new", path)
kept = [k for k in fresh if k not in added and mine[k] != fresh[k]]
if added or kept:
    print("  %s: yours, kept%s%s" % (path,
          "; added " + ", ".join(added) if added else "",
          "; your " + ", ".join(kept) if kept else ""))
PY
}

# The SHA-256 of a key file's key (without its newline), as the proxy's
# and the hatch's *_key_sha256 settings take it.
key_sha256() { printf %s "$(cat "$1")" | sha256sum | cut -c1-64; }

# The proxy calls the broker with the verifier key and knows the
# launcher's and the admin's keys (the admin's for its decision log:
# cordon logs) by their SHA-256 alone: it parses what jobs send all day,
# and either key acts at the broker. Written once the broker has written
# its keys; a file of an earlier quickstart loses the key files it named.
proxy_config() {
	local f=$var/proxy.json k=$var/broker/keys
	if [ -e "$f" ]; then
		python3 - "$f" "$k" <<'PY' || fail "${f#"$top"/} is not a JSON object: fix it or remove it"
import json, os, sys
path, keys = sys.argv[1], sys.argv[2]
with open(path) as f:
    mine = json.load(f)
if not isinstance(mine, dict):
    sys.exit(1)
ours = {"launcher_key_file": keys + "/launcher.key",
        "admin_key_file": keys + "/admin.key"}
gone = [s for s, v in ours.items() if mine.get(s) == v]
if gone:
    for s in gone:
        del mine[s]
    with open(path + ".new", "w") as f:
        json.dump(mine, f, indent=1)
        f.write("\n")
    os.rename(path + ".new", path)
    print("  %s: dropped %s (the proxy knows them by their hashes now)"
          % (path, ", ".join(gone)))
PY
	fi
	config_once "$f" <<JSON
{"broker": "http://127.0.0.1:7701",
 "broker_key_file": "$k/verifier.key",
 "launcher_key_sha256": "$(key_sha256 "$k/launcher.key")",
 "admin_key_sha256": "$(key_sha256 "$k/admin.key")",
 "launcher_uid": $(id -u), "hosts_file": "$var/hosts", "follower": "quickstart",
 "upstream_ca_file": "$var/upstream/trust.pem",
 "protected": ["127.0.0.1:${port[hatch]}"]}
JSON
}

# The hatch copies inputs only from where an operator says, answers only
# the launcher, whose key it knows by its SHA-256 alone (it checks the
# launcher's calls and makes none: a hatch taken over holds no key that
# creates and stops jobs), and reads each job's return policy from the
# broker with the hatch key, which can do nothing else there. Written once
# the broker has written its keys; a file of an earlier quickstart loses
# the launcher_key_file it named.
hatch_config() {
	local f=$var/hatch.json k=$var/broker/keys
	if [ -e "$f" ]; then
		python3 - "$f" "$k/launcher.key" <<'PY' || fail "${f#"$top"/} is not a JSON object: fix it or remove it"
import json, os, sys
path, key = sys.argv[1], sys.argv[2]
with open(path) as f:
    mine = json.load(f)
if not isinstance(mine, dict):
    sys.exit(1)
if mine.get("launcher_key_file") == key:
    del mine["launcher_key_file"]
    with open(path + ".new", "w") as f:
        json.dump(mine, f, indent=1)
        f.write("\n")
    os.rename(path + ".new", path)
    print("  %s: dropped launcher_key_file (the hatch knows the key by "
          "its hash now)" % path)
PY
	fi
	# A user's own launcher_key_file stays, and then no hash is added.
	if python3 -c 'import json,sys; sys.exit("launcher_key_file" not in json.load(open(sys.argv[1])))' "$f" 2>/dev/null; then
		config_once "$f" <<JSON
{"input_roots": ["$top/deploy/examples", "$var/inputs"],
 "broker": "http://127.0.0.1:7701",
 "broker_key_file": "$k/hatch.key"}
JSON
		return
	fi
	config_once "$f" <<JSON
{"input_roots": ["$top/deploy/examples", "$var/inputs"],
 "launcher_key_sha256": "$(key_sha256 "$k/launcher.key")",
 "broker": "http://127.0.0.1:7701",
 "broker_key_file": "$k/hatch.key"}
JSON
}

# The start time of process $1 (clock ticks since boot, /proc/PID/stat's
# 22nd field): with the pid, it names one process, never a later one that
# reused the pid.
starttime() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	# shellcheck disable=SC2086 # the fields, split on purpose
	set -- $s
	echo "${20}"
}

# Records process $1 as service $2's: its pid and start time.
remember() {
	echo "$1 $(starttime "$1")" >"$(pidfile "$2")"
}

# True while the process a pid file names is the one remembered. A file of
# a bare pid (an older quickstart's) counts only if that process is one
# of ours by its command line.
running() {
	local f pid st
	f=$(pidfile "$1")
	[ -f "$f" ] || return 1
	read -r pid st <"$f" || [ -n "${pid:-}" ] || return 1
	[[ $pid =~ ^[0-9]+$ ]] && [ "$pid" -gt 1 ] || return 1
	if [ -n "${st:-}" ]; then
		[ "$(starttime "$pid")" = "$st" ]
	else
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
			grep -qE "bin/cordon-$1 |http\.server --bind 127\.0\.0\.1 7780|examples/upstream\.py "
	fi
}

stop_one() {
	local svc=$1 f pid
	f=$(pidfile "$svc")
	running "$svc" || { rm -f "$f"; return 0; }
	read -r pid _ <"$f"
	kill -TERM "$pid"
	# The services finish requests in flight for at most 5 s.
	for _ in $(seq 1 70); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "  cordon-$svc (pid $pid) ignored SIGTERM; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
	echo "  stopped cordon-$svc"
}

health() {
	curl -fsS --max-time 2 "http://127.0.0.1:${port[$1]}/healthz" 2>/dev/null
}

status() {
	local svc
	for svc in $services; do
		if running "$svc" && health "$svc" >/dev/null; then
			printf '  %-8s up    http://127.0.0.1:%s  pid %s\n' "$svc" \
				"${port[$svc]}" "$(cut -d' ' -f1 "$(pidfile "$svc")")"
		else
			printf '  %-8s down\n' "$svc"
		fi
	done
}

case "${1:-start}" in
stop)
	say "stopping the services"
	for svc in $services; do stop_one "$svc"; done
	stop_one upstream
	exit 0
	;;
status)
	status
	exit 0
	;;
start) ;;
*)
	fail "usage: $0 [start|stop|status]"
	;;
esac

say "1/4 installing dependencies (Debian packages)"
./deploy/install-deps.sh

say "2/4 building into ./$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCORDON_TESTS=OFF \
	>/dev/null
cmake --build "$build" -j"$(nproc)" 2>&1 |
	{ grep -v -E '^(\[ *[0-9]+%\] |gmake|make)' || true; }

say "3/4 starting the services on loopback (state and logs under ./var/)"
mkdir -p "$var/log" "$var/inputs"
# The proxy resolves the example API's name to loopback.
grep -qs '^127\.0\.0\.1 invoices\.internal$' "$var/hosts" ||
	echo "127.0.0.1 invoices.internal" >>"$var/hosts"
grep -qs '^127\.0\.0\.1 tickets\.internal$' "$var/hosts" ||
	echo "127.0.0.1 tickets.internal" >>"$var/hosts"
# Another name of the tickets API, for its public status page (the
# drill's inject_stored: a name no secret is bound to, on the address the
# key is sent to).
grep -qs '^127\.0\.0\.1 status\.tickets\.internal$' "$var/hosts" ||
	echo "127.0.0.1 status.tickets.internal" >>"$var/hosts"
# The tickets API is HTTPS with a certificate of a CA made here, once;
# the proxy verifies upstreams against the system's roots and that CA
# (upstream_ca_file: var/upstream/trust.pem), as it would a company's
# internal CA. Its API key is made here too, once: the upstream checks
# it, the broker keeps it sealed (below), and no job ever holds it.
up=$var/upstream
mkdir -p "$up"
if [ ! -s "$up/ca.pem" ] || [ ! -s "$up/tickets.internal.pem" ]; then
	(umask 077
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-days 3650 -subj "/CN=cordon quickstart example CA" \
		-keyout "$up/ca.key" -out "$up/ca.pem" 2>/dev/null &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=tickets.internal" -keyout "$up/tickets.internal.key" \
		-out "$up/tickets.internal.csr" 2>/dev/null &&
	printf 'subjectAltName=DNS:tickets.internal\nextendedKeyUsage=serverAuth\n' \
		>"$up/tickets.internal.ext" &&
	openssl x509 -req -in "$up/tickets.internal.csr" -CA "$up/ca.pem" \
		-CAkey "$up/ca.key" -CAcreateserial -days 825 \
		-extfile "$up/tickets.internal.ext" \
		-out "$up/tickets.internal.pem" 2>/dev/null) ||
		fail "openssl could not make the example upstream's certificate"
	rm -f "$up/tickets.internal.csr" "$up/tickets.internal.ext"
	chmod 644 "$up/ca.pem" "$up/tickets.internal.pem"
	rm -f "$up/status.tickets.internal.pem"
fi
# The status page's name gets a leaf of its own (the upstream serves it by
# SNI), made once by the same CA; an earlier quickstart's var/ lacks it.
if [ ! -s "$up/status.tickets.internal.pem" ]; then
	n=status.tickets.internal
	(umask 077
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=$n" -keyout "$up/$n.key" -out "$up/$n.csr" 2>/dev/null &&
	printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$n" \
		>"$up/$n.ext" &&
	openssl x509 -req -in "$up/$n.csr" -CA "$up/ca.pem" -CAkey "$up/ca.key" \
		-CAcreateserial -days 825 -extfile "$up/$n.ext" \
		-out "$up/$n.pem" 2>/dev/null) ||
		fail "openssl could not make the status page's certificate"
	rm -f "$up/$n.csr" "$up/$n.ext"
	chmod 644 "$up/$n.pem"
fi
cat /etc/ssl/certs/ca-certificates.crt "$up/ca.pem" >"$up/trust.pem"
fresh_key=0
new_tickets_key() {
	(umask 077
	echo "tk_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$up/tickets-key.new") &&
		mv -f "$up/tickets-key.new" "$up/tickets-key"
	fresh_key=1
}
[ -s "$up/tickets-key" ] || new_tickets_key
for svc in $services; do
	stop_one "$svc"
	: >"$var/log/$svc.log"
	args=(--listen "127.0.0.1:${port[$svc]}")
	[ "$svc" = hatch ] && hatch_config && args+=(--config "$var/hatch.json")
	[ "$svc" = proxy ] && proxy_config && args+=(--config "$var/proxy.json")
	# Each service keeps its state in ./var/<service> by default.
	(cd "$top" && exec setsid "$top/$build/bin/cordon-$svc" "${args[@]}" \
		</dev/null >>"$var/log/$svc.log" 2>&1) &
	remember $! "$svc"
	# One at a time: the hatch needs the key the broker writes.
	for _ in $(seq 1 100); do
		health "$svc" >/dev/null && break
		running "$svc" || break
		sleep 0.1
	done
	if ! health "$svc" >/dev/null; then
		tail -n 20 "$var/log/$svc.log" >&2 || true
		fail "cordon-$svc did not come up; its log is above"
	fi
done
status
# A tickets-key the drill's reflections burned (past its reflect_budget,
# one a run: docs/credentials.md) is rotated as an operator must: a new
# key at the tickets API, written before it starts (it reads
# --api-key-file then), and PUT below (the burned value again would be
# 409 value_burned).
if curl -s --max-time 5 -H "Authorization: Bearer $(cat "$var/broker/keys/admin.key")" \
	http://127.0.0.1:7701/v1/secrets/tickets-key | grep -q '"burned":true'; then
	new_tickets_key
fi
# The example's upstreams, on loopback, outside any sandbox: the invoices
# API (plain) and the tickets API (HTTPS, wants its key), with a public
# status page that shows the last request's headers, the key with them:
# hostile on purpose, for the drill (inject_stored, docs/drill.md).
stop_one upstream
(cd "$top" && exec setsid /usr/bin/python3 "$top/deploy/examples/upstream.py" \
	--bind 127.0.0.1 --plain 7780 --root "$top/deploy/examples/invoices" \
	--tls 7781 --cert "$up/tickets.internal.pem" --key "$up/tickets.internal.key" \
	--name-cert status.tickets.internal "$up/status.tickets.internal.pem" \
	"$up/status.tickets.internal.key" \
	--api-key-file "$up/tickets-key" </dev/null >>"$var/log/upstream.log" 2>&1) &
remember $! upstream
tickets() {
	curl -s --max-time 2 --cacert "$up/ca.pem" \
		--resolve tickets.internal:7781:127.0.0.1 "$@"
}
for _ in $(seq 1 50); do
	curl -fs --max-time 1 -o /dev/null http://127.0.0.1:7780/invoices/4182.json &&
		[ "$(tickets -o /dev/null -w '%{http_code}' https://tickets.internal:7781/tickets/)" = 401 ] &&
		break
	sleep 0.1
done

say "4/4 the example: one job through the three planes"
B=http://127.0.0.1:7701
K=$var/broker/keys
A="Authorization: Bearer $(cat "$K/admin.key")"
L="Authorization: Bearer $(cat "$K/launcher.key")"
V="Authorization: Bearer $(cat "$K/verifier.key")"
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | tr -d '"'; }
show() { printf '    %s\n' "$*"; }

echo "  the broker wrote one key per role (mode 0600; values are never logged):"
for f in "$K"/*.key; do
	show "$(stat -c %a "$f")  ${f#"$top"/}"
done
echo
echo "  an upstream API key, sealed at the broker; no job ever holds it (docs/credentials.md):"
show "the tickets API (https://tickets.internal:7781) without its key: $(tickets \
	-o /dev/null -w '%{http_code}' https://tickets.internal:7781/tickets/)"
# A new key (the first, or the one made for a burned version above) is
# put as the next version.
if [ "$fresh_key" = 1 ] ||
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "$A" $B/v1/secrets/tickets-key)" != 200 ]; then
	out=$(curl -s -X PUT -H "$A" -H 'Content-Type: application/json' \
		-d "{\"value\": \"$(cat "$up/tickets-key")\"}" $B/v1/secrets/tickets-key)
	[ -n "$(field version <<<"$out")" ] || fail "the broker refused the secret: $out"
fi
show "tickets-key: version $(curl -s -H "$A" $B/v1/secrets/tickets-key | field version), the value in no answer"
echo "  a manifest, reviewed like code (deploy/examples/support-triage.json):"
out=$(curl -s -X PUT -H "$A" --data-binary @deploy/examples/support-triage.json \
	$B/v1/manifests/support-triage)
planes=$(sed -n 's/.*"planes":\[\([^]]*\)\].*/\1/p' <<<"$out" | tr -d '"')
show "version $(field version <<<"$out"), planes touched: ${planes:-none (unchanged since the last run)}"
out=$(curl -s -X PUT -H "$A" $B/v1/manifests/careless \
	-d '{"name": "careless", "env": {"GITHUB_TOKEN": "ghp_0123456789abcdef0123456789abcdef0123"},
	     "egress": [{"host": "*.co.uk", "methods": ["GET"]}]}')
show "a careless one is refused, every problem at once:"
sed 's/},{/}\n{/g' <<<"$out" | sed -n 's/.*"field":"\([^"]*\)","problem":"\([^"]*\)".*/      \1: \2/p'
echo
P=http://127.0.0.1:7702
# The launcher's configuration, absolute paths only: `cordon` works from
# any directory with --config ./var/launcher.json.
config_once "$var/launcher.json" <<JSON
{"state_dir": "$var/launcher", "launcher_key_file": "$K/launcher.key",
 "admin_key_file": "$K/admin.key", "drill_dir": "$var/inputs/drill",
 "verifier_key_file": "$K/verifier.key"}
JSON
if [ "$(id -u)" != 0 ]; then
	show "the job itself runs in a sandbox of namespaces and mounts: run the"
	show "quickstart as root to see it (the services above keep running)"
else
	echo "  the job: cordon run --manifest support-triage -- /bin/sh jobs/triage.sh"
	show "(deploy/examples/jobs/triage.sh: reads its input, asks for capabilities,"
	show " calls the invoices API and the tickets API over HTTPS, whose key the proxy"
	show " adds, tries a host off its list, edits a file, writes a workflow)"
	# Long step: the sandbox is built, the job runs, the stop path runs.
	show "running… (the sandbox is built, the job runs, the stop path runs)"
	rc=0
	result=$("$top/$build/bin/cordon" run --json --config "$var/launcher.json" \
		--manifest support-triage --patch-out "$var/quickstart.patch" \
		--input "$top/deploy/examples/repo:repo" --input "$top/deploy/examples/jobs:jobs" \
		-- /bin/sh jobs/triage.sh 2>"$var/log/quickstart-run.err") || rc=$?
	job=$(field job <<<"$result")
	why=$(tail -n 3 "$var/log/quickstart-run.err")
	[ -n "$job" ] || fail "cordon run (exit $rc) gave no result: ${why:-$result}"
	# The story is told only when the job ran and exited on its own.
	if [ "$(field stop_reason <<<"$result")" != exit ]; then
		fail "the example job $job failed (exit $rc, stop_reason \
$(field stop_reason <<<"$result")): ${why:-see $var/log/quickstart-run.err}"
	fi
	show "job $job ran in namespaces of its own, as a uid of its own, with an"
	show "empty environment, wired only to its proxy channel"
	echo "  what it printed (untrusted output, escapes removed):"
	python3 -c 'import json,sys; print(json.load(sys.stdin)["output"]["stdout"]["text"], end="")' \
		<<<"$result" | sed 's/^/      /'
	token=$(python3 -c 'import json,sys; t=json.load(sys.stdin)["output"]["stdout"]["text"]
for l in t.splitlines():
    print(l[6:]) if l.startswith("token=") else None' <<<"$result")
	echo
	echo "  reachability: the proxy's decisions for the job (GET $P/v1/jobs/$job/log)"
	curl -s -H "$L" $P/v1/jobs/$job/log | sed 's/},{/}\n{/g' |
		sed -n 's/.*"kind":"\([^"]*\)","method":"\([^"]*\)","host":"\([^"]*\)".*"path":"\([^"]*\)".*"decision":"\([^"]*\)","reason":\([^,]*\),.*"status":\([0-9]*\).*/      \5  \2 \3\4  reason=\6 status=\7/p' | tr -d '"'
	echo
	echo "  stop means burn: the stop path ran in order (revoke, kill, close, seal)"
	show "stopped by: $(field stop_reason <<<"$result"), exit $(field exit_code <<<"$result"); $(field tokens_revoked <<<"$result") token(s) revoked at the broker"
	show "the token it printed, replayed at the broker: active=$(curl -s -X POST -H "$V" -d "{\"token\": \"$token\"}" $B/v1/introspect | field active)"
	show "its channel: $(curl -s -H "$L" $P/v1/jobs/$job/log | field state), nothing passes for the job any more"
	show "the audit chain verifies: ok=$(curl -s -H "$A" "$B/v1/audit?verify=1" | field ok)"
	echo
	echo "  the return path: what the job wrote, as a patch for a person"
	show "verdict: $(field verdict <<<"$result")"
	show "the patch ($(wc -l <"$var/quickstart.patch") lines, ./var/quickstart.patch):"
	sed -n '1,30p' "$var/quickstart.patch" | sed 's/^/      /'
	echo
	echo "  the drill: the same manifest against a hostile job (docs/drill.md)"
	show "cordon drill --manifest support-triage: an input file of instructions,"
	show "a program that follows them, and where each attempt ended"
	rc=0
	"$top/$build/bin/cordon" drill --config "$var/launcher.json" \
		--manifest support-triage 2>"$var/log/quickstart-drill.err" |
		sed 's/^/    /' || rc=${PIPESTATUS[0]}
	# 0: nothing escaped; 1: a row ESCAPED; anything else: no drill.
	[ "$rc" = 0 ] || fail "the drill failed (exit $rc): \
$(tail -n 3 "$var/log/quickstart-drill.err")"
fi
echo
for svc in $services; do
	printf '  %-8s /healthz  %s\n' "$svc" "$(health "$svc")"
done
echo
echo "  the API, with curl: docs/api.md (the revoke call comes first); egress: docs/egress.md"

cat <<EOF

cordon is running.
  logs:   ./var/log/{broker,proxy,hatch}.log (JSON lines)
  egress: ./var/proxy/log/decisions.log (every decision of the proxy)
  patch:  ./var/quickstart.patch (how to apply one safely: docs/return-path.md)
  config: ./var/launcher.json (give it to cordon as --config, from anywhere)
  next:   your first job, in five steps: README.md
  state:  ./var/{broker,proxy,hatch}/
  stop:   ./deploy/quickstart.sh stop
  tests:  ./tests/run
EOF
