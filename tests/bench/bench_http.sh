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
secs=${BENCH_SECONDS:-10}
bin=${CORDON_BIN_DIR:-$PWD/build/bin}
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wrk's requests/s and p99 latency (ms) against a URL.
measure() {
	local out rps p99
	out=$(wrk -t2 -c50 -d"${secs}s" --latency "$1")
	rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
	p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000}
		else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}
		print v}' <<<"$out")
	echo "$rps $p99"
}

port=$(free_port)
(cd "$tmp" && exec "$bin/cordon-broker" --listen "127.0.0.1:$port") \
	2>"$tmp/broker.log" &
pids+=($!)

nport=$(free_port)
mkdir -p "$tmp/nginx"
cat >"$tmp/nginx/nginx.conf" <<CONF
worker_processes 2;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
daemon off;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx;
	proxy_temp_path $tmp/nginx;
	fastcgi_temp_path $tmp/nginx;
	uwsgi_temp_path $tmp/nginx;
	scgi_temp_path $tmp/nginx;
	server {
		listen 127.0.0.1:$nport;
		location /healthz {
			default_type application/json;
			return 200 '{"status":"ok","svc":"nginx","version":"1","uptime_seconds":1}\n';
		}
	}
}
CONF
nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" &
pids+=($!)

for _ in $(seq 1 100); do
	curl -sf "http://127.0.0.1:$port/healthz" >/dev/null &&
		curl -sf "http://127.0.0.1:$nport/healthz" >/dev/null && break
	sleep 0.1
done

read -r c_rps c_p99 < <(measure "http://127.0.0.1:$port/healthz")
read -r n_rps n_p99 < <(measure "http://127.0.0.1:$nport/healthz")
echo "cordon glue: $c_rps req/s, p99 $c_p99 ms; nginx: $n_rps req/s, p99 $n_p99 ms" >&2

printf 'RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n' \
	"http glue: GET /healthz, 50 conns, keep-alive" "req/s" higher \
	"$c_rps" nginx "$n_rps"
printf 'RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n' \
	"http glue: p99 latency, 50 conns" "ms" lower "$c_p99" nginx "$n_p99"
