#!/bin/sh
# Installs the Debian 12 packages cordon needs to build, test and run.
# Non-interactive and idempotent: packages already present are left alone,
# and apt is only asked for what is missing. openjdk-17-jdk-headless is
# it_jvm's (a JRE alone lacks the compiler a single-file program needs).
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
openjdk-17-jdk-headless
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

# npm: Debian's needs Debian's nodejs. NodeSource's nodejs (a newer
# one, "nodesource" in its version) carries its own npm and conflicts with
# Debian's, so npm is asked for only when there is no npm command and the
# nodejs installed, or about to be, is Debian's.
if ! command -v npm >/dev/null 2>&1; then
	node_version=$(dpkg-query -W -f='${Version}' nodejs 2>/dev/null || true)
	case "$node_version" in
	*nodesource*)
		echo "install-deps: nodejs $node_version is NodeSource's" \
		    "and there is no npm: NodeSource's nodejs package" \
		    "brings it; Debian's npm conflicts with it, so it is" \
		    "not installed (it_clients skips its npm case)" >&2
		;;
	*) missing="$missing npm" ;;
	esac
fi

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
