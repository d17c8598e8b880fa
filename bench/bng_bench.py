"""The vBNG benchmarks' common part: edgeplane-dp in-process with the vBNG
white paper's per-instance configuration (bng_inputs), the peers on the same input, alternating
measurement windows, and the result in bench/common.py's shape.

In-process: the rx port is net_pcap (rx_pcap=FILE, infinite_rx=1: the pcap
is loaded into mbufs once and replayed for ever), the tx port net_null.  No
veth, no kernel: what is measured is the pipeline's compute.

Alternation (bench/ab.py): ours and the peer are both started once per
case, then SIGSTOPped and SIGCONTinued in turn, so each window runs alone on
the machine and start-up (4K subscribers, ACL build) is paid once.  A
stopped process holds its memory but takes no CPU.
"""
import statistics
import struct
from pathlib import Path

from bench import ab, common, host_info
from bench.bng_inputs import CORE_NH_IP, CORE_NH_MAC, N_SUBS, PCAP_MAC, RING_MAC, mean_frame
from bench.bng_measure import Window, find_threads, rate
from lab.dp import Dp

HQOS_PORT_RATE = "100G"    # = qos_sched's patched port rate (12.5e9 B/s): not the bottleneck
SUBPORT_RATE = "100G"
PIPE_RATE = "100M"         # per subscriber; offered load per pipe stays far below
POLICER = "cir=100M cbs=256K pir=200M pbs=512K mode=rfc2698"  # metered, all green
QSIZE = 64                 # rte_sched queue size, as qos_sched's profile


def subscriber_file(inputs, pppoe=False):
    """One sub-add line per subscriber (the config's subscriber_file)."""
    path = inputs.dir / f"subscribers-{'pppoe' if pppoe else 'ipoe'}-{inputs.n}.txt"
    if not path.exists():
        with open(path, "w") as f:
            f.write(f"# {inputs.n} benchmark subscribers (bench/bng_inputs.py)\n")
            for s in inputs.subs(pppoe):
                parts = [f"id={s.id}", f"qinq={s.svlan}.{s.cvlan}"]
                if s.pppoe:
                    parts.append(f"pppoe={s.pppoe}")
                parts += [f"mac={s.mac}", f"ipv4={s.ipv4}", f"ipv6={s.ipv6}",
                          "policer=std", "pipe=std", "subport=0"]
                f.write(" ".join(parts) + "\n")
    return path


def dp_config(inputs, up_pcap=None, down_pcap=None, pppoe=False, lcores=None,
              ring_feed=False):
    """edgeplane-dp config: uplink worker if up_pcap, downlink if down_pcap.

    ring_feed (downlink only): the downlink worker polls a net_ring port
    that a feeder worker (xconnect, lcore 2 on CPU 0) fills from the pcap,
    as qos_sched's rx thread fills its scheduler thread's rte_ring: the
    downlink worker's rx is then a ring dequeue of ready mbufs, and
    net_pcap's copy of every frame into a fresh mbuf is the feeder's."""
    if up_pcap is None and down_pcap is None:
        raise ValueError("no direction")
    if ring_feed:
        if up_pcap is not None:
            raise ValueError("ring_feed is for the downlink alone")
        return ring_fed_down_config(inputs, down_pcap)
    # The engine gives every worker a tx queue on every port; net_pcap has
    # one tx queue per tx_pcap argument.  With both directions, each pcap
    # port is also the other worker's tx port: /dev/null dumpers (their
    # cost shows in the tx stage).
    both = up_pcap and down_pcap
    txq = ",tx_pcap=/dev/null,tx_pcap=/dev/null" if both else ""
    acc_dev = f"net_pcap0,rx_pcap={up_pcap},infinite_rx=1{txq}" if up_pcap else "net_null0"
    core_dev = (f"net_pcap1,rx_pcap={down_pcap},infinite_rx=1{txq}" if down_pcap
                else "net_null1")
    L = ["[eal]", f"args = --lcores={lcores or '0@0,1@1,2@0'}", "",
         # The peers run on hugepages: so do we (lab.dp.Dp waits while
         # the shared pool is short).
         "[engine]", "burst = 32", "memory = hugepages", "",
         "[port access]", f"device = {acc_dev}", "rx_desc = 8192", "",
         "[port core]", f"device = {core_dev}", "ipv4 = 198.18.1.1/24", "rx_desc = 8192", ""]
    lc = 1
    if up_pcap:
        L += ["[worker up]", "pipeline = bng-uplink", "rx = access", f"lcore = {lc}", ""]
        lc += 1
    if down_pcap:
        L += ["[worker down]", "pipeline = bng-downlink", "rx = core", f"lcore = {lc}", ""]
    return "\n".join(L + _bng_section(inputs, pppoe))


