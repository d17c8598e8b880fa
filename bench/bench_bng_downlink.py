"""`make bench BENCH=bng-downlink`: the vBNG downlink against DPDK's qos_sched.

Intel's vBNG white paper ("Enhancing Performance and Power Efficiency of a
Cloud-Native Broadband Network Gateway (BNG) Using 4th Gen Intel Xeon
Scalable Processors"),
its per-instance configuration: 4K subscribers (subscriber_file),
4K flows (one per subscriber), one reverse-path rule per subscriber (the
rpf stage checks each packet against its subscriber's own ranges), 5-level
HQoS (port 100 Gbit/s, one subport of 4096 pipes, 13 TCs, queues of 64;
pipes at 100 Mbit/s so nothing is shaped: the benchmark measures the cost
of scheduling, as RFC 2544 throughput does), QinQ added, 504 B frames at
the access side (496 B in from the core), and the downstream iMix of
Intel's vCMTS reference data plane benchmarks (gen's imix-down).

Peer: qos_sched (scripts/peers/qos_sched.sh) with the same hierarchy, on
the same pcap (bench/bng_inputs.downlink_frame explains how its fixed-offset
classifier is pointed at 4K pipes and the best-effort TC).  It does rx,
pkt_write, rte_sched enqueue/dequeue and tx -- no lookup, no ACL, no
encapsulation -- on two lcores (rx thread, scheduler+tx thread).  The ratio
`vs_dpdk-qos_sched` is packets per CPU-second, ours (one worker) over
qos_sched's (its rx and scheduler threads, both busy-polling);
`vs_dpdk-qos_sched_sched_core` counts only qos_sched's scheduler thread, as
if its rx core were free -- the conservative figure, since ours pays the
pcap replay's copy of every 496-byte frame inside its one core.

Also here: the downlink and the uplink together on one worker pair (case
"mixed"), cycles measured with both running, combined at the white paper's
8:1 volume mix (89% / 11%).
"""
import statistics

from bench import ab, common
from bench.bng_bench import (HQOS_PORT_RATE, Ours, Peer, dp_config, frame_gbps, mix_per_core,
                             packet_mix_per_core, result, summarize)
from bench.bng_inputs import N_SUBS, Inputs
from bench.bng_peers import QOS_SCHED_PORT_RATE, QosSched, ensure_qos_sched, write_qos_profile
from bench.bng_measure import rate

PIPE_RATE_BPS = 100_000_000


def _peer_summary(p_res):
    med = statistics.median
    wt = [rate(p["tx_pkts"], p["cpu_s"]["rte-worker-1"]) for p in p_res]
    both = [p["mpps_per_core"] for p in p_res]
    return {"mpps_per_core": med(both), "mpps_per_sched_core": med(wt),
            "mpps_wall": med(p["mpps_wall"] for p in p_res),
            "windows": [round(x, 4) for x in wt]}


