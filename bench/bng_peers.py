"""The vBNG benchmarks' peers: DPDK's qos_sched (downlink) and l3fwd LPM
(uplink), run on the same pcap input as edgeplane-dp and read through DPDK
telemetry.  l3fwd's harness is bench/dpdk_peer.py's (shared with the router
benchmark); this file adds qos_sched and the common measurement loop.

qos_sched is built by scripts/peers/qos_sched.sh (port-rate patch only).  Its
shape is fixed by the example: an rx thread (rx burst, the scheduler's
pkt_write, a ring) and a worker thread (ring, rte_sched enqueue, dequeue,
tx burst) on two lcores; the example refuses to put both on one.  Its
throughput is what the worker sustains, so the comparison gives qos_sched a
free core for rx: our Mpps on one core over qos_sched's on two is the
conservative ratio (benchmarks report the 2-core-normalised one as well).

    prof = write_qos_profile(path, pipes=4096, pipe_rate_bps=..., port_rate_bps=...)
    with QosSched(workdir, "qs", pcap, prof) as qs:
        rate = measure_peer(qs.tel, port=1, seconds=2)
"""
import os
import subprocess
import time
from pathlib import Path

from bench.common import ROOT
from bench.dpdk_peer import L3FWD_BIN, PeerProcess, Telemetry

PEERS = ROOT / "build" / "peers"
QOS_SCHED_BIN = PEERS / "qos_sched" / "build" / "qos_sched"
QOS_SCHED_SCRIPT = ROOT / "scripts" / "peers" / "qos_sched.sh"
BUILD_PEERS = ROOT / "scripts" / "build-peers"
QOS_SCHED_PORT_RATE = 12_500_000_000   # bytes/s: scripts/peers/qos_sched.sh default


def ensure_qos_sched():
    """Build (or confirm up to date) qos_sched; the script is idempotent."""
    res = subprocess.run([str(QOS_SCHED_SCRIPT)], capture_output=True, text=True)
    if res.returncode != 0 or not QOS_SCHED_BIN.exists():
        raise RuntimeError(f"scripts/peers/qos_sched.sh failed: {res.stdout}{res.stderr}")
    return QOS_SCHED_BIN


def ensure_l3fwd():
    if not L3FWD_BIN.exists():
        res = subprocess.run([str(BUILD_PEERS)], capture_output=True, text=True)
        if res.returncode != 0 or not L3FWD_BIN.exists():
            raise RuntimeError(f"scripts/build-peers failed: {res.stdout}{res.stderr}")
    return L3FWD_BIN


def write_qos_profile(path, pipes, pipe_rate_Bps, port_rate_Bps, qsize=64,
                      frame_overhead=24, tc_period_ms=10, pipe_tc_period_ms=40,
                      tb_size=1000000, wrr=(1, 1, 1, 1)):
    """qos_sched's profile file (its own format, see its profile.cfg): one
    subport of `pipes` pipes, all on pipe profile 0; every TC of the pipe at
    the pipe rate, every TC of the subport at the subport (= port) rate."""
    L = ["; edgeplane bench (bench/bng_peers.py): same hierarchy as the bng-downlink config",
         "[port]", f"frame overhead = {frame_overhead}", "number of subports per port = 1", "",
         "[subport 0]", f"number of pipes per subport = {pipes}",
         "queue sizes = " + " ".join([str(qsize)] * 13), f"pipe 0-{pipes - 1} = 0", "",
         "[subport profile 0]", f"tb rate = {port_rate_Bps}", f"tb size = {tb_size}"]
    L += [f"tc {i} rate = {port_rate_Bps}" for i in range(13)]
    L += [f"tc period = {tc_period_ms}", "", "[pipe profile 0]", f"tb rate = {pipe_rate_Bps}",
          f"tb size = {tb_size}"]
    L += [f"tc {i} rate = {pipe_rate_Bps}" for i in range(13)]
    L += [f"tc period = {pipe_tc_period_ms}", "", "tc 12 oversubscription weight = 1",
          "tc 12 wrr weights = " + " ".join(str(w) for w in wrr), ""]
    Path(path).write_text("\n".join(L))
    return Path(path)


class QosSched(PeerProcess):
    """DPDK qos_sched: port 0 = net_pcap (infinite rx of `pcap`), port 1 =
    net_null.  lcores: 0 = rx thread on CPU rx_cpu, 1 = worker (scheduler +
    tx) on CPU wt_cpu, 2 = the main thread (prints stats once a second) on
    CPU wt_cpu.  The example insists that every lcore index is below the
    number of CPUs and the main lcore is neither of the other two, which on
    a 2-CPU machine only this map satisfies."""

    def __init__(self, workdir, name, pcap, profile, rx_cpu=0, wt_cpu=1, mbufs=16384,
                 extra_eal=()):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.prefix = f"ep-bench-{name}-{os.getpid()}"
        self.log = self.workdir / f"{name}.log"
        eal = ["--lcores", f"0@{rx_cpu},1@{wt_cpu},2@{wt_cpu}", "--main-lcore", "2",
               "-n", "1", f"--file-prefix={self.prefix}", "--in-memory", "--no-pci",
               "--log-level", "*:info",
               f"--vdev=net_pcap0,rx_pcap={pcap},infinite_rx=1", "--vdev=net_null0"]
        eal += list(extra_eal)
        app = ["--pfc", "0,1,0,1", "--mnc", "2", "--cfg", str(profile), "--msz", str(mbufs)]
        self.cmd = [str(QOS_SCHED_BIN)] + eal + ["--"] + app
        self.proc = None
        self.tel = None

    def start(self, timeout=120.0):
        if not QOS_SCHED_BIN.exists():
            raise RuntimeError(f"{QOS_SCHED_BIN} missing: run scripts/peers/qos_sched.sh")
        self._logf = open(self.log, "w")
        self._logf.write(" ".join(self.cmd) + "\n")
        self._logf.flush()
        self.proc = subprocess.Popen(self.cmd, stdout=self._logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"qos_sched exited with {self.proc.returncode}: " + self.tail())
            text = self.log.read_text(errors="replace")
            if "sched+write port" in text or "entering main loop" in text:
                self.tel = Telemetry(self.prefix, timeout=10)
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("qos_sched did not reach its main loop: " + self.tail())


def measure_peer(tel, port, seconds, warmup=1.0):
    """Packets/s the peer transmitted on `port` over a window after warm-up
    (DPDK telemetry /ethdev/stats, opackets)."""
    time.sleep(warmup)
    t0, p0 = time.monotonic(), tel.port_stats(port)["opackets"]
    time.sleep(seconds)
    t1, p1 = time.monotonic(), tel.port_stats(port)["opackets"]
    return (p1 - p0) / (t1 - t0)
