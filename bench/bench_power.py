"""`make bench BENCH=power`: what each polling policy saves and costs, through
the router and the vBNG uplink, at fixed loads and over a compressed day.

    router:  gen (ns a) -veth- [edgeplane-dp router, worker w0] -veth- sink (ns b)
    bng:     gen (ns g, 802.1Q 101) -veth- [bng-uplink, worker up] -veth- sink (ns s)

Both are the RFC 2544 tester of bench_rfc2544_router (two edgeplane-dp
instances, gen and sink, on net_af_packet); the DUT runs one worker whose
polling policy changes at run time (`poll-set`, applied between bursts), so
every policy is measured in the same process, lab and minute as busy
polling.

1. Zero-loss rate (RFC 2544 section 26.1) of the DUT with busy polling,
   64-byte frames (router) and 128-byte QinQ-less 802.1Q frames (BNG
   uplink, the paper's uplink size).
2. Loads: at 10, 30, 60 and 100 % of that rate, every policy for one slice
   per round, the policies' order rotated each round; ROUNDS rounds.  A
   slice (power_measure.Slicer): DUT worker CPU time per second (its
   thread's CPU clock) and run-queue wait, loss (sent - received), sink
   latency p50/p99, the DUT's own wake-up samples.
3. The day (bench/power_day.csv: load by hour as a fraction of the zero-loss
   rate), each hour a slice per policy, through the router and through the
   BNG uplink: CPU time by hour and its integral over the day.

   At 10 and 60 %, two tuned alternatives run in the same rounds
   (power_measure.TUNING: lower thresholds, a shorter sleep ladder).
The tester (gen and sink) runs at nice -10 (power_measure.prioritise), so
it offers the asked load whatever the DUT's policy leaves of the shared
cores; offered_pps says what it did offer.
Metrics (the headline policy is sleep-rx, the one docs/power.md recommends
for af_packet ports; every policy's figures are in by_load and day):
  cpu_saved_at_10pct     median over rounds of 1 - cpu(sleep-rx) / cpu(busy),
                         each round's pair measured back to back
  demand_saved_at_10pct  the same on runnable time (CPU time + run-queue wait):
                         what each would take with a core of its own, a
                         conservative figure for a policy that sleeps
  p99_added_us_at_10pct  median over rounds of p99(sleep-rx) - p99(busy)
  day_saved              1 - day CPU-seconds(sleep-rx) / day CPU-seconds(busy), router
  ratios.vs_dpdk_pmgmt   our saving at 10 % over DPDK's PMD power management's
                         (pause mode, DPDK's defaults) in the same rounds; when
                         DPDK's saving is inside the noise of busy polling's own
                         CPU time across rounds, that noise is the divisor and the
                         ratio is a lower bound (said in the JSON)

Power: RAPL package energy when /sys/class/powercap has it, otherwise CPU
time is the proxy (energy.source in the JSON says which).
"""
import csv
import statistics
import time
from pathlib import Path

from bench import ab, common
from bench.bench_rfc2544_router import ROUTED, Tester, search
from bench.power_measure import (POLICIES, TUNING, Slicer, median, pair_saving, prioritise,
                                 probe_refusals)
from lab.bng_lab import ACCESS_MAC, CORE_HOST_MAC, CORE_MAC, Subscriber, bng_sections
from lab.dp import Dp, DpLab
from lab.router_lab import B4, RouterLab
from lab.topology import Topology

DAY_CSV = Path(__file__).with_name("power_day.csv")
HEADLINE = "sleep-rx"
LOADS = (0.10, 0.30, 0.60, 1.00)
TUNED_AT = (0.10, 0.60)
ALL = {**POLICIES, **TUNING}
FLOWS = 64
SMALL_ROUTER = {"max_routes4": 1024, "max_routes6": 1024, "lpm4_tbl8s": 64, "lpm6_tbl8s": 256,
                "max_acl_rules": 1024}
