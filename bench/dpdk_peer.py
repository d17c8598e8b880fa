"""DPDK example applications as benchmark peers, and their telemetry.

The examples print no rates, so their port counters are read through DPDK
telemetry: every EAL process (unless --no-telemetry) listens on
/var/run/dpdk/<file-prefix>/dpdk_telemetry.v2, a SOCK_SEQPACKET socket that
greets with {"version", "pid", "max_output_len"} and answers one JSON object
per request such as "/ethdev/stats,1".  This is the protocol
usertools/dpdk-telemetry.py speaks (Debian does not ship that script).

--in-memory still creates the runtime directory and the socket, so a peer
runs with --file-prefix (unique per run) and --in-memory: no hugepage files
are left behind.
"""
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from bench.common import ROOT
from lab.dp import retry_on_memory

PEERS = ROOT / "build" / "peers"
L3FWD_BIN = PEERS / "l3fwd" / "build" / "l3fwd"
# The same l3fwd with its ACL loop's stages timed (scripts/build-peers):
# per-stage figures only, never a ratio.
L3FWD_STAGES_BIN = PEERS / "l3fwd-stages" / "build" / "l3fwd"
RUNTIME = Path("/var/run/dpdk")


class Telemetry:
    def __init__(self, file_prefix, timeout=60.0):
        self.path = RUNTIME / file_prefix / "dpdk_telemetry.v2"
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self.s.connect(str(self.path))
                break
            except OSError:
                self.s.close()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no telemetry socket at {self.path}") from None
                time.sleep(0.2)
        hello = json.loads(self.s.recv(4096))
        self.max_len = hello.get("max_output_len", 16384)
        self.pid = hello.get("pid")

    def query(self, cmd):
        self.s.send(cmd.encode())
        return json.loads(self.s.recv(self.max_len))

    def port_stats(self, port):
        r = self.query(f"/ethdev/stats,{port}")
        st = r.get("/ethdev/stats")
        if not isinstance(st, dict):
            raise RuntimeError(f"telemetry /ethdev/stats,{port}: {r}")
        return st

    def close(self):
        self.s.close()


class PeerProcess:
    """A DPDK example application run as a benchmark peer: its log file,
    telemetry handle and a clean stop (SIGINT, as a user would)."""

    proc = None
    tel = None
    log = None
    _logf = None
    stop_timeout = 20

    def tail(self, n=10):
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except (OSError, AttributeError):
            return ""

    def stop(self):
        if self.tel:
            self.tel.close()
            self.tel = None
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.send_signal(signal.SIGCONT)      # if it was paused
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()
        self.proc = None

    def __enter__(self):
        """Started, retried while the shared hugepages are short (the
        policy of lab.dp, which ours follows beside it)."""
        try:
            return retry_on_memory(self.start, self.stop, what=self.name)
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


# The EAL caps the SIMD width DPDK's libraries choose at 256 bits unless
# told otherwise (rte_vect_get_max_simd_bitwidth, the EAL's default), so on
# an AVX-512 CPU rte_acl's widest method is then AVX512X16 (256-bit
# registers, 16 flows at a time); with this flag AVX512X32 (512-bit
# registers, 32 flows) is allowed too.  The ACL comparisons run a second
# time with it on both sides (`vs_dpdk-l3fwd-acl_simd512`).
SIMD512_EAL = "--force-max-simd-bitwidth=512"


