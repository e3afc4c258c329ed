#!/usr/bin/env bash
# The hatch on a generated tree of 10,000 files (about 100 MB) with 50
# files modified, 10 added and 5 deleted through a real overlay:
#   - seal (the patch from the upper directory alone) against
#     `git diff --no-index --binary` over the whole trees;
#   - copy-in (POST /v1/workspaces) against `cp -a`, both into tmpfs.
# Needs root (mounts). BENCH_FILES (default 10000), BENCH_RUNS (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_hatch
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
files=${BENCH_FILES:-10000}
runs=${BENCH_RUNS:-3}
[ "$(id -u)" = 0 ] || die "must run as root (mounts)"
need curl python3 git bc
need_bin cordon-hatch cordon-broker

# Everything the hatch and cp write goes to the same kind of place.
mkdir -p "$tmp/fast"
mount -t tmpfs -o size=2g tmpfs "$tmp/fast"
src=$tmp/src
python3 - "$src" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
random.seed(7)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 50), "s%02d" % (i % 7))
    os.makedirs(d, exist_ok=True)
    size = random.randint(2000, 18000)
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        line = "line %d of file %d, some words to make it text\n"
        f.write("".join(line % (k, i) for k in range(size // 48)))
PY
echo "tree: $(find "$src" -type f | wc -l) files, $(du -sm "$src" | cut -f1) MB" >&2

# Each job's return policy and disk cap come from a broker, as in a
# deployment: one manifest, a job of it per run.
mkdir -p "$tmp/broker"
echo '{"lease_seconds": 3600}' >"$tmp/broker/broker.json"
start_service broker "$tmp/broker" "$bin/cordon-broker" --config "$tmp/broker/broker.json"
B=$addr
bkeys=$tmp/broker/var/broker/keys
BA="Authorization: Bearer $(cat "$bkeys/admin.key")"
BL="Authorization: Bearer $(cat "$bkeys/launcher.key")"
curl -sf -X PUT -H "$BA" "$B/v1/manifests/bench-hatch" -d '{"name": "bench-hatch",
  "command": ["/bin/true"], "limits": {"wall_seconds": 3600, "disk_mb": 512}}' >/dev/null

echo "{\"input_roots\": [\"$tmp\"], \"launcher_key_file\": \"$tmp/key\",
  \"broker\": \"$B\", \"broker_key_file\": \"$bkeys/launcher.key\",
  \"state_dir\": \"$tmp/fast/hatch\"}" >"$tmp/hatch.json"
echo "crk_bench-key-0123456789abcdefghijklmnopqrst" >"$tmp/key"
start_service hatch "$tmp" "$bin/cordon-hatch" --config "$tmp/hatch.json"
K="Authorization: Bearer $(cat "$tmp/key")"
H=$addr

now() { date +%s.%N; }
ms() { echo "($2 - $1) * 1000" | bc -l; }

copy_h=() copy_c=() seal_h=() seal_g=()
for run in $(seq 1 "$runs"); do
	job=$(curl -sf -X POST -H "$BL" "$B/v1/jobs" -d '{"manifest": "bench-hatch"}' | json_get job)
	sync
	t0=$(now)
	out=$(curl -sf -X POST -H "$K" "$H/v1/workspaces" \
		-d "{\"job\": \"$job\", \"inputs\": [{\"src\": \"$src\", \"dst\": \"repo\"}]}")
	t1=$(now)
	copy_h+=("$(ms "$t0" "$t1")")
	t0=$(now)
	cp -a "$src" "$tmp/fast/cp$run"
	t1=$(now)
	copy_c+=("$(ms "$t0" "$t1")")
	rm -rf "$tmp/fast/cp$run"

	lower=$(sed -n 's/.*"lower":"\([^"]*\)".*/\1/p' <<<"$out")
	upper=$(sed -n 's/.*"upper":"\([^"]*\)".*/\1/p' <<<"$out")
	work=$(sed -n 's/.*"work":"\([^"]*\)".*/\1/p' <<<"$out")
	mkdir -p "$tmp/merged"
	mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work,redirect_dir=off,metacopy=off,index=off" "$tmp/merged"
	m=$tmp/merged/repo
	mapfile -t all < <(cd "$m" && find . -type f | sort)
	for i in $(seq 0 49); do echo "edited $run" >>"$m/${all[$((i * 97))]}"; done
	for i in $(seq 0 9); do echo "new $i" >"$m/d0$((i % 5))/added-$run-$i.txt"; done
	for i in $(seq 0 4); do rm "$m/${all[$((i * 131 + 7))]}"; done
	# The whole result, for git to compare with the inputs.
	rm -rf "$tmp/fast/after"
	cp -a "$m" "$tmp/fast/after"
	umount "$tmp/merged"

	t0=$(now)
	curl -sf -X POST -H "$K" "$H/v1/workspaces/$job/seal" >"$tmp/report.json"
	t1=$(now)
	seal_h+=("$(ms "$t0" "$t1")")
	grep -q '"modified":50' "$tmp/report.json" && grep -q '"added":10' "$tmp/report.json" &&
		grep -q '"deleted":5' "$tmp/report.json" || {
		die "the seal did not see 50/10/5: $(cat "$tmp/report.json")"
	}
	t0=$(now)
	git diff --no-index --binary "$src" "$tmp/fast/after" >/dev/null || true
	t1=$(now)
	seal_g+=("$(ms "$t0" "$t1")")
	curl -sf -X DELETE -H "$K" "$H/v1/workspaces/$job" >/dev/null
done

ch=$(printf '%s\n' "${copy_h[@]}" | median)
cc=$(printf '%s\n' "${copy_c[@]}" | median)
sh=$(printf '%s\n' "${seal_h[@]}" | median)
sg=$(printf '%s\n' "${seal_g[@]}" | median)
echo "copy-in: hatch $ch ms, cp -a $cc ms; seal: hatch $sh ms, git diff --no-index $sg ms (medians of $runs)" >&2
result "hatch: seal 50/10/5 of 10k files (whole request)" ms lower "$sh" "git-diff" "$sg"
result "hatch: copy-in 10k files ~100 MB into tmpfs" ms lower "$ch" "cp -a" "$cc"