def _bng_section(inputs, pppoe):
    return ["[bng]", "access_port = access", "core_port = core",
          f"max_subscribers = {inputs.n}",
          # The white paper's single forwarding rule, as two /1s: l3fwd's rte_lpm
          # takes no /0, and both sides get the same table (one tbl24 read).
          f"route = 0.0.0.0/1 via {CORE_NH_IP}", f"route = 128.0.0.0/1 via {CORE_NH_IP}",
          f"neighbor = {CORE_NH_IP} {CORE_NH_MAC}",
          f"acl_file = {inputs.acl_file()}",
          f"policer = std {POLICER}", f"pipe = std rate={PIPE_RATE}",
          f"subport = 0 rate={SUBPORT_RATE} pipes={inputs.n}",
          f"hqos_port_rate = {HQOS_PORT_RATE}", f"hqos_qsize = {QSIZE}",
          f"subscriber_file = {subscriber_file(inputs, pppoe)}", ""]


def pcap_frames(path):
    """Frames in a classic pcap file (what the replay feeder learns).

    By hand, not scapy's RawPcapReader: that reader returns a record cut
    short by the file's end as if it were whole, and a count that includes
    it would have the replay wait for a frame net_pcap never delivers."""
    data = memoryview(Path(path).read_bytes())
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
             b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}.get(bytes(data[:4]))
    if order is None:
        raise ValueError(f"{path}: not a pcap file")
    off, n = 24, 0
    while off + 16 <= len(data):
        incl = struct.unpack_from(order + "I", data, off + 8)[0]
        off += 16 + incl
        n += 1
    if off != len(data):
        raise ValueError(f"{path}: truncated record")
    return n


def feeder_section(feeder, down_pcap):
    """The feeder worker (lcore 2, CPU 0) of the ring-fed downlink.

    pcap: xconnect from the pcap port to the ring, net_pcap's infinite rx
    copying every byte of every frame into a fresh mbuf on the feeder's
    core (241-246 cycles a 504-byte frame: slower than the worker it
    feeds).  replay (dataplane/gen/replay.h): the pcap's frames learnt once
    through the same port, then sent in the same order in fresh mbufs of
    which only the first 64 bytes (the headers the downlink reads) are
    written."""
    if feeder == "pcap":
        return ["[worker feed]", "pipeline = xconnect", "rx = feed", "pairs = feed:core",
                "lcore = 2", ""]
    if feeder == "replay":
        return ["[worker feed]", "pipeline = replay", "rx = feed", "tx = core",
                f"frames = {pcap_frames(down_pcap)}", "lcore = 2", ""]
    raise ValueError(f"feeder {feeder!r}: pcap or replay")


