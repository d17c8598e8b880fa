"""`make bench BENCH=pfcp`: PFCP session establishments per second, end to
end, with the table filling up to 64K sessions, against the same
subscriber adds sent to edgeplane-dp's control socket directly.

What is timed (build/bench/pfcp.json):

  pfcp    pfcp-cp-sim bench: a control plane on go-pfcp sends Session
          Establishment Requests (TR-459 layout: Traffic Endpoints, four
          PDRs' worth of rules, a QER of one of four rate tiers) to
          `edgeplane upf`, up to 4096 outstanding; a session counts when its
          answer is back, and the function answers once the data plane's
          tables hold the subscriber (PFCP request to table ready).  The
          requests are encoded before the clock starts.
  direct  pfcp-cp-sim direct: the same subscribers (same tags, addresses,
          profiles' rates) as sub-add-bulk lines of 1000, two in flight, on
          the control socket: the data plane's own rate for the work,
          without PFCP.

Each side first fills 48K sessions (0 -> 49152, reported as `fill`), then
the timed run establishes 16K more (49152 -> 65536: the data plane's 64K
subscribers of one subport, each with its HQoS pipe).  Rounds alternate
the two sides on fresh data planes; figures are medians over rounds, the
ratio the median of the rounds' ratios.  The direct side's round is the
median of three runs (PFCP_DIRECT_RUNS), each on a fresh data plane: its
timed part lasts a tenth of a second, and one run alone says more about
the shared cores' scheduling than about the data plane.  CPU seconds of each process
(/proc, utime + stime; the client's from its rusage) say where the time
goes, and the function's dp_batch counter how many sessions went to the
data plane per sub-add-bulk.

Everything runs in the root namespace on loopback; the data plane's ports
are net_null (no traffic: the cost of the control path is what is
measured) and its workers sleep between polls (adaptive polling).
"""
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from bench import ab, common
from lab.dp import Dp

BIN = common.ROOT / "build" / "bin"
FILL, RUN = 49152, 16384
TOTAL = FILL + RUN
UPF_PORT = 18805


def dp_config():
    """The data plane under test.  Its workers see no traffic here
    (net_null without rx): they pause between empty polls, and a control
    operation that needs their answer wakes them at once (their message
    eventfd), so the pause's length adds nothing to a session's time.
    What it costs is CPU: at the default longest pause (100 us) the two
    idle workers took 0.32 CPU-second a second on this 2-vCPU host, a
    third of a core taken from the function, the client and the data
    plane's control thread -- where a deployment gives its workers their
    own cores.  So they pause up to 1 ms (0.04 CPU-second a second,
    `metrics.dp_idle_cpu_s_per_s`), the same for the PFCP side and the
    direct peer; docs/cups.md has the figures at the default pause too."""
    return f"""[eal]
args = --no-telemetry
[engine]
max_sleep_us = 1000
[port access]
device = net_null0,no-rx=1
mac = 02:00:00:00:01:01
ipv4 = 198.18.100.1/24
[port core]
device = net_null1,no-rx=1
mac = 02:00:00:00:02:01
ipv4 = 198.18.1.1/24
[worker up]
pipeline = bng-uplink
rx = access
[worker down]
pipeline = bng-downlink
rx = core
[bng]
access_port = access
core_port = core
max_subscribers = {TOTAL}
neighbor = 198.18.1.2 02:00:00:00:02:02
route = 0.0.0.0/1 via 198.18.1.2
route = 128.0.0.0/1 via 198.18.1.2
hqos_port_rate = 100G
hqos_qsize = 16
subport = 0 rate=100G pipes={TOTAL}
"""