BNG_SUB = Subscriber("g", id=1, vlan=101, kernel=False)
BNG_DST = "198.18.200.0"


def day_profile(path=DAY_CSV):
    rows = [r for r in csv.reader(line for line in path.read_text().splitlines()
                                  if line and not line.startswith("#"))]
    prof = [(int(h), float(x)) for h, x in rows[1:]]
    if [h for h, _ in prof] != list(range(24)) or not all(0 < x <= 1.5 for _, x in prof):
        raise ValueError(f"{path}: want hours 0..23 with loads in (0, 1.5]")
    return prof


class BngTester(Tester):
    """gen as a subscriber (802.1Q 101) in ns g, sink on the core side in ns s."""

    def __init__(self, gen_host, sink_host):
        self.lab = type("L", (), {"a": gen_host, "b": sink_host})()
        self.gen = self.sink = None

    def __enter__(self):
        try:
            self.sink = Dp(self.lab.b, {
                "engine": {"idle_polls": 10, "max_sleep_us": 50},
                "port s": {"device": "net_af_packet0,iface=eth0,framecnt=16384"},
                "worker sink0": {"pipeline": "sink", "rx": "s"}}, name="pwb-sink").__enter__()
            self.gen = Dp(self.lab.a, {
                "engine": {"idle_polls": 10, "max_sleep_us": 1000},
                "port g": {"device": "net_af_packet0,iface=eth0"},
                "worker gen0": {"pipeline": "gen", "tx": "g", "dst_mac": ACCESS_MAC,
                                "src": BNG_SUB.ipv4, "dst": BNG_DST, "flows": FLOWS,
                                "vlan": BNG_SUB.vlan, "size": "128", "start": "no",
                                "vary": "dst"}}, name="pwb-gen").__enter__()
        except BaseException:
            self.close()
            raise
        return self


class BngPowerLab(DpLab):
    """ns g -veth- dut (bng-uplink only) -veth- ns s."""

    def __init__(self):
        self.autostart = True

    def build(self):
        t = self.topo = Topology("pwb").__enter__()
        self.g, self.dut, self.s = t.host("g"), t.host("dut"), t.host("s")
        for k in ("net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1"):
            self.dut.run(["sysctl", "-qw", k], check=False)
        t.link(self.g, "eth0", self.dut, "acc", mac_b=ACCESS_MAC)
        t.link(self.s, "eth0", self.dut, "core", mac_a=CORE_HOST_MAC, mac_b=CORE_MAC)
        for h, ifn in ((self.g, "eth0"), (self.dut, "acc"), (self.dut, "core"), (self.s, "eth0")):
            h.offload_off(ifn)
        return self

    def start_dp(self):
        self.dp = Dp(self.dut, bng_sections([BNG_SUB], workers=("up",),
                                            bng_extra={"max_subscribers": 64}), name="pwb-dut")
        self.dp.start()


def _policies(slicer, policies, names, rate_pps, seconds):
    """One bench/ab subject per polling policy: a slice at rate_pps."""
    def said(r):
        return f"cpu {r['cpu']:.3f} p99 {r['p99_us']:.0f}us lost {r['lost']}"
    return [ab.Call(n, (lambda n=n: slicer.run(policies[n], rate_pps, seconds)), said)
            for n in names]


def _run_load(slicer, zlr, load, names, rounds, seconds, log):
    """{policy: [slice per round]} at load x zlr, the order rotated per round."""
    log(f"    {load:4.0%}:")
    return ab.alternate(_policies(slicer, ALL, names, zlr * load, seconds), rounds, log=log)


