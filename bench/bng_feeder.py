"""How fast the ring-fed downlink benchmark's feeder can go.

`make bench BENCH=bng-downlink`'s ring-fed cases run our downlink worker
behind a feeder worker on the other CPU, as qos_sched's rx thread feeds
its scheduler thread: the key (`vs_dpdk-qos_sched_sched_core`) behind the
replay feeder, `..._xconnect_fed` behind an xconnect (net_pcap rx, every
frame copied into a fresh mbuf, then net_ring).  A worker faster than its
feeder cannot show it: it drains the ring as it fills and waits on lines
the feeder has just written.  This tool measures the feeder with
the same configuration (bench/bng_bench.py, ring_feed=True) and, as its
consumer, either the downlink worker or an xconnect from the ring to
net_null that does nothing to the frames, so the feeder's own limit shows:

    .venv/bin/python -m bench.bng_feeder [--feeder pcap|replay]
        [--consumer xconnect|downlink] [--binary build/dp/edgeplane-dp]
        [--windows 3] [--peer [--peer-frames 504|64]]

Prints, per 2-second window and worker: packets per CPU-second, per
wall-second, busy cycles a packet and the share of idle polls.
"""
import argparse
import tempfile
from pathlib import Path

from bench import bng_bench, bng_peers, common
from bench.bng_inputs import N_SUBS, Inputs

XCONNECT_CONSUMER = ("[worker down]\npipeline = xconnect\nrx = core\n"
                     "pairs = core:access\nlcore = 1")
DOWNLINK_CONSUMER = "[worker down]\npipeline = bng-downlink\nrx = core\nlcore = 1"


def feeder_config(consumer, feeder="pcap"):
    inputs = Inputs()
    cfg = bng_bench.ring_fed_down_config(inputs, inputs.downlink_pcap("504", ring=True),
                                         feeder=feeder)
    if consumer == "xconnect":
        if DOWNLINK_CONSUMER not in cfg:
            raise RuntimeError("bench/bng_bench.py's ring-fed layout changed")
        cfg = cfg.replace(DOWNLINK_CONSUMER, XCONNECT_CONSUMER)
        cfg = cfg[:cfg.index("[bng]")]
    return cfg


def peer_windows(work, windows, pcap=None):
    """qos_sched alone on the benchmark's input and profile: per window its
    rx thread's packets per CPU-second (net_pcap's infinite rx never runs
    dry, so this is the thread's capacity), its scheduler thread's, and the
    share of the rx thread's packets freed at the full ring (rx - tx)."""
    inputs = Inputs()
    bng_peers.ensure_qos_sched()
    prof = bng_peers.write_qos_profile(work / "qos_sched.cfg", pipes=N_SUBS,
                                       pipe_rate_Bps=100_000_000 // 8,
                                       port_rate_Bps=bng_peers.QOS_SCHED_PORT_RATE)
    out = []
    with bng_peers.QosSched(work, "feeder-peer", pcap or inputs.downlink_pcap("504"),
                            prof) as qs:
        peer = bng_bench.Peer(qs, 1, ["rte-worker-0", "rte-worker-1"], rx_port=0,
                              rx_thread="rte-worker-0")
        for _ in range(windows):
            w = peer.measure(2.0)
            w["sched_mpps_per_core"] = bng_bench.rate(w["tx_pkts"], w["cpu_s"]["rte-worker-1"])
            out.append(w)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--consumer", choices=("xconnect", "downlink"), default="xconnect")
    ap.add_argument("--binary", default=str(common.ROOT / "build" / "dp" / "edgeplane-dp"))
    ap.add_argument("--feeder", choices=("pcap", "replay"), default="pcap")
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--peer", action="store_true",
                    help="measure qos_sched's rx and scheduler threads instead")
    ap.add_argument("--peer-frames", default="504",
                    help="--peer: the frame sizes of its pcap (504; 64 for the same flows in "
                         "64-byte frames: what net_pcap's rx costs without the copy's size)")
    args = ap.parse_args()
    # The data plane's (or the peer's) configs and logs: removed at the
    # end, also when a window fails.
    with tempfile.TemporaryDirectory(prefix="bng-feeder-") as work:
        feed(args, Path(work))


def feed(args, work):
    if args.peer:
        pcap = Inputs().downlink_pcap(args.peer_frames)
        for i, w in enumerate(peer_windows(work, args.windows, pcap=pcap)):
            print(f"window {i + 1} qos_sched rx thread {w['rx_mpps_per_rx_core']:7.3f} Mpps/core, "
                  f"scheduler {w['sched_mpps_per_core']:7.3f} Mpps/core, "
                  f"{w['mpps_wall']:7.3f} Mpps wall, not sent {w['rx_not_sent_share']:.3f}")
        return
    with bng_bench.Ours(work, f"feeder-{args.consumer}",
                        feeder_config(args.consumer, args.feeder),
                        binary=args.binary) as ours:
        for i in range(args.windows):
            res = ours.measure(2.0)
            for name, w in res.items():
                print(f"window {i + 1} {name:5s} {w['mpps_per_core']:7.3f} Mpps/core "
                      f"{w['mpps_wall']:7.3f} Mpps wall {w['cycles_per_pkt']:6.1f} cycles/pkt "
                      f"idle {w['idle_share']:.3f} stages "
                      + " ".join(f"{s} {c:.1f}" for s, c in w["stages"].items()))


if __name__ == "__main__":
    main()