class L3fwd(PeerProcess):
    """DPDK l3fwd on one lcore with an rx vdev (port 0) and a tx vdev (port 1).

    lookup: "lpm" or "acl".  rule_ipv4/rule_ipv6: route files (LPM: "R<pfx> <port>"
    lines) or ACL rule files ("@..." ACL and "R..." route lines)."""

    def __init__(self, workdir, name, vdevs, lookup, rule_ipv4, rule_ipv6, lcore=1,
                 eth_dest=None, extra_eal=(), alg=None, binary=L3FWD_BIN):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.prefix = f"ep-bench-{name}-{os.getpid()}"
        self.log = self.workdir / f"{name}.log"
        eal = ["-l", str(lcore), "-n", "1", f"--file-prefix={self.prefix}", "--in-memory",
               "--no-pci", "--log-level", "*:notice"] + list(extra_eal)
        for v in vdevs:
            eal.append(f"--vdev={v}")
        app = ["-p", "0x3", f"--lookup={lookup}", f"--config=(0,0,{lcore})", "--parse-ptype",
               f"--rule_ipv4={rule_ipv4}", f"--rule_ipv6={rule_ipv6}"]
        if eth_dest:
            app.append(f"--eth-dest=1,{eth_dest}")
        if alg:                 # rte_acl classify method (ACL mode), as ours names it
            app.append(f"--alg={alg}")
        self.alg = alg
        self.binary = Path(binary)
        self.cmd = [str(self.binary)] + eal + ["--"] + app
        self.proc = None
        self.tel = None

    def start(self, timeout=180.0):
        if not self.binary.exists():
            raise RuntimeError(f"{self.binary} missing: run `make peers`")
        if self.tel is not None:      # a previous attempt's socket
            self.tel.close()
            self.tel = None
        self._logf = open(self.log, "w")
        self._logf.write(" ".join(self.cmd) + "\n")
        self._logf.flush()
        self.proc = subprocess.Popen(self.cmd, stdout=self._logf, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        # Telemetry comes up with the EAL, before the tables are built and
        # the ports started (l3fwd's stdout is a fully buffered file, so its
        # log says nothing in time): ready when port 0 has received packets.
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"l3fwd exited with {self.proc.returncode}: " + self.tail())
            if self.tel is None and (RUNTIME / self.prefix / "dpdk_telemetry.v2").exists():
                self.tel = Telemetry(self.prefix, timeout=10)
            if self.tel is not None and self.tel.port_stats(0)["ipackets"] > 0:
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("l3fwd did not reach its main loop: " + self.tail())


# l3fwd --lookup=acl's loop as the stage-timed build times it
# (scripts/peers/patches/l3fwd-acl-stages.patch), named as ours where the
# work is the same: rx (rte_eth_rx_burst, with --parse-ptype's software
# packet type), prep (the ACL's data pointers and prefetches), acl
# (rte_acl_classify of its rules and routes in one trie), send (the MAC
# rewrite, RFC 1812 TTL and checksum, and tx: ours' rewrite and tx).
L3FWD_ACL_STAGES = {"rx": "rx", "prep": "prep", "classify": "acl", "send": "send"}


def l3fwd_acl_stages(workdir, name, vdevs, rule_ipv4, rule_ipv6, seconds, cycles_per_pkt,
                     lcore=1, eth_dest=None, alg=None):
    """The stage-timed l3fwd --lookup=acl (L3FWD_STAGES_BIN, the arguments
    of the unpatched peer it stands beside) alone on @p lcore for
    @p seconds: its stages' TSC a packet (one burst in 16 timed, as
    edgeplane-dp times its own), and those shares scaled to
    @p cycles_per_pkt, the unpatched peer's figure, as ours' stages are
    scaled to ours'.  A per-stage view of the peer, never a ratio."""
    app = L3fwd(workdir, f"{name}-stages", vdevs, "acl", rule_ipv4, rule_ipv6, lcore=lcore,
                eth_dest=eth_dest, alg=alg, binary=L3FWD_STAGES_BIN)
    with app:
        time.sleep(seconds)
    m = re.search(r"edgeplane-stages: pkts (\d+) rx (\d+) prep (\d+) classify (\d+) "
                  r"send (\d+)", app.log.read_text(errors="replace"))
    if m is None or int(m.group(1)) == 0:
        raise RuntimeError(f"{app.binary} printed no stages: {app.tail()}")
    pkts = int(m.group(1))
    raw = {L3FWD_ACL_STAGES[k]: int(v) / pkts
           for k, v in zip(("rx", "prep", "classify", "send"), m.groups()[1:])}
    scale = cycles_per_pkt / sum(raw.values())
    return {"cycles_per_pkt": round(cycles_per_pkt, 1),
            "stages": {s: round(v * scale, 1) for s, v in raw.items()},
            "stages_tsc": {s: round(v, 1) for s, v in raw.items()}, "timed_pkts": pkts,
            "how": f"{L3FWD_STAGES_BIN.relative_to(ROOT)} "
                   "(scripts/peers/patches/l3fwd-acl-stages.patch) alone on "
                   f"lcore {lcore} for {seconds:g} s: its stages' TSC shares, scaled to the "
                   "unpatched peer's cycles_per_pkt"}
