"""`make bench BENCH=router`: the router pipeline in-process, against DPDK l3fwd.

Both sides read the same pcap through `net_pcap` (rx_pcap=FILE,
infinite_rx=1: the file is loaded once and every rx copies a stored packet
into a fresh mbuf, a cost both sides pay) and send into `net_null` (which
frees the mbufs).  One worker lcore each, pinned to CPU 1, burst 32; ours
keeps its main lcore on CPU 0 asleep in poll(), l3fwd runs one lcore (-l 1).

Measured (bench/bng_measure.py windows): packets forwarded per CPU-second
of the forwarding thread (`mpps_per_core`) — two cores shared with other
engineers' builds make wall-clock rates a measure of the neighbours — and
cycles per packet = TSC Hz x CPU seconds / packets.  Per-stage cycles come
from edgeplane-dp's `stages` (TSC around each stage call), scaled to add up
to that figure (raw TSC values are kept too: they include time the thread
was preempted inside a stage).  The subjects of one comparison are started
together, stopped with SIGSTOP and measured one at a time in alternation
(bench/ab.py); a ratio is the median of the rounds' ratios.

Comparisons (docs/benchmarks.md, "What each side does per packet"):
  dpdk-l3fwd      l3fwd --lookup=lpm on the headline input: 64 B frames,
                  100K routes (same file, l3fwd's format); l3fwd has no ACL
                  stage in this mode.  Also on the iMix inputs.
  dpdk-l3fwd-acl  l3fwd --lookup=acl: its 1000 ACL rules and its routes in
                  one rte_acl trie.  100K routes as ACL rules need a ~1 GB
                  trie (more hugepage memory than this machine has), so this
                  comparison uses the 1K-route table, ours on the same.
                  It runs GOAL_PROCS processes of each side, alternated
                  together, its ratio per round of each side's mean
                  (ab.pooled_ratio: a process's place in memory moves its
                  figure by 2-4 % for its whole life); then a stage-timed
                  build of l3fwd-acl alone gives the peer's own stages
                  (dpdk_peer.l3fwd_acl_stages, `peer_stages`).
  dpdk-l3fwd-acl_simd512
                  the same input, one process a side, both started with the
                  EAL's --force-max-simd-bitwidth=512 (SIMD512_EAL), so that
                  rte_acl's AVX512X32 method is allowed; on AVX-512 CPUs only.
"""
import contextlib

from bench import ab, common, host_info, pcapgen
from bench.bng_measure import Window, find_threads, rate
from bench.dpdk_peer import SIMD512_EAL, L3fwd, l3fwd_acl_stages
from lab.dp import Dp

SIZES = ["64", "imix-up", "imix-down"]
ACLS = [1, 1000]
ROUTES = [1000, 100000]
HEADLINE = ("64", 1000, 100000)
ACL_INPUT = ("64", 1000, 1000)
WORKER_CPU = 1
BURST = 32
GOAL_PROCS = ab.GOAL_PROCS     # processes a side in vs_dpdk-l3fwd-acl (ab.pooled_ratio)
STAGES = ["rx", "parse", "neigh", "acl", "route", "rewrite", "tx"]

WORK = common.OUT / "router-work"


def case_key(size, n_acl, n_routes):
    return f"{size}/acl{n_acl}/routes{n_routes}"


def dp_config(inp, pcap, simd512=False):
    nb = "\n".join(f"neighbor = {ip} {mac}" for ip, mac in pcapgen.gateways())
    return f"""# bench/bench_router.py: router in-process, net_pcap -> net_null
[eal]
args = --lcores=0@0,1@{WORKER_CPU} --main-lcore 0{" " + SIMD512_EAL if simd512 else ""}
[engine]
burst = {BURST}
# The peer runs on hugepages: so do we (lab.dp.Dp waits while they are short).
memory = hugepages
[port in]
device = net_pcap0,rx_pcap={pcap},infinite_rx=1
ipv4 = {pcapgen.IN_NET}
[port out]
device = net_null0
mac = {pcapgen.OUT_MAC}
ipv4 = {pcapgen.OUT_NET}
[worker w0]
pipeline = router
rx = in
lcore = 1
[router]
{nb}
route_file = {inp.routes_ours}
acl_file = {inp.acl_ours}
acl_default = permit
"""


