"""`make bench BENCH=udp-term`: edge UDP termination, the scenarios of
"Edge-Native Cable Access Network with UDP Termination" (Ivanets, Ovsyak,
Ovsyak; Lviv Polytechnic National University; "the paper" below):
edgeplane-dp's host stack under libedgeplane-preload.so against the kernel,
the same commands on the same two namespaces in the same run.

  S1  iperf3 -u -l 1860 -t 20, one stream        (the paper: 15.5 Gbit/s)
  S2  the same with -P 10, one client process    (28.1 Gbit/s, +81 %)

A scenario's goodput is the highest iperf3 goodput whose loss is at most
0.05 %: a search over the offered rate (-b) with short probes (a probe over
the limit is repeated once, the better counts), then confirming runs of
the full length at the rate found (median of `rounds`; the rate steps down
10 % while a confirming run loses more).  S1 and S2 are searched in
lockstep and confirmed in alternation (S1, S2, S1, S2, ...), so both meet
the same load of the shared machine, and `s2_vs_s1` is the median of the
rounds' S2/S1.  The loss and the iperf3 JSON of the confirming runs are
kept (build/bench/udp-term-iperf3/).

Topology (lab/hoststack_lab.py): node a runs the client, node b the server;
ours: one edgeplane-dp per node, a net_memif pair between them (the link
that costs the least, so the stacks are what is measured; `link_compare`
runs S2 once more over AF_XDP on a veth pair), iperf3's TCP control
connection on the kernel veth; the kernel: the same veth carries
everything, and both data planes are stopped, so each side has the whole
machine (2 shared cores).  CPU seconds per gigabit: user+system time of
iperf3 client and server and, for ours, of both edgeplane-dp processes
(all threads), per gigabit received; ksoftirqd's time is added to both.

sockperf ping-pong (64-byte messages) latency percentiles, ours and the
kernel: over AF_XDP on a veth pair (a frame wakes the data plane's worker
there; with the default configuration the workers are event-driven), the
kernel alternating with ours round by round in fresh labs, the ratio the
median of the rounds' ratios (`sockperf_p99_vs_kernel`); over memif as
well (`_memif`: its workers poll), with sockperf throughput (msg/s).
Where the tail comes from: each thread's scheduling delays during one
ping-pong (`perf sched`, `metrics.sockperf_af_xdp.sched_delay_ms`).
"""
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
from pathlib import Path

from bench import common
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


def _probe(lab, preload, rate, probe_s, parallel, log, name):
    """One probe at `rate` (bit/s over all streams, 0: -b 0); a probe over
    the loss limit is repeated once and the better of the two counts:
    another tenant's burst on the 2 shared cores loses datagrams whatever
    the stack, and one unlucky probe would otherwise cap the search for
    good (the same rule for ours and the kernel, S1 and S2).
    (Iperf3Result, sent_bps)."""
    b = "0" if rate == 0 else f"{int(rate / parallel)}"
    r, _, sent = iperf3_run(lab, preload, b, probe_s, parallel)
    if r.lost_percent > LOSS_MAX:
        r2, _, sent2 = iperf3_run(lab, preload, b, probe_s, parallel)
        if r2.lost_percent < r.lost_percent:
            r, sent = r2, sent2
    log(f"  {name} -b {'0' if rate == 0 else f'{rate / 1e9:.2f}G'}: sent {sent / 1e9:.2f}, "
        f"received {r.bits_per_second / 1e9:.2f} Gbit/s, loss {r.lost_percent:.3f} %")
    return r, sent


