"""`make bench BENCH=udp-term`: edge UDP termination, the scenarios of
"Edge-Native Cable Access Network with UDP Termination" (Ivanets, Ovsyak,
Ovsyak; Lviv Polytechnic National University; "the paper" below):
edgeplane-dp's host stack under libedgeplane-preload.so against the kernel,
the same commands on the same two namespaces in the same run.

  S1  iperf3 -u -l 1860 -t 20, one stream        (the paper: 15.5 Gbit/s)
  S2  the same with -P 10, one client process    (28.1 Gbit/s, +81 %)

A scenario's goodput is the highest iperf3 goodput whose loss is at most
0.05 %.  The method, for a machine whose other tenants change its load by
the minute:

- Rounds.  Each round measures ours and the kernel, one after the other
  in the same lab (which goes first alternates by round; ours' data planes
  are paused with SIGSTOP during the kernel's turn), so both meet the same
  load; every ratio against the kernel is the median of the rounds'
  ratios, and the per-round values and load averages are kept
  (`ratio_rounds`, `metrics.load_avg_rounds`, `*.goodput_gbps_rounds`).
- The search (zero_loss_search), per round, stack and scenario: a probe
  at `-b 0`; if it loses more, a lower bound is found (the previous
  round's answer, or what the receiver took at `-b 0`, halved while it
  loses) and the rate is bisected between the bounds, up as well as down,
  within a budget of probes.  Then one confirming run of `full_s` at the
  rate found (a second at 90 % of what it sent if the first loses more).
- In each turn S1 and S2 run back to back: `s2_vs_s1` is the median of
  the rounds' S2/S1.  The iperf3 JSON of the runs that count is kept
  (build/bench/udp-term-iperf3/).

Topology (lab/hoststack_lab.py): node a runs the client, node b the server;
ours: one edgeplane-dp per node, a net_memif pair between them (the link
that costs the least, so the stacks are what is measured; `link_compare`
runs S2 once more over AF_XDP on a veth pair), iperf3's TCP control
connection on the kernel veth; the kernel: the same veth carries
everything, and both data planes are paused (SIGSTOP), so each side has the whole
machine (2 shared cores).  CPU seconds per gigabit: user+system time of
iperf3 client and server and, for ours, of both edgeplane-dp processes
(all threads), per gigabit received; ksoftirqd's time is added to both.

sockperf ping-pong (64-byte messages) latency percentiles, ours and the
kernel, alternating round by round in fresh labs, the ratio the median of
the rounds' ratios, and the CPU seconds per second each side spent
meanwhile: the key (`sockperf_p99_vs_kernel`, `sockperf_cpu_vs_kernel`)
over memif, the link S1 and S2 cross (its workers poll, so the library
does not spin); the same over AF_XDP on a veth pair (`_af_xdp`: a frame
wakes the data plane's worker there, the default configuration makes the
workers event-driven and the applications busy-poll up to 200 us before
a wait; `_nospin` with that off, `_one_cpu`, `_fifo`); and once more over
memif inside the S1/S2 turns (`_memif`), with sockperf throughput
(msg/s).
Where the tail comes from: each thread's scheduling delays during one
ping-pong, thread by thread and hop by hop (`perf sched`,
`metrics.sockperf_af_xdp.sched_us`).
"""
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from bench import ab, common
from lab.hoststack_lab import B4, B6, HostStackLab
from lab.traffic import iperf3_argv, parse_iperf3
from lab.udp_tools import iperf3_server, sockperf_ping_pong, sockperf_throughput

LOSS_MAX = 0.05          # percent
IPERF_DIR = common.OUT / "udp-term-iperf3"