def proc_tag(k):
    """The k-th process of a side (0: none): distinct labels and names."""
    return f" #{k + 1}" if k else ""


class Ours(ab.DpProcess):
    def __init__(self, size, n_acl, n_routes, k=0, simd512=False):
        self.label = ("edgeplane " + case_key(size, n_acl, n_routes) + proc_tag(k)
                      + (" simd512" if simd512 else ""))
        inp = pcapgen.Inputs(n_routes, n_acl).ensure()
        name = (f"dp-{size}-{n_acl}-{n_routes}" + (f"-{k + 1}" if k else "")
                + ("-simd512" if simd512 else ""))
        self.dp = Dp(None, dp_config(inp, inp.pcap(size), simd512), name=name, workdir=WORK,
                     start_timeout=180, ctl_timeout=30, log=print)

    def _ready(self):
        self.proc = self.dp.proc
        ports = {p["name"]: p for p in self.dp.ctl("ports")["ports"]}
        if ports["in"]["mac"].lower() != pcapgen.IN_MAC:
            raise RuntimeError(f"port in has MAC {ports['in']['mac']}, the pcaps are "
                               f"addressed to {pcapgen.IN_MAC} (bench/pcapgen.IN_MAC)")
        st = self.dp.ctl("stats")
        self.tsc_hz = st["tsc_hz"]
        self.acl_method = host_info.acl_methods(self.dp).get("router", "unknown")
        self.parse_x8 = host_info.parse_x8(self.dp)
        self.lcore = st["workers"][0]["lcore"]
        self.tids = find_threads(self.proc.pid, [f"rte-worker-{self.lcore}"])
        return self

    def _snapshot(self):
        w = self.dp.ctl("stages")["workers"][0]
        return {"rx": w["rx_pkts"], "tx": w["tx_pkts"], "busy": w["busy_cycles"],
                "stages": {s["name"]: (s["cycles"], s["pkts_dropped"]) for s in w["stages"]}}

    def measure(self, seconds):
        r = Window(self.proc.pid, self.tids, self._snapshot).run(seconds)
        a, b = r["c0"], r["c1"]
        rx, tx = b["rx"] - a["rx"], b["tx"] - a["tx"]
        cpu = r["cpu_s"][f"rte-worker-{self.lcore}"]
        raw = {s: (b["stages"][s][0] - a["stages"][s][0]) / rx if rx else 0.0
               for s in b["stages"]}
        drops = sum(b["stages"][s][1] - a["stages"][s][1] for s in b["stages"])
        cyc = self.tsc_hz * cpu / rx if rx else 0.0
        total_raw = sum(raw.values())
        scale = cyc / total_raw if total_raw else 0.0
        return {"mpps_per_core": rate(tx, cpu), "mpps_wall": rate(tx, r["wall_s"]),
                "cycles_per_pkt": cyc,
                "cycles_per_pkt_tsc": (b["busy"] - a["busy"]) / rx if rx else 0.0,
                "stages": {s: v * scale for s, v in raw.items()},
                "stages_tsc": raw, "drops": drops, "rx_pkts": rx, "tx_pkts": tx,
                "cpu_s": cpu, "wall_s": r["wall_s"]}


