#!/usr/bin/env bash
# The broker under wrk on loopback (same 2 cores as the broker):
# introspections per second and p99 at 50 connections, and mints per
# second with synchronous=FULL (each mint a durable, audited row; group
# commit shares fsyncs). Figures are set against the targets of issue 3
# (20,000 introspections/s, 2,000 mints/s) and against the glue's own
# /healthz in the same run; for reference, Vault publishes about 4,400
# batch tokens per second.
#
#   BENCH_SECONDS (default 10) per run
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_broker
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
secs=${BENCH_SECONDS:-10}
need wrk curl python3
need_bin cordon-broker

# A long lease: the benchmark sends no heartbeats.
echo '{"lease_seconds": 3600}' >"$tmp/broker.json"
start_service broker "$tmp" "$bin/cordon-broker" --config "$tmp/broker.json"
url=$addr
admin=$(cat "$tmp/var/broker/keys/admin.key")
launcher=$(cat "$tmp/var/broker/keys/launcher.key")
verifier=$(cat "$tmp/var/broker/keys/verifier.key")

# The mint limits lifted (manifest.md, "mint"): the figure is the store's,
# not the rate limit's.
curl -sf -X PUT -H "Authorization: Bearer $admin" "$url/v1/manifests/bench" -d '{
 "name": "bench",
 "capabilities": [{"name": "invoices.read", "audience": "invoices-api",
   "params": {"tenant": ["4182"]}, "ttl_seconds": 900, "reason": "bench"}],
 "egress": [], "limits": {"wall_seconds": 3600},
 "mint": {"max_tokens": 10000000, "per_minute": 10000000, "burst": 1000000}}' >/dev/null
job=$(curl -sf -X POST -H "Authorization: Bearer $launcher" "$url/v1/jobs" \
	-d '{"manifest": "bench"}' | json_get job)
mint_body='{"capability": "invoices.read", "params": {"tenant": "4182"}}'
token=$(curl -sf -X POST -H "Authorization: Bearer $verifier" \
	-H "X-Cordon-Job: $job" "$url/v1/token" -d "$mint_body" |
	json_get access_token)

lua() { # method, body, [extra header name, value]
	printf 'wrk.method = "%s"\n' "$1"
	printf "wrk.body = '%s'\n" "$2"
	printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$verifier"
	printf 'wrk.headers["Content-Type"] = "application/json"\n'
	if [ $# -gt 2 ]; then
		printf 'wrk.headers["%s"] = "%s"\n' "$3" "$4"
	fi
}
lua POST "{\"token\": \"$token\"}" >"$tmp/introspect.lua"
lua POST "$mint_body" X-Cordon-Job "$job" >"$tmp/mint.lua"

read -r h_rps h_p99 _ < <(wrk_measure "$url/healthz")
read -r i_rps i_p99 i_bad < <(wrk_measure -s "$tmp/introspect.lua" "$url/v1/introspect")
# The introspections measured were real answers: the token is active.
curl -sf -X POST -H "Authorization: Bearer $verifier" "$url/v1/introspect" \
	-d "{\"token\": \"$token\"}" | grep -q '"active":true' ||
	die "the token is not active"
read -r m_rps m_p99 m_bad < <(wrk_measure -s "$tmp/mint.lua" "$url/v1/token")
echo "healthz $h_rps/s p99 ${h_p99}ms; introspect $i_rps/s p99 ${i_p99}ms" \
	"($i_bad not 200); mint $m_rps/s p99 ${m_p99}ms ($m_bad not 200)" >&2
[ "$i_bad" = 0 ] && [ "$m_bad" = 0 ] || die "some answers were not 200"
minted=$(curl -sf "$url/metrics" | awk '/^cordon_broker_tokens_minted_total/ {print $2}')
echo "tokens minted in all: $minted" >&2

result "broker: introspections, 50 conns" "req/s" higher "$i_rps" target 20000
result "broker: introspection p99, 50 conns" "ms" lower "$i_p99" healthz "$h_p99"
result "broker: introspections vs its /healthz" "req/s" higher "$i_rps" healthz "$h_rps"
result "broker: mints, synchronous=FULL, 50 conns" "req/s" higher "$m_rps" target 2000
