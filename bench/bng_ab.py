"""A/B of two vBNG builds on one case of `make bench BENCH=bng-uplink` (or
-downlink): both edgeplane-dp processes start once on the bench's own
configuration and input (bench/bng_bench.dp_config, the white paper's 4K
subscribers and 150-rule ACL) and take turns (bench.ab.alternate: SIGSTOP
and SIGCONT); compared is the per-round ratio of CPU cycles per packet,
B over A.  On the shared machine a whole run moves by 20-30 % with the
neighbours' load; rounds measured back to back say more about a change of
a few percent.

    .venv/bin/python -m bench.bng_ab --a /tmp/old/edgeplane-dp
    .venv/bin/python -m bench.bng_ab --case pppoe-128 --rounds 8
    .venv/bin/python -m bench.bng_ab --case down-504-ring   # ring-fed, as the bench
    .venv/bin/python -m bench.bng_ab --case down-504-ring --b-case down-504-replay
    .venv/bin/python -m bench.bng_ab --case down-504 --b-case down-504-ring
    .venv/bin/python -m bench.bng_ab --case down-imix-down-ring   # the downstream iMix
    .venv/bin/python -m bench.bng_ab --case ipoe-128 --b-case ipoe-64  # rx by frame size

--a and --b default to this tree's binary; --b-case puts side B on another
input of the same direction (the ring-fed downlink against the pcap-fed
one).  Prints each side's median CPU cycles per packet and its stages (TSC cycles per packet scaled to CPU time,
as bench/bng_bench.summarize does), and the median and per-round ratios.
No peer and no JSON: this compares our own variants; the benchmark is the
figure.
"""
import argparse
import contextlib
import statistics

from bench import ab, common
from bench.bng_bench import Ours, dp_config, ring_fed_down_config, summarize
from bench.bng_inputs import Inputs

DEFAULT_BINARY = common.ROOT / "build" / "dp" / "edgeplane-dp"
# ipoe-64: the uplink's flows in 64 B frames, not a bench case: against
# ipoe-128 (--b-case) it shows what the larger frame costs net_pcap's rx
# copy (the router bench's frames are 64 B).
CASES = ("ipoe-128", "pppoe-128", "ipoe-imix-up", "ipoe-64", "down-504", "down-504-ring",
         "down-504-replay", "down-504-congested", "down-imix-down", "down-imix-down-ring")


def _config(inputs, case):
    """(worker, edgeplane-dp config) of one case."""
    if case == "down-504":
        return "down", dp_config(inputs, down_pcap=inputs.downlink_pcap("504"),
                                 lcores="0@0,1@1")
    if case.startswith("down-imix-down"):
        # The downstream iMix, read from the pcap by the worker itself or
        # (-ring) fed through a ring, as the benchmark's imix-down case.
        ring = case.endswith("-ring")
        return "down", dp_config(inputs, down_pcap=inputs.downlink_pcap("imix-down", ring=ring),
                                 ring_feed=ring, **({} if ring else {"lcores": "0@0,1@1"}))
    if case == "down-504-replay":
        # Ring-fed by the replay feeder (the bench's fed-ahead case).
        return "down", ring_fed_down_config(inputs, inputs.downlink_pcap("504", ring=True),
                                            feeder="replay")
    if case.startswith("down-504-"):
        # Fed through a ring by a feeder thread, as the benchmark's headline.
        pcap = (inputs.downlink_congested_pcap(ring=True) if case.endswith("congested")
                else inputs.downlink_pcap("504", ring=True))
        return "down", dp_config(inputs, down_pcap=pcap, ring_feed=True)
    kind, _, spec = case.partition("-")
    pppoe = kind == "pppoe"
    return "up", dp_config(inputs, up_pcap=inputs.uplink_pcap(spec, pppoe=pppoe), pppoe=pppoe,
                           lcores="0@0,1@1")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench.bng_ab")
    ap.add_argument("--a", default=str(DEFAULT_BINARY), help="edgeplane-dp of side A")
    ap.add_argument("--b", default=str(DEFAULT_BINARY), help="edgeplane-dp of side B")
    ap.add_argument("--case", choices=CASES, default="ipoe-128")
    ap.add_argument("--b-case", choices=CASES, default=None,
                    help="side B on another case of the same direction (default: --case)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--window", type=float, default=2.0)
    args = ap.parse_args(argv)
    inputs = Inputs()
    worker, cfg_a = _config(inputs, args.case)
    b_worker, cfg_b = _config(inputs, args.b_case or args.case)
    if b_worker != worker:
        ap.error("--case and --b-case must be the same direction")
    sides = []
    with contextlib.ExitStack() as stack:
        for label, binary, cfg in (("A", args.a, cfg_a), ("B", args.b, cfg_b)):
            work = common.OUT / "bng-ab" / label
            work.mkdir(parents=True, exist_ok=True)
            o = Ours(work, f"bng-ab-{label}", cfg, binary=binary)
            stack.enter_context(o)
            o.label = label
            sides.append(o)
        rr = ab.alternate(sides, args.rounds, warmup_s=1.0, window_s=args.window)
    cyc = {}
    cases = {"A": args.case, "B": args.b_case or args.case}
    for o in sides:
        s = summarize(rr[o], worker, o.tsc_hz)
        cyc[o.label] = [o.tsc_hz / (r[worker]["mpps_per_core"] * 1e6) for r in rr[o]]
        print(f"{cases[o.label]} {o.label}: {statistics.median(cyc[o.label]):.1f} CPU "
              "cycles/pkt; " + " ".join(f"{k} {v:.1f}" for k, v in s["stages"].items())
              # A feeder that falls behind shows as short bursts and idle polls.
              + f"; rx_burst {s['rx_burst']:.1f} idle_share {s['idle_share']:.3f}"
              + f" drops {s['drops_in_windows']}")
    per = [b / a for a, b in zip(cyc["A"], cyc["B"])]
    print(f"{args.case} B/A: median {statistics.median(per):.3f}, rounds "
          + " ".join(f"{x:.3f}" for x in per))


if __name__ == "__main__":
    main()