class Peer(ab.Process):
    def __init__(self, lookup, size, n_acl, n_routes, tsc_hz_from, alg=None, k=0,
                 simd512=False):
        self.lookup = lookup
        self.label = (f"l3fwd-{lookup} " + case_key(size, n_acl if lookup == "acl" else 0,
                                                     n_routes) + proc_tag(k)
                      + (" simd512" if simd512 else ""))
        inp = pcapgen.Inputs(n_routes, n_acl).ensure()
        r4, r6 = (inp.lpm4, inp.lpm6) if lookup == "lpm" else (inp.acl4, inp.acl6)
        # One MAC for every packet out of port 1: l3fwd has no next-hop
        # table, its rewrite takes the output port's configured destination.
        self.app = L3fwd(WORK, f"l3fwd-{lookup}-{size}-{n_acl}-{n_routes}"
                         + (f"-{k + 1}" if k else "") + ("-simd512" if simd512 else ""),
                         [f"net_pcap0,rx_pcap={inp.pcap(size)},infinite_rx=1", "net_null0"],
                         lookup, r4, r6, lcore=WORKER_CPU,
                         eth_dest=pcapgen.gateways()[0][1], alg=alg,
                         extra_eal=(SIMD512_EAL,) if simd512 else ())
        self.tsc_hz_from = tsc_hz_from

    def __enter__(self):
        self.app.__enter__()
        self.proc = self.app.proc
        self.tids = find_threads(self.proc.pid, ["l3fwd"])
        return self

    def __exit__(self, *exc):
        self.app.stop()

    def measure(self, seconds):
        r = Window(self.proc.pid, self.tids,
                   lambda: self.app.tel.port_stats(1)["opackets"]).run(seconds)
        pkts = r["c1"] - r["c0"]
        cpu = r["cpu_s"]["l3fwd"]
        hz = self.tsc_hz_from()
        return {"mpps_per_core": rate(pkts, cpu), "mpps_wall": rate(pkts, r["wall_s"]),
                "cycles_per_pkt": hz * cpu / pkts if pkts else 0.0,
                "tx_pkts": pkts, "cpu_s": cpu, "wall_s": r["wall_s"]}


def peer_stages(inp_key, alg, seconds, cycles_per_pkt):
    """l3fwd-acl's stages on @p inp_key (dpdk_peer.l3fwd_acl_stages)."""
    size, n_acl, n_routes = inp_key
    inp = pcapgen.Inputs(n_routes, n_acl).ensure()
    st = l3fwd_acl_stages(WORK, f"l3fwd-acl-{size}-{n_acl}-{n_routes}",
                          [f"net_pcap0,rx_pcap={inp.pcap(size)},infinite_rx=1", "net_null0"],
                          inp.acl4, inp.acl6, seconds, cycles_per_pkt, lcore=WORKER_CPU,
                          eth_dest=pcapgen.gateways()[0][1], alg=alg)
    return dict(st, input=case_key(*inp_key))


def summary(windows):
    """Medians over rounds; the rounds' Mpps per core kept as `windows`."""
    out = ab.medians(windows, ["mpps_per_core", "mpps_wall", "cycles_per_pkt",
                               "cycles_per_pkt_tsc", "stages", "stages_tsc"])
    for k in ("stages", "stages_tsc"):
        if k in out:
            out[k] = {s: round(v, 1) for s, v in out[k].items()}
    out["windows"] = [round(w["mpps_per_core"], 4) for w in windows]
    if "drops" in windows[0]:
        out["drops_in_windows"] = sum(w["drops"] for w in windows)
    return out


def with_rates(s, size):
    """Add Gbit/s of frames (FCS included, no preamble/IFG) to a summary."""
    s["gbps_per_core"] = round(s["mpps_per_core"] * pcapgen.mean_frame_bytes(size) * 8 / 1e3, 3)
    s["mpps_per_core"] = round(s["mpps_per_core"], 4)
    s["mpps_wall"] = round(s["mpps_wall"], 4)
    s["cycles_per_pkt"] = round(s["cycles_per_pkt"], 1)
    if "cycles_per_pkt_tsc" in s:
        s["cycles_per_pkt_tsc"] = round(s["cycles_per_pkt_tsc"], 1)
    return s


