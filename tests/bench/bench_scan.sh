#!/usr/bin/env bash
# The proxy's reflection scanner alone (tests/bench/scan.c): MB/s of
# scanning a 1 MiB JSON answer for a 40-byte value in 16 KiB reads,
# against a plain memmem of the raw value over the same bytes; and
# (tests/bench/answer.c) the nanoseconds the scan of a small answer
# costs as the proxy makes it (the chain from the job's set, a 230-byte
# head and a 100-byte body fed and flushed), memmem for scale; each with
# the job's set holding 0, 32 and 256 borrowed issuer tokens besides.
#
#   BENCH_ROUNDS (default 5; the best round counts)
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_scan
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
need_bin bench_scan bench_answer
# A job's set with 32 and 256 borrowed issuer tokens: one joined scanner.
for borrowed in 0 32 256; do
	"$bin/bench_scan" "${BENCH_ROUNDS:-5}" "$borrowed"
	"$bin/bench_answer" "${BENCH_ROUNDS:-5}" "$borrowed"
done
"$bin/bench_answer" "${BENCH_ROUNDS:-5}" 256 16384