def search(lab, preload, scenarios, probe_s, full_s, rounds, log):
    """The highest goodput with loss <= LOSS_MAX of each scenario
    ({name: parallel}), the scenarios searched in lockstep and confirmed
    in alternation, so that they meet the same load of the shared machine
    and their ratio is taken round by round.
    ({name: summary}, {name: confirming runs}, [per-round S2/S1-style ratio
    of the last scenario over the first])."""
    st = {}
    for name, parallel in scenarios.items():
        r, sent = _probe(lab, preload, 0, probe_s, parallel, log, name)
        st[name] = {"parallel": parallel, "rate": 0 if r.lost_percent <= LOSS_MAX else None,
                    "lo": 0.0, "hi": max(sent, 1e8), "good": None, "steps": 0}
    # Bisection over the offered rate, one probe per scenario per step.
    while any(x["rate"] is None for x in st.values()):
        for name, x in st.items():
            if x["rate"] is not None:
                continue
            mid = (x["lo"] + x["hi"]) / 2
            r, _ = _probe(lab, preload, mid, probe_s, x["parallel"], log, name)
            if r.lost_percent <= LOSS_MAX:
                x["lo"] = x["good"] = mid
            else:
                x["hi"] = mid
            x["steps"] += 1
            if x["hi"] - x["lo"] < 0.04 * x["hi"] or x["steps"] >= 7:
                x["rate"] = x["good"] if x["good"] is not None else x["lo"] * 0.5 or 1e8
    runs = {name: [] for name in st}
    for _attempt in range(8):
        runs = {name: [] for name in st}
        for _ in range(rounds):
            for name, x in st.items():
                rate = x["rate"]
                b = "0" if rate == 0 else f"{int(rate / x['parallel'])}"
                r, cpu, sent = iperf3_run(lab, preload, b, full_s, x["parallel"])
                runs[name].append({"offered_bps": rate, "received_bps": r.bits_per_second,
                                   "sent_bps": sent, "loss_pct": r.lost_percent, "cpu_s": cpu,
                                   "load_avg": round(os.getloadavg()[0], 2), "report": r.report})
                log(f"  {name} confirm -b {'max' if rate == 0 else f'{rate / 1e9:.2f}G'}: "
                    f"received {r.bits_per_second / 1e9:.2f} Gbit/s, loss "
                    f"{r.lost_percent:.3f} %, cpu {cpu:.1f} s")
        over = [name for name in st
                if statistics.median(x["loss_pct"] for x in runs[name]) > LOSS_MAX]
        if not over:
            break
        for name in over:
            x = st[name]
            x["rate"] = (x["rate"] or statistics.median(r["sent_bps"] for r in runs[name])) * 0.9
    out = {}
    for name, x in st.items():
        rs = runs[name]
        out[name] = {
            "goodput_gbps": statistics.median(r["received_bps"] for r in rs) / 1e9,
            "loss_pct": statistics.median(r["loss_pct"] for r in rs),
            "offered_gbps": x["rate"] / 1e9 if x["rate"] else "max",
            "cpu_s_per_gbit": statistics.median(
                r["cpu_s"] / max(r["received_bps"] * full_s / 1e9, 1e-9) for r in rs),
            "rounds": len(rs), "load_avg": [r["load_avg"] for r in rs]}
    first, last = list(st)[0], list(st)[-1]
    paired = [b["received_bps"] / a["received_bps"]
              for a, b in zip(runs[first], runs[last]) if a["received_bps"]]
    return out, runs, paired


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


def sockperf_rounds(lab, preload, rounds, seconds, log):
    pp = [sockperf_ping_pong(lab, B4, preload=preload, seconds=seconds) for _ in range(rounds)]
    for p in pp:
        log(f"  sockperf pp {'ours' if preload else 'kernel'}: p50 {p.get('p50')} p99 "
            f"{p.get('p99')} p99.9 {p.get('p99.9')} us")
    tp = sockperf_throughput(lab, B4, preload=preload, seconds=seconds)
    med = {k: statistics.median(p[k] for p in pp if k in p) for k in ("p50", "p99", "p99.9", "avg")
           if any(k in p for p in pp)}
    med["tp_msg_per_s"] = tp.get("msg_rate", 0)
    return med


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
def sockperf_af_xdp(rounds, seconds, log, sched_s=0, cpu=None):
    """{ours: medians, kernel: medians, p99_ratio, p50_ratio, rounds, sched,
    wakes: the workers' wait counters of each round of ours}."""
    per = {"ours": [], "kernel": []}
    sched, wakes = {}, []
    pin = {"a": cpu, "b": cpu} if cpu is not None else None
    for rnd in range(rounds):
        with HostStackLab(tag="be", link="af_xdp",
                          cpus={"a": str(cpu), "b": str(cpu)} if cpu is not None else None) as lab:
            for stack in (("ours", "kernel") if rnd % 2 == 0 else ("kernel", "ours")):
                if stack == "kernel":
                    for node in list(lab.dps):
                        lab.stop_dp(node)
                elif not lab.dps:
                    lab.start_dp()
                p = sockperf_ping_pong(lab, B4, preload=stack == "ours", seconds=seconds,
                                       pin=pin)
                p["load_avg"] = round(os.getloadavg()[0], 2)
                if stack == "ours":
                    wakes.append(worker_waits(lab))
                per[stack].append(p)
                log(f"  sockperf pp af_xdp {stack}: p50 {p.get('p50')} p99 "
                    f"{p.get('p99')} p99.9 {p.get('p99.9')} us (load {p['load_avg']})")
                if sched_s and rnd == rounds - 1:
                    sched[stack] = sched_delays(lab, stack == "ours", sched_s)
    med = {st: {k: statistics.median(p[k] for p in ps if k in p) for k in ("p50", "p99", "p99.9")}
           for st, ps in per.items()}
    ratio = lambda k: statistics.median(  # noqa: E731
        o[k] / kk[k] for o, kk in zip(per["ours"], per["kernel"]) if o.get(k) and kk.get(k))
    return {"ours": med["ours"], "kernel": med["kernel"], "p99_ratio": ratio("p99"),
            "p50_ratio": ratio("p50"), "rounds": per, "sched_delay_ms": sched,
            "wakes": wakes, "cpu": cpu}


