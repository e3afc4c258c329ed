#!/usr/bin/env bash
# The HTTP layer every cordon service shares (libmicrohttpd glue, two
# threads) against nginx (two workers) answering the same small JSON, both
# on loopback, driven by wrk with 50 keep-alive connections. It bounds what
# any cordon endpoint can reach: the broker's introspection will not be
# faster than its /healthz.
#
#   BENCH_SECONDS (default 10) per run
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_http
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
secs=${BENCH_SECONDS:-10}
need wrk nginx curl python3
need_bin cordon-broker

start_service broker "$tmp" "$bin/cordon-broker"
broker=$addr

nport=$(free_port)
nginx_start 1024 "
	server {
		listen 127.0.0.1:$nport;
		location /healthz {
			default_type application/json;
			return 200 '{\"status\":\"ok\",\"svc\":\"nginx\",\"version\":\"1\",\"uptime_seconds\":1}\\n';
		}
	}"

wait_for curl -sf "http://127.0.0.1:$nport/healthz" || die "nginx did not start"

read -r c_rps c_p99 _ < <(wrk_measure "$broker/healthz")
read -r n_rps n_p99 _ < <(wrk_measure "http://127.0.0.1:$nport/healthz")
echo "cordon glue: $c_rps req/s, p99 $c_p99 ms; nginx: $n_rps req/s, p99 $n_p99 ms" >&2

result "http glue: GET /healthz, 50 conns, keep-alive" "req/s" higher \
	"$c_rps" nginx "$n_rps"
result "http glue: p99 latency, 50 conns" "ms" lower "$c_p99" nginx "$n_p99"
