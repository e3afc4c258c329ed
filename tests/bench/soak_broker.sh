#!/usr/bin/env bash
# Soak: SOAK_CLIENTS (default 50) keep-alive clients against cordon-broker
# for SOAK_SECONDS (default 600), as two wrk runs side by side:
#
#   introspections: SOAK_CLIENTS - SOAK_WRITERS connections (45), each
#     POST /v1/introspect of one of 16 active tokens in turn; an answer
#     that does not say "active":true counts as an error;
#   writes: SOAK_WRITERS connections (default 5), a mix of mints
#     (POST /v1/token, 70%) for 5 jobs made at the start, heartbeats of
#     those jobs (10%), and jobs made (POST /v1/jobs, 10%) and revoked
#     (POST /v1/jobs/{job}/revoke, 10%; each job made is revoked once,
#     never heartbeated, so no answer may be a 409).
#
# Every write is durable (synchronous=FULL) and audited, so the database
# grows all along. Tokens live at most 15 minutes: a soak is run in
# rounds of at most 600 s, each introspecting 16 freshly minted tokens;
# its latencies are those of the worst round.
#
# A warm-up of SOAK_WARMUP seconds (default 15) of the same load comes
# first; file descriptors and VmRSS of the broker are read after it and
# after the soak, each time once the load has stopped. Errors: wrk's
# non-2xx answers and socket errors (timeout after SOAK_TIMEOUT seconds,
# default 10) of both runs, inactive introspections, store errors counted
# by the broker, and an audit chain that does not verify at the end. Exit
# status 1 if there was any.
#
#   SOAK_SECONDS=600 SOAK_CLIENTS=50 ./tests/bench/soak_broker.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
script=soak_broker
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
secs=${SOAK_SECONDS:-600}
warm=${SOAK_WARMUP:-15}
clients=${SOAK_CLIENTS:-50}
writers=${SOAK_WRITERS:-5}
timeout=${SOAK_TIMEOUT:-10}
round_max=600

need wrk curl python3
need_bin cordon-broker
readers=$((clients - writers))
if [ "$readers" -lt 2 ] || [ "$writers" -lt 1 ]; then
	die "SOAK_CLIENTS $clients, SOAK_WRITERS $writers: need 2 readers and 1 writer"
fi

# --- the broker ----------------------------------------------------------------

# A long lease: the jobs the writes make are never heartbeated.
echo '{"lease_seconds": 3600}' >"$tmp/broker.json"
start_service broker "$tmp" "$bin/cordon-broker" --config "$tmp/broker.json"
broker_pid=$started url=$addr
admin=$(cat "$tmp/var/broker/keys/admin.key")
launcher=$(cat "$tmp/var/broker/keys/launcher.key")
verifier=$(cat "$tmp/var/broker/keys/verifier.key")

wall=$((secs + warm + 3600))
[ "$wall" -le 86400 ] || die "SOAK_SECONDS: at most 82,000"
curl -sf -X PUT -H "Authorization: Bearer $admin" "$url/v1/manifests/soak" -d '{
 "name": "soak",
 "capabilities": [{"name": "invoices.read", "audience": "invoices-api",
   "params": {"tenant": ["4182"]}, "ttl_seconds": 900, "reason": "soak"}],
 "egress": [], "limits": {"wall_seconds": '"$wall"'},
 "mint": {"max_tokens": 10000000, "per_minute": 10000000, "burst": 1000000}}' >/dev/null ||
	die "manifest refused"
new_job() {
	curl -sf -X POST -H "Authorization: Bearer $launcher" "$url/v1/jobs" \
		-d '{"manifest": "soak"}' | json_get job
}
mint_body='{"capability": "invoices.read", "params": {"tenant": "4182"}}'
jobs=()
for _ in 1 2 3 4 5; do jobs+=("$(new_job)"); done

# --- the wrk scripts -------------------------------------------------------------

# Both count what they saw in globals of each thread, summed by done() and
# printed as "count NAME N" lines after wrk's own output.
lua_common() { # the globals to sum
	cat <<LUA
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
	for _, name in ipairs({$1}) do
		local n = 0
		for _, t in ipairs(threads) do n = n + (t:get(name) or 0) end
		io.write(string.format("count %s %d\n", name, n))
	end
end
LUA
}

