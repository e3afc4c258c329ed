#!/usr/bin/env bash
# The broker under wrk on loopback (same 2 cores as the broker):
# introspections per second and p99 at 50 connections, and mints per
# second, each mint a durable, audited row (group commit shares the
# commits). Three stores side by side: sqlite with synchronous=FULL (the
# single host's default), PostgreSQL (a private server this script
# starts: initdb as nobody in its temporary directory, a unix socket,
# fsync on), and two brokers on that one PostgreSQL, measured at once
# (one wrk each; the fleet's figure is their sum). Figures are set
# against the targets of issue 3 (20,000 introspections/s, 2,000
# mints/s) and against the glue's own /healthz in the same run; for
# reference, Vault publishes about 4,400 batch tokens per second.
#
#   BENCH_SECONDS (default 10) per run
#   BENCH_NO_PG=1 the sqlite figures alone
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_broker
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
secs=${BENCH_SECONDS:-10}
need wrk curl python3
need_bin cordon-broker

mint_body='{"capability": "invoices.read", "params": {"tenant": "4182"}}'

lua() { # key, method, body, [extra header name, value]
	printf 'wrk.method = "%s"\n' "$2"
	printf "wrk.body = '%s'\n" "$3"
	printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$1"
	printf 'wrk.headers["Content-Type"] = "application/json"\n'
	if [ $# -gt 3 ]; then
		printf 'wrk.headers["%s"] = "%s"\n' "$4" "$5"
	fi
}

# Starts a broker in dir with config (a JSON object's members, may be
# empty) as $addr, and makes a manifest, a job and a token for the runs:
# $verifier, $job, $token and the wrk scripts dir/introspect.lua and
# dir/mint.lua. The keys are dir's, or keys_dir's when config names it.
broker_up() { # name, dir, keys dir, config members
	local name=$1 dir=$2 keys=$3 url admin launcher
	mkdir -p "$dir"
	echo "{\"lease_seconds\": 3600${4:+, $4}}" >"$dir/broker.json"
	start_service "$name" "$dir" "$bin/cordon-broker" --config "$dir/broker.json"
	url=$addr
	admin=$(cat "$keys/admin.key")
	launcher=$(cat "$keys/launcher.key")
	verifier=$(cat "$keys/verifier.key")
	# The mint limits lifted (manifest.md, "mint"): the figure is the
	# store's, not the rate limit's.
	curl -sf -X PUT -H "Authorization: Bearer $admin" "$url/v1/manifests/bench" -d '{
 "name": "bench",
 "capabilities": [{"name": "invoices.read", "audience": "invoices-api",
   "params": {"tenant": ["4182"]}, "ttl_seconds": 900, "reason": "bench"}],
 "egress": [], "limits": {"wall_seconds": 3600},
 "mint": {"max_tokens": 10000000, "per_minute": 10000000, "burst": 1000000}}' >/dev/null
	job=$(curl -sf -X POST -H "Authorization: Bearer $launcher" "$url/v1/jobs" \
		-d '{"manifest": "bench"}' | json_get job)
	token=$(curl -sf -X POST -H "Authorization: Bearer $verifier" \
		-H "X-Cordon-Job: $job" "$url/v1/token" -d "$mint_body" |
		json_get access_token)
	lua "$verifier" POST "{\"token\": \"$token\"}" >"$dir/introspect.lua"
	lua "$verifier" POST "$mint_body" X-Cordon-Job "$job" >"$dir/mint.lua"
	# The introspections measured are real answers: the token is active.
	curl -sf -X POST -H "Authorization: Bearer $verifier" "$url/v1/introspect" \
		-d "{\"token\": \"$token\"}" | grep -q '"active":true' ||
		die "$name: the token is not active"
}

# --- sqlite: the single host ---------------------------------------------------

broker_up broker "$tmp" "$tmp/var/broker/keys" ""
url=$addr
read -r h_rps h_p99 _ < <(wrk_measure "$url/healthz")
read -r i_rps i_p99 i_bad < <(wrk_measure -s "$tmp/introspect.lua" "$url/v1/introspect")
read -r m_rps m_p99 m_bad < <(wrk_measure -s "$tmp/mint.lua" "$url/v1/token")
echo "sqlite: healthz $h_rps/s p99 ${h_p99}ms; introspect $i_rps/s p99 ${i_p99}ms" \
	"($i_bad not 200); mint $m_rps/s p99 ${m_p99}ms ($m_bad not 200)" >&2
[ "$i_bad" = 0 ] && [ "$m_bad" = 0 ] || die "some answers were not 200"
minted=$(curl -sf "$url/metrics" | awk '/^cordon_broker_tokens_minted_total/ {print $2}')
echo "tokens minted in all: $minted" >&2

