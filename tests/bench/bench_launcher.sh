#!/usr/bin/env bash
# The launcher: (1) its sandbox alone, start to exit of /bin/true (every
# namespace, the user namespace, the root, the overlay, seccomp), against
# bubblewrap with --unshare-all and comparable binds and against unshare(1)
# of the same namespaces, each timed the same way (spawn to exit, from one
# process); (2) a whole `cordon run` of /bin/true with a 100-file input,
# the services on loopback: job, copy-in, channel, spawn, stop path, seal,
# with the median of each phase from the run's own "ms".
#
#   BENCH_RUNS (default 100 sandboxes, a third of it for cordon run)
#   BENCH_WORKSPACES_TMPFS=1  the hatch's workspaces on a tmpfs
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${CORDON_BIN_DIR:-$PWD/build/bin}
runs=${BENCH_RUNS:-100}
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	umount -R "$tmp/hatch/var/hatch/workspaces" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
die() { echo "bench_launcher: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (namespaces, mounts)"
median() { sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}'; }
result() { printf 'RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }

# --- 1. the sandbox alone ------------------------------------------------------

mkdir -p "$tmp/sb" "$tmp/bw/work"
c=$("$bin/bench_sandbox" "$runs" "$tmp/sb" | median)
b=$("$bin/bench_sandbox" "$runs" "$tmp/bw" -- "$(command -v bwrap)" \
	--unshare-all --ro-bind /usr /usr --symlink usr/bin /bin \
	--symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc \
	--dev /dev --tmpfs /tmp --bind "$tmp/bw/work" /work /bin/true | median)
u=$("$bin/bench_sandbox" "$runs" "$tmp/bw" -- "$(command -v unshare)" \
	-Ufpmniu --mount-proc -r /bin/true | median)
echo "bench_launcher: sandbox start to exit, median of $runs: cordon $c ms, bwrap $b ms, unshare $u ms" >&2
result "launcher: sandbox start to exit of /bin/true" ms lower "$c" bwrap "$b"
result "launcher: sandbox start to exit of /bin/true" ms lower "$c" unshare "$u"

# --- 2. a whole cordon run ------------------------------------------------------

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_for() {
	for _ in $(seq 1 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}
bp=$(free_port) pp=$(free_port) hp=$(free_port)
mkdir -p "$tmp/broker" "$tmp/proxy" "$tmp/hatch" "$tmp/launcher" "$tmp/in"
# BENCH_WORKSPACES_TMPFS=1: the hatch's workspaces on a tmpfs, as an
# operator may mount them (docs/operations.md): no disk on the job's path.
if [ "${BENCH_WORKSPACES_TMPFS:-0}" = 1 ]; then
	mkdir -p "$tmp/hatch/var/hatch/workspaces"
	mount -t tmpfs -o size=1g,mode=0700 tmpfs "$tmp/hatch/var/hatch/workspaces"
fi
(cd "$tmp/broker" && exec "$bin/cordon-broker" --listen "127.0.0.1:$bp") \
	2>"$tmp/broker.log" &
pids+=($!)
K=$tmp/broker/var/broker/keys
wait_for test -s "$K/launcher.key" || die "the broker did not start"
wait_for curl -sf "http://127.0.0.1:$bp/healthz" || die "the broker did not answer"
cat >"$tmp/proxy/proxy.json" <<JSON
{"broker": "http://127.0.0.1:$bp", "broker_key_file": "$K/verifier.key",
 "launcher_key_file": "$K/launcher.key"}
JSON
(cd "$tmp/proxy" && exec "$bin/cordon-proxy" --listen "127.0.0.1:$pp" \
	--config "$tmp/proxy/proxy.json") 2>"$tmp/proxy.log" &
pids+=($!)
cat >"$tmp/hatch/hatch.json" <<JSON
{"input_roots": ["$tmp/in"], "launcher_key_file": "$K/launcher.key"}
JSON
(cd "$tmp/hatch" && exec "$bin/cordon-hatch" --listen "127.0.0.1:$hp" \
	--config "$tmp/hatch/hatch.json") 2>"$tmp/hatch.log" &
pids+=($!)
wait_for curl -sf "http://127.0.0.1:$pp/healthz" || die "the proxy did not answer"
wait_for curl -sf "http://127.0.0.1:$hp/healthz" || die "the hatch did not answer"
# The input: 100 small files in a few directories.
for i in $(seq 1 100); do
	mkdir -p "$tmp/in/repo/d$((i % 10))"
	printf 'line %d\n' "$i" >"$tmp/in/repo/d$((i % 10))/f$i.txt"
done
curl -sf -X PUT -H "Authorization: Bearer $(cat "$K/admin.key")" \
	"http://127.0.0.1:$bp/v1/manifests/bench" -d '{"name": "bench",
	"command": ["/bin/true"], "egress": [], "limits": {"wall_seconds": 60}}' \
	>/dev/null || die "the manifest was refused"
cat >"$tmp/launcher/launcher.json" <<JSON
{"broker": "http://127.0.0.1:$bp", "proxy": "http://127.0.0.1:$pp",
 "hatch": "http://127.0.0.1:$hp", "launcher_key_file": "$K/launcher.key",
 "state_dir": "$tmp/launcher/var", "uid_base": 260000}
JSON
n=$(( runs / 3 > 5 ? runs / 3 : 5 ))
# Timed like the sandboxes above (spawn to exit, from one process); each
# run's JSON result (one line) comes out on the same stdout.
"$bin/bench_sandbox" "$n" "$tmp/sb" -- "$bin/cordon" run --json \
	--config "$tmp/launcher/launcher.json" --manifest bench \
	--input "$tmp/in/repo:repo" -- /bin/true >"$tmp/runs.out" ||
	die "cordon run failed: $(tail -2 "$tmp/runs.out")"
grep -E '^[0-9.]+$' "$tmp/runs.out" | awk '{print $1 * 1000}' >"$tmp/wall.us"
grep '^{' "$tmp/runs.out" | python3 -c 'import json,sys
for l in sys.stdin:
    d = json.loads(l)["ms"]
    print(" ".join("%s=%s" % (k, d[k]) for k in d))' >"$tmp/phases"
wall=$(awk '{print $1/1000}' "$tmp/wall.us" | median)
echo "bench_launcher: cordon run of /bin/true, 100 files in, median of $n: $wall ms (the process, start to exit)" >&2
for ph in broker workspace channel spawn run revoke kill close seal total; do
	m=$(tr ' ' '\n' <"$tmp/phases" | sed -n "s/^$ph=//p" | median)
	echo "bench_launcher:   $ph: $m ms" >&2
done
result "launcher: cordon run of /bin/true, 100-file input" ms lower "$wall" target 25
