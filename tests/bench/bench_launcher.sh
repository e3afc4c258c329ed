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
#   BENCH_LOWER_TMPFS_MB=0    the inputs' copy on the disk, as before the
#                             hatch's lower_tmpfs_mb (default: the hatch's)
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_launcher
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
runs=${BENCH_RUNS:-100}
[ "$(id -u)" = 0 ] || die "must run as root (namespaces, mounts)"
need bwrap unshare curl python3
need_bin bench_sandbox cordon cordon-broker cordon-proxy cordon-hatch

# --- 1. the sandbox alone ------------------------------------------------------

mkdir -p "$tmp/sb" "$tmp/bw/work"
c=$("$bin/bench_sandbox" "$runs" "$tmp/sb" | median)
b=$("$bin/bench_sandbox" "$runs" "$tmp/bw" -- "$(command -v bwrap)" \
	--unshare-all --ro-bind /usr /usr --symlink usr/bin /bin \
	--symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc \
	--dev /dev --tmpfs /tmp --bind "$tmp/bw/work" /work /bin/true | median)
u=$("$bin/bench_sandbox" "$runs" "$tmp/bw" -- "$(command -v unshare)" \
	-Ufpmniu --mount-proc -r /bin/true | median)
say "sandbox start to exit, median of $runs: cordon $c ms, bwrap $b ms, unshare $u ms"
result "launcher: sandbox start to exit of /bin/true" ms lower "$c" bwrap "$b"
result "launcher: sandbox start to exit of /bin/true" ms lower "$c" unshare "$u"

# --- 2. a whole cordon run ------------------------------------------------------

mkdir -p "$tmp/broker" "$tmp/proxy" "$tmp/hatch" "$tmp/launcher" "$tmp/in"
# BENCH_WORKSPACES_TMPFS=1: the hatch's workspaces on a tmpfs, as an
# operator may mount them (docs/operations.md): no disk on the job's path.
if [ "${BENCH_WORKSPACES_TMPFS:-0}" = 1 ]; then
	mkdir -p "$tmp/hatch/var/hatch/workspaces"
	mount -t tmpfs -o size=1g,mode=0700 tmpfs "$tmp/hatch/var/hatch/workspaces"
fi
start_service broker "$tmp/broker" "$bin/cordon-broker"
broker=$addr
K=$tmp/broker/var/broker/keys
cat >"$tmp/proxy/proxy.json" <<JSON
{"broker": "$broker", "broker_key_file": "$K/verifier.key",
 "launcher_key_file": "$K/launcher.key"}
JSON
start_service proxy "$tmp/proxy" "$bin/cordon-proxy" --config "$tmp/proxy/proxy.json"
proxy=$addr
lower_mb=${BENCH_LOWER_TMPFS_MB:+, \"lower_tmpfs_mb\": $BENCH_LOWER_TMPFS_MB}
cat >"$tmp/hatch/hatch.json" <<JSON
{"input_roots": ["$tmp/in"], "launcher_key_file": "$K/launcher.key",
 "broker": "$broker", "broker_key_file": "$K/launcher.key"$lower_mb}
JSON
start_service hatch "$tmp/hatch" "$bin/cordon-hatch" --config "$tmp/hatch/hatch.json"
hatch=$addr

# The input: 100 small files in a few directories.
for i in $(seq 1 100); do
	mkdir -p "$tmp/in/repo/d$((i % 10))"
	printf 'line %d\n' "$i" >"$tmp/in/repo/d$((i % 10))/f$i.txt"
done
curl -sf -X PUT -H "Authorization: Bearer $(cat "$K/admin.key")" \
	"$broker/v1/manifests/bench" -d '{"name": "bench",
	"command": ["/bin/true"], "egress": [], "limits": {"wall_seconds": 60}}' \
	>/dev/null || die "the manifest was refused"
cat >"$tmp/launcher/launcher.json" <<JSON
{"broker": "$broker", "proxy": "$proxy",
 "hatch": "$hatch", "launcher_key_file": "$K/launcher.key",
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
say "cordon run of /bin/true, 100 files in, median of $n: $wall ms (the process, start to exit)"
for ph in broker workspace channel spawn run revoke kill close seal total; do
	m=$(tr ' ' '\n' <"$tmp/phases" | sed -n "s/^$ph=//p" | median)
	say "  $ph: $m ms"
done
result "launcher: cordon run of /bin/true, 100-file input" ms lower "$wall" target 25
