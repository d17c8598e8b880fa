"""A/B of edgeplane-dp builds on a router bench input, beside its DPDK peer.

    .venv/bin/python -m bench.router_ab [--rounds 5] [--input acl|headline] \
        BINARY[=LABEL] BINARY[=LABEL]...

Every build runs the router on one input of `make bench BENCH=router`
(net_pcap -> net_null, the worker on CPU 1): `acl` (the default), the
`vs_dpdk-l3fwd-acl` input (64 B frames, 1000 ACL rules, 1K routes) beside
l3fwd-acl with the classify method the first build chose; `headline`, the
`vs_dpdk-l3fwd` input (64 B, 1000 rules, 100K routes) beside l3fwd LPM.
All are started once and
measured one at a time in alternated rounds (bench/ab.py); each build gets
the median of its per-round ratios to the peer, its cycles per packet
(median, and least: preemption and the neighbours' cache traffic only add)
and its stages (medians, in CPU time and in TSC).  Copy a build's binary
before rebuilding (cp build/dp/edgeplane-dp /tmp/dp-before): ratios of
builds measured in one run are what a change is judged by, not figures
from two runs.
"""
import argparse
import contextlib
import statistics
from pathlib import Path

from bench import ab, bench_router as br, pcapgen
from lab.dp import Dp


class Build(br.Ours):
    """bench_router.Ours with a binary of one's choosing."""

    def __init__(self, binary, label, inp_key):
        size, n_acl, n_routes = inp_key
        self.label = label
        inp = pcapgen.Inputs(n_routes, n_acl).ensure()
        self.dp = Dp(None, br.dp_config(inp, inp.pcap(size)), name="ab-" + label,
                     binary_path=binary, workdir=br.WORK, start_timeout=180, ctl_timeout=30,
                     log=print)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--window", type=float, default=2.5, help="seconds per measurement")
    ap.add_argument("--input", choices=["acl", "headline"], default="acl")
    ap.add_argument("builds", nargs="+", help="BINARY[=LABEL]")
    a = ap.parse_args(argv)
    key = br.ACL_INPUT if a.input == "acl" else br.HEADLINE
    size, n_acl, n_routes = key
    br.WORK.mkdir(parents=True, exist_ok=True)
    builds = []
    for b in a.builds:
        path, _, label = b.partition("=")
        builds.append(Build(Path(path), label or Path(path).name, key))
    with contextlib.ExitStack() as st:
        for b in builds:
            st.enter_context(b)
        hz = builds[0].tsc_hz
        if a.input == "acl":
            peer = br.Peer("acl", size, n_acl, n_routes, lambda: hz, alg=builds[0].acl_method)
        else:
            peer = br.Peer("lpm", size, 0, n_routes, lambda: hz)
        st.enter_context(peer)
        res = ab.alternate(builds + [peer], a.rounds, warmup_s=1.0, window_s=a.window)
    for b in builds:
        r, per = ab.ratio(res[b], res[peer], "mpps_per_core")
        cyc = statistics.median(w["cycles_per_pkt"] for w in res[b])
        low = min(w["cycles_per_pkt"] for w in res[b])
        print(f"{b.label}: vs {peer.label} {r:.3f} (rounds {per}), {cyc:.1f} cycles/pkt "
              f"(least {low:.1f})")
        # TSC around each stage counts the time the thread was preempted
        # inside it; scaled to the thread's CPU time they add up to
        # cycles/pkt (bench_router.Ours.measure), which under load is the
        # figure to read.
        for key, what in (("stages", "stages (CPU time)"), ("stages_tsc", "stages (TSC)")):
            stages = ab.medians([w[key] for w in res[b]])
            print(f"  {what}: " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
    pc = [w["cycles_per_pkt"] for w in res[peer]]
    print(f"{peer.label}: {statistics.median(pc):.1f} cycles/pkt (least {min(pc):.1f}; "
          f"our ACL classify: {builds[0].acl_method})")


if __name__ == "__main__":
    main()