def _summary(per, busy):
    """Medians of one policy's slices at one load, and its per-round savings."""
    keys = ("cpu", "runq_wait", "demand", "loss", "p50_us", "p99_us", "wake_p50_us",
            "wake_p99_us", "poll_p50_us", "wakeups_per_s", "offered_pps")
    out = {k: median([s.get(k) for s in per]) for k in keys}
    out["lost"] = sum(s["lost"] for s in per)
    out["offered_ok_rounds"] = sum(s["offered_ok"] for s in per)
    out["cpu_saved_rounds"] = [pair_saving(b, s) for b, s in zip(busy, per)]
    out["demand_saved"] = median([pair_saving(b, s, "demand") for b, s in zip(busy, per)])
    out["p99_added_us_rounds"] = [s["p99_us"] - b["p99_us"] for b, s in zip(busy, per)]
    out["cpu_saved"] = median(out["cpu_saved_rounds"])
    out["p99_added_us"] = median(out["p99_added_us_rounds"])
    out["rounds"] = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()}
                     for s in per]
    return out


def _day(slicer, zlr, names, seconds, hours, log):
    """Each hour a slice per policy (order rotated by hour)."""
    out = []
    for i, (h, frac) in enumerate(hours):
        row = {"hour": h, "load": frac, "rate_pps": round(zlr * frac)}
        res = ab.alternate(_policies(slicer, POLICIES, names, zlr * frac, seconds), 1,
                           first=i, log=None)
        for n in names:
            s = res[n][0]
            row[n] = {k: (round(s[k], 4) if isinstance(s[k], float) else s[k])
                      for k in ("cpu", "runq_wait", "loss", "lost", "p50_us", "p99_us",
                                "offered_ok", "wake_p50_us") if k in s}
        out.append(row)
        log(f"    {h:02d}h {frac:4.0%}: " + ", ".join(f"{n} {row[n]['cpu']:.3f}" for n in names))
    return out


def _day_totals(day, names):
    """CPU-seconds over the real day each hour stands for, and the savings."""
    tot = {n: sum(r[n]["cpu"] * 3600 for r in day) for n in names}
    return {"cpu_seconds": {n: round(v, 1) for n, v in tot.items()},
            "saved_vs_busy": {n: round(1 - tot[n] / tot["busy"], 4) if tot["busy"] else None
                              for n in names if n != "busy"},
            "max_hourly_p99_us": {n: max(r[n]["p99_us"] for r in day) for n in names},
            "lost": {n: sum(r[n]["lost"] for r in day) for n in names}}


def _zlr(tester, size, trial_s, log):
    s = search(tester, size, trial_s, 0.05, 2_000_000, log)
    return s["rate"], s["tester_limited"]