def ring_fed_down_config(inputs, down_pcap, feeder="pcap"):
    """The downlink worker (lcore 1, CPU 1) behind a feeder (lcore 2, CPU 0).

    net_ring0 without arguments makes one rte_ring per queue pair, shared
    by rx and tx queue i (SP/SC): what a worker sends on tx queue i comes
    back on rx queue i.  Worker index i sends on tx queue i of every port,
    and the downlink worker polls rx queue 0 of the ring port, so the
    feeder is the first [worker] section.  Neither feeder changes a
    frame's bytes, and net_ring takes no configured MAC: the pcap is addressed
    to the ring port's (bench/bng_inputs.RING_MAC; Inputs.downlink_pcap's
    ring=True)."""
    L = ["[eal]", "args = --lcores=0@0,1@1,2@0", "",
         "[engine]", "burst = 32", "memory = hugepages", "",
         "[port access]", "device = net_null0", "",
         # net_pcap has one tx queue per tx_pcap, and every worker gets
         # one (nothing is sent on them).
         "[port feed]", f"device = net_pcap0,rx_pcap={down_pcap},infinite_rx=1,"
         "tx_pcap=/dev/null,tx_pcap=/dev/null",
         "rx_desc = 8192", "",
         "[port core]", "device = net_ring0",
         "ipv4 = 198.18.1.1/24", ""] + feeder_section(feeder, down_pcap) + [
         "[worker down]", "pipeline = bng-downlink", "rx = core", "lcore = 1", ""]
    return "\n".join(L + _bng_section(inputs, False))


class Ours(ab.DpProcess):
    """edgeplane-dp under SIGSTOP/SIGCONT control, measured per worker."""

    def __init__(self, workdir, name, config, binary=None):
        self.label = name
        self.dp = self.proc = Dp(None, config, name=name, workdir=workdir, start_timeout=180,
                                 ctl_timeout=30, log=print, binary_path=binary)

    def _ready(self):
        self.pid = self.dp.pid
        # The pcaps are addressed to the pcap devices' fixed MACs: check.
        ports = {p["name"]: p for p in self.dp.ctl("ports")["ports"]}
        for p in ports.values():
            if p["device"].startswith("net_pcap") and p["mac"] not in (
                    PCAP_MAC.format(0), PCAP_MAC.format(1)):
                raise RuntimeError(f"port {p['name']} has MAC {p['mac']}, the pcaps expect "
                                   "02:70:63:61:70:0N (bench/bng_inputs.PCAP_MAC)")
            if p["device"].startswith("net_ring") and p["mac"] != RING_MAC:
                raise RuntimeError(f"port {p['name']} has MAC {p['mac']}, the ring-fed "
                                   f"pcaps expect {RING_MAC} (bench/bng_inputs.RING_MAC)")
        self.workers = {w["name"]: w for w in self.dp.ctl("stats")["workers"]}
        self.tsc_hz = self.dp.ctl("stats")["tsc_hz"]
        self.acl_methods = host_info.acl_methods(self.dp)
        self.parse_x8 = host_info.parse_x8(self.dp)
        names = [f"rte-worker-{w['lcore']}" for w in self.workers.values()]
        self.tids = find_threads(self.pid, names)
        return self

    def _snapshot(self):
        st = self.dp.ctl("stages")
        out = {}
        for w in st["workers"]:
            out[w["name"]] = {"rx": w["rx_pkts"], "tx": w["tx_pkts"],
                              "stages": {s["name"]: (s["cycles"], s["pkts_in"], s["pkts_dropped"])
                                         for s in w["stages"]},
                              "busy": w["busy_cycles"], "idle": w["idle_cycles"],
                              "polls": w["polls"] - w["empty_polls"]}
        return out

    def measure(self, seconds):
        """{worker: {mpps_per_core, mpps_wall, cycles_per_pkt, stages, drops}}"""
        r = Window(self.pid, self.tids, self._snapshot).run(seconds)
        res = {}
        for name, w in self.workers.items():
            a, b = r["c0"][name], r["c1"][name]
            pkts = b["tx"] - a["tx"]
            rx = b["rx"] - a["rx"]
            cpu = r["cpu_s"][f"rte-worker-{w['lcore']}"]
            stages = {}
            drops = 0
            for sname, (cyc, _pin, pdrop) in b["stages"].items():
                c0, _, d0 = a["stages"].get(sname, (0, 0, 0))
                stages[sname] = (cyc - c0) / rx if rx else 0.0
                drops += pdrop - d0
            res[name] = {"mpps_per_core": rate(pkts, cpu), "mpps_wall": rate(pkts, r["wall_s"]),
                         "rx_mpps_per_core": rate(rx, cpu),
                         "cpu_s": cpu, "wall_s": r["wall_s"], "rx_pkts": rx, "tx_pkts": pkts,
                         "drops": drops,
                         "cycles_per_pkt": (b["busy"] - a["busy"]) / rx if rx else 0.0,
                         # Loop iterations that found nothing to receive or
                         # send, as a share of the TSC: a fed worker
                         # starved by its feeder shows here.
                         "idle_share": _share(b["idle"] - a["idle"], b["busy"] - a["busy"]),
                         # Packets per rx burst that found any: a feeder that
                         # falls behind hands over short bursts.
                         "rx_burst": rx / (b["polls"] - a["polls"]) if b["polls"] > a["polls"]
                         else 0.0,
                         "stages": stages}
        return res