def _proc_cpu(pid):
    """User+system seconds of a process (all its threads)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _ksoftirqd_cpu():
    total = 0.0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().startswith("ksoftirqd"):
                    total += _proc_cpu(d.name)
            except OSError:
                pass
    return total


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def iperf3_run(lab, preload, rate, seconds, parallel, port=5201, server=B4):
    """One iperf3 UDP run; (Iperf3Result, cpu_seconds, sent_bps)."""
    dp_pids = [dp.proc.pid for dp in lab.dps.values()] if preload else []
    cpu0 = _children_cpu() + _ksoftirqd_cpu() + sum(_proc_cpu(p) for p in dp_pids)
    srv = iperf3_server(lab, "b", preload, port=port)
    extra = ["-P", str(parallel)] if parallel > 1 else []
    argv = iperf3_argv(server, udp=True, bitrate=rate, seconds=seconds, port=port, length=1860,
                       extra=extra)
    res = lab.run("a", argv, preload=preload, timeout=seconds + 60)
    try:
        srv.wait(timeout=15)
    except Exception:
        srv.kill()
        srv.wait()
    cpu1 = _children_cpu() + _ksoftirqd_cpu() + sum(_proc_cpu(p) for p in dp_pids)
    r = parse_iperf3(res.stdout, res.stderr, True, res.returncode)
    sent = (r.report["end"].get("sum_sent") or {}).get("bits_per_second", 0.0)
    return r, cpu1 - cpu0, sent


def zero_loss_search(probe, loss_max=LOSS_MAX, max_probes=6, tol=0.05, start=None,
                     max_halvings=6):
    """The highest offered rate whose loss is at most `loss_max`, bracketed
    and bisected.  probe(rate) -> {"received_bps", "sent_bps", "loss_pct",
    ...}; rate 0 is iperf3's `-b 0` (as fast as the sender goes).

    1. `-b 0`: within the limit, that is the answer (a sender-bound run).
    2. Otherwise the sender's rate at `-b 0` is a lossy upper bound, and the
       first guess for a lossless rate is `start` (the previous round's
       answer) or what the receiver took at `-b 0`; a guess that loses
       halves until one does not (the lower bound; at most `max_halvings`
       times, whatever the budget).
    3. Bisection between the bounds, up as well as down (a step up at most
       25 % above the lower bound, so a warm start far below the sender's
       rate climbs in a few probes), until the bounds are within `tol` of
       each other or `max_probes` probes were spent.

    One lossy probe (another tenant's burst) lowers the upper bound of
    this search only: every round searches afresh, and the rounds' median
    is what counts.  (rate, best probe or None, every probe in order);
    with no probe within the limit, rate is the next lower guess, untried."""
    trail = []

    def run(rate):
        r = dict(probe(rate))
        r["offered_bps"] = rate
        trail.append(r)
        return r["loss_pct"] <= loss_max, r

    ok, r = run(0)
    if ok:
        return 0, r, trail
    hi = max(r["sent_bps"], r["received_bps"], 1e6)
    lo, best = 0.0, None
    guess = start if start and start < hi else min(r["received_bps"], 0.9 * hi)
    guess = max(guess, hi / 64)
    halvings = 0
    while best is None and halvings <= max_halvings:
        ok, r = run(guess)
        if ok:
            lo, best = guess, r
        else:
            hi, guess, halvings = guess, guess / 2, halvings + 1
    if best is None:
        return guess, None, trail
    while len(trail) < max_probes and hi - lo > tol * hi:
        rate = min((lo + hi) / 2, lo * 1.25)
        ok, r = run(rate)
        if ok:
            lo, best = rate, r
        else:
            hi = rate
    return lo, best, trail


def confirm(run, rate, loss_max=LOSS_MAX):
    """A full-length run at the rate a search found; one that loses more
    than the limit is followed by one at 90 % of what it sent (once).
    (the run that counts, every run); the one that counts is the first
    within the limit, else the one with the least loss (its
    `loss_over_limit` is set)."""
    runs = [dict(run(rate), offered_bps=rate)]
    if runs[0]["loss_pct"] > loss_max:
        base = rate or runs[0]["sent_bps"]
        runs.append(dict(run(base * 0.9), offered_bps=base * 0.9))
    good = [r for r in runs if r["loss_pct"] <= loss_max]
    best = good[0] if good else min(runs, key=lambda r: r["loss_pct"])
    best["loss_over_limit"] = not good
    return best, runs


def _rate_arg(rate, parallel):
    return "0" if not rate else f"{int(rate / parallel)}"


def _gbit(rate):
    return "max" if not rate else f"{rate / 1e9:.2f}G"


SCENARIOS = {"s1": 1, "s2": 10}


def stack_turn(lab, stack, rnd, state, cfg, log):
    """One stack's turn in a round: S1 and S2 searched and confirmed, then
    sockperf over memif (ping-pong and throughput); IPv6 at `-b 0` in the
    first round.  `state` carries each search's answer to the next round
    (its first guess)."""
    preload = stack == "ours"
    out = {"load_avg": round(os.getloadavg()[0], 2)}
    for scen, parallel in SCENARIOS.items():
        def point(rate, seconds, parallel=parallel):
            r, cpu, sent = iperf3_run(lab, preload, _rate_arg(rate, parallel), seconds, parallel)
            return {"received_bps": r.bits_per_second, "sent_bps": sent,
                    "loss_pct": r.lost_percent, "cpu_s": cpu, "seconds": seconds,
                    "load_avg": round(os.getloadavg()[0], 2), "report": r.report}

        rate, _best, trail = zero_loss_search(lambda x: point(x, cfg["probe_s"]),
                                              max_probes=cfg["max_probes"], max_halvings=4,
                                              start=state.get((stack, scen)))
        if rate:
            state[(stack, scen)] = rate
        run, runs = confirm(lambda x: point(x, cfg["full_s"]), rate)
        for r in trail:
            log(f"    {stack} {scen} probe -b {_gbit(r['offered_bps'])}: sent "
                f"{r['sent_bps'] / 1e9:.2f}, received {r['received_bps'] / 1e9:.2f} Gbit/s, "
                f"loss {r['loss_pct']:.3f} %")
        for r in runs:
            log(f"    {stack} {scen} confirm -b {_gbit(r['offered_bps'])}: received "
                f"{r['received_bps'] / 1e9:.2f} Gbit/s, loss {r['loss_pct']:.3f} %, "
                f"cpu {r['cpu_s']:.1f} s (load {r['load_avg']})")
        out[scen] = {"run": run, "confirm_runs": len(runs),
                     "probes": [{k: r[k] for k in ("offered_bps", "sent_bps", "received_bps",
                                                   "loss_pct")} for r in trail]}
    out["sockperf_memif"] = sockperf_once(lab, preload, cfg["sp_s"])
    if rnd == 0:
        out["ipv6_at_max"] = {}
        for scen, parallel in SCENARIOS.items():
            r, _cpu, sent = iperf3_run(lab, preload, "0", 4, parallel, server=B6)
            out["ipv6_at_max"][scen] = {"received_gbps": r.bits_per_second / 1e9,
                                        "sent_gbps": sent / 1e9, "loss_pct": r.lost_percent}
    if preload:
        out["stage_cycles"] = stage_cycles(lab)
        out["workers_busy_pct"] = {n: [w["busy_pct"] for w in dp.workers()]
                                   for n, dp in lab.dps.items()}
    return out


class _Ours(ab.Call):
    """Ours: both data planes run during its turn and are paused
    (SIGSTOP: no CPU, memory and memif link kept) during the kernel's."""

    def __init__(self, lab, fn):
        super().__init__("ours", fn, _describe)
        self.lab = lab

    def pause(self):
        for dp in self.lab.dps.values():
            dp.pause()

    def resume(self):
        for dp in self.lab.dps.values():
            dp.resume()


def _describe(t):
    return ", ".join(f"{s} {t[s]['run']['received_bps'] / 1e9:.2f} Gbit/s "
                     f"({t[s]['run']['loss_pct']:.3f} %)" for s in SCENARIOS) + \
        f", pp p99 {t['sockperf_memif'].get('p99')} us, load {t['load_avg']}"


def interleaved(rounds, cfg, log):
    """`rounds` rounds over one memif lab, each measuring ours and the
    kernel (which goes first alternates), so both meet the same load.
    {"ours": [turn per round], "kernel": [...]}."""
    state = {}
    with HostStackLab(tag="bu") as lab:
        lab.start_dp()
        ours = _Ours(lab, None)
        kernel = ab.Call("kernel", None, _describe)
        rnd = {"n": 0}
        ours.fn = lambda: stack_turn(lab, "ours", rnd["n"], state, cfg, log)

        def kernel_turn():
            t = stack_turn(lab, "kernel", rnd["n"], state, cfg, log)
            return t

        kernel.fn = kernel_turn
        res = {"ours": [], "kernel": []}
        for i in range(rounds):
            rnd["n"] = i
            one = ab.alternate([ours, kernel], 1, first=i % 2, log=None)
            for k in res:
                res[k].append(one[k][0])
            log(f"  round {i + 1}/{rounds}: ours {_describe(res['ours'][-1])}; "
                f"kernel {_describe(res['kernel'][-1])}")
        res["kernel_poll_ab"] = kernel_poll_ab(lab, min(rounds, 2), cfg, log)
    return res


KERNEL_POLL_US = "200"


def kernel_poll_ab(lab, rounds, cfg, log):
    """S1 and S2 at `-b 0`, ours, with the library's default (a select()
    on a mixed set asks the kernel every time) against
    EDGEPLANE_PRELOAD_KERNEL_POLL_US=200 (at most every 200 µs while
    datagrams wait: iperf3's server selects on its stream sockets and its
    TCP control connection, one datagram per select() in S1), alternating
    by round.  {variant: {scen: [per round]}}."""
    out = {"exact": {s: [] for s in SCENARIOS}, "kernel_poll_us_200": {s: [] for s in SCENARIOS}}
    for i in range(rounds):
        order = list(out) if i % 2 == 0 else list(reversed(out))
        for variant in order:
            if variant == "exact":
                os.environ.pop("EDGEPLANE_PRELOAD_KERNEL_POLL_US", None)
            else:
                os.environ["EDGEPLANE_PRELOAD_KERNEL_POLL_US"] = KERNEL_POLL_US
            try:
                for scen, parallel in SCENARIOS.items():
                    r, _cpu, sent = iperf3_run(lab, True, "0", cfg["probe_s"] * 2, parallel)
                    rec = {"sent_gbps": round(sent / 1e9, 4),
                           "received_gbps": round(r.bits_per_second / 1e9, 4),
                           "loss_pct": round(r.lost_percent, 4),
                           "load_avg": round(os.getloadavg()[0], 2)}
                    out[variant][scen].append(rec)
                    log(f"  {scen} at -b 0, {variant}: {rec}")
            finally:
                os.environ.pop("EDGEPLANE_PRELOAD_KERNEL_POLL_US", None)
    return out


def summarise(turns, scen, full_s):
    """The medians over rounds of one stack's scenario, with the per-round
    values (the shape of the earlier single-search summary, plus rounds)."""
    runs = [t[scen]["run"] for t in turns]
    med = statistics.median
    return {
        "goodput_gbps": med(r["received_bps"] for r in runs) / 1e9,
        "loss_pct": med(r["loss_pct"] for r in runs),
        "offered_gbps": [r["offered_bps"] / 1e9 if r["offered_bps"] else "max" for r in runs],
        "cpu_s_per_gbit": med(r["cpu_s"] / max(r["received_bps"] * r["seconds"] / 1e9, 1e-9)
                              for r in runs),
        "rounds": len(runs), "load_avg": [r["load_avg"] for r in runs],
        "goodput_gbps_rounds": [round(r["received_bps"] / 1e9, 4) for r in runs],
        "loss_pct_rounds": [round(r["loss_pct"], 4) for r in runs],
        "loss_over_limit_rounds": [r["loss_over_limit"] for r in runs],
        "probes_rounds": [t[scen]["probes"] for t in turns],
        "full_s": full_s}


def stage_cycles(lab):
    """Cycles per packet of each stage of both data planes (since start).
    A stage that saw fewer than 1000 packets is left out (the receiver's
    service stage polls doorbells on every loop and sends almost nothing:
    its cycles per packet would be its idle polls).  The sender's service
    stage, which builds every datagram, includes its idle polls too: an
    upper bound."""
    out = {}
    for node, dp in lab.dps.items():
        for name, st in dp.stages().items():
            if st["pkts_in"] >= 1000:
                out[f"{node}.{name}"] = round(st["cycles_per_pkt"], 1)
    return out


def keep(runs, name):
    IPERF_DIR.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, r in enumerate(runs):
        p = IPERF_DIR / f"{name}-{i}.json"
        p.write_text(json.dumps(r["report"], indent=1))
        paths.append(str(p.relative_to(common.ROOT)))
    return paths


def sockperf_once(lab, preload, seconds):
    """One sockperf ping-pong and one throughput run (memif)."""
    p = sockperf_ping_pong(lab, B4, preload=preload, seconds=seconds)
    tp = sockperf_throughput(lab, B4, preload=preload, seconds=max(2, seconds // 2))
    out = {k: p[k] for k in ("p50", "p99", "p99.9", "avg") if k in p}
    out["tp_msg_per_s"] = tp.get("msg_rate", 0)
    return out


# sockperf's ping-pong over the link a worker can wait on: net_af_xdp on
# the veth pair, the data planes' default configuration, which there makes
# each node's worker event-driven (engine `auto`: blocked on its kick
# eventfd and its AF_XDP socket at SCHED_FIFO 1 after 5 empty polls, no
# yielding), so every hop of a message is one wake-up; the kernel
# alternates with it in the same lab, round by round, and the ratio is the
# median of the rounds' ratios.
#
# cpu: the same CPU budget for both, one CPU: both nodes' data planes and
# both sockperf processes on it (`[engine] cpus`, taskset), and the
# kernel's two sockperf processes on it too: every hop of ours is then a
# wake-up on the CPU the waker is about to leave, as the kernel's
# ping-pong keeps its two programs on one CPU by itself.
def sockperf_af_xdp(rounds, seconds, log, sched_s=0, cpu=None, rt=None, env=None):
    """sockperf_rounds over AF_XDP on the veth pair."""
    return sockperf_rounds(rounds, seconds, log, sched_s, cpu, rt, env, link="af_xdp")


def sockperf_rounds(rounds, seconds, log, sched_s=0, cpu=None, rt=None, env=None, link="af_xdp"):
    """{ours: medians, kernel: medians, p99_ratio, p50_ratio, rounds, sched,
    wakes: the workers' wait counters of each round of ours}.  env: the
    preload library's environment for ours (EDGEPLANE_PRELOAD_SPIN_US).
    link: between the two data planes (af_xdp on the veth pair, or memif;
    the kernel's ping-pong crosses the veth pair either way)."""
    per = {"ours": [], "kernel": []}
    sched, wakes = {}, []
    pin = {"a": cpu, "b": cpu} if cpu is not None else None
    for rnd in range(rounds):
        with HostStackLab(tag="be", link=link,
                          cpus={"a": str(cpu), "b": str(cpu)} if cpu is not None else None) as lab:
            for stack in (("ours", "kernel") if rnd % 2 == 0 else ("kernel", "ours")):
                if stack == "kernel":
                    for node in list(lab.dps):
                        lab.stop_dp(node)
                elif not lab.dps:
                    lab.start_dp()
                saved = {k: os.environ.get(k) for k in (env or {})}
                if stack == "ours":
                    os.environ.update(env or {})
                dp_pids = [dp.proc.pid for dp in lab.dps.values()]
                cpu0 = _children_cpu() + _ksoftirqd_cpu() + sum(_proc_cpu(q) for q in dp_pids)
                try:
                    p = sockperf_ping_pong(lab, B4, preload=stack == "ours", seconds=seconds,
                                           pin=pin, rt=rt)
                    # sockperf's warm-up and the server's start are in it too
                    p["cpu_s"] = round(_children_cpu() + _ksoftirqd_cpu() +
                                       sum(_proc_cpu(q) for q in dp_pids) - cpu0, 3)
                finally:
                    for k, v in saved.items():
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
                p["load_avg"] = round(os.getloadavg()[0], 2)
                if stack == "ours":
                    wakes.append(worker_waits(lab))
                per[stack].append(p)
                what = ((f" cpu {cpu}" if cpu is not None else "") + (" fifo" if rt else "") +
                        "".join(f" {k}={v}" for k, v in (env or {}).items()))
                log(f"  sockperf pp {link}{what} {stack}: p50 {p.get('p50')} p99 "
                    f"{p.get('p99')} p99.9 {p.get('p99.9')} us (load {p['load_avg']})")
                if sched_s and rnd == rounds - 1:
                    sched[stack] = sched_delays(lab, stack == "ours", sched_s)
                    log(f"  hops {stack} (wakee's delay to a CPU, p50/p99 us): " + ", ".join(
                        f"{k} {v['p50']}/{v['p99']}" for k, v in sched[stack]["hops"].items()))
    med = {st: {k: statistics.median(p[k] for p in ps if k in p) for k in ("p50", "p99", "p99.9")}
           for st, ps in per.items()}
    rounds_of = lambda k: [round(o[k] / kk[k], 4)  # noqa: E731
                           for o, kk in zip(per["ours"], per["kernel"]) if o.get(k) and kk.get(k)]
    cpu_per_s = {st: round(statistics.median(p.get("cpu_s", 0) for p in ps) / seconds, 3)
                 for st, ps in per.items()}
    return {"ours": med["ours"], "kernel": med["kernel"], "p99_ratio": _median(rounds_of("p99")),
            "cpu_s_per_s": cpu_per_s,
            "p50_ratio": _median(rounds_of("p50")), "p99_ratio_rounds": rounds_of("p99"),
            "rounds": per, "sched_us": sched,
            "wakes": wakes, "cpu": cpu, "sockperf_sched_fifo": rt, "env": env or {}, "link": link}


def worker_waits(lab):
    """Each node's host-stack workers' waits: how many, how many a kick
    ended, how many ran to their timeout, and after how many of those work
    was at hand at once (late_rx, late_doorbell: a wake-up that never came,
    covered by the timer)."""
    keys = ("waits", "kicks_seen", "wait_timeouts", "late_rx", "late_doorbell")
    return {node: [{k: w.get(k) for k in keys} for w in dp.ctl("hs-stats")["workers"]]
            for node, dp in lab.dps.items()}


def sched_delays(lab, preload, seconds):
    """Where a ping-pong's time goes: `perf sched record` during one
    sockperf ping-pong, then `perf sched timehist -w`: each thread's
    scheduling delays (woken or preempted -> on a CPU again) and run time
    per activation, and each hop of a round trip (who woke whom: client ->
    worker a -> worker b -> server -> worker b -> worker a -> client for
    ours, client -> server -> client for the kernel) with the woken
    thread's delay to a CPU, as percentiles in µs.  {} without perf."""
    if shutil.which("perf") is None:
        return {}
    data = common.OUT / f"udp-term-sched-{'ours' if preload else 'kernel'}.data"
    data.parent.mkdir(parents=True, exist_ok=True)
    rec = subprocess.Popen(["perf", "sched", "record", "-o", str(data), "--", "sleep",
                            str(seconds + 2)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        sockperf_ping_pong(lab, B4, preload=preload, seconds=seconds)
    finally:
        rec.wait()
    out = subprocess.run(["perf", "sched", "timehist", "-w", "-i", str(data)],
                         capture_output=True, text=True).stdout
    data.unlink(missing_ok=True)
    return timehist_hops(out, {f"{dp.proc.pid}": node for node, dp in lab.dps.items()})


_TASK = re.compile(r"(.+)\[(\d+)(?:/(\d+))?\]")


def timehist_hops(out, dp_pids):
    """Parse `perf sched timehist -w`: {"threads": {name: {switches, p50,
    p99, p99.9, max: scheduling delay; run_p50, run_p99}}, "hops": {"waker
    -> wakee": {n, p50, p90, p99: the wakee's delay to a CPU}}}, all in µs.
    Threads: `worker a`/`worker b` (dp_pids: {pid: node}) and sockperf,
    named client or server by the worker that wakes them (ours) or by pid
    (the kernel's, sockperf[pid])."""
    def role(comm, pid):
        if comm == "sockperf":
            return f"sockperf[{pid}]"
        if pid in dp_pids and comm.startswith("rte-worker"):
            return f"worker {dp_pids[pid]}"
        return None
    woken, delays, runs, hops = {}, {}, {}, {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3 or not re.fullmatch(r"\d+\.\d+", f[0]):
            continue
        m = _TASK.fullmatch(f[2])
        if m is None:
            continue
        comm, tid, pid = m.group(1), m.group(2), m.group(3) or m.group(2)
        if "awakened:" in line:
            w = re.search(r"awakened: (.+)\[(\d+)(?:/(\d+))?\]", line)
            if w:
                woken[w.group(2)] = role(comm, pid) or "other"
            continue
        who = role(comm, pid)
        # time [cpu] task wait sch-delay run (ms)
        if who is None or len(f) != 6:
            continue
        delay_us, run_us = float(f[4]) * 1000, float(f[5]) * 1000
        delays.setdefault(who, []).append(delay_us)
        runs.setdefault(who, []).append(run_us)
        if tid in woken:
            hops.setdefault((woken.pop(tid), who), []).append(delay_us)
    names = {}
    for (waker, wakee), xs in hops.items():
        if waker in ("worker a", "worker b") and wakee.startswith("sockperf") and len(xs) > 10:
            names[wakee] = "client" if waker == "worker a" else "server"
    rename = lambda n: names.get(n, n)  # noqa: E731
    pct = lambda xs, q: round(sorted(xs)[min(len(xs) - 1, int(q * len(xs)))], 1)  # noqa: E731
    threads = {rename(k): {"switches": len(xs), "p50": pct(xs, 0.5), "p99": pct(xs, 0.99),
                           "p99.9": pct(xs, 0.999), "max": round(max(xs), 1),
                           "run_p50": pct(runs[k], 0.5), "run_p99": pct(runs[k], 0.99)}
               for k, xs in delays.items()}
    hop_out = {f"{rename(a)} -> {rename(b)}": {"n": len(xs), "p50": pct(xs, 0.5),
                                               "p90": pct(xs, 0.9), "p99": pct(xs, 0.99)}
               for (a, b), xs in hops.items() if a != "other" and len(xs) >= 10}
    return {"threads": threads, "hops": hop_out}


def per_round(turns_a, turns_b, fa, fb=None):
    """[fa(a) / fb(b)] over rounds, a round whose divisor is 0 left out."""
    fb = fb or fa
    return [round(fa(a) / fb(b), 4) for a, b in zip(turns_a, turns_b) if fb(b)]


def _goodput(scen):
    return lambda t: t[scen]["run"]["received_bps"]


def _median(xs):
    return statistics.median(xs) if xs else 0.0


def run(args):
    quick = getattr(args, "quick", False)
    t_start = time.monotonic()
    cfg = ({"probe_s": 2, "full_s": 3, "max_probes": 3, "sp_s": 2} if quick else
           {"probe_s": 2, "full_s": 8, "max_probes": 5, "sp_s": 4})
    rounds = 1 if quick else 3
    probe_s, full_s, sp_s = cfg["probe_s"], cfg["full_s"], cfg["sp_s"]
    log = lambda s: print(s, flush=True)  # noqa: E731
    log("s1, s2 and sockperf (memif), ours and the kernel round by round:")
    turns = interleaved(rounds, cfg, log)
    kernel_poll = turns.pop("kernel_poll_ab")
    t_interleaved = time.monotonic() - t_start
    result, ipv6 = {}, {}
    for stack, ts in turns.items():
        for scen in SCENARIOS:
            summary = summarise(ts, scen, full_s)
            summary["iperf3_json"] = keep([t[scen]["run"] for t in ts], f"{scen}-{stack}")
            if stack == "ours":
                summary["stage_cycles"] = ts[-1]["stage_cycles"]
                summary["workers_busy_pct"] = ts[-1]["workers_busy_pct"]
            result[(scen, stack)] = summary
            ipv6[f"{scen}_{stack}"] = ts[0]["ipv6_at_max"][scen]
        result[("s2_vs_s1", stack)] = per_round(ts, ts, _goodput("s2"), _goodput("s1"))
    sp = {stack: [t["sockperf_memif"] for t in ts] for stack, ts in turns.items()}
    sp_ours, sp_kernel = ({k: _median([p[k] for p in sp[st] if k in p])
                           for k in ("p50", "p99", "p99.9", "avg", "tp_msg_per_s")}
                          for st in ("ours", "kernel"))
    sp_ours["rounds"], sp_kernel["rounds"] = sp["ours"], sp["kernel"]
    ratio_rounds = {
        "s2_vs_kernel": per_round(turns["ours"], turns["kernel"], _goodput("s2")),
        "s1_vs_kernel": per_round(turns["ours"], turns["kernel"], _goodput("s1")),
        "s2_vs_s1": result[("s2_vs_s1", "ours")],
        "kernel_s2_vs_s1": result[("s2_vs_s1", "kernel")],
        "sockperf_p99_vs_kernel_memif": [round(o["p99"] / k["p99"], 4)
                                         for o, k in zip(sp["ours"], sp["kernel"])
                                         if o.get("p99") and k.get("p99")],
    }
    load_rounds = {stack: [t["load_avg"] for t in ts] for stack, ts in turns.items()}
    link = {}
    if not quick:
        for kind in ("memif", "af_xdp"):
            with HostStackLab(tag="bl", link=kind) as lab:
                r, cpu, sent = iperf3_run(lab, True, "0", 5, 10)
                link[kind] = {"received_gbps": r.bits_per_second / 1e9,
                              "sent_gbps": sent / 1e9, "loss_pct": r.lost_percent,
                              "stage_cycles": stage_cycles(lab),
                              "port_stats": {n: dp.ctl("ports")["ports"][0].get("stats")
                                             for n, dp in lab.dps.items()}}
                log(f"link {kind}: S2 at max: received {link[kind]['received_gbps']:.2f} "
                    f"Gbit/s, loss {r.lost_percent:.3f} %")
    # The key's ping-pong: over memif, the link S1 and S2 cross (its
    # workers poll, so the library does not spin), the kernel alternating
    # with it round by round in fresh labs, and the CPU each side spent.
    pp = sockperf_rounds(1 if quick else 4, sp_s, log, link="memif")
    event = sockperf_af_xdp(1 if quick else 4, sp_s, log, sched_s=0 if quick else 4)
    one_cpu = sockperf_af_xdp(1 if quick else 2, sp_s, log, cpu=1)
    fifo = sockperf_af_xdp(1 if quick else 3, sp_s, log, rt=1)
    # The applications do not spin before they sleep (the library's
    # default spins up to 200 us while the workers block): every hop a
    # wake-up, what the default saves.
    nospin = sockperf_af_xdp(1 if quick else 2, sp_s, log, env={"EDGEPLANE_PRELOAD_SPIN_US": "0"})
    pinned = {}
    if not quick:
        # Latency against where the threads run: each node's data plane and
        # sockperf pinned to that node's CPU (a on 0, b on 1), both stacks.
        with HostStackLab(tag="bp", cpus={"a": "0", "b": "1"}) as lab:
            for stack in ("ours", "kernel"):
                if stack == "kernel":
                    for node in list(lab.dps):
                        lab.stop_dp(node)
                p = sockperf_ping_pong(lab, B4, preload=stack == "ours", seconds=sp_s,
                                       pin={"a": 0, "b": 1})
                pinned[stack] = {k: p[k] for k in ("p50", "p99", "p99.9") if k in p}
                log(f"sockperf pp {stack}, per-node CPU: {pinned[stack]}")
    ratio_rounds["sockperf_p99_vs_kernel"] = pp["p99_ratio_rounds"]
    ratio_rounds["sockperf_p99_vs_kernel_af_xdp"] = event["p99_ratio_rounds"]
    ratio_rounds["sockperf_p99_vs_kernel_one_cpu"] = one_cpu["p99_ratio_rounds"]
    ratio_rounds["sockperf_p99_vs_kernel_fifo"] = fifo["p99_ratio_rounds"]
    ratio_rounds["sockperf_p99_vs_kernel_nospin"] = nospin["p99_ratio_rounds"]
    s1, s2 = result[("s1", "ours")], result[("s2", "ours")]
    k1, k2 = result[("s1", "kernel")], result[("s2", "kernel")]
    metrics = {
        "s1_goodput_gbps": s1["goodput_gbps"], "s2_goodput_gbps": s2["goodput_gbps"],
        "s1_loss_pct": s1["loss_pct"], "s2_loss_pct": s2["loss_pct"],
        "s1_cpu_s_per_gbit": s1["cpu_s_per_gbit"], "s2_cpu_s_per_gbit": s2["cpu_s_per_gbit"],
        "sockperf_p50_us": pp["ours"]["p50"], "sockperf_p99_us": pp["ours"]["p99"],
        "sockperf_p99_9_us": pp["ours"]["p99.9"], "sockperf_pp_memif": pp,
        "sockperf_memif": sp_ours,
        "sockperf_tp_msg_per_s": sp_ours.get("tp_msg_per_s"),
        "stages": s2.get("stage_cycles", {}),
        "s1": s1, "s2": s2, "s2_vs_s1_rounds": result[("s2_vs_s1", "ours")],
        "load_avg_rounds": load_rounds,
        "s1_s2_at_max_kernel_poll_ab": kernel_poll,
        "ipv6_at_max": ipv6, "link_compare": link,
        "sockperf_per_node_cpu": pinned,
        "sockperf_af_xdp": event,
        "sockperf_af_xdp_one_cpu": one_cpu,
        "sockperf_af_xdp_fifo": fifo,
        "sockperf_af_xdp_nospin": nospin,
        "duration_s": {"interleaved_rounds": round(t_interleaved),
                       "total": round(time.monotonic() - t_start)},
    }
    peers = {"kernel": {
        "s1_goodput_gbps": k1["goodput_gbps"], "s2_goodput_gbps": k2["goodput_gbps"],
        "s1_loss_pct": k1["loss_pct"], "s2_loss_pct": k2["loss_pct"],
        "s1_cpu_s_per_gbit": k1["cpu_s_per_gbit"], "s2_cpu_s_per_gbit": k2["cpu_s_per_gbit"],
        "sockperf_p50_us": pp["kernel"]["p50"], "sockperf_p99_us": pp["kernel"]["p99"],
        "sockperf_p99_9_us": pp["kernel"]["p99.9"], "sockperf_memif": sp_kernel,
        "sockperf_tp_msg_per_s": sp_kernel.get("tp_msg_per_s"), "s1": k1, "s2": k2,
        "s2_vs_s1_rounds": result[("s2_vs_s1", "kernel")]}}
    div = lambda a, b: a / b if a and b else 0.0  # noqa: E731
    rr = lambda k: _median(ratio_rounds[k])  # noqa: E731
    ratios = {
        # Every ratio against the kernel is the median of the rounds'
        # ratios, ours and the kernel measured back to back in each round
        # (ratio_rounds has them); the ratio of the medians beside it.
        "s2_vs_kernel": rr("s2_vs_kernel"),
        "s1_vs_kernel": rr("s1_vs_kernel"),
        "s2_vs_kernel_of_medians": div(s2["goodput_gbps"], k2["goodput_gbps"]),
        # S1 and S2 back to back in each turn: the median of the rounds' S2/S1.
        "s2_vs_s1": rr("s2_vs_s1"),
        "kernel_s2_vs_s1": rr("kernel_s2_vs_s1"),
        "s2_vs_s1_of_medians": div(s2["goodput_gbps"], s1["goodput_gbps"]),
        # The ping-pong over memif (the link of S1 and S2), the kernel
        # alternating with it in the same lab: median of the rounds'
        # ratios, and the CPU seconds a second each side spent.
        "sockperf_p99_vs_kernel": pp["p99_ratio"],
        "sockperf_p50_vs_kernel": pp["p50_ratio"],
        "sockperf_cpu_vs_kernel": div(pp["cpu_s_per_s"]["ours"], pp["cpu_s_per_s"]["kernel"]),
        # The same over AF_XDP on the veth pair, where a frame wakes the
        # worker (event-driven workers, the applications spinning first).
        "sockperf_p99_vs_kernel_af_xdp": event["p99_ratio"],
        "sockperf_p50_vs_kernel_af_xdp": event["p50_ratio"],
        # The same with ours (both data planes, both sockperf) on one CPU.
        "sockperf_p99_vs_kernel_one_cpu": one_cpu["p99_ratio"],
        "sockperf_p50_vs_kernel_one_cpu": one_cpu["p50_ratio"],
        # The same with both sockperf processes at SCHED_FIFO 1 (chrt), for
        # ours and the kernel alike: the other tenants no longer delay them.
        "sockperf_p99_vs_kernel_fifo": fifo["p99_ratio"],
        "sockperf_p50_vs_kernel_fifo": fifo["p50_ratio"],
        # The same with EDGEPLANE_PRELOAD_SPIN_US=0 for ours (no spin).
        "sockperf_p99_vs_kernel_nospin": nospin["p99_ratio"],
        "sockperf_p50_vs_kernel_nospin": nospin["p50_ratio"],
        # CPU seconds per second of ping-pong, ours (applications and both
        # data planes) over the kernel's (applications and ksoftirqd).
        "sockperf_cpu_vs_kernel_af_xdp": div(event["cpu_s_per_s"]["ours"],
                                             event["cpu_s_per_s"]["kernel"]),
        # Over memif again, measured inside the S1/S2 turns (one lab per
        # stack, not alternated in fresh labs like the key's).
        "sockperf_p99_vs_kernel_memif": rr("sockperf_p99_vs_kernel_memif"),
        "sockperf_p50_vs_kernel_memif": div(sp_ours.get("p50"), sp_kernel.get("p50")),
        "s2_cpu_per_gbit_vs_kernel": div(s2["cpu_s_per_gbit"], k2["cpu_s_per_gbit"]),
    }
    config = {"datagram_bytes": 1860, "mtu": 1500, "link": "net_memif",
              "sockperf_link": "net_memif (AF_XDP: metrics.sockperf_af_xdp)", "probe_s": probe_s,
              "full_s": full_s, "max_probes": cfg["max_probes"], "rounds": rounds,
              "loss_max_pct": LOSS_MAX, "method": "interleaved rounds, bracket and bisect",
              "iperf3": "3.12", "cpus": os.cpu_count(), "quick": quick,
              "goals": {"s2_vs_kernel": ">= 3", "s2_vs_s1": ">= 1.81",
                        "sockperf_p99_vs_kernel": "< 1.0"},
              "paper": {"s1_gbps": 15.5, "s2_gbps": 28.1, "loss_pct_max": 0.05,
                        "hardware": "2x Xeon 8360Y, E810 100GE, VPP HostStack"}}
    comparisons = [
        common.comparison("S1 iperf3 -u, 1 stream", s1["goodput_gbps"], "kernel",
                          k1["goodput_gbps"], "s1_vs_kernel", ratios["s1_vs_kernel"],
                          metric="goodput_gbps", unit="Gbit/s at <= 0.05 % loss",
                          ours_rounds=s1["goodput_gbps_rounds"],
                          peer_rounds=k1["goodput_gbps_rounds"]),
        common.comparison("S2 iperf3 -u -P 10", s2["goodput_gbps"], "kernel",
                          k2["goodput_gbps"], "s2_vs_kernel", ratios["s2_vs_kernel"],
                          metric="goodput_gbps", unit="Gbit/s at <= 0.05 % loss",
                          stages_of="metrics", ours_rounds=s2["goodput_gbps_rounds"],
                          peer_rounds=k2["goodput_gbps_rounds"]),
        common.comparison("sockperf ping-pong 64 B, memif", pp["ours"]["p99"], "kernel",
                          pp["kernel"]["p99"], "sockperf_p99_vs_kernel",
                          ratios["sockperf_p99_vs_kernel"], metric="sockperf_p99_us",
                          unit="us, p99", higher_is_better=False,
                          ours_rounds=[p.get("p99") for p in pp["rounds"]["ours"]],
                          peer_rounds=[p.get("p99") for p in pp["rounds"]["kernel"]]),
        common.comparison("sockperf ping-pong 64 B, AF_XDP", event["ours"]["p99"], "kernel",
                          event["kernel"]["p99"], "sockperf_p99_vs_kernel_af_xdp",
                          ratios["sockperf_p99_vs_kernel_af_xdp"], metric="sockperf_af_xdp.ours.p99",
                          unit="us, p99", higher_is_better=False,
                          ours_rounds=[p.get("p99") for p in event["rounds"]["ours"]],
                          peer_rounds=[p.get("p99") for p in event["rounds"]["kernel"]])]
    return common.result("udp-term", config, metrics, peers, ratios,
                         extra={"comparisons": comparisons, "ratio_rounds": ratio_rounds})
