"""`make bench BENCH=rfc2544-router`: RFC 2544 throughput and latency of the
router over veth, against the kernel's own forwarding.

    ns a: [edgeplane-dp gen] eth0 ==veth== pa [DUT] pb ==veth== eth0 [edgeplane-dp sink] :ns b

The standard router lab (lab/router_lab.py) with its two hosts used as the
tester: a generator instance on a's veth end and a sink instance on b's
(two processes: one worker each, see dataplane/gen/README.md "Caveats").
Generated frames are IPv4/UDP from 198.18.0.2 to 198.18.100.0 + flow
(FLOWS flows), addressed to the DUT's MAC; the DUT routes 198.18.100.0/24
via b (198.18.1.2, a static neighbour) and rewrites the MACs.  Host b's
kernel also sees the frames and drops them (not its address, forwarding off).

Throughput (RFC 2544 section 26.1): binary search over the offered rate.
A trial: sink-reset, gen-start count = rate x TRIAL_S, wait until the
generator stopped, drain, then zero loss means sink rx_pkts == gen sent_pkts.
A trial only counts as a valid offer when the generator reported no
tx_full / alloc_failed frames and reached >= 97% of the rate (otherwise the
tester, not the DUT, was the limit: the trial fails and is flagged).  The
search starts from an overload probe (rate 0 = as fast as the generator
can): the upper bound is 1.1 x what the DUT forwarded then, the lower 0, and
it halves the interval until it is within RESOLUTION of the rate found.
Latency (section 26.2): one more trial at the found rate; p50/p99/p99.9 of
the sink's histogram (generator TSC stamp to sink rx burst, both in this
machine's TSC: includes both testers' af_packet paths and veth).

Peer, same run, same tester: the DUT namespace with the kernel forwarding
(net.ipv4.ip_forward=1, the same addresses, route and static neighbours, the
same MACs on the veth ends).  ratios: vs_linux-forwarding = our zero-loss
rate / the kernel's, per frame size.
"""
import statistics
import time

from bench import ab, common, pcapgen
from lab.dp import Dp
from lab.router_lab import A4, B4, GW_A4, GW_B4, MAC_A, MAC_B, MAC_PA, RouterLab

ROUTED = "198.18.100.0/24"
DST = "198.18.100.0"
FLOWS = 64
# Both tester instances pause after few empty polls, leaving CPU to the DUT
# and the kernel's veth work.  The generator's token bucket holds
# max_sleep_us + 100 us of traffic: on this loaded machine a pause often
# overshoots 150 us, so the generator gets a 1 ms bucket (it catches up in a
# burst rather than falling short of the rate); the sink keeps 50 us, since
# its pauses add to the measured latency.
GEN_ENGINE = {"idle_polls": 10, "max_sleep_us": 1000}
SINK_ENGINE = {"idle_polls": 10, "max_sleep_us": 50}