class Peer(ab.Process):
    """A DPDK example app (started by the caller) measured on its tx port;
    per core = packets per CPU-second of `core_threads`.

    rx_port, rx_thread (qos_sched): also the packets its rx thread took
    from the rx port per CPU-second of that thread (a thread that always
    finds packets -- net_pcap's infinite rx -- runs at its capacity), and
    the share of them that never left (qos_sched's rx thread frees a burst
    its ring to the scheduler has no room for: a share above 0 says the
    rx thread outran the scheduler; none says the scheduler waited)."""

    def __init__(self, app, tx_port, threads, core_threads=None, rx_port=None,
                 rx_thread=None):
        self.app, self.tx_port = app, tx_port
        self.rx_port, self.rx_thread = rx_port, rx_thread
        self.label = app.name
        self.proc = app.proc
        self.pid = app.proc.pid
        self.tids = find_threads(self.pid, threads)
        self.core_threads = core_threads or threads

    def _counters(self):
        tx = self.app.tel.port_stats(self.tx_port)["opackets"]
        if self.rx_port is None:
            return tx, 0
        return tx, self.app.tel.port_stats(self.rx_port)["ipackets"]

    def measure(self, seconds):
        r = Window(self.pid, self.tids, self._counters).run(seconds)
        pkts = r["c1"][0] - r["c0"][0]
        # Packets per CPU-second of the named threads: with one thread, its
        # rate per core; with several, the rate per core they add up to.
        cpu = sum(r["cpu_s"][t] for t in self.core_threads)
        out = {"mpps_per_core": rate(pkts, cpu),
               "mpps_wall": rate(pkts, r["wall_s"]), "cpu_s": r["cpu_s"],
               "tx_pkts": pkts}
        if self.rx_port is not None:
            rx = r["c1"][1] - r["c0"][1]
            out.update(rx_pkts=rx, rx_mpps_per_rx_core=rate(rx, r["cpu_s"][self.rx_thread]),
                       rx_not_sent_share=(rx - pkts) / rx if rx else 0.0)
        return out


def _share(idle, busy):
    return idle / (idle + busy) if idle + busy else 0.0


