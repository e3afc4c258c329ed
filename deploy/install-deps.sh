#!/bin/sh
# Installs the Debian 12 packages cordon needs to build, test and run.
# Non-interactive and idempotent: packages already present are left alone,
# and apt is only asked for what is missing.
#
#   --bench   also the peers the benchmarks under tests/bench/ measure
#             against (not needed to build, test or run)
set -eu

PACKAGES="
build-essential
cmake
pkg-config
clang
clang-format
libclang-rt-14-dev
libmicrohttpd-dev
libevent-dev
libssl-dev
openssl
libjansson-dev
libsqlite3-dev
sqlite3
libpq-dev
postgresql
libseccomp-dev
check
libsubunit-dev
curl
python3
python3-yaml
python3-jsonschema
python3-pip
git
iproute2
nodejs
golang-go
dnsutils
python3-requests
wget
ca-certificates
systemd
"

BENCH_PACKAGES="
wrk
nginx-light
bc
squid-openssl
tinyproxy
mitmproxy
bubblewrap
valgrind
"

case "${1:-}" in
--bench) PACKAGES="$PACKAGES $BENCH_PACKAGES" ;;
"") ;;
*)
	echo "usage: $0 [--bench]" >&2
	exit 64
	;;
esac

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q '^install ok installed$'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "install-deps: not root and no sudo; install:$missing" >&2
		exit 1
	}
	SUDO=sudo
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