class Tester:
    """gen in host a, sink in host b; both always stopped on exit."""

    def __init__(self, lab):
        self.lab = lab
        self.gen = self.sink = None

    def __enter__(self):
        try:
            self.sink = Dp(self.lab.b, {
                "engine": SINK_ENGINE,
                # A deep ring: the default overflows when the sink is
                # descheduled for ~10 ms on this loaded 2-core machine.
                "port s": {"device": "net_af_packet0,iface=eth0,framecnt=16384"},
                "worker sink0": {"pipeline": "sink", "rx": "s"}}, name="rfc-sink").__enter__()
            self.gen = Dp(self.lab.a, {
                "engine": GEN_ENGINE,
                "port g": {"device": "net_af_packet0,iface=eth0"},
                "worker gen0": {"pipeline": "gen", "tx": "g", "dst_mac": MAC_PA, "src": A4,
                                "dst": DST, "flows": FLOWS, "size": "64", "start": "no",
                                "vary": "dst"}}, name="rfc-gen").__enter__()
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        for d in (self.gen, self.sink):
            if d is not None:
                d.close()

    def __exit__(self, *exc):
        self.close()

    def _drain(self, timeout=3.0):
        """Wait until the sink's count stops moving (frames in flight land)."""
        last, stable_since = -1, time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            n = self.sink.ctl("sink-stats")["rx_pkts"]
            if n != last:
                last, stable_since = n, time.monotonic()
            elif time.monotonic() - stable_since > 0.3:
                break
            time.sleep(0.05)

    def trial(self, rate, size, seconds):
        """One trial at `rate` pps (0: as fast as the generator can)."""
        self.sink.ctl("sink-reset")
        count = int(rate * seconds) if rate else 0
        self.gen.ctl("gen-start", rate_pps=int(rate), count=count, size=size)
        if rate:
            deadline = time.monotonic() + seconds * 3 + 5
            while self.gen.ctl("gen-stats")["running"]:
                if time.monotonic() > deadline:
                    self.gen.ctl("gen-stop")
                    break
                time.sleep(0.1)
        else:
            time.sleep(seconds)
            self.gen.ctl("gen-stop")
        self._drain()
        g = self.gen.ctl("gen-stats")["workers"][0]
        s = self.sink.ctl("sink-stats")
        sent = g["sent_pkts"]
        offered_ok = (g["tx_full_pkts"] == 0 and g["alloc_failed_pkts"] == 0
                      and (rate == 0 or g["measured_pps"] >= 0.97 * rate))
        elapsed = (g["elapsed_ns"] or 0) / 1e9
        return {"rate_pps": rate, "sent": sent, "received": s["rx_pkts"],
                "lost": sent - s["rx_pkts"], "offered_ok": offered_ok,
                "measured_pps": g["measured_pps"], "tx_full": g["tx_full_pkts"],
                "passed": offered_ok and sent > 0 and s["rx_pkts"] == sent,
                "forwarded_pps": s["rx_pkts"] / elapsed if elapsed > 0 else 0.0,
                "latency_ns": {"p50": s.get("latency_p50_ns"), "p99": s.get("latency_p99_ns"),
                               "p99.9": s.get("latency_p999_ns"),
                               "min": s.get("latency_min_ns"), "max": s.get("latency_max_ns")},
                "reordered": s["reordered_pkts"], "duplicate": s["duplicate_pkts"]}


def search(tester, size, trial_s, resolution, max_rate, log):
    """RFC 2544 zero-loss throughput: {rate, trials, probe, tester_limited}.

    A lossless trial in which the generator fell short of the target (it was
    starved of CPU) shows the DUT forwarding the rate actually offered: lo
    becomes that rate, hi the target, and the result is flagged
    tester_limited."""
    probe = tester.trial(0, size, min(trial_s, 1.0))
    hi = min(max_rate, max(1000.0, probe["forwarded_pps"] * 1.1))
    lo = 0.0
    trials = []
    limited = False
    log(f"    probe: generator {probe['measured_pps']:.0f} pps, DUT forwarded "
        f"{probe['forwarded_pps']:.0f} pps -> search 0..{hi:.0f}")
    rate = hi
    while len(trials) < 12:
        r = tester.trial(rate, size, trial_s)
        trials.append(r)
        lossless = r["sent"] > 0 and r["lost"] == 0
        log(f"    {rate:10.0f} pps: offered {r['measured_pps']:.0f}, lost {r['lost']} -> "
            + ("pass" if r["passed"] else "pass at the offered rate (generator short)"
               if lossless else "fail"))
        if r["passed"]:
            lo = rate
            if rate == hi:
                break
        elif lossless:
            lo, hi, limited = max(lo, r["measured_pps"]), rate, True
        else:
            hi = rate
        if hi - lo <= resolution * max(lo, 1.0) or hi - lo <= 100:
            break
        rate = (lo + hi) / 2
    return {"rate": lo, "trials": trials, "probe": probe, "tester_limited": limited}


