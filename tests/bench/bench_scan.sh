#!/usr/bin/env bash
# The proxy's reflection scanner alone (tests/bench/scan.c): MB/s of
# scanning a 1 MiB JSON answer for a 40-byte value in 16 KiB reads,
# against a plain memmem of the raw value over the same bytes; and
# (tests/bench/answer.c) the nanoseconds the scan of a small answer
# costs as the proxy makes it (the chain from the job's set, a 230-byte
# head and a 100-byte body fed and flushed), memmem for scale.
#
#   BENCH_ROUNDS (default 5; the best round counts)
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_scan
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
need_bin bench_scan bench_answer
"$bin/bench_scan" "${BENCH_ROUNDS:-5}"
"$bin/bench_answer" "${BENCH_ROUNDS:-5}"