def cpu_seconds(pid):
    """utime + stime of a process, seconds."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / 100.0


def dp_idle_rate(pid, seconds=1.0):
    """CPU seconds a second the idle data plane spends (its workers'
    polling): subtracted over a run's wall time, what is left is the
    data plane's work for the subscribers (`dp_busy`).  A PFCP run lasts
    longer than the direct one, and idle polling over the longer time
    would otherwise count as a cost of each PFCP session."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def upf_event(port, event):
    """edgeplane_upf_events_total{event} from the function's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("edgeplane_upf_events_total{") and f'event="{event}"' in line:
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def run_client(argv):
    """Runs a client to its end: its JSON, its wall and CPU seconds."""
    t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])}: {p.stderr.strip()[-500:]}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return json.loads(p.stdout), time.monotonic() - t0, cpu


def profile_args(wd, who):
    """--cpuprofile (and the function's --memprofile) for a side when
    PFCP_PROFILE_DIR is set: every round's profiles land there
    (<who>-<round dir>.pprof, .heap)."""
    d = os.environ.get("PFCP_PROFILE_DIR")
    if not d:
        return []
    Path(d).mkdir(parents=True, exist_ok=True)
    args = ["--cpuprofile", str(Path(d) / f"{who}-{wd.name}.pprof")]
    if who == "upf":
        args += ["--memprofile", str(Path(d) / f"{who}-{wd.name}.heap")]
    return args


def pfcp_round(workdir, fill, n, bindir=None, upf_args=()):
    bindir = bindir or BIN
    wd = Path(tempfile.mkdtemp(dir=workdir, prefix="pfcp-"))
    with Dp(None, dp_config(), name="dp", workdir=wd, start_timeout=120, ctl_timeout=30) as dp:
        log = open(wd / "upf.log", "w")
        upf = subprocess.Popen([str(bindir / "edgeplane"), "upf", "--listen", f"127.0.0.1:{UPF_PORT}",
                                "--gtpu", "127.0.0.1:0", "--dp-socket", str(dp.ctl_path),
                                "--state-dir", str(wd / "state"), "--sub-ids", f"1-{TOTAL}",
                                "--heartbeat-interval", "1h", "--metrics", f"127.0.0.1:{UPF_PORT + 1}",
                                *profile_args(wd, "upf"), *upf_args],
                               stdout=log, stderr=log)
        try:
            idle = dp_idle_rate(dp.pid)
            if upf.poll() is not None:
                raise RuntimeError("edgeplane upf exited: " + (wd / "upf.log").read_text()[-500:])
            cpu0 = {"upf": cpu_seconds(upf.pid), "dp": cpu_seconds(dp.pid)}
            res, wall, client_cpu = run_client([str(bindir / "pfcp-cp-sim"), "bench", "--upf", f"127.0.0.1:{UPF_PORT}",
                                 "--local", "127.0.0.1:0", "--fill", str(fill), "--sessions", str(n),
                                 *profile_args(wd, "client")])
            cpu = {k: cpu_seconds(p) - cpu0[k] for k, p in (("upf", upf.pid), ("dp", dp.pid))}
            cpu["client"] = client_cpu
            cpu["dp_busy"] = max(0.0, cpu["dp"] - idle * wall)
            installed = dp.ctl("bng-stats")["subscribers"]
            batches = upf_event(UPF_PORT + 1, "dp_batch")
        finally:
            upf.terminate()
            upf.wait(timeout=20)
            log.close()
    res["cpu_s"] = cpu
    res["dp_idle_cpu_s_per_s"] = idle
    res["installed"] = installed
    res["dp_batches"] = batches
    return res


def direct_round(workdir, fill, n, batch=1000, window=2):
    wd = Path(tempfile.mkdtemp(dir=workdir, prefix="direct-"))
    with Dp(None, dp_config(), name="dp", workdir=wd, start_timeout=120, ctl_timeout=30) as dp:
        idle = dp_idle_rate(dp.pid)
        cpu0 = cpu_seconds(dp.pid)
        res, wall, client_cpu = run_client([str(BIN / "pfcp-cp-sim"), "direct", "--socket", str(dp.ctl_path),
                             "--fill", str(fill), "--sessions", str(n), "--batch", str(batch),
                             "--window", str(window)])
        dp_cpu = cpu_seconds(dp.pid) - cpu0
        res["cpu_s"] = {"dp": dp_cpu, "client": client_cpu, "dp_busy": max(0.0, dp_cpu - idle * wall)}
        res["dp_idle_cpu_s_per_s"] = idle
        res["installed"] = dp.ctl("bng-stats")["subscribers"]
    return res


def direct_median_round(workdir, fill, n, runs):
    """The direct peer's round: `runs` runs on fresh data planes, the one
    of median rate (its CPU figures with it), every run's rate beside.
    Its timed part is ~0.1 s of one thread, so one run is the rate of
    whichever tenth of a second the shared cores gave it (7,500 to
    163,000/s within one bench); the median of three is the data plane's
    rate for the work, what the PFCP side's 16K establishments (~0.5 s)
    are compared with."""
    rs = sorted((direct_round(workdir, fill, n) for _ in range(runs)), key=lambda x: x["run"]["per_s"])
    res = rs[len(rs) // 2]
    res["runs_per_s"] = [round(x["run"]["per_s"]) for x in rs]
    return res


def cpu_bound(pf, dr, fill, n):
    """The rates the CPU time per session allows, medians over rounds."""
    med = statistics.median
    cores = os.cpu_count() or 1
    pipeline_us = med([(x["cpu_s"]["upf"] + x["cpu_s"].get("dp_busy", 0)) / (fill + n) * 1e6
                       + x["run"].get("cpu_s", 0) / n * 1e6 for x in pf])
    direct_us = med([x["cpu_s"].get("dp_busy", 0) / (fill + n) * 1e6 for x in dr])
    pfcp_rate = cores / pipeline_us * 1e6 if pipeline_us else 0.0
    direct_rate = 1 / direct_us * 1e6 if direct_us else 0.0
    return {"cores": cores, "pfcp_cpu_us_per_session": pipeline_us, "direct_cpu_us_per_session": direct_us,
            "pfcp_sessions_per_s": pfcp_rate, "direct_sessions_per_s": direct_rate,
            "pfcp_vs_direct": pfcp_rate / direct_rate if direct_rate else 0.0}


def run(args):
    for b in ("edgeplane", "pfcp-cp-sim"):
        if not (BIN / b).exists():
            raise RuntimeError(f"{BIN / b} missing: run `make build`")
    # The rounds' data planes' and functions' folders (state, logs):
    # removed at the end, also when a round fails (the error carries the
    # output that explains it).
    with tempfile.TemporaryDirectory(prefix="bench-pfcp-") as workdir:
        return run_in(args, Path(workdir))


def run_in(args, workdir):
    # PFCP_ROUNDS: fewer rounds for a quick before/after on a busy host.
    rounds = 1 if args.quick else int(os.environ.get("PFCP_ROUNDS", "5"))
    fill, n = (8192, 4096) if args.quick else (FILL, RUN)
    def said(res):
        return (f"{res['run']['per_s']:.0f}/s (fill {res['fill']['per_s']:.0f}/s), "
                f"installed {res['installed']}")
    # PFCP_DIRECT_RUNS: the direct peer's runs a round (median; three by
    # default, one with --quick).
    direct_runs = 1 if args.quick else int(os.environ.get("PFCP_DIRECT_RUNS", "3"))
    sides = [ab.Call("pfcp", lambda: pfcp_round(workdir, fill, n), said),
             ab.Call("direct", lambda: direct_median_round(workdir, fill, n, direct_runs), said)]
    # PFCP_BASELINE_BIN=<dir with another build's edgeplane and
    # pfcp-cp-sim>: that build is a third side of the same rounds (a
    # change's before and after, measured back to back).
    # PFCP_BASELINE_ARGS="--decoders 1": flags of that side's function
    # (with PFCP_BASELINE_BIN=build/bin, one flag's effect, measured in
    # the same rounds).
    baseline = os.environ.get("PFCP_BASELINE_BIN")
    baseline_args = os.environ.get("PFCP_BASELINE_ARGS", "").split()
    if baseline:
        sides.append(ab.Call("baseline", lambda: pfcp_round(workdir, fill, n, Path(baseline), baseline_args), said))
    res = ab.alternate(sides, rounds)
    pf, dr = res["pfcp"], res["direct"]
    # One sub-add per request (64 pipelined), as a controller without
    # batching would send them: what the batching buys.
    single = direct_round(workdir, fill, 4096 if not args.quick else 1024, batch=1, window=64)
    print(f"  direct, one sub-add per request: {single['run']['per_s']:.0f}/s")
    med = lambda xs: statistics.median(xs) if xs else 0.0
    rate = med([x["run"]["per_s"] for x in pf])
    direct_rate = med([x["run"]["per_s"] for x in dr])
    per_session_us = lambda xs, proc: med([x["cpu_s"].get(proc, 0) / (fill + n) * 1e6 for x in xs])
    metrics = {
        "sessions_per_s": rate,
        "p50_ms": med([x["run"]["p50_ms"] for x in pf]),
        "p99_ms": med([x["run"]["p99_ms"] for x in pf]),
        "fill_sessions_per_s": med([x["fill"]["per_s"] for x in pf]),
        "installed_after": pf[-1]["installed"],
        "goal_sessions_per_s": 10000,
        "cpu_us_per_session": {"upf": per_session_us(pf, "upf"), "dp": per_session_us(pf, "dp"),
                               "client": per_session_us(pf, "client"),
                               "dp_busy": per_session_us(pf, "dp_busy"),
                               "dp_direct": per_session_us(dr, "dp"),
                               "dp_busy_direct": per_session_us(dr, "dp_busy"),
                               "client_direct": per_session_us(dr, "client")},
        # The load generator's own CPU over the timed part (its encoding
        # happens before the clock), and what the batching made of the
        # establishments: sessions per sub-add-bulk.
        "client_cpu_us_per_timed_session": med([x["run"].get("cpu_s", 0) / n * 1e6 for x in pf]),
        # CPU seconds a second the idle data plane spent before each run
        # (its two workers' pauses: see dp_config).
        "dp_idle_cpu_s_per_s": med([x.get("dp_idle_cpu_s_per_s", 0) for x in pf + dr]),
        "sessions_per_dp_batch": med([(fill + n) / x["dp_batches"] for x in pf if x.get("dp_batches")]),
        # What the CPU alone allows: the PFCP pipeline's CPU per session
        # (function, data plane less its idle polling, the client over the
        # timed part) spread over every core, against the direct peer's
        # one data-plane thread at its busy CPU per subscriber.  The
        # measured ratio stays under this one: other work shares the
        # cores, and the stages do not overlap perfectly.
        "cpu_bound": cpu_bound(pf, dr, fill, n),
        "rounds": {"pfcp": [round(x["run"]["per_s"]) for x in pf],
                   "direct": [round(x["run"]["per_s"]) for x in dr],
                   "direct_runs": [x["runs_per_s"] for x in dr]},
    }
    peers = {"direct-control-socket": {"sessions_per_s": direct_rate,
                                       "p50_ms_per_batch_of_1000": med([x["run"]["p50_ms"] for x in dr]),
                                       "fill_sessions_per_s": med([x["fill"]["per_s"] for x in dr])},
             "direct-sub-add-per-request": {"sessions_per_s": single["run"]["per_s"],
                                            "p50_ms": single["run"]["p50_ms"]}}
    per_s = lambda x: x["run"]["per_s"]  # noqa: E731
    vs_direct, vs_direct_rounds = ab.ratio(pf, dr, per_s)
    extra_rounds = {}
    if baseline:
        bl = res["baseline"]
        peers["pfcp-baseline-build"] = {"bin": baseline, "args": baseline_args,
                                        "sessions_per_s": med([per_s(x) for x in bl]),
                                        "cpu_us_per_session": {"upf": per_session_us(bl, "upf"),
                                                               "client": per_session_us(bl, "client")}}
        # The function's CPU a session against the baseline's, round by
        # round (the same rounds' load on both: steadier than either's
        # median alone).
        upf_cpu = lambda x: x["cpu_s"]["upf"]  # noqa: E731
        ratios_bl = {"pfcp_vs_baseline": ab.ratio(pf, bl, per_s), "baseline_vs_direct": ab.ratio(bl, dr, per_s),
                     "upf_cpu_vs_baseline": ab.ratio(pf, bl, upf_cpu)}
        extra_rounds = {k: v[1] for k, v in ratios_bl.items()}
    ratios = {"pfcp_vs_direct": vs_direct,
              "pfcp_vs_sub_add_per_request": rate / single["run"]["per_s"] if single["run"]["per_s"] else 0.0,
              "goal_pfcp_vs_direct": 0.5}
    if baseline:
        ratios.update({k: v[0] for k, v in ratios_bl.items()})
    config = {"fill": fill, "timed": n, "rounds": rounds, "direct_runs_per_round": direct_runs,
              "window": 4096, "direct_batch": 1000,
              "direct_in_flight": 2, "ports": "net_null (no traffic)", "pipes": TOTAL, "hqos_qsize": 16}
    comparisons = [common.comparison(f"{n} more after {fill}", rate, "direct-control-socket",
                                     direct_rate, "pfcp_vs_direct", vs_direct,
                                     metric="sessions_per_s", unit="sessions/s",
                                     ours_rounds=[round(per_s(x)) for x in pf],
                                     peer_rounds=[round(per_s(x)) for x in dr])]
    return common.result("pfcp", config, metrics, peers, ratios,
                         extra={"comparisons": comparisons,
                                "ratio_rounds": {"pfcp_vs_direct": vs_direct_rounds, **extra_rounds}})
