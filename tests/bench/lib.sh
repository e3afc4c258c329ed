# Helpers shared by the scripts under tests/bench/ (bench_*.sh, soak_*.sh,
# valgrind_job.sh, get_valgrind.sh), sourced, never run. A script cds to
# the top of the tree, sets $script (its name, for messages) and sources
# this, which sets $bin (the programs: CORDON_BIN_DIR, default build/bin),
# $here (tests/bench) and $tmp (a new temporary directory, made from
# $tmp_template when the script sets one), and traps EXIT with
# bench_cleanup. The script adds the pids it starts to the array pids,
# which bench_cleanup stops. Functions here fail the script with die, or
# return non-zero for the caller to judge; none measures anything.
# shellcheck shell=bash
: "${script:?}"

bin=${CORDON_BIN_DIR:-$PWD/build/bin}
# shellcheck disable=SC2034 # bin and here are for the scripts
here=$PWD/tests/bench
tmp=$(mktemp -d "${tmp_template:-/tmp/tmp.XXXXXXXXXX}")
pids=()
# Stops what the script started and is still its child (a pid reaped
# and reused by another process is left alone), the last started first,
# each waited for; unmounts what is left under $tmp and removes it
# (CORDON_KEEP_TMP=1 keeps it).
bench_cleanup() {
	local i p
	set +e
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[i]}
		[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = $$ ] || continue
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ -n "${tmp:-}" ] && [ -d "$tmp" ] || return 0
	# Whatever is left mounted under $tmp (a hatch's workspaces, a
	# tmpfs of the script's) goes, so that the directory can.
	{ grep -o " $tmp/[^ ]*" /proc/self/mounts || true; } | sort -r |
		while read -r p; do umount -l "$p" 2>/dev/null; done
	if [ "${CORDON_KEEP_TMP:-0}" = 1 ]; then
		echo "$script: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}

trap bench_cleanup EXIT