def run(args):
    quick = getattr(args, "quick", False)
    rounds, seconds, warmup = (2, 1.0, 0.5) if quick else (5, 2.0, 1.0)
    inputs = Inputs()
    ensure_qos_sched()
    work = common.OUT / "bng-downlink"
    work.mkdir(parents=True, exist_ok=True)
    cases = ["504"] if quick else ["504", "imix-down"]
    out_cases, peer_cases, ratios, methods = {}, {}, {}, {}
    ratio_rounds, comparisons = {}, []
    for spec in cases:
        print(f"-- downlink {spec} B (access side), {N_SUBS} subscribers")
        pcap = inputs.downlink_pcap(spec)
        prof = write_qos_profile(work / "qos_sched.cfg", pipes=N_SUBS,
                                 pipe_rate_Bps=PIPE_RATE_BPS // 8,
                                 port_rate_Bps=QOS_SCHED_PORT_RATE)
        cfg = dp_config(inputs, down_pcap=pcap, lcores="0@0,1@1")
        with Ours(work, f"ours-{spec}", cfg) as ours, \
                QosSched(work, f"qos_sched-{spec}", pcap, prof) as qs:
            hz = ours.tsc_hz
            # The downlink classifies nothing; the process's uplink ACL is named
            # so that every vBNG JSON says which method this host gets.
            methods.update({f"ours:{t}": m for t, m in ours.acl_methods.items()})
            peer = Peer(qs, 1, ["rte-worker-0", "rte-worker-1"])
            res = ab.alternate([ours, peer], rounds, warmup_s=warmup, window_s=seconds)
            o_res, p_res = res[ours], res[peer]
        ours_s = summarize(o_res, "down", hz)
        ours_s["gbps_per_core"] = frame_gbps(ours_s["mpps_per_core"], spec)
        peer_s = _peer_summary(p_res)
        out_cases[spec] = ours_s
        peer_cases[spec] = peer_s
        # Ratio per round (both measured back to back), then the median.
        # Per core = packets per CPU-second of every thread that touches
        # packets: ours one worker, qos_sched its rx and scheduler threads.
        # The scheduler thread alone (its rx core free) is the conservative
        # ratio, kept as *_sched_core.
        key = "vs_dpdk-qos_sched" + ("" if spec == "504" else f"_{spec}")
        ours_mpps = lambda o: o["down"]["mpps_per_core"]  # noqa: E731
        ratios[key], ratio_rounds[key] = ab.ratio(o_res, p_res, ours_mpps, "mpps_per_core")
        ratios[key + "_sched_core"], ratio_rounds[key + "_sched_core"] = ab.ratio(
            o_res, p_res, ours_mpps, lambda p: rate(p["tx_pkts"], p["cpu_s"]["rte-worker-1"]))
        comparisons += [
            common.comparison(spec, ours_s["mpps_per_core"], "dpdk-qos_sched (2 threads)",
                              peer_s["mpps_per_core"], key, ratios[key],
                              stages_of=f"cases.{spec}", ours_rounds=ours_s["windows"]),
            common.comparison(spec, ours_s["mpps_per_core"], "dpdk-qos_sched (scheduler core)",
                              peer_s["mpps_per_sched_core"], key + "_sched_core",
                              ratios[key + "_sched_core"], stages_of=f"cases.{spec}",
                              ours_rounds=ours_s["windows"], peer_rounds=peer_s["windows"])]
        print(f"   ours {ours_s['mpps_per_core']:.3f} Mpps/core, qos_sched "
              f"{peer_s['mpps_per_core']:.3f} per core of its 2 "
              f"({peer_s['mpps_per_sched_core']:.3f} per scheduler core): ratio {ratios[key]:.3f} "
              f"({ratios[key + '_sched_core']:.3f})")

    # Both directions on one worker pair: uplink (lcore 1, CPU 1) and
    # downlink (lcore 2, CPU 0), both saturated; cycles per packet of each,
    # with the other one running, combined at the white paper's mix.
    print("-- mixed: uplink 128 B + downlink 504 B on one worker pair")
    cfg = dp_config(inputs, up_pcap=inputs.uplink_pcap("128"),
                    down_pcap=inputs.downlink_pcap("504", core_index=1), lcores="0@0,1@1,2@0")
    with Ours(work, "ours-mixed", cfg) as ours:
        hz = ours.tsc_hz
        o_res = ab.alternate([ours], rounds, warmup_s=warmup, window_s=seconds)[ours]
    up, down = summarize(o_res, "up", hz), summarize(o_res, "down", hz)
    mix = mix_per_core(down["cycles_per_pkt"], up["cycles_per_pkt"], hz)
    mix8 = packet_mix_per_core(down["cycles_per_pkt"], up["cycles_per_pkt"], hz)
    mixed = {"uplink": up, "downlink": down, "tsc_hz": hz,
             "mix_89_11_by_volume": {
                 "mpps_per_core": mix["pps"] / 1e6, "gbps_per_core": mix["gbps"],
                 "packets_down_per_up": mix["pkt_ratio_down_per_up"]},
             "packets_8_to_1": {"mpps_per_core": mix8["pps"] / 1e6,
                                "gbps_per_core": mix8["gbps"]}}
    print(f"   up {up['cycles_per_pkt']:.0f} cyc/pkt, down {down['cycles_per_pkt']:.0f} "
          f"cyc/pkt; at 89/11 by volume {mix['gbps']:.2f} Gbit/s per core")

    return result(
        "bng-downlink",
        {"rpf_rules": N_SUBS,
         "hqos": {"port_rate": HQOS_PORT_RATE, "subports": 1, "pipes": N_SUBS,
                  "pipe_rate_bps": PIPE_RATE_BPS, "tcs": 13, "qsize": 64},
         "frame": "504 B at the access side (QinQ added to 496 B)"},
        out_cases, "504", "dpdk-qos_sched", peer_cases, ratios, rounds, seconds, quick,
        extra={"mixed": mixed, "comparisons": comparisons, "ratio_rounds": ratio_rounds},
        acl_classify=methods)