# Introspections of the tokens given, in turn.
introspect_lua() { # token...
	lua_common '"inactive"'
	cat <<LUA
local tokens = { $(printf '"%s", ' "$@") }
local reqs = {}
local i = 0
inactive = 0
function init(args)
	for k, t in ipairs(tokens) do
		reqs[k] = wrk.format("POST", "/v1/introspect",
			{ ["Authorization"] = "Bearer $verifier",
			  ["Content-Type"] = "application/json" },
			'{"token": "' .. t .. '"}')
	end
	i = math.random(#reqs)
end
function request()
	i = i % #reqs + 1
	return reqs[i]
end
function response(status, headers, body)
	if status == 200 and not string.find(body, '"active":true', 1, true) then
		inactive = inactive + 1
	end
end
LUA
}

# The writes: mints and heartbeats for the jobs made at the start, jobs
# made and then revoked once (a queue of those made, each revoke takes
# the oldest).
writes_lua() {
	lua_common '"minted", "heartbeats", "created", "revoked", "unexpected"'
	cat <<LUA
local jobs = { $(printf '"%s", ' "${jobs[@]}") }
local V = { ["Authorization"] = "Bearer $verifier", ["Content-Type"] = "application/json" }
local L = { ["Authorization"] = "Bearer $launcher", ["Content-Type"] = "application/json" }
local mints, beats = {}, {}
local queue, head, tail = {}, 1, 0
minted, heartbeats, created, revoked, unexpected = 0, 0, 0, 0, 0
function init(args)
	math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 100000)
	for k, j in ipairs(jobs) do
		local h = { ["X-Cordon-Job"] = j }
		for name, v in pairs(V) do h[name] = v end
		mints[k] = wrk.format("POST", "/v1/token", h, '$mint_body')
		beats[k] = wrk.format("POST", "/v1/jobs/" .. j .. "/heartbeat", L, "")
	end
end
function request()
	local r = math.random(100)
	local queued = tail - head + 1
	if r <= 70 then
		return mints[math.random(#mints)]
	elseif r <= 80 then
		return beats[math.random(#beats)]
	elseif (r <= 90 and queued < 50) or queued == 0 then
		return wrk.format("POST", "/v1/jobs", L, '{"manifest": "soak"}')
	end
	local j = queue[head]
	queue[head] = nil
	head = head + 1
	return wrk.format("POST", "/v1/jobs/" .. j .. "/revoke", L, '{"reason": "soak"}')
end
function response(status, headers, body)
	if status == 201 then
		local j = string.match(body, '"job":"(job_[%w_-]+)"')
		if j then
			tail = tail + 1
			queue[tail] = j
			created = created + 1
		else
			unexpected = unexpected + 1
		end
	elseif status == 200 then
		if string.find(body, '"access_token"', 1, true) then
			minted = minted + 1
		elseif string.find(body, '"tokens_revoked"', 1, true) then
			revoked = revoked + 1
		elseif string.find(body, '"lease_expires"', 1, true) then
			heartbeats = heartbeats + 1
		else
			unexpected = unexpected + 1
		end
	end
end
LUA
}
writes_lua >"$tmp/writes.lua"

# --- the load ------------------------------------------------------------------

mint() {
	curl -sf -X POST -H "Authorization: Bearer $verifier" \
		-H "X-Cordon-Job: $1" "$url/v1/token" -d "$mint_body" |
		json_get access_token
}
# One round: 16 tokens minted, then both wrk runs side by side.
round() { # seconds, name
	local tokens=() k
	for k in $(seq 0 15); do tokens+=("$(mint "${jobs[k % 5]}")"); done
	introspect_lua "${tokens[@]}" >"$tmp/introspect.lua"
	wrk -t2 -c"$readers" -d"$1s" --timeout "${timeout}s" --latency \
		-s "$tmp/introspect.lua" "$url/v1/introspect" >"$tmp/$2.reads" &
	local r=$!
	pids+=("$r")
	wrk -t1 -c"$writers" -d"$1s" --timeout "${timeout}s" --latency \
		-s "$tmp/writes.lua" "$url/v1/token" >"$tmp/$2.writes" &
	local w=$!
	pids+=("$w")
	wait "$r" || die "wrk (introspections) failed: $(cat "$tmp/$2.reads")"
	wait "$w" || die "wrk (writes) failed: $(cat "$tmp/$2.writes")"
}
count() { # name, files...: the sum of "count NAME N" lines
	local name=$1
	shift
	awk -v n="$name" '$1 == "count" && $2 == n {s += $3} END {print s + 0}' "$@"
}
metric() { # name: the broker's counter
	curl -sf "$url/metrics" | awk -v m="$1" '$1 == m {print $2}'
}

say "warm-up: $readers introspecting and $writers writing for $warm s"
round "$warm" warm
sleep 2
sample start broker="$broker_pid"
store0=$(metric cordon_broker_store_errors_total)

left=$secs
nr=0
while [ "$left" -gt 0 ]; do
	s=$((left < round_max ? left : round_max))
	nr=$((nr + 1))
	say "round $nr: $readers introspecting and $writers writing for $s s"
	round "$s" "round$nr"
	left=$((left - s))
done
sleep 2
sample end broker="$broker_pid"

# Every round's figures: summed, or the worst of them.
errors=0 ri=0 wi=0 rbad=0 rsock=0 wbad=0 wsock=0 rp50=0 rp99=0 wp50=0 wp99=0
max() { awk -v a="$1" -v b="$2" 'BEGIN {print (b > a) ? b : a}'; }
for k in $(seq 1 "$nr"); do
	read -r n bad c r w t p50 p99 < <(wrk_figures "$tmp/round$k.reads")
	ri=$((ri + n)) rbad=$((rbad + bad)) rsock=$((rsock + c + r + w + t))
	rp50=$(max "$rp50" "$p50") rp99=$(max "$rp99" "$p99")
	read -r n bad c r w t p50 p99 < <(wrk_figures "$tmp/round$k.writes")
	wi=$((wi + n)) wbad=$((wbad + bad)) wsock=$((wsock + c + r + w + t))
	wp50=$(max "$wp50" "$p50") wp99=$(max "$wp99" "$p99")
done
files=()
for k in $(seq 1 "$nr"); do files+=("$tmp/round$k.reads" "$tmp/round$k.writes"); done
inactive=$(count inactive "${files[@]}")
unexpected=$(count unexpected "${files[@]}")
store=$(($(metric cordon_broker_store_errors_total) - store0))
say "audit: verifying the chain"
audit=$(curl -sf --max-time 600 -H "Authorization: Bearer $admin" \
	"$url/v1/audit?verify=1") || audit='{"ok": false}'
audit_ok=$(json_get ok <<<"$audit")
records=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("records", "?"))' <<<"$audit")
audit_bad=1
[ "$audit_ok" != True ] || audit_bad=0
db_mib=$(du -cm "$tmp/var/broker"/broker.db* | awk 'END {print $1}')

errors=$((rbad + rsock + wbad + wsock + inactive + unexpected + store + audit_bad))
soak_row "introspections (per second)" - "$ri ($((ri / secs))/s)"
soak_row "writes (per second)" - "$wi ($((wi / secs))/s)"
soak_row "  mints, heartbeats" - "$(count minted "${files[@]}"), $(count heartbeats "${files[@]}")"
soak_row "  jobs made, revoked" - "$(count created "${files[@]}"), $(count revoked "${files[@]}")"
soak_row "audit records (verified)" - "$records ($audit_ok)"
soak_row "database MiB" - "$db_mib"
soak_row "introspection latency p50 ms" - "$rp50"
soak_row "introspection latency p99 ms" - "$rp99"
soak_row "write latency p50 ms" - "$wp50"
soak_row "write latency p99 ms" - "$wp99"
table "$clients clients ($readers introspecting, $writers writing) for $secs s" \
	"$errors" \
	"non-2xx $((rbad + wbad)); socket $((rsock + wsock)); inactive $inactive; unexpected $unexpected; store $store; audit $audit_bad" \
	broker
[ "$errors" -eq 0 ]