def measure_size(tester, size, trial_s, resolution, max_rate, log):
    s = search(tester, size, trial_s, resolution, max_rate, log)
    rate = s["rate"]
    lat = tester.trial(rate, size, trial_s) if rate > 0 else None
    fb = pcapgen.mean_frame_bytes(size)
    out = {"throughput_pps": round(rate), "throughput_mbps": round(rate * fb * 8 / 1e6, 2),
           "tester_limited": s["tester_limited"],
           "overload_forwarded_pps": round(s["probe"]["forwarded_pps"]),
           "generator_max_pps": round(s["probe"]["measured_pps"]),
           "trials": len(s["trials"]),
           "latency_ns": lat["latency_ns"] if lat else None,
           "latency_trial_lost": lat["lost"] if lat else None}
    log(f"  {size}: {rate:.0f} pps zero loss ({out['throughput_mbps']} Mbit/s), "
        f"latency {out['latency_ns']}")
    return out


def kernel_dut(lab):
    """Turn the DUT namespace into a Linux router with the same addressing."""
    d = lab.dut
    for cmd in (["ip", "addr", "add", f"{GW_A4}/24", "dev", "pa"],
                ["ip", "addr", "add", f"{GW_B4}/24", "dev", "pb"],
                ["sysctl", "-qw", "net.ipv4.ip_forward=1"],
                ["sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"],
                ["ip", "neigh", "replace", A4, "lladdr", MAC_A, "dev", "pa", "nud", "permanent"],
                ["ip", "neigh", "replace", B4, "lladdr", MAC_B, "dev", "pb", "nud", "permanent"],
                ["ip", "route", "replace", ROUTED, "via", B4]):
        d.run(cmd)


def start_router(lab):
    lab.start_dp()


def stop_router(lab):
    drops = {k: v for k, v in lab.dp.ctl("drops")["drops"].items() if v}
    lab.dp.close()
    lab.dp = None
    return drops


def kernel_off(lab):
    d = lab.dut
    d.run(["sysctl", "-qw", "net.ipv4.ip_forward=0"])
    d.run(["ip", "addr", "flush", "dev", "pa"])
    d.run(["ip", "addr", "flush", "dev", "pb"])


