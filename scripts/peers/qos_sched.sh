#!/usr/bin/env bash
# Build DPDK's qos_sched example, the downlink peer of `make bench
# BENCH=bng-downlink`: compiled from the sources Debian's dpdk-doc ships
# under /usr/share/dpdk/examples/qos_sched, with its own Makefile against
# Debian's libdpdk (pkg-config).  Sources are copied into build/peers/ and
# patched there, never committed.  Idempotent: a stamp holding the hash of
# this script, the DPDK version, the patch parameter and the example sources
# skips the rebuild when nothing changed.  scripts/build-peers runs every
# scripts/peers/*.sh; it also runs alone.
#
#   build/peers/qos_sched/build/qos_sched
#
# The one patch, the smallest change that lets the unmodified scheduler run
# on our inputs (docs/bng.md says what it means for the comparison):
#   init.c: the rte_sched port rate comes from the tx port's link speed
#   (link_speed * 1e6 / 8).  Virtual devices report 10G, which at 504-byte
#   frames caps the scheduler at 2.4 Mpps: the benchmark would measure the
#   shaper, not the cost of scheduling.  The rate becomes
#   QOS_SCHED_PORT_RATE bytes/s (default 12.5e9 = 100 Gbit/s), the same port
#   rate edgeplane's HQoS gets in the benchmark.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
EXAMPLES="${DPDK_EXAMPLES:-/usr/share/dpdk/examples}"
OUT="$ROOT/build/peers"
SRC="$OUT/qos_sched"
QOS_SCHED_PORT_RATE="${QOS_SCHED_PORT_RATE:-12500000000}"

die() { echo "peers/qos_sched: $*" >&2; exit 1; }

[ -d "$EXAMPLES/qos_sched" ] || die "$EXAMPLES/qos_sched missing: install dpdk-doc (scripts/setup)"
pkg-config --exists libdpdk || die "libdpdk not found by pkg-config: install libdpdk-dev"
[[ "$QOS_SCHED_PORT_RATE" =~ ^[0-9]+$ ]] || die "QOS_SCHED_PORT_RATE must be bytes/s"

stamp="$({
	sha256sum "$0"
	pkg-config --modversion libdpdk
	echo "$QOS_SCHED_PORT_RATE"
	find "$EXAMPLES/qos_sched" -type f -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -d' ' -f1)"

if [ -x "$SRC/build/qos_sched" ] && [ "$(cat "$SRC/.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "peers/qos_sched: up to date ($SRC/build/qos_sched)"
	exit 0
fi

echo "peers/qos_sched: building from $EXAMPLES/qos_sched"
rm -rf "$SRC"
mkdir -p "$OUT"
cp -r "$EXAMPLES/qos_sched" "$SRC"
chmod -R u+w "$SRC"

# The patch, checked: a DPDK that moved the line fails here instead of
# benchmarking a 10G-capped scheduler.
sed -i -e "s|port_params.rate = (uint64_t) link.link_speed \* 1000 \* 1000 / 8;|port_params.rate = ${QOS_SCHED_PORT_RATE}ULL; /* edgeplane peers/qos_sched.sh: fixed port rate, bytes/s */|" \
	"$SRC/init.c"
grep -q "edgeplane peers/qos_sched.sh" "$SRC/init.c" || die "port-rate patch did not apply to init.c"
grep -q "link.link_speed \* 1000" "$SRC/init.c" && die "init.c still derives the port rate from the link"

make -C "$SRC" -j2 >"$OUT/qos_sched-build.log" 2>&1 ||
	{ tail -30 "$OUT/qos_sched-build.log" >&2; die "build failed (log: $OUT/qos_sched-build.log)"; }
[ -x "$SRC/build/qos_sched" ] || die "binary missing after build"
echo "$stamp" >"$SRC/.stamp"
echo "peers/qos_sched: built $SRC/build/qos_sched"