def summarize(o_res, worker, tsc_hz):
    """Medians over windows for one worker.

    cycles_per_pkt is tsc_hz / (packets per CPU-second): what a packet costs
    on a core the worker has to itself.  The stages' TSC cycles include the
    time the thread was preempted inside them (two shared cores), which
    lands on each stage in proportion to the time it runs; they are scaled
    by the window's (CPU-time cycles / TSC cycles) so they add up to
    cycles_per_pkt.  The raw TSC figures are kept as stages_tsc."""
    ws = [r[worker] for r in o_res]
    med = statistics.median
    stage_names = list(ws[0]["stages"])
    scaled = []
    for w in ws:
        eff = tsc_hz / (w["mpps_per_core"] * 1e6) if w["mpps_per_core"] else 0.0
        raw = sum(w["stages"].values())
        scaled.append({k: v * eff / raw if raw else 0.0 for k, v in w["stages"].items()})
    mpps = med(w["mpps_per_core"] for w in ws)
    return {"mpps_per_core": mpps,
            "mpps_wall": med(w["mpps_wall"] for w in ws),
            "rx_mpps_per_core": med(w["rx_mpps_per_core"] for w in ws),
            "cycles_per_pkt": tsc_hz / (mpps * 1e6) if mpps else 0.0,
            "stages": {s: round(med(x[s] for x in scaled), 1) for s in stage_names},
            "stages_tsc": {s: round(med(w["stages"][s] for w in ws), 1) for s in stage_names},
            "tsc_cycles_per_pkt": med(w["cycles_per_pkt"] for w in ws),
            "drops_in_windows": sum(w["drops"] for w in ws),
            "idle_share": round(med(w["idle_share"] for w in ws), 4),
            "rx_burst": round(med(w["rx_burst"] for w in ws), 2),
            "windows": [round(w["mpps_per_core"], 4) for w in ws]}


def mix_per_core(c_down, c_up, hz, down_share=0.89, down_size=504, up_size=128):
    """Per-core throughput at a down:up traffic mix, from cycles per packet.

    down_share is by volume (bits), the vBNG white paper's 89% / 11%; the packet ratio
    follows from the frame sizes.  Returns pps, Gbit/s (frame bits) per core
    and the packet ratio."""
    up_share = 1.0 - down_share
    n_d, n_u = down_share / down_size, up_share / up_size       # packets per unit volume
    cyc = n_d * c_down + n_u * c_up
    pps = hz * (n_d + n_u) / cyc
    bits = hz * (n_d * down_size + n_u * up_size) * 8 / cyc
    return {"pps": pps, "gbps": bits / 1e9, "pkt_ratio_down_per_up": n_d / n_u}


def packet_mix_per_core(c_down, c_up, hz, n_d=8, n_u=1, down_size=504, up_size=128):
    cyc = n_d * c_down + n_u * c_up
    return {"pps": hz * (n_d + n_u) / cyc,
            "gbps": hz * (n_d * down_size + n_u * up_size) * 8 / cyc / 1e9}


def frame_gbps(mpps, spec):
    return mpps * 1e6 * mean_frame(spec) * 8 / 1e9


def result(name, config, cases, main_case, peer, peer_cases, ratios, rounds, seconds, quick,
           extra=None, more_peers=None, acl_classify=None):
    """The result in bench/common.py's shape: @p config (what is particular to the
    benchmark) between the subscriber/flow counts and the windows'
    description, the headline metrics from cases[main_case], the peer's
    main case with all of its cases (and @p more_peers, measured on the main
    case only), and the cases (and @p extra) at the top level, with the CPU
    and @p acl_classify ({who: rte_acl method}) beside them."""
    main = cases[main_case]
    return common.result(
        name,
        config={"subscribers": N_SUBS, "flows": N_SUBS, **config,
                "input": "net_pcap infinite_rx -> net_null, one worker",
                "rounds": rounds, "window_s": seconds, "quick": quick,
                "per_core": "packets per CPU-second of the worker thread"},
        metrics={"mpps_per_core": main["mpps_per_core"],
                 "cycles_per_pkt": main["cycles_per_pkt"],
                 "stages": main["stages"]},
        peers={peer: dict(peer_cases[main_case], cases=peer_cases), **(more_peers or {})},
        ratios=ratios,
        extra={"cases": cases, "cpu": host_info.cpu(), "acl_classify": acl_classify or {},
               **(extra or {})})