def worker_waits(lab):
    """Each node's host-stack workers' waits: how many, how many a kick
    ended, how many ran to their timeout, and after how many of those work
    was at hand at once (late_rx, late_doorbell: a wake-up that never came,
    covered by the timer)."""
    keys = ("waits", "kicks_seen", "wait_timeouts", "late_rx", "late_doorbell")
    return {node: [{k: w.get(k) for k in keys} for w in dp.ctl("hs-stats")["workers"]]
            for node, dp in lab.dps.items()}


def sched_delays(lab, preload, seconds):
    """Where a ping-pong's tail comes from: `perf sched record` during one
    sockperf ping-pong, then each thread's scheduling delays (woken or
    preempted -> on a CPU again, `perf sched timehist`) as percentiles in
    ms, for sockperf's two processes and the data planes' workers.  {}
    without perf."""
    if shutil.which("perf") is None:
        return {}
    data = common.OUT / f"udp-term-sched-{'ours' if preload else 'kernel'}.data"
    data.parent.mkdir(parents=True, exist_ok=True)
    threads = {f"{dp.proc.pid}": node for node, dp in lab.dps.items()}
    rec = subprocess.Popen(["perf", "sched", "record", "-o", str(data), "--", "sleep",
                            str(seconds + 2)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        sockperf_ping_pong(lab, B4, preload=preload, seconds=seconds)
    finally:
        rec.wait()
    out = subprocess.run(["perf", "sched", "timehist", "-i", str(data)], capture_output=True,
                         text=True).stdout
    data.unlink(missing_ok=True)
    delays = {}
    for line in out.splitlines():
        f = line.split()
        # time [cpu] comm[tid/pid] wait sch-delay run
        m = re.fullmatch(r"(.+)\[(\d+)(?:/(\d+))?\]", f[2]) if len(f) == 6 else None
        if m is None or not re.fullmatch(r"\d+\.\d+", f[0]):
            continue
        comm, pid = m.group(1), m.group(3) or m.group(2)
        if comm == "sockperf":
            key = f"sockperf[{pid}]"
        elif pid in threads and comm.startswith("rte-worker"):
            key = f"worker {threads[pid]}"
        else:
            continue
        delays.setdefault(key, []).append(float(f[4]))
    pct = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return {k: {"switches": len(xs), "p50": pct(xs, 0.5), "p99": pct(xs, 0.99),
                "p99.9": pct(xs, 0.999), "max": max(xs)} for k, xs in delays.items()}


def run(args):
    quick = getattr(args, "quick", False)
    probe_s, full_s, rounds, sp_s = (3, 5, 1, 3) if quick else (5, 20, 3, 10)
    log = lambda s: print(s, flush=True)  # noqa: E731
    result, ipv6, sockperf = {}, {}, {}
    with HostStackLab(tag="bu") as lab:
        for stack in ("ours", "kernel"):
            preload = stack == "ours"
            # Each side gets the machine: the kernel runs with both data
            # planes stopped.
            if preload and not lab.dps:
                lab.start_dp()
            if not preload:
                for node in list(lab.dps):
                    lab.stop_dp(node)
            log(f"s1 and s2 {stack}:")
            summaries, runs, paired = search(lab, preload, {"s1": 1, "s2": 10}, probe_s, full_s,
                                             rounds, log)
            for scen, summary in summaries.items():
                summary["iperf3_json"] = keep(runs[scen], f"{scen}-{stack}")
                if preload:
                    summary["stage_cycles"] = stage_cycles(lab)
                    summary["workers_busy_pct"] = {
                        n: [w["busy_pct"] for w in dp.workers()] for n, dp in lab.dps.items()}
                result[(scen, stack)] = summary
            result[("s2_vs_s1", stack)] = paired
            # IPv6: one run at the most the sender offers, for the record.
            for scen, parallel in (("s1", 1), ("s2", 10)):
                r, cpu, sent = iperf3_run(lab, preload, "0", probe_s * 2, parallel, server=B6)
                ipv6[f"{scen}_{stack}"] = {"received_gbps": r.bits_per_second / 1e9,
                                           "sent_gbps": sent / 1e9, "loss_pct": r.lost_percent}
                log(f"ipv6 {scen} {stack} at max: received {r.bits_per_second / 1e9:.2f} "
                    f"Gbit/s, loss {r.lost_percent:.3f} %")
            log(f"sockperf {stack}:")
            sockperf[stack] = sockperf_rounds(lab, preload, rounds, sp_s, log)
    sp_ours, sp_kernel = sockperf["ours"], sockperf["kernel"]
    link = {}
    if not quick:
        for kind in ("memif", "af_xdp"):
            with HostStackLab(tag="bl", link=kind) as lab:
                r, cpu, sent = iperf3_run(lab, True, "0", 10, 10)
                link[kind] = {"received_gbps": r.bits_per_second / 1e9,
                              "sent_gbps": sent / 1e9, "loss_pct": r.lost_percent,
                              "stage_cycles": stage_cycles(lab),
                              "port_stats": {n: dp.ctl("ports")["ports"][0].get("stats")
                                             for n, dp in lab.dps.items()}}
                log(f"link {kind}: S2 at max: received {link[kind]['received_gbps']:.2f} "
                    f"Gbit/s, loss {r.lost_percent:.3f} %")
    event = sockperf_af_xdp(1 if quick else 5, sp_s // 2 if not quick else sp_s, log,
                            sched_s=0 if quick else 4)
    one_cpu = sockperf_af_xdp(1 if quick else 3, sp_s // 2 if not quick else sp_s, log, cpu=1)
    pinned = {}
    if not quick:
        # Latency against where the threads run: each node's data plane and
        # sockperf pinned to that node's CPU (a on 0, b on 1), both stacks.
        with HostStackLab(tag="bp", cpus={"a": "0", "b": "1"}) as lab:
            for stack in ("ours", "kernel"):
                if stack == "kernel":
                    for node in list(lab.dps):
                        lab.stop_dp(node)
                pp = [sockperf_ping_pong(lab, B4, preload=stack == "ours", seconds=sp_s,
                                         pin={"a": 0, "b": 1}) for _ in range(2)]
                pinned[stack] = {k: statistics.median(p[k] for p in pp if k in p)
                                 for k in ("p50", "p99", "p99.9")}
                log(f"sockperf pp {stack}, per-node CPU: {pinned[stack]}")
    s1, s2 = result[("s1", "ours")], result[("s2", "ours")]
    k1, k2 = result[("s1", "kernel")], result[("s2", "kernel")]
    metrics = {
        "s1_goodput_gbps": s1["goodput_gbps"], "s2_goodput_gbps": s2["goodput_gbps"],
        "s1_loss_pct": s1["loss_pct"], "s2_loss_pct": s2["loss_pct"],
        "s1_cpu_s_per_gbit": s1["cpu_s_per_gbit"], "s2_cpu_s_per_gbit": s2["cpu_s_per_gbit"],
        "sockperf_p50_us": event["ours"]["p50"], "sockperf_p99_us": event["ours"]["p99"],
        "sockperf_p99_9_us": event["ours"]["p99.9"],
        "sockperf_memif": sp_ours,
        "sockperf_tp_msg_per_s": sp_ours.get("tp_msg_per_s"),
        "stages": s2.get("stage_cycles", {}),
        "s1": s1, "s2": s2, "s2_vs_s1_rounds": result[("s2_vs_s1", "ours")],
        "ipv6_at_max": ipv6, "link_compare": link,
        "sockperf_per_node_cpu": pinned,
        "sockperf_af_xdp": event,
        "sockperf_af_xdp_one_cpu": one_cpu,
    }
    peers = {"kernel": {
        "s1_goodput_gbps": k1["goodput_gbps"], "s2_goodput_gbps": k2["goodput_gbps"],
        "s1_loss_pct": k1["loss_pct"], "s2_loss_pct": k2["loss_pct"],
        "s1_cpu_s_per_gbit": k1["cpu_s_per_gbit"], "s2_cpu_s_per_gbit": k2["cpu_s_per_gbit"],
        "sockperf_p50_us": event["kernel"]["p50"], "sockperf_p99_us": event["kernel"]["p99"],
        "sockperf_p99_9_us": event["kernel"]["p99.9"], "sockperf_memif": sp_kernel,
        "sockperf_tp_msg_per_s": sp_kernel.get("tp_msg_per_s"), "s1": k1, "s2": k2,
        "s2_vs_s1_rounds": result[("s2_vs_s1", "kernel")]}}
    div = lambda a, b: a / b if a and b else 0.0  # noqa: E731
    ratios = {
        "s2_vs_kernel": div(s2["goodput_gbps"], k2["goodput_gbps"]),
        "s1_vs_kernel": div(s1["goodput_gbps"], k1["goodput_gbps"]),
        # S1 and S2 alternate run by run: the median of the rounds' S2/S1
        # (the ratio of the medians is kept beside it).
        "s2_vs_s1": statistics.median(result[("s2_vs_s1", "ours")] or [0.0]),
        "kernel_s2_vs_s1": statistics.median(result[("s2_vs_s1", "kernel")] or [0.0]),
        "s2_vs_s1_of_medians": div(s2["goodput_gbps"], s1["goodput_gbps"]),
        # The ping-pong over AF_XDP, where a frame wakes the worker (the
        # link for latency), the kernel alternating with it in the same
        # lab: median of the rounds' ratios.
        "sockperf_p99_vs_kernel": event["p99_ratio"],
        "sockperf_p50_vs_kernel": event["p50_ratio"],
        # The same with ours (both data planes, both sockperf) on one CPU.
        "sockperf_p99_vs_kernel_one_cpu": one_cpu["p99_ratio"],
        "sockperf_p50_vs_kernel_one_cpu": one_cpu["p50_ratio"],
        # Over memif (the link for throughput: its workers poll).
        "sockperf_p99_vs_kernel_memif": div(sp_ours.get("p99"), sp_kernel.get("p99")),
        "sockperf_p50_vs_kernel_memif": div(sp_ours.get("p50"), sp_kernel.get("p50")),
        "s2_cpu_per_gbit_vs_kernel": div(s2["cpu_s_per_gbit"], k2["cpu_s_per_gbit"]),
    }
    config = {"datagram_bytes": 1860, "mtu": 1500, "link": "net_memif",
              "sockperf_link": "net_af_xdp (memif: metrics.sockperf_memif)", "probe_s": probe_s,
              "full_s": full_s, "rounds": rounds, "loss_max_pct": LOSS_MAX,
              "iperf3": "3.12", "cpus": os.cpu_count(), "quick": quick,
              "goals": {"s2_vs_kernel": ">= 3", "s2_vs_s1": ">= 1.81",
                        "sockperf_p99_vs_kernel": "< 1.0"},
              "paper": {"s1_gbps": 15.5, "s2_gbps": 28.1, "loss_pct_max": 0.05,
                        "hardware": "2x Xeon 8360Y, E810 100GE, VPP HostStack"}}
    comparisons = [
        common.comparison("S1 iperf3 -u, 1 stream", s1["goodput_gbps"], "kernel",
                          k1["goodput_gbps"], "s1_vs_kernel", ratios["s1_vs_kernel"],
                          metric="goodput_gbps", unit="Gbit/s at <= 0.05 % loss"),
        common.comparison("S2 iperf3 -u -P 10", s2["goodput_gbps"], "kernel",
                          k2["goodput_gbps"], "s2_vs_kernel", ratios["s2_vs_kernel"],
                          metric="goodput_gbps", unit="Gbit/s at <= 0.05 % loss",
                          stages_of="metrics"),
        common.comparison("sockperf ping-pong 64 B, AF_XDP", event["ours"]["p99"], "kernel",
                          event["kernel"]["p99"], "sockperf_p99_vs_kernel",
                          ratios["sockperf_p99_vs_kernel"], metric="sockperf_p99_us",
                          unit="us, p99", higher_is_better=False)]
    return common.result("udp-term", config, metrics, peers, ratios,
                         extra={"comparisons": comparisons})
