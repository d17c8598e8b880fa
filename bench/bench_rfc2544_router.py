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
Latency (section 26.2): LATENCY_TRIALS more trials at the found rate, the
median trial's p50/p99/p99.9 of the sink's histogram (generator TSC stamp
to sink rx burst, both in this machine's TSC: includes both testers'
af_packet paths and veth).  The stamp is taken when the generator builds a
burst, before its send, not when the frame has left (RFC 2544's timestamp
A): the tester's own path is in every figure, measured alone as the
tester's floor (generator and sink back to back on a veth of their own, at
the common rate and both found rates).

Peer, same run, same tester: the DUT namespace with the kernel forwarding
(net.ipv4.ip_forward=1, the same addresses, route and static neighbours, the
same MACs on the veth ends).  ratios: vs_linux-forwarding = our zero-loss
rate / the kernel's, per frame size; latency_p50_vs_linux = our p50 at the
found rate / the kernel's at its found rate (64 B), the median of the
per-round ratios (each round's two DUTs measured next to each other).

The tester runs above every time-shared thread (SCHED_FIFO 20 for the gen
and sink workers, through the engine's rt_priority): a hardware tester has
its own cores, and on this shared machine a tester at nice 0 was the limit
of every search.  The kernel's forwarding then runs at the tester's
priority (in the generator's send, as softirq work); ours at the DUT's
default (SCHED_FIFO 1, poll_policy auto = sleep-rx), on net_af_xdp ports
(DUT_DEVICE).

Our DUT runs in two kinds, each a DUT of its own in every round (three
DUTs alternating): the XDP fast path (xdp/fwd/fwd.bpf.c on pa and pb,
net_af_xdp's xdp_prog) and the tc fast path ([router] fast_path = tc:
xdp/fwd/tcfwd.bpf.c at pa's and pb's tc ingress ending in
bpf_redirect_peer(), the ports on punt veth pairs pa_k/pa_p, pb_k/pb_p that
the lab builds).  DUT_FAST_PATH names the kind whose figures are the main
keys (vs_linux-forwarding, the latency ratios, the tester's floor, the
one-process variant): tc, clearly ahead of XDP over rounds
(docs/benchmarks/rfc2544-router-fast-paths.md, "The tc fast path in the
router").  The other,
SECONDARY_FAST_PATH (XDP), is recorded under keys ending in its name:
ratios vs_linux-forwarding_xdp (and per iMix size,
vs_linux-forwarding_<size>_xdp), xdp_vs_tc (the two kinds round by
round), and metrics.fast_path_xdp.

A variant figure after the main ones (one_worker_variant): the same search
and latency trials at 64 B with the tester as one process and one worker
(the gen worker with `rx`), in a namespace of its own, pinned to one CPU,
and our DUT pinned to the other; recorded beside the main keys
(metrics.one_worker_tester, ratios *_one_worker_tester).

Every trial records where frames went missing or waited: the DUT's and the
sink's af_packet ring drops, the kernel's backlog drops (softnet_stat), the
DUT worker's CPU time, run-queue wait and stamp-to-rx latency, and the load
average.  `bound_by` names, per size, the element that set the zero-loss
rate (from the lowest failing trial) and the latency (from where the p50
was spent): the tester, our worker, the wake-up, the wire or the shared
cores.
"""
import os
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
# Both run at SCHED_FIFO 20, above the DUT's default 1: the tester must not
# be what a trial measures.  The sink waits on its socket (sleep-rx): a
# frame wakes it, so its pauses add one wake-up to the latency, not a
# timer.  The generator has nothing to wait on but its clock: it sleeps
# from 10 us (its batches are 20 us apart) up to 1 ms.
TESTER_RT = 20
GEN_ENGINE = {"poll_policy": "sleep", "idle_polls": 10, "min_sleep_us": 10,
              "max_sleep_us": 1000, "rt_priority": TESTER_RT}
SINK_ENGINE = {"poll_policy": "sleep-rx", "idle_polls": 20, "max_sleep_us": 1000,
               "rt_priority": TESTER_RT}
# The tester this bench runs: one process, one worker (generator and sink:
# the gen worker with `rx`, dataplane/gen/README.md), in a namespace of its
# own that holds both tester interfaces, pinned to one CPU while the DUT is
# pinned to the other.  Its pause ends when the next batch is due or a
# frame comes back (ppoll on the sink's socket), so it needs no timer
# ladder.  The two-process tester (GEN_ENGINE, SINK_ENGINE) took turns with
# our worker on its core: at 200 kpps the sink, woken by every burst our
# worker sent, preempted it 34 700 times in 4.5 s (perf sched), and our
# latency was the CPU time the tester left it.
TESTER_ENGINE = {"poll_policy": "sleep", "idle_polls": 10, "min_sleep_us": 10,
                 "max_sleep_us": 1000, "rt_priority": TESTER_RT}


def cpu_split():
    """(tester's CPU, DUT's CPU) as [engine] cpus values, or (None, None)
    with fewer than two CPUs to give."""
    cpus = sorted(os.sched_getaffinity(0))
    return (str(cpus[0]), str(cpus[1])) if len(cpus) >= 2 else (None, None)


def softnet_drops():
    """Frames the kernel's per-CPU backlog dropped (netdev_max_backlog),
    summed over CPUs: /proc/net/softnet_stat column 2."""
    try:
        return sum(int(line.split()[1], 16) for line in open("/proc/net/softnet_stat"))
    except (OSError, IndexError, ValueError):
        return 0


def ring_drops(dp, port=None):
    """Frames the kernel dropped at a data plane's rx rings, over its ports
    (or the one named @port): imissed, which holds af_packet's full-ring
    drops and AF_XDP's (rx ring full, fill ring empty); see
    dataplane/engine/af_packet.c."""
    return sum((p.get("stats") or {}).get("imissed", 0) for p in dp.ctl("ports")["ports"]
               if port is None or p["name"] == port)


def rx_ring_full(dp):
    """Of ring_drops, the frames AF_XDP dropped because the socket's rx ring
    was full (the worker did not drain it in time; `xsk_rx_ring_full` in a
    net_af_xdp port's stats), as against its fill ring running empty."""
    return sum((p.get("stats") or {}).get("xsk_rx_ring_full", 0)
               for p in dp.ctl("ports")["ports"])


def fast_path_counts(dp):
    """(forwarded, punted, kind) of the router's fast path over its ports
    (`xdp-fast`; 0, 0, None when it is off; kind "xdp" or "tc")."""
    st = dp.ctl("xdp-fast")
    c = st.get("counters") or {}
    kind = st.get("kind", "xdp") if st.get("active") else None
    return (c.get("forwarded", 0), sum(v for k, v in c.items() if k.startswith("punt_")),
            kind)


def dut_snapshot(dp):
    """The DUT worker's counters a trial differences (None for the kernel)."""
    if dp is None:
        return None
    w = dp.ctl("power")["workers"][0]
    fwd, punt, kind = fast_path_counts(dp)
    return {"fast_path_kind": kind, "cpu_ns": w["cpu_ns"], "runq_ns": w["runq_wait_ns"], "sleeps": w["sleeps"],
            "demotions": w["poll"]["sched"]["demotions"], "ring_drops": ring_drops(dp),
            "rx_ring_full": rx_ring_full(dp), "fast_forwarded": fwd, "fast_punted": punt}


def cpu_ns(dp):
    """A one-worker data plane's worker CPU time (the tester's gen or sink)."""
    return dp.ctl("power")["workers"][0]["cpu_ns"]


def dut_delta(dp, before, seconds):
    if dp is None or before is None:
        return None
    after = dut_snapshot(dp)
    w = dp.ctl("power")["workers"][0]
    d = {k: after[k] - before[k] for k in before if k != "fast_path_kind"}
    return {"cpu_share": round(d["cpu_ns"] / 1e9 / seconds, 3),
            "runq_share": round(d["runq_ns"] / 1e9 / seconds, 3),
            "wakeups_per_s": round(d["sleeps"] / seconds), "rt_demotions": d["demotions"],
            "ring_drops": d["ring_drops"], "rx_ring_full": d["rx_ring_full"],
            "fast_path_forwarded": d["fast_forwarded"], "fast_path_punted": d["fast_punted"],
            "fast_path_kind": after["fast_path_kind"],
            "wake_p50_ns": w["wake_latency"]["p50_ns"], "wake_samples": w["wake_latency"]["samples"],
            "poll_p50_ns": w["poll_latency"]["p50_ns"], "poll_samples": w["poll_latency"]["samples"],
            "poll_policy": w["poll"]["poll_policy"],
            "fifo_priority": w["poll"]["sched"]["fifo_priority"]}


class Tester:
    """The tester; always stopped on exit.  dut: our DUT's Dp (its counters
    go into every trial), None for the kernel.

    host=None: two processes, the generator in host a and the sink in host
    b (bench_power and tests/test_power use this one).  host=a Host: one
    process and one worker in that namespace, which holds both tester
    interfaces: the gen worker with `rx = s` (TESTER_ENGINE), pinned to
    `cpus` when given.  Either way self.gen answers gen-*, self.sink
    sink-* (the same Dp for one process)."""

    dut = None

    def __init__(self, lab, dut=None, gen_if="eth0", sink_if="eth0", dst_mac=MAC_PA, host=None,
                 cpus=None):
        self.lab = lab
        self.dut = dut
        self.gen_if, self.sink_if, self.dst_mac = gen_if, sink_if, dst_mac
        self.host, self.cpus = host, cpus
        self.gen = self.sink = None

    def _gen_worker(self):
        return {"pipeline": "gen", "tx": "g", "dst_mac": self.dst_mac, "src": A4, "dst": DST,
                "flows": FLOWS, "size": "64", "start": "no", "vary": "dst"}

    # A deep sink ring: the default overflows when the sink is descheduled
    # for ~10 ms on this loaded 2-core machine.
    def _sink_port(self, i=0):
        return {"device": f"net_af_packet{i},iface={self.sink_if},framecnt=16384"}

    def __enter__(self):
        try:
            if self.host is not None:
                engine = dict(TESTER_ENGINE, **({"cpus": self.cpus} if self.cpus else {}))
                self.gen = self.sink = Dp(self.host, {
                    "engine": engine,
                    "port g": {"device": f"net_af_packet0,iface={self.gen_if}"},
                    "port s": self._sink_port(1),
                    "worker gen0": dict(self._gen_worker(), rx="s")},
                    name="rfc-tester").__enter__()
                return self
            self.sink = Dp(self.lab.b, {
                "engine": SINK_ENGINE, "port s": self._sink_port(),
                "worker sink0": {"pipeline": "sink", "rx": "s"}}, name="rfc-sink").__enter__()
            self.gen = Dp(self.lab.a, {
                "engine": GEN_ENGINE,
                "port g": {"device": f"net_af_packet0,iface={self.gen_if}"},
                "worker gen0": self._gen_worker()}, name="rfc-gen").__enter__()
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        for d in {id(d): d for d in (self.gen, self.sink) if d is not None}.values():
            d.close()

    def cpu_shares(self, before, span):
        """The tester's threads' CPU shares since @before (cpu_times())."""
        now = self.cpu_times()
        shares = {k: round((now[k] - before[k]) / 1e9 / span, 3) for k in now}
        return shares

    def cpu_times(self):
        if self.gen is self.sink:
            return {"tester_cpu_share": cpu_ns(self.gen)}
        return {"gen_cpu_share": cpu_ns(self.gen), "sink_cpu_share": cpu_ns(self.sink)}

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
        if self.dut is not None:
            self.dut.ctl("power-reset")
        before = dut_snapshot(self.dut)
        tester0 = self.cpu_times()
        sink_drops0, softnet0, t0 = ring_drops(self.sink, "s"), softnet_drops(), time.monotonic()
        load = os.getloadavg()[0]
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
        span = max(1e-3, time.monotonic() - t0)
        # The tester's own CPU, at SCHED_FIFO 20 above the DUT: what it left
        # of the two cores (the kernel's forwarding is inside the gen's).
        tester = self.cpu_shares(tester0, span)
        dut = dut_delta(self.dut, before, span)
        return {"load_avg": round(load, 2),
                # Of the frames sent, the share the DUT's XDP fast path
                # forwarded itself (None for the kernel).
                "fast_path_share": (round(dut["fast_path_forwarded"] / sent, 4)
                                    if dut is not None and sent else None),
                "sink_ring_drops": ring_drops(self.sink, "s") - sink_drops0,
                "softnet_drops": softnet_drops() - softnet0,
                "dut": dut, "tester": tester,
                "rate_pps": rate, "sent": sent, "received": s["rx_pkts"],
                "lost": sent - s["rx_pkts"], "offered_ok": offered_ok,
                "measured_pps": g["measured_pps"], "tx_full": g["tx_full_pkts"],
                "passed": offered_ok and sent > 0 and s["rx_pkts"] == sent,
                "forwarded_pps": s["rx_pkts"] / elapsed if elapsed > 0 else 0.0,
                "latency_ns": {"p50": s.get("latency_p50_ns"), "p99": s.get("latency_p99_ns"),
                               "p99.9": s.get("latency_p999_ns"),
                               "min": s.get("latency_min_ns"), "max": s.get("latency_max_ns")},
                "reordered": s["reordered_pkts"], "duplicate": s["duplicate_pkts"]}


def search(tester, size, trial_s, resolution, max_rate, log):
    """RFC 2544 zero-loss throughput: {rate, trials, probe, tester_limited,
    confirmations}.

    A lossless trial in which the generator fell short of the target (it was
    starved of CPU) shows the DUT forwarding the rate actually offered: lo
    becomes that rate, hi the target, and the result is flagged
    tester_limited.

    The rate found is then confirmed by one more trial (RFC 2544 asks for
    60 s trials; in 2 s a rate just above what the DUT sustains can pass
    once, its ring absorbing the excess): a loss there makes it the upper
    bound and the search goes on below it, at most CONFIRMATIONS times."""
    probe = tester.trial(0, size, min(trial_s, 1.0))
    hi = min(max_rate, max(1000.0, probe["forwarded_pps"] * 1.1))
    lo = 0.0
    trials, confirmations = [], []
    passed = []                     # the rate credited by every lossless trial
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
            passed.append(rate)
        elif lossless:
            lo, hi, limited = max(lo, r["measured_pps"]), rate, True
            passed.append(r["measured_pps"])
        else:
            hi = rate
        done = r["passed"] and rate == hi or hi - lo <= resolution * max(lo, 1.0) or hi - lo <= 100
        if done and lo > 0 and len(confirmations) < CONFIRMATIONS:
            c = tester.trial(lo, size, trial_s)
            confirmations.append(c)
            ok = c["sent"] > 0 and c["lost"] == 0
            log(f"    {lo:10.0f} pps confirmed: offered {c['measured_pps']:.0f}, lost {c['lost']}"
                + ("" if ok else " -> search below it"))
            if not ok:
                hi = lo
                lo = max([x for x in passed if x < hi], default=0.0)
                rate = (lo + hi) / 2
                continue
        if done:
            break
        rate = (lo + hi) / 2
    return {"rate": lo, "trials": trials + confirmations, "probe": probe,
            "tester_limited": limited, "confirmations": len(confirmations)}


def fast_path_took(d):
    """Our fast path (XDP or tc) forwarded (nearly) every frame of a trial:
    our worker then saw none, and its wake-up and ring say nothing."""
    if not d:
        return False
    fwd, punt = d.get("fast_path_forwarded", 0), d.get("fast_path_punted", 0)
    return fwd > 0 and fwd >= 0.99 * (fwd + punt)


# How a bound names the fast path of the trial's DUT (its fast_path_kind).
FAST_PATH_NAMES = {"xdp": "our XDP fast path", "tc": "our tc fast path"}


def fast_path_name(d):
    """"our XDP fast path" or "our tc fast path", by the kind the trial's
    DUT ran; "our fast path" for a record that does not say (written before
    trials recorded the kind)."""
    return FAST_PATH_NAMES.get(d.get("fast_path_kind"), "our fast path")


def throughput_bound(s):
    """The element that set a search's zero-loss rate, from its lowest
    failing trial (or the generator, when no trial lost a frame)."""
    failed = [t for t in s["trials"] + [s["probe"]] if t["lost"] > 0]
    if not failed:
        return "tester: the generator offered no more" if s["tester_limited"] else \
            "search range: no trial lost a frame"
    t = min(failed, key=lambda x: x["rate_pps"] or float("inf"))
    d = t.get("dut")
    if t["sink_ring_drops"] > 0:
        return "tester: the sink's ring overflowed"
    if d is not None and d["ring_drops"] > 0:
        if d["rt_demotions"] > 0:
            return ("our worker: saturated (demoted to SCHED_OTHER by its guard), its ring "
                    "overflowed")
        if d["runq_share"] > 0.1:
            return ("shared cores: our worker waited for a CPU (behind the tester's "
                    "higher-priority threads and the kernel's) and its ring overflowed")
        return "our worker: its ring overflowed while it ran"
    if t["softnet_drops"] > 0:
        return "the wire: the kernel's backlog (netdev_max_backlog) overflowed"
    if d is None:
        return "the kernel's forwarding (veth and ip_forward in the sender's softirq)"
    if fast_path_took(d):
        return (f"{fast_path_name(d)} (redirect between the veths in the sender's softirq): "
                "frames lost between the rings")
    return "the wire: frames lost between the rings (veth, kernel)"


# A wake-up this many times the one measured at the common rate is not
# the wake-up's own cost (an IPI to a halted vCPU, 10-15 us here) but a
# woken worker waiting for a CPU.
WAKE_WAIT_FACTOR = 2.0


def latency_bound(lat, wake_ref_ns=None, floor_ns=None):
    """Where the p50 at the found rate was spent: before our worker's rx
    (its ring: the wake-up, or a woken or preempted worker without a CPU)
    or after it (our tx, the veth, the sink).  wake_ref_ns: our worker's
    stamp-to-rx after a wake-up at the common rate, the wake-up's own
    cost on this host.  floor_ns: the tester's own p50 back to back at the
    nearest rate.  Given it, the part after our rx is judged by what it
    adds to the tester's whole floor (its send, the veth, host b's
    receive, the sink's wake-up: all in that part once our send carries
    host b's receive), and the part before by the rest: on the Xeon host
    at 376 kpps, 36 us before our rx, 40 us after it against a floor of
    30 us, i.e. 10 us of ours after our rx and the wake-up's 36 before."""
    if lat is None:
        return None
    total = lat["latency_ns"]["p50"] or 0
    d = lat.get("dut")
    if d is None:
        return "the wire and the sink (the kernel forwards inside the generator's send)"
    if fast_path_took(d):
        side = (f": {total / 1e3:.1f} us against the tester's floor of {floor_ns / 1e3:.1f} us"
                if floor_ns else "")
        return (f"the wire and the sink ({fast_path_name(d)} forwards inside the generator's "
                f"send{side})")
    woke = d["wake_samples"] >= d["poll_samples"]
    before = d["wake_p50_ns"] if woke else d["poll_p50_ns"]
    t = lat.get("tester") or {}
    cores = (f"run-queue share {d['runq_share']}, demoted {d['rt_demotions']} times; "
             f"the tester used {round(sum(t.values()), 2)} CPUs")
    after = total - before
    if floor_ns:
        before_ours = total and before >= after - floor_ns
    else:
        before_ours = total and before >= 0.5 * total
    if before_ours:
        if woke and wake_ref_ns and before > WAKE_WAIT_FACTOR * wake_ref_ns \
                and d["runq_share"] > 0.1:
            return ("shared cores: most frames found our worker asleep, and once woken it "
                    f"waited for a CPU (stamp-to-rx after a wake-up {before / 1e3:.1f} us "
                    f"against {wake_ref_ns / 1e3:.1f} us at the common rate; {cores})")
        if woke:
            ref = f", {wake_ref_ns / 1e3:.1f} us at the common rate" if wake_ref_ns else ""
            side = (f"; after our rx {after / 1e3:.1f} us against the tester's floor of "
                    f"{floor_ns / 1e3:.1f} us" if floor_ns else "")
            return ("wake-up: our worker was asleep when most frames arrived (stamp-to-rx "
                    f"after a wake-up {before / 1e3:.1f} us{ref}{side}; {cores})")
        return ("shared cores: frames waited in our ring while our worker waited for a CPU "
                f"({cores})")
    if floor_ns:
        return ("the wire and the sink: after our rx "
                f"{after / 1e3:.1f} us against the tester's floor of {floor_ns / 1e3:.1f} us, "
                f"before it {before / 1e3:.1f} us")
    return "the wire and the sink: most of the p50 is after our worker's rx"


def floor_at(floor, rate):
    """The tester's floor p50 at the measured rate nearest @rate, or None."""
    if not floor:
        return None
    return floor[min(floor, key=lambda r: abs(float(r) - rate))]["p50_ns"] or None


def bound_with_floor(result, floor):
    """A 64 B search's latency bound read again once the tester's floor is
    known (measure_size runs before it is)."""
    lat = result.get("latency_trial")
    if lat is None or result.get("latency_p50_ns") is None:
        return
    rec = dict(lat, latency_ns={"p50": result["latency_p50_ns"]})
    result["bound_by"]["latency"] = latency_bound(rec, result.get("wake_ref_ns"),
                                                  floor_at(floor, result["throughput_pps"]))


# Why a part of ours is None in latency_parts: not measured, not zero.
FAST_PATH_FORWARDED = "fast path forwarded"


def latency_parts(p50, trial, floor, rate):
    """The p50 at the found rate in parts: the tester's own (its floor at
    the nearest rate), stamp to our worker's rx (after a wake-up or in a
    busy poll, whichever most sampled bursts were), and our rx to the sink.
    When our fast path (XDP or tc) forwarded the trial (fast_path_took) those two
    are None, `not_applicable` says why for each, and `fast_path_share`
    how much it took.  For the kernel: the floor and what is above it."""
    if not p50 or not trial:
        return None
    k = min(floor, key=lambda r: abs(float(r) - rate)) if floor else None
    out = {"p50_ns": p50, "tester_floor_ns": floor[k]["p50_ns"] if k else None,
           "tester_floor_rate_pps": int(k) if k else None}
    if out["tester_floor_ns"]:
        out["above_floor_ns"] = p50 - out["tester_floor_ns"]
    d = trial.get("dut")
    if d is None:
        return out
    if fast_path_took(d):
        # Our worker saw (nearly) no frame of the trial: its stamp-to-rx
        # samples, if any, are of the few it was punted, not of the p50.
        fwd, punt = d["fast_path_forwarded"], d["fast_path_punted"]
        out.update({"stamp_to_our_rx_ns": None, "our_rx_to_sink_ns": None,
                    "not_applicable": {"stamp_to_our_rx_ns": FAST_PATH_FORWARDED,
                                       "our_rx_to_sink_ns": FAST_PATH_FORWARDED},
                    "fast_path_share": round(fwd / (fwd + punt), 4),
                    "our_cpu_share": d["cpu_share"], "our_runq_share": d["runq_share"],
                    "tester_cpu": trial.get("tester")})
        return out
    woke = d["wake_samples"] >= d["poll_samples"]
    before = d["wake_p50_ns"] if woke else d["poll_p50_ns"]
    n = d["wake_samples"] + d["poll_samples"]
    out.update({"stamp_to_our_rx_ns": before,
                "stamp_to_our_rx_after": "a wake-up" if woke else "a busy poll",
                "our_rx_to_sink_ns": p50 - before,
                "bursts_after_wake_up": round(d["wake_samples"] / n, 3) if n else None,
                "our_cpu_share": d["cpu_share"], "our_runq_share": d["runq_share"],
                "tester_cpu": trial.get("tester")})
    return out


# RFC 2544 takes latency at each DUT's own zero-loss rate; when one DUT
# forwards twice the other's rate, that compares two loads, and here the
# kernel's rate is the generator's limit (it forwards inside the
# generator's send), not the kernel's.  Two like-for-like views besides:
# both DUTs at this common rate, and ours at the kernel's found rate
# (ours_at_rate), the highest load both carry without loss.
COMMON_RATE_PPS = 50_000


# Confirmations of a search's rate (search()).
CONFIRMATIONS = 2

# Latency trials at the found rate per search (RFC 2544 26.2 repeats the
# measurement and reports the mean of 20; this shared machine's noise is
# in whole trials, so the median trial of three is kept).
LATENCY_TRIALS = 3


def median_trial(trials):
    """The trial with the median p50 (lower middle of an even count)."""
    ok = sorted((t for t in trials if t["latency_ns"]["p50"]), key=lambda t: t["latency_ns"]["p50"])
    return ok[(len(ok) - 1) // 2] if ok else (trials[0] if trials else None)


def latency_trials(tester, rate, size, trial_s, n=LATENCY_TRIALS):
    return [tester.trial(rate, size, trial_s) for _ in range(n)] if rate > 0 else []


def measure_size(tester, size, trial_s, resolution, max_rate, log):
    s = search(tester, size, trial_s, resolution, max_rate, log)
    rate = s["rate"]
    lats = latency_trials(tester, rate, size, trial_s)
    lat = median_trial(lats)
    common = median_trial(latency_trials(tester, COMMON_RATE_PPS, size, trial_s)) \
        if size == "64" else None
    fb = pcapgen.mean_frame_bytes(size)
    wake_ref = ((common or {}).get("dut") or {}).get("wake_p50_ns") or None
    out = {"throughput_pps": round(rate), "throughput_mbps": round(rate * fb * 8 / 1e6, 2),
           "tester_limited": s["tester_limited"],
           "overload_forwarded_pps": round(s["probe"]["forwarded_pps"]),
           "generator_max_pps": round(s["probe"]["measured_pps"]),
           "trials": len(s["trials"]),
           "latency_ns": lat["latency_ns"] if lat else None,
           "latency_p50_ns": lat["latency_ns"]["p50"] if lat else None,
           "latency_p50_trials_ns": [t["latency_ns"]["p50"] for t in lats],
           "latency_trial_lost": lat["lost"] if lat else None,
           "latency_trial": {k: lat[k] for k in ("load_avg", "dut", "tester", "sink_ring_drops",
                                                 "softnet_drops")} if lat else None,
           "wake_ref_ns": wake_ref,
           "bound_by": {"throughput": throughput_bound(s),
                        "latency": latency_bound(lat, wake_ref)},
           "latency_common_rate": {"rate_pps": COMMON_RATE_PPS, "lost": common["lost"],
                                   "p50_ns": common["latency_ns"]["p50"],
                                   "offered_pps": round(common["measured_pps"]),
                                   "latency_ns": common["latency_ns"],
                                   "dut": common["dut"],
                                   "bound_by": latency_bound(common)} if common else None,
           "load_avg": [t["load_avg"] for t in s["trials"]],
           # The XDP fast path's share of the frames sent, per trial (ours only).
           "fast_path_share": [t.get("fast_path_share") for t in s["trials"]],
           "trial_log": [{k: t[k] for k in ("rate_pps", "measured_pps", "lost", "load_avg",
                                            "sink_ring_drops", "softnet_drops", "dut", "tester",
                                            "fast_path_share")}
                         for t in [s["probe"]] + s["trials"]]}
    log(f"  {size}: {rate:.0f} pps zero loss ({out['throughput_mbps']} Mbit/s), "
        f"latency {out['latency_ns']}; bound by {out['bound_by']}")
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
    # The fast path as it runs, by kind, for the JSON.  XDP
    # (xdp_fast_path = auto: on when every router port is net_af_xdp): the
    # devarg the engine added; tc: the program on the wires.
    fast = lab.dp.ctl("xdp-fast")
    kind = fast.get("kind", "xdp") if fast.get("active") else "off"
    if not hasattr(lab, "dut_fast_path"):
        lab.dut_fast_path = {}
    lab.dut_fast_path[kind] = {
        "active": fast.get("active", False), "mode": fast.get("mode"),
        "devarg": (f"xdp_prog={fast['prog']}" if fast.get("active") and kind == "xdp" else None),
        "tc_prog": fast.get("tc_prog"), "prog": fast.get("prog"),
        "ports": [p["port"] for p in fast.get("ports", []) if p.get("attached")]}


def use_fast_path(lab, kind):
    """The fast path of the next start_router(): "xdp" (net_af_xdp on pa
    and pb, xdp_fast_path = auto) or "tc" (the ports on the punt pairs'
    far ends, the tc program on pa and pb; the lab built the pairs)."""
    lab.dp_opts["fast_path"] = "tc" if kind == "tc" else None


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


# The DUT's ports.  net_af_xdp on these veths against net_af_packet
# (fixed-rate trials through this tester, medians of 3 rounds, 64 B):
# p50 43 against 56 us at 120 kpps and 75-82 against 100-104 us at 200
# kpps.  Its default busy_budget (64) lets an empty rx poll run the
# veth's NAPI in the worker's recvfrom() (SO_PREFER_BUSY_POLL), so frames
# reach the worker without waiting for the sender's softirq, and the
# worker sleeps less often (210 against 410-560 waits/s at 200 kpps).
DUT_DEVICE = "af_xdp"

# Our DUT's fast path for the main keys (vs_linux-forwarding, the latency
# ratios, the floor, the one-process variant), and the other kind, measured
# in the same rounds as a third DUT and recorded under keys ending in its
# name (ratios vs_linux-forwarding_<kind>, vs_linux-forwarding_<size>_<kind>,
# metrics.fast_path_<kind>).  "xdp": xdp/fwd/fwd.bpf.c on pa and pb through
# net_af_xdp's xdp_prog; "tc": xdp/fwd/tcfwd.bpf.c at pa's and pb's tc
# ingress (bpf_redirect_peer), the ports on punt veth pairs
# (dataplane/router/xdp_fast_tc.c).
#
# tc is the default since it was ahead of the XDP path in every round
# (docs/benchmarks/rfc2544-router-fast-paths.md, "The tc fast path in the
# router": tc / XDP
# 1.16-2.16 in 10 of 10 rounds over two runs; at 64 B 1.38 and 1.42 of
# Linux where XDP read 1.15 and 1.00); the XDP figures stay under _xdp.
DUT_FAST_PATH = "tc"
SECONDARY_FAST_PATH = "xdp"

# Our DUT's ports with the one-process tester, pinned to its own CPU:
# busy_budget 0, so that the veth NAPI and the XDP copy of pa run in the
# sender's softirq (on the tester's CPU, as the kernel's forwarding does)
# and not in our worker's recvfrom.  Fixed-rate trials, 2 rounds: lossless
# at 150 and 180 kpps with 0-3 guard demotions a trial, where the PMD's
# default (busy_budget 64) lost frames in 3 of 4 with 20-37 demotions (its
# windows past 90 % of the one CPU); p50 48-71 against 43-62 us.
ONE_WORKER_DUT_DEVICE = "net_af_xdp{i},iface={iface},busy_budget=0"

# The tester back to back: a veth from a straight to b (no DUT), the same
# generator and sink.  Its p50 is the part of every latency figure that is
# the tester's own (both af_packet paths, both wake-ups, host b's kernel).
FLOOR_IF = "t0"
FLOOR_MAC_A, FLOOR_MAC_B = "02:00:00:00:03:0a", "02:00:00:00:03:0b"
# The one-process tester's floor: a veth between its own two ends.
FLOOR_IF_A, FLOOR_IF_B = "f0a", "f0b"
# Its ends of the DUT's links, moved from hosts a and b into its namespace
# (tester_namespace).
TESTER_IF_A, TESTER_IF_B = "ta", "tb"


def tester_namespace(lab):
    """A namespace for the one-process tester: a's and b's veth ends (to the
    DUT's pa and pb) move into it, renamed ta and tb, with the floor's veth
    beside them.  Its kernel has no address, no IPv6 and no forwarding: it
    sends nothing of its own onto the DUT's wires."""
    t = lab.topo.host("tester")
    for k in ("net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1",
              "net.ipv4.ip_forward=0"):
        t.run(["sysctl", "-qw", k], check=False)
    for h, new in ((lab.a, TESTER_IF_A), (lab.b, TESTER_IF_B)):
        h.run(["ip", "link", "set", "eth0", "down"])
        h.run(["ip", "link", "set", "eth0", "name", new])
        h.run(["ip", "link", "set", new, "netns", t.ns])
        t.run(["ip", "link", "set", new, "up"])
    lab.topo.link(t, FLOOR_IF_A, t, FLOOR_IF_B, mac_a=FLOOR_MAC_A, mac_b=FLOOR_MAC_B)
    for ifname in (TESTER_IF_A, TESTER_IF_B, FLOOR_IF_A, FLOOR_IF_B):
        t.offload_off(ifname)
    if lab.peer_napi:
        # NAPI on the DUT links' far ends, as in hosts a and b (RouterLab's
        # peer_napi): what the XDP fast path's redirect into pa/pb needs.
        for ifname in (TESTER_IF_A, TESTER_IF_B):
            t.run(["ethtool", "-K", ifname, "gro", "on"])
    return t


def tester_for(lab, dut=None, floor=False):
    """The tester on the DUT's links (or back to back: floor): two
    processes in hosts a and b, or, once tester_namespace() made lab's
    tester_ns, one process there, pinned to the first CPU."""
    if getattr(lab, "tester_ns", None) is None:
        return Tester(lab, dut, **({"gen_if": FLOOR_IF, "sink_if": FLOOR_IF,
                                     "dst_mac": FLOOR_MAC_B} if floor else {}))
    a, b = (FLOOR_IF_A, FLOOR_IF_B) if floor else (TESTER_IF_A, TESTER_IF_B)
    return Tester(lab, dut, gen_if=a, sink_if=b, dst_mac=FLOOR_MAC_B if floor else MAC_PA,
                  host=lab.tester_ns, cpus=cpu_split()[0])


def one_worker_variant(lab, trial_s, resolution, max_rate, log):
    """The variant figure: the same search and latency trials at 64 B with
    the one-process tester (pinned to one CPU) and our DUT pinned to the
    other, one round per DUT, after the main figures (it moves the tester's
    veth ends out of hosts a and b for good).  What it shows is in
    docs/benchmarks/rfc2544-router-history.md, "The tester in one process:
    what it shows": no tester wake-up for the kernel (its forwarding
    runs in the tester's own send, and the frames are in the sink's ring
    when that send returns), two for ours."""
    tester_cpu, dut_cpu = cpu_split()
    lab.tester_ns = tester_namespace(lab)
    lab.dp_opts["engine"] = {"cpus": dut_cpu} if dut_cpu else None
    lab.dp_opts["device"] = ONE_WORKER_DUT_DEVICE
    log("rfc2544-router: one-process tester (variant), 64: DUT = edgeplane-dp router")
    start_router(lab)
    try:
        with tester_for(lab, lab.dp) as t:
            ours = measure_size(t, "64", trial_s, resolution, max_rate, log)
    finally:
        stop_router(lab)
        lab.dp_opts["engine"], lab.dp_opts["device"] = None, DUT_DEVICE
    log("rfc2544-router: one-process tester (variant), 64: DUT = Linux IPv4 forwarding")
    kernel_dut(lab)
    try:
        with tester_for(lab) as t:
            linux = measure_size(t, "64", trial_s, resolution, max_rate, log)
    finally:
        kernel_off(lab)
    floor = tester_floor(lab, [COMMON_RATE_PPS] + [r["throughput_pps"] for r in (ours, linux)
                                                   if r["throughput_pps"] > 0], trial_s, log)
    bound_with_floor(ours, floor)

    def slim(r):
        return {k: r[k] for k in ("throughput_pps", "tester_limited", "latency_ns",
                                  "latency_p50_trials_ns", "latency_trial", "bound_by",
                                  "latency_common_rate", "trial_log")}

    def div(a, b):
        return round(a / b, 3) if a and b else None

    common = [(r.get("latency_common_rate") or {}).get("p50_ns") for r in (ours, linux)]
    return {"tester": "one edgeplane-dp process, one worker (gen with rx), ns tester",
            "cpus": {"tester": tester_cpu, "dut": dut_cpu},
            "ours": slim(ours), "linux": slim(linux), "tester_floor": floor,
            "ratios": {"vs_linux-forwarding": div(ours["throughput_pps"],
                                                  linux["throughput_pps"]),
                       "latency_p50_vs_linux": div(ours["latency_p50_ns"],
                                                   linux["latency_p50_ns"]),
                       "latency_p50_vs_linux_at_common_rate": div(*common)}}


def tester_floor(lab, rates, trial_s, log):
    """{rate: {p50, p99, trials}} of the tester alone, median of
    LATENCY_TRIALS trials per rate."""
    out = {}
    with tester_for(lab, floor=True) as t:
        for rate in rates:
            ts = latency_trials(t, rate, "64", trial_s)
            m = median_trial(ts)
            out[str(round(rate))] = {"p50_ns": m["latency_ns"]["p50"], "p99_ns": m["latency_ns"]["p99"],
                                     "lost": m["lost"], "offered_pps": round(m["measured_pps"]),
                                     "p50_trials_ns": [x["latency_ns"]["p50"] for x in ts]}
            log(f"  tester back to back at {rate:.0f} pps: p50 {out[str(round(rate))]['p50_ns']} ns")
    return out


def median_of(results):
    """Median run (by throughput) of repeated searches, with all rates kept."""
    rs = sorted(results, key=lambda r: r["throughput_pps"])
    med = dict(rs[(len(rs) - 1) // 2]) if len(rs) % 2 else dict(rs[len(rs) // 2 - 1])
    med["throughput_pps"] = round(statistics.median(r["throughput_pps"] for r in results))
    med["runs_pps"] = [r["throughput_pps"] for r in results]
    common = [r["latency_common_rate"]["latency_ns"]["p50"] for r in results
              if r.get("latency_common_rate") and r["latency_common_rate"]["latency_ns"]["p50"]]
    if common:
        med["latency_common_rate_p50_runs_ns"] = common
        med["latency_common_rate_p50_ns"] = round(statistics.median(common))
    p50s = [r["latency_ns"]["p50"] for r in results if r["latency_ns"] and r["latency_ns"]["p50"]]
    med["latency_p50_runs_ns"] = p50s
    if p50s and med["latency_ns"]:
        med["latency_ns"] = dict(med["latency_ns"], p50=round(statistics.median(p50s)))
    return med


def run(args):
    quick = getattr(args, "quick", False)
    sizes = ["64"] if quick else ["64", "imix-up", "imix-down"]
    reps = {"64": 1 if quick else 3}
    trial_s = 1.0 if quick else 2.0
    resolution = 0.10 if quick else 0.02
    max_rate = 2_000_000
    log = print
    load_start = os.getloadavg()[0]
    second = f"edgeplane_{SECONDARY_FAST_PATH}"
    runs = {"edgeplane": {}, second: {}, "linux": {}}
    drops = {}
    # Small tables: this lab has one route, and the machine's hugepages are
    # shared (rte_lpm's 64 MB tbl24 is the floor).
    small = {"max_routes4": 1024, "max_routes6": 1024, "lpm4_tbl8s": 64, "lpm6_tbl8s": 256,
             "max_acl_rules": 1024}
    # Which DUT goes first alternates from one search to the next (across
    # sizes too), so a drift in the other tenants' load favours neither.
    turn = 0
    floor, at_peer = {}, None
    # peer_napi: GRO on the tester's veth ends, for both DUTs alike: the
    # XDP fast path's redirect into a veth needs NAPI on its peer.
    # punt_pairs: both kinds of our DUT start in the same lab.
    with RouterLab(tag="rfc", routes=[(ROUTED, B4)], router=small, start=False,
                   device=DUT_DEVICE, peer_napi=True, punt_pairs=True) as lab:
        use_fast_path(lab, DUT_FAST_PATH)
        lab.topo.link(lab.a, FLOOR_IF, lab.b, FLOOR_IF, mac_a=FLOOR_MAC_A, mac_b=FLOOR_MAC_B)
        for h in (lab.a, lab.b):
            h.offload_off(FLOOR_IF)

        def run_ours(size, kind=DUT_FAST_PATH):
            log(f"rfc2544-router: {size}: DUT = edgeplane-dp router, {kind} fast path")
            use_fast_path(lab, kind)
            try:
                start_router(lab)
                with tester_for(lab, lab.dp) as t:
                    r = measure_size(t, size, trial_s, resolution, max_rate, log)
                for k, v in stop_router(lab).items():
                    drops[k] = drops.get(k, 0) + v
            finally:
                use_fast_path(lab, DUT_FAST_PATH)
            return r

        def run_linux(size):
            log(f"rfc2544-router: {size}: DUT = Linux IPv4 forwarding")
            kernel_dut(lab)
            with tester_for(lab) as t:
                r = measure_size(t, size, trial_s, resolution, max_rate, log)
            kernel_off(lab)
            return r

        # The two DUTs alternate (bench/ab.py), size by size, so both see
        # the same neighbours on this shared machine; medians over rounds.
        for size in sizes:
            n = reps.get(size, 1)
            res = ab.alternate([ab.Call("edgeplane", lambda s=size: run_ours(s), _said),
                                ab.Call(second, lambda s=size: run_ours(s, SECONDARY_FAST_PATH),
                                        _said),
                                ab.Call("linux", lambda s=size: run_linux(s), _said)],
                               n, first=turn, log=log)
            turn += n
            for k in runs:
                runs[k][size] = res[k]
            if size == "64":
                found = [statistics.median(r["throughput_pps"] for r in res[k])
                         for k in ("edgeplane", "linux")]
                floor = tester_floor(lab, [COMMON_RATE_PPS] + [f for f in found if f > 0],
                                     trial_s, log)
                for r in res["edgeplane"]:
                    bound_with_floor(r, floor)
                if found[1] > 0:
                    at_peer = ours_at_rate(lab, found[1], trial_s, log)
        variant = one_worker_variant(lab, trial_s, resolution, max_rate, log)
    ours = {s: median_of(runs["edgeplane"][s]) for s in sizes}
    ours2 = {s: median_of(runs[second][s]) for s in sizes}
    linux = {s: median_of(runs["linux"][s]) for s in sizes}
    for d in (ours, ours2, linux):
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
            # The other fast path, the same rounds: its own keys.
            key2 = f"{key}_{SECONDARY_FAST_PATH}"
            r, ratio_rounds[key2] = ab.ratio(runs[second][size], runs["linux"][size],
                                             "throughput_pps")
            ratios[key2] = round(r, 3) if r is not None else None
            comparisons.append(common.comparison(
                f"{size} ({SECONDARY_FAST_PATH} fast path)", ours2[size]["throughput_pps"],
                "linux-forwarding", linux[size]["throughput_pps"], key2, ratios[key2],
                metric="throughput_pps", unit="pps, zero loss",
                ours_rounds=ours2[size]["runs_pps"], peer_rounds=linux[size]["runs_pps"]))
        # The two fast paths against each other, round by round.
        key3 = (f"{SECONDARY_FAST_PATH}_vs_{DUT_FAST_PATH}" +
                ("" if size == "64" else f"_{size}"))
        r, ratio_rounds[key3] = ab.ratio(runs[second][size], runs["edgeplane"][size],
                                         "throughput_pps")
        ratios[key3] = round(r, 3) if r is not None else None
    h = ours["64"]
    lat = h["latency_ns"] or {}
    klat = linux["64"]["latency_ns"] or {}
    if lat.get("p50") and klat.get("p50"):
        # Each round's DUTs ran next to each other: the median of the
        # per-round ratios (the medians' ratio is in the comparison).
        r, ratio_rounds["latency_p50_vs_linux"] = ab.ratio(
            *paired(runs["edgeplane"]["64"], runs["linux"]["64"], lambda x: x["latency_p50_ns"]),
            "p50")
        ratios["latency_p50_vs_linux"] = round(r, 3) if r is not None else None
        comparisons.append(common.comparison(
            "64", lat["p50"] / 1e3, "linux-forwarding", klat["p50"] / 1e3,
            "latency_p50_vs_linux", ratios["latency_p50_vs_linux"], metric="latency_p50",
            unit="us, p50 at the rate found", higher_is_better=False))
    if h.get("latency_common_rate_p50_ns") and linux["64"].get("latency_common_rate_p50_ns"):
        r, ratio_rounds["latency_p50_vs_linux_at_common_rate"] = ab.ratio(
            *paired(runs["edgeplane"]["64"], runs["linux"]["64"],
                    lambda x: (x.get("latency_common_rate") or {}).get("p50_ns")), "p50")
        ratios["latency_p50_vs_linux_at_common_rate"] = round(r, 3) if r is not None else None
    if at_peer and at_peer["p50_ns"] and klat.get("p50"):
        ratios["latency_p50_vs_linux_at_peer_rate"] = round(at_peer["p50_ns"] / klat["p50"], 3)
    metrics = {"throughput_pps_64": h["throughput_pps"], "throughput_mbps_64": h["throughput_mbps"],
               "latency_p50_ns_64": lat.get("p50"), "latency_p99_ns_64": lat.get("p99"),
               "latency_p999_ns_64": lat.get("p99.9"),
               "latency_p50_ns_64_at_common_rate": h.get("latency_common_rate_p50_ns"),
               "common_rate_pps": COMMON_RATE_PPS,
               "by_size": ours, "dut_drops": drops,
               "bound_by": {sz: ours[sz]["bound_by"] for sz in sizes},
               "tester_floor": floor,
               "latency_at_peer_rate": at_peer,
               "latency_p50_ns_64_at_peer_rate": at_peer["p50_ns"] if at_peer else None,
               "latency_p50_above_floor_ns_64": above_floor(lat.get("p50"), floor,
                                                           h["throughput_pps"]),
               # What each 64 B p50 at its found rate is made of (the DUT's
               # figures from the median run's median latency trial).
               "latency_p50_parts_64": {
                   "edgeplane": latency_parts(lat.get("p50"), h.get("latency_trial"), floor,
                                              h["throughput_pps"]),
                   "linux-forwarding": latency_parts(
                       klat.get("p50"), linux["64"].get("latency_trial"), floor,
                       linux["64"]["throughput_pps"])},
               "one_worker_tester": variant,
               "fast_path": DUT_FAST_PATH,
               f"fast_path_{SECONDARY_FAST_PATH}": {
                   "by_size": ours2, "throughput_pps_64": ours2["64"]["throughput_pps"],
                   "latency_p50_ns_64": (ours2["64"]["latency_ns"] or {}).get("p50"),
                   "bound_by": {sz: ours2[sz]["bound_by"] for sz in sizes}},
               "load_avg": {"start": load_start, "end": os.getloadavg()[0]}}
    # The variant's ratios beside the main keys (one round each: no rounds).
    for k, v in variant["ratios"].items():
        ratios[f"{k}_one_worker_tester"] = v
    config = {"topology": "gen(ns a) -veth- DUT(ns dut) -veth- sink(ns b), net_af_packet",
              "one_worker_tester": "variant at 64 B, one round: tester(ns tester: ta, tb) "
                                   "-veth- DUT -veth- tester, one edgeplane-dp process, one "
                                   "worker (gen with rx) pinned to one CPU, the DUT to the other",
              "one_worker_dut_ports": ONE_WORKER_DUT_DEVICE,
              "flows": FLOWS, "trial_s": trial_s, "resolution": resolution, "repeats": reps,
              "zero_loss": "sink rx_pkts == gen sent_pkts after drain",
              "frame_size_convention": "bytes incl. 4 B FCS; Mbit/s = frames x size x 8",
              "latency": "at the found rate; p50 the median over runs, p99/p99.9 from the "
                         "median run",
              "tester": {"gen": GEN_ENGINE, "sink": SINK_ENGINE, "one_worker": TESTER_ENGINE},
              "dut_engine": "defaults (poll_policy auto, rt_priority auto)",
              "dut_ports": DUT_DEVICE,
              "dut_fast_path": DUT_FAST_PATH,
              "dut_secondary_fast_path": SECONDARY_FAST_PATH,
              "dut_fast_paths": getattr(lab, "dut_fast_path", None),
              "dut_xdp_fast_path": (getattr(lab, "dut_fast_path", None) or {}).get("xdp"),
              "tester_veth_gro": "on (NAPI on the DUT links' far ends, for both DUTs)",
              "latency_trials": LATENCY_TRIALS,
              "tester_floor": "gen -veth- sink, no DUT, at the common rate and both found rates",
              "sizes": sizes, "quick": quick}
    peers = {"linux-forwarding": {"by_size": linux,
                                  "throughput_pps_64": linux["64"]["throughput_pps"],
                                  "latency_p50_ns_64": klat.get("p50"),
                                  "latency_p50_above_floor_ns_64": above_floor(
                                      klat.get("p50"), floor, linux["64"]["throughput_pps"]),
                                  "latency_p50_ns_64_at_common_rate":
                                      linux["64"].get("latency_common_rate_p50_ns"),
                                  "bound_by": {sz: linux[sz]["bound_by"] for sz in sizes}}}
    return common.result("rfc2544-router", config, metrics, peers, ratios,
                         extra={"comparisons": comparisons, "ratio_rounds": ratio_rounds})


def ours_at_rate(lab, rate, trial_s, log):
    """Our p50 at the kernel's found rate (the load both carry without
    loss): the median of LATENCY_TRIALS trials."""
    start_router(lab)
    try:
        with tester_for(lab, lab.dp) as t:
            m = median_trial(latency_trials(t, rate, "64", trial_s))
    finally:
        stop_router(lab)
    log(f"  edgeplane at the kernel's rate {rate:.0f} pps: p50 {m['latency_ns']['p50']} ns")
    return {"rate_pps": round(rate), "p50_ns": m["latency_ns"]["p50"], "lost": m["lost"],
            "latency_ns": m["latency_ns"], "dut": m["dut"], "tester": m["tester"]}


def paired(ours, peer, get):
    """The rounds in which both DUTs have the figure, as [{"p50": v}] lists."""
    both = [(get(a), get(b)) for a, b in zip(ours, peer) if get(a) and get(b)]
    return [{"p50": a} for a, _ in both], [{"p50": b} for _, b in both]


def above_floor(p50, floor, rate):
    """A p50 less the tester's own p50 at the floor rate nearest `rate`."""
    f = floor_at(floor, rate) if p50 else None
    return round(p50 - f) if f else None


def _said(r):
    return f"{r['throughput_pps']} pps zero loss"