def run(args):
    quick = getattr(args, "quick", False)
    rounds, seconds, warmup = (1, 1.0, 0.5) if quick else (5, 2.5, 1.0)
    rounds_other = 1 if quick else 3
    sizes = ["64"] if quick else SIZES
    WORK.mkdir(parents=True, exist_ok=True)
    log = print
    hz = {}

    def tsc_hz():
        return hz["hz"]

    cases, peers, ratios, ratio_rounds, comparisons, methods = {}, {}, {}, {}, [], {}
    parse_x8 = {}

    def compare(rk, case, o_w, peer, p_w, ps, pooled=None):
        """Ratio rk: the median of the rounds' ours/peer (measured back to
        back); @p pooled: (ours' processes' rounds, the peer's) for a ratio
        over several processes a side (ab.pooled_ratio)."""
        if pooled:
            r, ratio_rounds[rk] = ab.pooled_ratio(*pooled, "mpps_per_core")
        else:
            r, ratio_rounds[rk] = ab.ratio(o_w, p_w, "mpps_per_core")
        ratios[rk] = round(r, 3)
        # Ours as measured beside this peer (a case may be measured beside two).
        comparisons.append(common.comparison(
            case, round(ab.median([w["mpps_per_core"] for w in o_w]), 4), peer,
            ps["mpps_per_core"], rk, ratios[rk],
            stages_of=f"cases.{case}", peer_rounds=ps["windows"],
            ours_rounds=[round(w["mpps_per_core"], 4) for w in o_w]))

    def ab_rounds(subjects, n, window_s=seconds):
        return ab.alternate(subjects, n, warmup_s=warmup, window_s=window_s, log=log)

    # 1. Headline tables, per frame size: ours against l3fwd LPM.
    for size in sizes:
        key = case_key(size, HEADLINE[1], HEADLINE[2])
        log(f"router: {key} vs l3fwd-lpm")
        with Ours(size, HEADLINE[1], HEADLINE[2]) as o:
            hz["hz"] = o.tsc_hz
            with Peer("lpm", size, 0, HEADLINE[2], tsc_hz) as p:
                res = ab_rounds([o, p], rounds if size == "64" else rounds_other)
        cases[key] = with_rates(summary(res[o]), size)
        ps = with_rates(summary(res[p]), size)
        peers.setdefault("dpdk-l3fwd", {"lookup": "lpm", "by_input": {}})
        peers["dpdk-l3fwd"]["by_input"][f"{size}/routes{HEADLINE[2]}"] = ps
        compare("vs_dpdk-l3fwd" if size == "64" else f"vs_dpdk-l3fwd_{size}", key, res[o],
                "dpdk-l3fwd", res[p], ps)

    # 2. ACL comparison (1K routes: see the module doc), with l3fwd LPM on
    #    the same 1K-route table for reference.
    size, n_acl, n_routes = ACL_INPUT
    key = case_key(size, n_acl, n_routes)
    log(f"router: {key} vs l3fwd-acl, l3fwd-lpm")
    # One peer at a time next to ours: three 100K-entry tables at once do
    # not fit the hugepages this machine shares.  The goal's comparison
    # runs GOAL_PROCS processes of each side, alternated together.
    with Ours(size, n_acl, n_routes) as o:
        hz["hz"] = o.tsc_hz
        # l3fwd classifies with the method ours uses (--alg), named in the JSON.
        methods["ours"] = o.acl_method
        methods["dpdk-l3fwd-acl"] = o.acl_method
        parse_x8 = o.parse_x8
        with contextlib.ExitStack() as more:
            os_ = [o] + [more.enter_context(Ours(size, n_acl, n_routes, k))
                         for k in range(1, GOAL_PROCS)]
            pas_ = [more.enter_context(Peer("acl", size, n_acl, n_routes, tsc_hz,
                                            alg=o.acl_method, k=k))
                    for k in range(GOAL_PROCS)]
            # A goal key (vs_dpdk-l3fwd-acl): the headline's rounds.
            res = ab_rounds(os_ + pas_, rounds)
        with Peer("lpm", size, 0, n_routes, tsc_hz) as pl:
            res2 = ab_rounds([o, pl], rounds_other)
    cases[key] = with_rates(summary([w for x in os_ for w in res[x]] + res2[o]), size)
    pas = with_rates(summary([w for x in pas_ for w in res[x]]), size)
    # Each process's median, both sides, as bench_bng_uplink.py keeps them.
    pas["procs_mpps_per_core"] = [
        round(ab.median([w["mpps_per_core"] for w in res[x]]), 4) for x in pas_]
    pas["ours_procs_mpps_per_core"] = [
        round(ab.median([w["mpps_per_core"] for w in res[x]]), 4) for x in os_]
    pls = with_rates(summary(res2[pl]), size)
    peers["dpdk-l3fwd-acl"] = dict(pas, lookup="acl", input=key, procs=GOAL_PROCS)
    peers["dpdk-l3fwd"]["by_input"][f"{size}/routes{n_routes}"] = pls
    compare("vs_dpdk-l3fwd-acl", key, [w for x in os_ for w in res[x]], "dpdk-l3fwd-acl",
            None, pas, pooled=([res[x] for x in os_], [res[x] for x in pas_]))
    compare("vs_dpdk-l3fwd_routes1000", key, res2[o], "dpdk-l3fwd", res2[pl], pls)
    # The same comparison with both sides allowed 512-bit SIMD (SIMD512_EAL):
    # ours calibrates its classify method among all of them, the peer gets
    # the one ours chose.  One process a side; on a CPU without AVX-512 the
    # flag changes nothing, so it is run only where AVX-512 is.
    if "avx512f" in host_info.cpu()["simd"]:
        log(f"router: {key} vs l3fwd-acl, both with {SIMD512_EAL}")
        k512 = f"{key}/simd512"
        with Ours(size, n_acl, n_routes, simd512=True) as o5:
            methods["ours_simd512"] = methods["dpdk-l3fwd-acl_simd512"] = o5.acl_method
            with Peer("acl", size, n_acl, n_routes, tsc_hz, alg=o5.acl_method,
                      simd512=True) as p5:
                res5 = ab_rounds([o5, p5], rounds)
        cases[k512] = with_rates(summary(res5[o5]), size)
        ps5 = with_rates(summary(res5[p5]), size)
        peers["dpdk-l3fwd-acl_simd512"] = dict(ps5, lookup="acl", input=key, procs=1,
                                               eal=SIMD512_EAL)
        compare("vs_dpdk-l3fwd-acl_simd512", k512, res5[o5], "dpdk-l3fwd-acl_simd512",
                res5[p5], ps5)
    # The peer's own stages, beside ours' in the report (never a ratio).
    log(f"router: {key} l3fwd-acl's stages (the stage-timed build alone)")
    stages_of_peer = {"dpdk-l3fwd-acl": peer_stages(ACL_INPUT, methods["dpdk-l3fwd-acl"],
                                                     warmup + 2 * seconds,
                                                     pas["cycles_per_pkt"])}

    # 3. The rest of the matrix, ours alone.
    for size in sizes:
        for n_acl in ACLS:
            for n_routes in ROUTES:
                key = case_key(size, n_acl, n_routes)
                if key in cases or (quick and n_routes != ROUTES[0]):
                    continue
                log(f"router: {key}")
                with Ours(size, n_acl, n_routes) as o:
                    res = ab_rounds([o], rounds_other, seconds / 2 if not quick else seconds)
                cases[key] = with_rates(summary(res[o]), size)

    head = cases[case_key(*HEADLINE)]
    hl = peers["dpdk-l3fwd"]["by_input"][f"64/routes{HEADLINE[2]}"]
    peers["dpdk-l3fwd"].update({k: hl[k] for k in ("mpps_per_core", "cycles_per_pkt",
                                                   "gbps_per_core", "mpps_wall", "windows")})
    peers["dpdk-l3fwd"]["input"] = case_key(*HEADLINE)
    metrics = {"mpps_per_core": head["mpps_per_core"],
               "cycles_per_pkt": head["cycles_per_pkt"],
               "cycles_per_pkt_tsc": head["cycles_per_pkt_tsc"],
               "gbps_per_core": head["gbps_per_core"],
               "stages": {s: head["stages"].get(s, 0.0) for s in STAGES},
               "drops_in_windows": sum(c.get("drops_in_windows", 0) for c in cases.values())}
    config = {"headline": case_key(*HEADLINE), "frame_size_convention":
              "bytes incl. 4 B FCS; pcap records hold size - 4",
              "imix": {k: v for k, v in pcapgen.IMIX.items()},
              "pkts_in_pcap": pcapgen.N_PKTS, "burst": BURST,
              "cores": f"1 worker each, pinned to CPU {WORKER_CPU}",
              "ports": "net_pcap(rx_pcap, infinite_rx=1) -> net_null",
              "rounds": rounds, "window_s": seconds, "warmup_s": warmup,
              "rate": "packets per CPU-second of the forwarding thread",
              "cycles": "TSC Hz x thread CPU seconds / packets; stages scaled to add up",
              "ratios": "median over rounds of ours / peer, each round's pair back to back",
              "memory": "hugepages (both sides)", "quick": quick}
    return common.result("router", config, metrics, peers, ratios,
                         extra={"cases": cases, "peer_stages": stages_of_peer,
                                "comparisons": comparisons,
                                "ratio_rounds": ratio_rounds, "cpu": host_info.cpu(),
                                "acl_classify": methods, "parse_x8": parse_x8})
