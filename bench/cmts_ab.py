"""A/B of two vCMTS builds, or of two engine settings, on the in-process
service group of `make bench BENCH=cmts` (bench/bench_cmts.py): both
processes start once and take turns (bench.ab.alternate: SIGSTOP and
SIGCONT), and what is compared is the per-round ratio of CPU cycles per
frame, B over A.  On the shared machine a whole run moves by 20-30 % with
the neighbours' load, so two runs minutes apart say little about a change
of a few percent; rounds measured back to back do.

    .venv/bin/python -m bench.cmts_ab --a ../old/build/dp/edgeplane-dp
    .venv/bin/python -m bench.cmts_ab --case us --rounds 8
    .venv/bin/python -m bench.cmts_ab --a-engine min_sleep_us=1,max_sleep_us=100
    .venv/bin/python -m bench.cmts_ab --a-gen hold_pkts=0

--a and --b default to this tree's binary; --a-engine / --b-engine add
[engine] keys to one side, --a-gen / --b-gen keys of the cmts-gen worker
(over the benchmark's own).  Prints each side's
median CPU cycles per frame, its stages' median TSC cycles per frame, and
the median and per-round ratios.  No peer and no JSON: this compares our
own variants; the benchmark is the figure.
"""
import argparse
import contextlib
import statistics

from bench import ab, common
from bench.bench_cmts import Ours

DEFAULT_BINARY = common.ROOT / "build" / "dp" / "edgeplane-dp"


def engine_keys(text):
    out = {}
    for kv in filter(None, (text or "").split(",")):
        k, _, v = kv.partition("=")
        out[k.strip()] = v.strip()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench.cmts_ab")
    ap.add_argument("--a", default=str(DEFAULT_BINARY), help="edgeplane-dp of side A")
    ap.add_argument("--b", default=str(DEFAULT_BINARY), help="edgeplane-dp of side B")
    ap.add_argument("--a-engine", default="", help="k=v,... [engine] keys for side A")
    ap.add_argument("--b-engine", default="", help="k=v,... [engine] keys for side B")
    ap.add_argument("--a-gen", default="", help="k=v,... cmts-gen keys for side A")
    ap.add_argument("--b-gen", default="", help="k=v,... cmts-gen keys for side B")
    ap.add_argument("--case", choices=("ds", "us", "bidir"), default="ds")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--window", type=float, default=2.0)
    args = ap.parse_args(argv)
    sides = []
    with contextlib.ExitStack() as stack:
        for label, binary, eng, gen in (("A", args.a, args.a_engine, args.a_gen),
                                        ("B", args.b, args.b_engine, args.b_gen)):
            work = common.OUT / "cmts-ab" / label
            work.mkdir(parents=True, exist_ok=True)
            o = Ours(work, True, binary=binary, engine=engine_keys(eng), gen=engine_keys(gen))
            o.label = label
            stack.enter_context(o)
            o.set_case(args.case)
            o.pause()
            sides.append(o)
        rr = ab.alternate(sides, args.rounds, warmup_s=1.0, window_s=args.window)
    dirs = ("ds", "us") if args.case == "bidir" else (args.case,)
    for d in dirs:
        cyc = {o.label: [o.hz / (r[d]["mpps_per_core"] * 1e6) for r in rr[o]] for o in sides}
        for o in sides:
            st = {k: statistics.median(r[d]["stages"][k] for r in rr[o])
                  for k in rr[o][0][d]["stages"]}
            print(f"{d} {o.label}: {statistics.median(cyc[o.label]):.0f} CPU cycles/frame; "
                  + " ".join(f"{k} {v:.0f}" for k, v in st.items()))
        per = [b / a for a, b in zip(cyc["A"], cyc["B"])]
        print(f"{d} B/A: median {statistics.median(per):.3f}, rounds "
              + " ".join(f"{x:.3f}" for x in per))


if __name__ == "__main__":
    main()