result "broker: introspections, 50 conns" "req/s" higher "$i_rps" target 20000
result "broker: introspection p99, 50 conns" "ms" lower "$i_p99" healthz "$h_p99"
result "broker: introspections vs its /healthz" "req/s" higher "$i_rps" healthz "$h_rps"
result "broker: mints, synchronous=FULL, 50 conns" "req/s" higher "$m_rps" target 2000

[ "${BENCH_NO_PG:-0}" = 1 ] && exit 0

# --- PostgreSQL: one broker, then two on one database --------------------------

pgbin=$(find /usr/lib/postgresql -maxdepth 3 -name initdb -path '*/bin/*' 2>/dev/null |
	sort | tail -1 | xargs -r dirname)
[ -n "$pgbin" ] || die "PostgreSQL is needed (./deploy/install-deps.sh), or BENCH_NO_PG=1"
need setpriv
pgdir=$tmp/pg
mkdir -p "$pgdir" && chown nobody:nogroup "$pgdir" && chmod 0755 "$tmp" "$pgdir"
as_pg() { (cd "$pgdir" && LC_ALL=C setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"); }
as_pg "$pgbin/initdb" -D "$pgdir/data" -A trust -U cordon -E UTF8 >"$tmp/initdb.log" 2>&1 ||
	die "initdb failed: $(tail -3 "$tmp/initdb.log")"
as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -o \
	"-k $pgdir -p 5432 -c listen_addresses= -c max_connections=200" start >/dev/null ||
	die "PostgreSQL did not start: $(tail -3 "$pgdir/server.log")"
pg_down() { as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1 || true; }
trap 'pg_down; bench_cleanup' EXIT
pgurl="postgresql:///postgres?host=$pgdir&port=5432&user=cordon"

shared=$tmp/fleet
mkdir -p "$shared"
fleet_cfg="\"store\": \"$pgurl\", \"keys_dir\": \"$shared/keys\", \"pepper\": \"$shared/pepper\""
broker_up broker-pg "$tmp/a" "$shared/keys" "$fleet_cfg"
a=$addr
read -r pi_rps pi_p99 pi_bad < <(wrk_measure -s "$tmp/a/introspect.lua" "$a/v1/introspect")
read -r pm_rps pm_p99 pm_bad < <(wrk_measure -s "$tmp/a/mint.lua" "$a/v1/token")
echo "postgresql: introspect $pi_rps/s p99 ${pi_p99}ms ($pi_bad not 200);" \
	"mint $pm_rps/s p99 ${pm_p99}ms ($pm_bad not 200)" >&2

broker_up broker-pg-b "$tmp/b" "$shared/keys" "$fleet_cfg"
b=$addr
both() { # kind (introspect, mint), path: "sum_rps max_p99 bad" of A and B at once
	wrk_measure -s "$tmp/a/$1.lua" "$a$2" >"$tmp/both.a" &
	wrk_measure -s "$tmp/b/$1.lua" "$b$2" >"$tmp/both.b"
	wait $!
	cat "$tmp/both.a" "$tmp/both.b" | awk '{r += $1; if ($2 > p) p = $2; bad += $3}
		END {printf "%.2f %s %d\n", r, p, bad}'
}
read -r fi_rps fi_p99 fi_bad < <(both introspect /v1/introspect)
read -r fm_rps fm_p99 fm_bad < <(both mint /v1/token)
echo "two brokers: introspect $fi_rps/s p99 ${fi_p99}ms ($fi_bad not 200);" \
	"mint $fm_rps/s p99 ${fm_p99}ms ($fm_bad not 200)" >&2
[ "$pi_bad" = 0 ] && [ "$pm_bad" = 0 ] && [ "$fi_bad" = 0 ] && [ "$fm_bad" = 0 ] ||
	die "some answers were not 200"
# One chain after the two brokers' appends at once.
curl -sf -H "Authorization: Bearer $(cat "$shared/keys/admin.key")" \
	"$b/v1/audit?verify=1" | grep -q '"ok":true' || die "the audit chain does not verify"

result "broker (postgresql): introspections, 50 conns" "req/s" higher "$pi_rps" sqlite "$i_rps"
result "broker (postgresql): introspection p99, 50 conns" "ms" lower "$pi_p99" sqlite "$i_p99"
result "broker (postgresql): mints, 50 conns" "req/s" higher "$pm_rps" sqlite "$m_rps"
result "broker (postgresql): mint p99, 50 conns" "ms" lower "$pm_p99" sqlite "$m_p99"
result "two brokers, one postgresql: introspections, 2x50 conns" "req/s" higher "$fi_rps" one "$pi_rps"
result "two brokers, one postgresql: mints, 2x50 conns" "req/s" higher "$fm_rps" one "$pm_rps"