say() { echo "$script: $*" >&2; }
die() {
	say "$*"
	exit 1
}
need() { # command...: each must be on PATH
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || die "$t is needed (./deploy/install-deps.sh --bench)"
	done
}
need_bin() { # program...: each must be built under $bin
	local b
	for b in "$@"; do
		[ -x "$bin/$b" ] || die "no $bin/$b: build first, or set CORDON_BIN_DIR"
	done
}
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# Waits up to 10 s for a command to succeed.
wait_for() {
	local _
	for _ in $(seq 1 100); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
# The address a service's log says it listens on.
listening() {
	grep -m1 -o '"event":"listening","addr":"[^"]*"' "$1" | cut -d'"' -f8
}
is_listening() { [ -n "$(listening "$1")" ]; }
# Starts a cordon service in dir (its state under dir/var unless its
# configuration says otherwise) on a free loopback port, its stderr in
# $tmp/name.log: its pid in $started, its base URL in $addr.
# shellcheck disable=SC2034 # started and addr are for the caller
start_service() { # name, dir, program and arguments
	local name=$1 dir=$2
	shift 2
	(cd "$dir" && exec "$@" --listen 127.0.0.1:0) 2>"$tmp/$name.log" &
	started=$!
	pids+=("$started")
	wait_for is_listening "$tmp/$name.log" ||
		die "$name did not start: $(tail -5 "$tmp/$name.log")"
	addr=http://$(listening "$tmp/$name.log")
}
# Starts nginx, two workers, as nginx_pid: its configuration, pid file,
# error log and temporary files in $tmp/nginx, no access log; the
# arguments are its worker_connections and what its http block holds
# besides (the servers).
nginx_start() { # connections, http directives
	mkdir -p "$tmp/nginx"
	cat >"$tmp/nginx/nginx.conf" <<CONF
worker_processes 2;
worker_rlimit_nofile $((2 * $1));
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
daemon off;
events { worker_connections $1; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx;
	proxy_temp_path $tmp/nginx;
	fastcgi_temp_path $tmp/nginx;
	uwsgi_temp_path $tmp/nginx;
	scgi_temp_path $tmp/nginx;
$2
}
CONF
	nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" &
	nginx_pid=$!
	pids+=("$nginx_pid")
}
json_get() { # key: that key of the JSON object on stdin
	python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}'; }
# A figure for ./tests/bench/run: what, unit, better (higher|lower),
# cordon's value, the peer, the peer's value.
result() { printf 'RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }

# --- what each daemon holds --------------------------------------------------

fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
rss_mib() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# What a process's descriptors are: "N kind" lines (a file's path, socket,
# pipe, anon_inode:[eventfd], ...), then its TCP sockets by state.
fd_kinds() { # pid
	find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -printf '%l\n' 2>/dev/null |
		sed 's/:\[[0-9]*\]$//' | sort | uniq -c
	ss -tanp 2>/dev/null | awk -v p="pid=$1," 'index($0, p) {print "tcp " $1}' |
		sort | uniq -c
}
# Records fds and RSS of each daemon (name=pid ...) under a label: start,
# end; and what the descriptors are, to say what grew.
declare -A soak_fds soak_rss
sample() { # label name=pid...
	local label=$1 np name pid
	shift
	for np in "$@"; do
		name=${np%%=*} pid=${np#*=}
		kill -0 "$pid" 2>/dev/null || die "$name (pid $pid) is gone"
		soak_fds[$label,$name]=$(fds "$pid")
		soak_rss[$label,$name]=$(rss_mib "$pid")
		fd_kinds "$pid" >"$tmp/fds.$label.$name"
	done
}

# --- wrk ---------------------------------------------------------------------

to_ms() { # a wrk duration (12.3us, 4.5ms, 1.2s, 2m): in ms
	awk -v v="$1" 'BEGIN {
		if (v ~ /us$/) { sub(/us$/, "", v); printf "%.2f", v / 1000 }
		else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.2f", v }
		else if (v ~ /m$/) { sub(/m$/, "", v); printf "%.2f", v * 60000 }
		else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.2f", v * 1000 }
		else printf "%s", v }'
}
# From wrk --latency's output: "requests non2xx connect read write timeout
# p50_ms p99_ms".
wrk_figures() { # file
	local p50 p99
	p50=$(awk '$1 == "50%" {print $2}' "$1")
	p99=$(awk '$1 == "99%" {print $2}' "$1")
	awk -v p50="$(to_ms "${p50:-0}")" -v p99="$(to_ms "${p99:-0}")" '
		/requests in/ {n = $1}
		/Non-2xx or 3xx responses:/ {bad = $NF}
		/Socket errors:/ {
			gsub(/,/, "")
			for (i = 3; i < NF; i += 2) err[$i] = $(i + 1)
		}
		END {
			printf "%d %d %d %d %d %d %s %s\n", n, bad, err["connect"],
			    err["read"], err["write"], err["timeout"], p50, p99
		}' "$1"
}
# wrk, 2 threads and 50 connections for $secs seconds, with the arguments
# given (a -s script, the URL): "requests/s p99_ms non2xx".
wrk_measure() {
	local out p99
	out=$(wrk -t2 -c50 -d"${secs:?}s" --latency "$@")
	p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
	awk -v p99="$(to_ms "${p99:-0}")" '
		/^Requests\/sec:/ {rps = $2}
		/Non-2xx or 3xx responses:/ {bad = $NF}
		END {printf "%s %s %d\n", rps, p99, bad}' <<<"$out"
}

# --- the soak table ------------------------------------------------------------

# Prints the table: a title, the errors, each daemon's fds and RSS at
# start and end, then the rows added with soak_row (latencies and the
# like). An fd count that grew, or an RSS that grew by more than
# SOAK_RSS_NOISE percent (default 10) plus 2 MiB, is marked GREW.
soak_rows=()
soak_row() { # what start end
	soak_rows+=("$(printf '%-32s %18s %18s' "$1" "$2" "$3")")
}
table() { # title errors errors-detail name...
	local title=$1 errors=$2 detail=$3 n s e mark r
	shift 3
	local noise=${SOAK_RSS_NOISE:-10}
	echo
	echo "== $script: $title"
	printf '%-32s %18s %18s %8s\n' "" start end change
	printf '%-32s %18s %18s %8s  %s\n' "errors (target 0)" - "$errors" - "$detail"
	for n in "$@"; do
		s=${soak_fds[start,$n]} e=${soak_fds[end,$n]}
		mark=
		[ "$e" -le "$s" ] || mark="  GREW"
		printf '%-32s %18s %18s %+8d%s\n' "$n fds" "$s" "$e" $((e - s)) "$mark"
		[ -z "$mark" ] || say "$n's descriptors, start then end:" \
			"$(diff "$tmp/fds.start.$n" "$tmp/fds.end.$n" | grep '^[<>]' | tr '\n' ';')"
		s=${soak_rss[start,$n]} e=${soak_rss[end,$n]}
		mark=$(awk -v s="$s" -v e="$e" -v k="$noise" \
			'BEGIN { if (e > s * (1 + k / 100) + 2) print "  GREW" }')
		printf '%-32s %18s %18s %+8.1f%s\n' "$n VmRSS MiB" "$s" "$e" \
			"$(awk -v s="$s" -v e="$e" 'BEGIN {print e - s}')" "$mark"
	done
	for r in "${soak_rows[@]}"; do echo "$r"; done
}
