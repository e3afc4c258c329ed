#!/usr/bin/env bash
# The proxy's reflection scanner alone (tests/bench/scan.c): MB/s of
# scanning a 1 MiB JSON answer for a 40-byte value in 16 KiB reads,
# against a plain memmem of the raw value over the same bytes.
#
#   BENCH_ROUNDS (default 5; the best round counts)
set -euo pipefail
cd "$(dirname "$0")/../.."
script=bench_scan
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
need_bin bench_scan
"$bin/bench_scan" "${BENCH_ROUNDS:-5}"
