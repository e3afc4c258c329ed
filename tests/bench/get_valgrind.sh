#!/usr/bin/env bash
# Debian 12's valgrind (3.19) does not know openat2(2), which the hatch uses
# for every path, so valgrind_job.sh cannot run the job's hatch under it.
# This unpacks Debian 13's valgrind (3.24 or later) into build-valgrind/
# without installing it (its tools are static; it runs on Debian 12) and
# writes build-valgrind/bin/valgrind, a wrapper that points it at its own
# tools. Then:
#
#   ./tests/bench/get_valgrind.sh
#   PATH=$PWD/build-valgrind/bin:$PATH ./tests/bench/valgrind_job.sh
#
# DEBIAN_MIRROR (default http://deb.debian.org/debian), DEBIAN_SUITE
# (default trixie).
set -euo pipefail
cd "$(dirname "$0")/../.."
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${DEBIAN_SUITE:-trixie}
out=$PWD/build-valgrind
script=get_valgrind
# shellcheck source-path=SCRIPTDIR source=lib.sh
. tests/bench/lib.sh
need curl xz dpkg-deb gpgv sha256sum

# apt's chain of trust, by hand: the suite's InRelease signed by a key of
# this machine's Debian keyring, the index's sha256 in it, the package's
# sha256 in the index.
mkdir -p "$out"
curl -fsS "$mirror/dists/$suite/InRelease" -o "$out/InRelease" ||
	die "cannot fetch $suite's InRelease from $mirror"
gpgv --keyring /usr/share/keyrings/debian-archive-keyring.gpg \
	--output "$out/Release" "$out/InRelease" 2>/dev/null ||
	die "$suite's InRelease is not signed by a key of debian-archive-keyring"
curl -fsS "$mirror/dists/$suite/main/binary-amd64/Packages.xz" -o "$out/Packages.xz" ||
	die "cannot fetch the $suite package index from $mirror"
want=$(awk '/^SHA256:/ { s = 1; next } /^[A-Za-z]/ { s = 0 }
	s && $3 == "main/binary-amd64/Packages.xz" { print $1 }' "$out/Release")
[ -n "$want" ] && [ "$(sha256sum <"$out/Packages.xz" | cut -d' ' -f1)" = "$want" ] ||
	die "the package index does not match $suite's Release"
read -r deb want < <(xz -dc "$out/Packages.xz" | awk '
	/^Package: / { p = ($2 == "valgrind") }
	p && /^Filename: / { f = $2 }
	p && /^SHA256: / { h = $2 }
	/^$/ { if (p && f != "" && !done) { print f, h; done = 1 } p = 0 }')
[ -n "${deb:-}" ] || die "no valgrind in $suite"
curl -fsS "$mirror/$deb" -o "$out/valgrind.deb" || die "cannot fetch $deb"
[ "$(sha256sum <"$out/valgrind.deb" | cut -d' ' -f1)" = "$want" ] ||
	die "$deb does not match the index's sha256"
rm -rf "$out/root"
dpkg-deb -x "$out/valgrind.deb" "$out/root"
mkdir -p "$out/bin"
cat >"$out/bin/valgrind" <<SH
#!/bin/sh
VALGRIND_LIB=$out/root/usr/libexec/valgrind exec $out/root/usr/bin/valgrind "\$@"
SH
chmod +x "$out/bin/valgrind"
echo "get_valgrind: $("$out/bin/valgrind" --version) in $out/bin (from $deb)"