def median_of(results):
    """Median run (by throughput) of repeated searches, with all rates kept."""
    rs = sorted(results, key=lambda r: r["throughput_pps"])
    med = dict(rs[(len(rs) - 1) // 2]) if len(rs) % 2 else dict(rs[len(rs) // 2 - 1])
    med["throughput_pps"] = round(statistics.median(r["throughput_pps"] for r in results))
    med["runs_pps"] = [r["throughput_pps"] for r in results]
    return med


def run(args):
    quick = getattr(args, "quick", False)
    sizes = ["64"] if quick else ["64", "imix-up", "imix-down"]
    reps = {"64": 1 if quick else 3}
    trial_s = 1.0 if quick else 2.0
    resolution = 0.10 if quick else 0.02
    max_rate = 2_000_000
    log = print
    runs = {"edgeplane": {}, "linux": {}}
    drops = {}
    # Small tables: this lab has one route, and the machine's hugepages are
    # shared (rte_lpm's 64 MB tbl24 is the floor).
    small = {"max_routes4": 1024, "max_routes6": 1024, "lpm4_tbl8s": 64, "lpm6_tbl8s": 256,
             "max_acl_rules": 1024}
    with RouterLab(tag="rfc", routes=[(ROUTED, B4)], router=small, start=False) as lab:

        def run_ours(size):
            log(f"rfc2544-router: {size}: DUT = edgeplane-dp router")
            start_router(lab)
            with Tester(lab) as t:
                r = measure_size(t, size, trial_s, resolution, max_rate, log)
            for k, v in stop_router(lab).items():
                drops[k] = drops.get(k, 0) + v
            return r

        def run_linux(size):
            log(f"rfc2544-router: {size}: DUT = Linux IPv4 forwarding")
            kernel_dut(lab)
            with Tester(lab) as t:
                r = measure_size(t, size, trial_s, resolution, max_rate, log)
            kernel_off(lab)
            return r

        # The two DUTs alternate (bench/ab.py), size by size, so both see
        # the same neighbours on this shared machine; medians over rounds.
        for size in sizes:
            res = ab.alternate([ab.Call("edgeplane", lambda s=size: run_ours(s), _said),
                                ab.Call("linux", lambda s=size: run_linux(s), _said)],
                               reps.get(size, 1), log=log)
            runs["edgeplane"][size], runs["linux"][size] = res["edgeplane"], res["linux"]
    ours = {s: median_of(runs["edgeplane"][s]) for s in sizes}
    linux = {s: median_of(runs["linux"][s]) for s in sizes}
    for d in (ours, linux):
        for s, r in d.items():
            r["throughput_mbps"] = round(r["throughput_pps"] * pcapgen.mean_frame_bytes(s)
                                         * 8 / 1e6, 2)
    ratios, ratio_rounds, comparisons = {}, {}, []
    for size in sizes:
        if linux[size]["throughput_pps"]:
            key = "vs_linux-forwarding" if size == "64" else f"vs_linux-forwarding_{size}"
            r, ratio_rounds[key] = ab.ratio(runs["edgeplane"][size], runs["linux"][size],
                                            "throughput_pps")
            ratios[key] = round(r, 3) if r is not None else None
            comparisons.append(common.comparison(
                size, ours[size]["throughput_pps"], "linux-forwarding",
                linux[size]["throughput_pps"], key, ratios[key], metric="throughput_pps",
                unit="pps, zero loss", ours_rounds=ours[size]["runs_pps"],
                peer_rounds=linux[size]["runs_pps"]))
    lat_o, lat_l = (ours["64"].get("latency_ns") or {}), (linux["64"].get("latency_ns") or {})
    if lat_o.get("p50") and lat_l.get("p50"):
        ratios["latency_p50_vs_linux-forwarding"] = round(lat_o["p50"] / lat_l["p50"], 3)
        comparisons.append(common.comparison(
            "64", lat_o["p50"] / 1e3, "linux-forwarding", lat_l["p50"] / 1e3,
            "latency_p50_vs_linux-forwarding", ratios["latency_p50_vs_linux-forwarding"],
            metric="latency_p50", unit="us, p50 at the rate found", higher_is_better=False))
    h = ours["64"]
    lat = h["latency_ns"] or {}
    metrics = {"throughput_pps_64": h["throughput_pps"], "throughput_mbps_64": h["throughput_mbps"],
               "latency_p50_ns_64": lat.get("p50"), "latency_p99_ns_64": lat.get("p99"),
               "latency_p999_ns_64": lat.get("p99.9"),
               "by_size": ours, "dut_drops": drops}
    config = {"topology": "gen(ns a) -veth- DUT(ns dut) -veth- sink(ns b), net_af_packet",
              "flows": FLOWS, "trial_s": trial_s, "resolution": resolution, "repeats": reps,
              "zero_loss": "sink rx_pkts == gen sent_pkts after drain",
              "frame_size_convention": "bytes incl. 4 B FCS; Mbit/s = frames x size x 8",
              "latency": "at the found rate; from the median run",
              "sizes": sizes, "quick": quick}
    peers = {"linux-forwarding": {"by_size": linux,
                                  "throughput_pps_64": linux["64"]["throughput_pps"]}}
    return common.result("rfc2544-router", config, metrics, peers, ratios,
                         extra={"comparisons": comparisons, "ratio_rounds": ratio_rounds})


def _said(r):
    return f"{r['throughput_pps']} pps zero loss"
