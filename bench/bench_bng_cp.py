"""`make bench BENCH=bng-cp`: subscribers attaching through the BNG control
plane, end to end, and the emulator's own ceiling beside the figures.

The lab of tests/test_bng_control.py (lab/bngcp_lab.py): edgeplane-dp
(bng-uplink, bng-downlink, bng-inject on net_af_packet veths), edgeplane
upf, edgeplane bng-cp, each in its namespace; every control frame crosses
the real redirect (data plane punt -> control port -> edgeplane upf ->
GTP-U -> bng-cp, and back).  The subscribers are subemu on the access
switch, QinQ (one S-tag per 1000 C-tags):

  pppoe   N CHAP subscribers with IPCP (PADI .. IPCP open: 12 frames
          each way through the redirect, a PFCP establishment, an AAA
          lookup), up to `outstanding` in set-up at once;
  ipoe    N DHCPv4 subscribers (DISCOVER .. ACK, a PFCP establishment
          before the ACK), the PPPoE ones still up: 2N sessions at the end.

Each run reports the set-up rate (subscribers up / time from the first
PADI or DISCOVER to the last one up), the time until every subscriber
has carried datagrams both ways (three a second for a second, each to the core's
reflector and back, sent right after set-up), and the emulator's ceiling:
subscribers per CPU-second of the emulator itself (its CPU time over the
same run), i.e. the rate it would sustain alone on one core.  Medians
over rounds, a fresh lab each round.
"""
import os
import statistics
import time

from bench import common

GOAL_SESSIONS, GOAL_RATE = 2000, 1000


def cpu_and_wait(pid):
    """A process's CPU time and its time runnable but waiting for a CPU,
    summed over its threads (/proc/PID/task/*/schedstat: on-CPU and
    run-queue nanoseconds): on a shared machine the second says how much
    of a set-up went to the neighbours."""
    run = wait = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            a, b, _ = open(f"/proc/{pid}/task/{t}/schedstat").read().split()
        except (OSError, ValueError):
            continue
        run, wait = run + int(a), wait + int(b)
    return {"cpu_s": run / 1e9, "runq_wait_s": wait / 1e9}


def one_round(n, outstanding):
    from lab.bngcp_lab import REFLECT_PORT, BngCpLab
    from lab.bng_lab import BNG_CORE4, CORE4
    ipoe_pool = {"name": "ipoe-bench", "range": "198.18.112.10-198.18.127.250", "gateway": "198.18.112.1/20"}
    lab = BngCpLab(tag="bcbench", users=n, bng_extra={"control_port": "ctl", "max_subscribers": 8192},
                   subports={0: "rate=1G pipes=8192"},
                   cp={"pppoe": {"auth": ["chap"], "keepalive": "30s", "restart_timer": "3s"},
                       "ipoe": {"lease": "3600s", "dhcpv6": False},
                       "limits": {"new_per_second": 100000, "new_burst": 100000, "per_mac_per_second": 5},
                       "aaa": {"default_pool": "ipoe-bench"}})
    # The lab's pools plus a /20 for IPoE at this scale.
    from lab.bngcp_lab import cp_config
    lab.cp_over["pools"] = cp_config("bcbench", lab.workdir)["pools"] + [ipoe_pool]
    try:
        lab.__enter__()
        lab.core.run(["ip", "route", "add", "198.18.112.0/20", "via", BNG_CORE4])
        lab.reflector()
        out = {}
        for mode in ("pppoe", "ipoe"):
            t0 = time.monotonic()
            e = lab.emulator(mode, n=n, host=f"b{mode}", auth="chap", user="user%d",
                             svlan=300 if mode == "pppoe" else 600, per_s=1000, outstanding=outstanding,
                             mac_base="02:ee:10:00:00:00" if mode == "pppoe" else "02:ee:20:00:00:00",
                             timeout="120s", rto="2s", loops=2)
            s = e.setup
            r = e.command(f"traffic 3 1 {CORE4}:{REFLECT_PORT} 64")
            all_traffic = time.monotonic() - t0
            out[mode] = {"up": s["up"], "failed": s["failed"], "rate_per_s": s.get("rate_per_s", 0.0),
                         "setup_ms": s["setup_ms"], "emu_cpu_s": s["cpu_s"],
                         "emu_ceiling_per_cpu_s": s.get("ceiling_per_cpu_s", 0.0),
                         "traffic_tx": r["tx"], "traffic_rx": r["rx"], "time_to_traffic_s": all_traffic,
                         "phase_ms_p50": s.get("phase_ms_p50", {}), "failures": s.get("failures", {})}
            print(f"    {mode}: {s['up']}/{n} up at {s.get('rate_per_s', 0):.0f}/s "
                  f"(p50 {s['setup_ms']['p50']:.0f} ms, p99 {s['setup_ms']['p99']:.0f} ms), "
                  f"traffic {r['rx']}/{r['tx']}, all carrying traffic after {all_traffic:.1f} s; "
                  f"emulator ceiling {s.get('ceiling_per_cpu_s', 0):.0f}/CPU-s")
        out["user_plane_subscribers"] = lab.up_subscribers()
        out["cp_up"] = sum(1 for x in lab.bngcp.sessions() if x["state"] == "up")
        procs = (("edgeplane-dp", lab.dp.proc), ("edgeplane upf", lab.upf.proc), ("edgeplane bng-cp", lab.bngcp.proc))
        out["sched"] = {k: cpu_and_wait(p.pid) for k, p in procs}
        out["load"] = os.getloadavg()[0]
        return out
    finally:
        lab.close()