def run(args):
    quick = getattr(args, "quick", False)
    rounds, seconds, day_seconds = (1, 0.6, 0.4) if quick else (3, 2.0, 1.5)
    hours = day_profile()
    if quick:
        hours = hours[::6]
    names = list(POLICIES)
    log = print
    t0 = time.monotonic()
    with RouterLab(tag="pwr", routes=[(ROUTED, B4)], router=SMALL_ROUTER) as lab:
        with Tester(lab) as t:
            prioritise(t.gen)
            prioritise(t.sink)
            refused = probe_refusals(lab.dp, "w0")
            energy = lab.dp.ctl("power")["energy"]
            cpu = lab.dp.ctl("power")["cpu"]
            log(f"power: refused here: {', '.join(k for k, v in refused.items() if v) or 'none'}")
            zlr, limited = _zlr(t, "64", 0.5 if quick else 1.0, log)
            log(f"power: router zero-loss rate {zlr:.0f} pps (64 B, busy polling)")
            slicer = Slicer(t, lab.dp, "w0")
            loads = {}
            for load in LOADS[:2] if quick else LOADS:
                here = names + (list(TUNING) if load in TUNED_AT else [])
                per = _run_load(slicer, zlr, load, here, rounds, seconds, log)
                loads[f"{round(load * 100)}pct"] = {n: _summary(per[n], per["busy"])
                                                   for n in here}
            log("power: the day through the router")
            day_router = _day(slicer, zlr, names, day_seconds, hours, log)
    with BngPowerLab() as blab:
        with BngTester(blab.g, blab.s) as bt:
            prioritise(bt.gen)
            prioritise(bt.sink)
            bzlr, blimited = _zlr(bt, "128", 0.5 if quick else 1.0, log)
            log(f"power: bng-uplink zero-loss rate {bzlr:.0f} pps (128 B, busy polling)")
            log("power: the day through the BNG uplink")
            day_bng = _day(Slicer(bt, blab.dp, "up", size="128"), bzlr, names, day_seconds,
                           hours, log)
    ten = loads["10pct"]
    floor = _noise_floor(ten["busy"]["rounds"])
    pm = ten["dpdk-pmgmt"]["cpu_saved"]
    divisor = max(pm or 0.0, floor)
    ratio = ten[HEADLINE]["cpu_saved"] / divisor if divisor else None
    dr, db = _day_totals(day_router, names), _day_totals(day_bng, names)
    metrics = {
        "cpu_saved_at_10pct": ten[HEADLINE]["cpu_saved"],
        "demand_saved_at_10pct": ten[HEADLINE]["demand_saved"],
        "p99_added_us_at_10pct": ten[HEADLINE]["p99_added_us"],
        "day_saved": dr["saved_vs_busy"][HEADLINE],
        "day_saved_bng": db["saved_vs_busy"][HEADLINE],
        "zero_loss_pps_router": round(zlr), "zero_loss_pps_bng": round(bzlr),
        "by_load": loads,
        "day": {"router": {"hours": day_router, **dr}, "bng": {"hours": day_bng, **db}},
    }
    peers = {"dpdk-pmgmt": {"cpu_saved_at_10pct": pm,
                            "p99_added_us_at_10pct": ten["dpdk-pmgmt"]["p99_added_us"],
                            "day_saved": dr["saved_vs_busy"]["dpdk-pmgmt"],
                            "mode": "pause, emptypoll_max 512, pause_duration 1 us (DPDK defaults)"}}
    ratios = {"vs_dpdk_pmgmt": ratio}
    config = {"headline_policy": HEADLINE, "policies": POLICIES, "loads": list(LOADS),
              "tuning": TUNING, "tuned_at": list(TUNED_AT),
              "rounds": rounds, "slice_s": seconds, "day_slice_s": day_seconds,
              "day_profile": str(DAY_CSV.relative_to(common.ROOT)), "hours": len(hours),
              "frames": {"router": "64 B IPv4/UDP", "bng": "128 B 802.1Q IPv4/UDP"},
              "flows": FLOWS, "tester_limited": {"router": limited, "bng": blimited},
              "energy": energy, "cpu": cpu, "refused_here": refused,
              "quick": quick, "wall_s": round(time.monotonic() - t0)}
    extra = {"vs_dpdk_pmgmt_divisor": {
        "dpdk_pmgmt_saved": pm, "busy_cpu_noise": floor,
        "lower_bound": pm is None or pm < floor,
        "meaning": "DPDK's saving at 10 % when it exceeds busy polling's own round-to-round "
                   "CPU noise (median absolute deviation over median), else that noise: the "
                   "ratio is then a lower bound"}}
    if pm is not None:
        extra["comparisons"] = [common.comparison(
            "10 % load", ten[HEADLINE]["cpu_saved"], "dpdk-pmgmt", pm, "vs_dpdk_pmgmt", ratio,
            metric="cpu_saved_at_10pct", unit="CPU saved vs busy polling",
            ours_rounds=ten[HEADLINE]["cpu_saved_rounds"],
            peer_rounds=ten["dpdk-pmgmt"]["cpu_saved_rounds"])]
    # The day's plot (bench/power_plot.py) is drawn with the report.
    return common.result("power", config, metrics, peers, ratios, extra=extra)


def _noise_floor(busy_rounds):
    """Busy polling's CPU time spread over rounds (MAD / median), at least 1 %."""
    xs = [r["cpu"] for r in busy_rounds]
    m = statistics.median(xs)
    mad = statistics.median(abs(x - m) for x in xs)
    return max(0.01, mad / m if m else 0.0)

