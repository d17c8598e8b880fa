#!/usr/bin/env bash
# Build DPDK's dpdk-test-crypto-perf, the peer of `make bench BENCH=cmts`
# (the BPI+ crypto work alone: CRC-32 + AES-128 DOCSIS BPI through
# crypto_aesni_mb), from Debian's own source package of the installed DPDK.
# Debian's binary packages do not ship the test applications; the source
# package does.  It is fetched with `apt-get source` from Debian's archive
# (a deb-src line for bookworm is added under /etc/apt/sources.list.d when
# none exists) and unpacked under build/peers/, never into the repository.
# The same unpacked tree gives the unit tests DPDK's DOCSIS test vectors
# (app/test/test_cryptodev_security_docsis_test_vectors.h), read as data.
#
#   build/peers/dpdk-src/                       the unpacked source package
#   build/peers/crypto-perf/dpdk-test-crypto-perf
#
# No patch: app/test-crypto-perf builds unmodified against the installed
# libdpdk (pkg-config) plus -lrte_crypto_scheduler, which its scheduler
# options link to.  Idempotent: a stamp holding the hash of this script and
# the DPDK version skips the rebuild when nothing changed.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$ROOT/build/peers"
SRC="$OUT/dpdk-src"
BIN="$OUT/crypto-perf/dpdk-test-crypto-perf"
DEBSRC_LIST=/etc/apt/sources.list.d/edgeplane-deb-src.sources

die() { echo "peers/crypto_perf: $*" >&2; exit 1; }

pkg-config --exists libdpdk || die "libdpdk not found by pkg-config: install libdpdk-dev"
ver="$(dpkg-query -W -f='${Version}' libdpdk-dev 2>/dev/null)" ||
	die "libdpdk-dev is not installed (scripts/setup)"
stamp="$({ sha256sum "$0"; echo "$ver"; } | sha256sum | cut -d' ' -f1)"

if [ -x "$BIN" ] && [ -d "$SRC/app/test-crypto-perf" ] &&
   [ "$(cat "$OUT/crypto-perf/.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "peers/crypto_perf: up to date ($BIN)"
	exit 0
fi

# The source package of exactly the installed version.  A deb-src entry is
# needed: add one for Debian's own archive (bookworm) unless some source
# list already has it.
fetch_source() {
	local work="$OUT/dpdk-src.work"
	if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo "peers/crypto_perf: adding a deb-src entry for bookworm ($DEBSRC_LIST)"
		cat >"$DEBSRC_LIST" <<-EOF
		# Added by edgeplane scripts/peers/crypto_perf.sh: Debian's source
		# packages, for building DPDK's test applications as benchmark peers.
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: bookworm bookworm-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		apt-get update -qq -o Dir::Etc::sourcelist="$DEBSRC_LIST" \
			-o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 ||
			die "apt-get update of the deb-src entry failed"
	fi
	rm -rf "$work" "$SRC"
	mkdir -p "$work"
	(cd "$work" && apt-get source -qq "dpdk=$ver" >"$OUT/dpdk-src.log" 2>&1) || {
		tail -20 "$OUT/dpdk-src.log" >&2
		die "apt-get source dpdk=$ver failed (log: $OUT/dpdk-src.log)"
	}
	local dir
	dir="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'dpdk*' | head -1)"
	[ -n "$dir" ] && [ -d "$dir/app/test-crypto-perf" ] ||
		die "the source package has no app/test-crypto-perf"
	mv "$dir" "$SRC"
	rm -rf "$work"
}

if [ ! -d "$SRC/app/test-crypto-perf" ] ||
   [ "$(cat "$SRC/.edgeplane-version" 2>/dev/null)" != "$ver" ]; then
	echo "peers/crypto_perf: fetching Debian's source package dpdk=$ver"
	fetch_source
	echo "$ver" >"$SRC/.edgeplane-version"
fi

echo "peers/crypto_perf: building app/test-crypto-perf against libdpdk $(pkg-config --modversion libdpdk)"
mkdir -p "$OUT/crypto-perf"
# shellcheck disable=SC2046
cc -O3 -march=native -DALLOW_EXPERIMENTAL_API -include rte_config.h \
	$(pkg-config --cflags libdpdk) -I"$SRC/app/test-crypto-perf" \
	"$SRC"/app/test-crypto-perf/*.c -o "$BIN" \
	$(pkg-config --libs libdpdk) -lrte_crypto_scheduler -lm \
	>"$OUT/crypto-perf-build.log" 2>&1 || {
	tail -30 "$OUT/crypto-perf-build.log" >&2
	die "build failed (log: $OUT/crypto-perf-build.log)"
}
[ -x "$BIN" ] || die "binary missing after build"
echo "$stamp" >"$OUT/crypto-perf/.stamp"
echo "peers/crypto_perf: built $BIN"