def run(args):
    n = 500 if args.quick else 2000
    rounds = 1 if args.quick else 3
    res = []
    for r in range(rounds):
        print(f"  round {r + 1}: {n} PPPoE then {n} IPoE subscribers")
        res.append(one_round(n, outstanding=1000))
    med = lambda k, f: statistics.median([x[k][f] for x in res])
    established = statistics.median([x["cp_up"] for x in res])
    metrics = {
        "sessions_established": established,
        "sessions_asked": 2 * n,
        "user_plane_subscribers": statistics.median([x["user_plane_subscribers"] for x in res]),
        "pppoe_setup_per_s": med("pppoe", "rate_per_s"),
        "ipoe_setup_per_s": med("ipoe", "rate_per_s"),
        "pppoe_setup_ms_p50": statistics.median([x["pppoe"]["setup_ms"]["p50"] for x in res]),
        "pppoe_setup_ms_p99": statistics.median([x["pppoe"]["setup_ms"]["p99"] for x in res]),
        "ipoe_setup_ms_p50": statistics.median([x["ipoe"]["setup_ms"]["p50"] for x in res]),
        "pppoe_time_to_traffic_s": med("pppoe", "time_to_traffic_s"),
        "ipoe_time_to_traffic_s": med("ipoe", "time_to_traffic_s"),
        "goal_sessions_established": max(GOAL_SESSIONS, 2 * n),
        "goal_setup_per_s": GOAL_RATE,
        # Per process over a round (start-up included): CPU time, and time
        # runnable but waiting for a CPU.
        "sched": {k: {f: statistics.median([x["sched"][k][f] for x in res]) for f in ("cpu_s", "runq_wait_s")}
                  for k in res[0]["sched"]},
        "load_average": statistics.median([x["load"] for x in res]),
        "rounds": res,
    }
    peers = {"subemu (the emulator alone, per CPU-second)": {
        "pppoe_per_cpu_s": med("pppoe", "emu_ceiling_per_cpu_s"),
        "ipoe_per_cpu_s": med("ipoe", "emu_ceiling_per_cpu_s")}}
    ratios = {}
    for mode in ("pppoe", "ipoe"):
        c = med(mode, "emu_ceiling_per_cpu_s")
        if c:
            ratios[f"{mode}_vs_emulator_ceiling"] = med(mode, "rate_per_s") / c
    config = {"subscribers_per_protocol": n, "rounds": rounds, "encap": "qinq", "auth": "chap (local file)",
              "outstanding": 1000, "ipv6": False, "lcp_restart_timer": "3s (RFC 1661 default)",
              "ports": "net_af_packet on veth",
              "path": "subemu -> edgeplane-dp punt -> edgeplane upf -> GTP-U -> edgeplane bng-cp -> back"}
    return common.result("bng-cp", config, metrics, peers, ratios)
