"""`make bench BENCH=bng-downlink`: the vBNG downlink against DPDK's qos_sched.

Intel's vBNG white paper ("Enhancing Performance and Power Efficiency of a
Cloud-Native Broadband Network Gateway (BNG) Using 4th Gen Intel Xeon
Scalable Processors"),
its per-instance configuration: 4K subscribers (subscriber_file),
4K flows (one per subscriber), one reverse-path rule per subscriber (the
rpf stage checks each packet against its subscriber's own ranges), 5-level
HQoS (port 100 Gbit/s, one subport of 4096 pipes, 13 TCs, queues of 64;
pipes at 100 Mbit/s so nothing is shaped but in the congested case: the
benchmark measures the cost of scheduling, as RFC 2544 throughput does), QinQ added, 504 B frames at
the access side (496 B in from the core), and the downstream iMix of
Intel's vCMTS reference data plane benchmarks (gen's imix-down).

Peer: qos_sched (scripts/peers/qos_sched.sh) with the same hierarchy, on
the same pcap (bench/bng_inputs.downlink_frame explains how its fixed-offset
classifier is pointed at 4K pipes and the best-effort TC), on two lcores:

  rx thread (CPU 0)       net_pcap rx (copy of each frame into a fresh
                          mbuf), its classifier and rte_sched_port_pkt_write,
                          rte_ring enqueue
  scheduler thread (CPU 1) rte_ring dequeue (64), rte_sched enqueue (64),
                          rte_sched dequeue (32), tx burst to net_null

Ours, up to three processes per case:

  fed ahead (the headline) a feeder worker (CPU 0) runs the replay pipeline
                          (dataplane/gen/replay.h): the pcap's frames learnt
                          once, then sent in the same order in fresh mbufs
                          of which it writes only the first 64 bytes (the
                          headers the worker reads) and the lengths, ~40-90
                          cycles a packet; the downlink worker (CPU 1) does
                          rte_ring dequeue (net_ring rx, 32), parse,
                          neighbour check, lookup, reverse-path check,
                          encapsulation, DSCP map, its scheduler's enqueue
                          (32) and dequeue (32), tx burst to net_null
  xconnect-fed (504 only)  the same worker behind a feeder doing net_pcap rx
                          (a copy of every byte of every frame, ~250 cycles
                          a packet) into the net_ring port: slower than the
                          worker, so it measures that feeder
  pcap rx                 the downlink worker reads net_pcap itself: the
                          copy of every frame is on its core

Keys (packets sent per CPU-second; per-round ratios, then the median):
`vs_dpdk-qos_sched_sched_core` is ours fed ahead over qos_sched's scheduler
thread: each measured core takes ready mbufs off a ring that another core
fills faster than it drains it, and ours does everything the peer's core
does plus the lookup, the reverse-path check, the encapsulation and the
scheduling-path write the peer does on its rx thread.  Neither core reads
frame bytes that its feeder did not write (qos_sched's scheduler reads
none; ours the first line), so the two feeders' different copies are not
in the comparison.  That both cores were the bottleneck is in the JSON:
ours' `idle_share` (polls that found the ring empty) and its feeder's own
rate (`cases.<case>.feeder`); for the peer, its rx thread's packets per
CPU-second (`rx_thread_mpps_per_core`) and the share of them it freed at
the full ring (`rx_not_sent_share`: above 0, the rx thread outran the
scheduler, which then did not wait for it; 0, the scheduler may have
waited and the key flatters ours).  qos_sched's logic is not touched.
`..._sched_core_xconnect_fed` is ours behind the xconnect feeder over the
same scheduler thread (what the key measured before the replay existed:
our worker drained the ring and waited in its parse for lines still in
the feeder's core, 10.2-10.4 Mpps per CPU-second on the quiet Xeon).
`..._sched_core_pcap_rx` is ours reading the pcap over the same scheduler
thread (the copy that qos_sched's rx thread pays counted on ours only).
`vs_dpdk-qos_sched` is ours reading the pcap (one core doing all) over
qos_sched's rx and scheduler threads together.

Case 504-congested (bench/bng_inputs.Inputs.downlink_congested_pcap): half
of the packets go to 8 pipes offered several times their 100 Mbit/s, so
their queues stay full and rte_sched's tail drop and backlogged-pipe
scheduling run on every burst; the other half keep the core the
bottleneck.  The key counts packets sent (goodput) per CPU-second of each
side's scheduling core; cases.504-congested.rx_mpps_per_core is ours'
intake.  A scheduler that is cheap only when nothing queues cannot hide
there.

Also here: the downlink and the uplink together on one worker pair (case
"mixed"), cycles measured with both running, combined at the white paper's
8:1 volume mix (89% / 11%).
"""
import contextlib
import statistics

from bench import ab, common
from bench.bng_bench import (HQOS_PORT_RATE, Ours, Peer, dp_config, frame_gbps, mix_per_core,
                             packet_mix_per_core, result, ring_fed_down_config, summarize)
from bench.bng_inputs import CONGESTED_HEAVY_PIPES, N_SUBS, Inputs
from bench.bng_peers import QOS_SCHED_PORT_RATE, QosSched, ensure_qos_sched, write_qos_profile
from bench.bng_measure import rate

PIPE_RATE_BPS = 100_000_000


def _peer_summary(p_res):
    med = statistics.median
    wt = [rate(p["tx_pkts"], p["cpu_s"]["rte-worker-1"]) for p in p_res]
    both = [p["mpps_per_core"] for p in p_res]
    # What bounds the scheduler core: its rx thread's packets per CPU-second
    # and the share of them freed at the full ring (above 0: the rx thread
    # outran the scheduler, which then did not wait; 0 on a quiet machine:
    # the scheduler may have waited for its rx thread).
    return {"mpps_per_core": med(both), "mpps_per_sched_core": med(wt),
            "mpps_wall": med(p["mpps_wall"] for p in p_res),
            "rx_thread_mpps_per_core": med(p["rx_mpps_per_rx_core"] for p in p_res),
            "rx_not_sent_share": round(med(p["rx_not_sent_share"] for p in p_res), 4),
            "rx_not_sent_share_windows": [round(p["rx_not_sent_share"], 4) for p in p_res],
            "cpu_s_windows": [{t: round(c, 3) for t, c in p["cpu_s"].items()} for p in p_res],
            "windows": [round(x, 4) for x in wt]}


def _feeder_summary(o_res, hz):
    """The replay feeder beside our worker: packets it produced per
    CPU-second (it never waits: what the ring does not take is dropped,
    tx_full) against what the worker took."""
    f = summarize(o_res, "feed", hz)
    return {"produced_mpps_per_core": f["rx_mpps_per_core"],
            "sent_mpps_per_core": f["mpps_per_core"],
            "cycles_per_produced_pkt": f["tsc_cycles_per_pkt"], "stages": f["stages_tsc"]}


def _case_key(spec):
    return "" if spec == "504" else f"_{spec}"


def run(args):
    quick = getattr(args, "quick", False)
    rounds, seconds, warmup = (2, 1.0, 0.5) if quick else (5, 2.0, 1.0)
    inputs = Inputs()
    ensure_qos_sched()
    work = common.OUT / "bng-downlink"
    work.mkdir(parents=True, exist_ok=True)
    # (case, frame sizes, pcap, the same frames addressed to the ring
    # port, also measure ours reading the pcap on its own core, also
    # measure ours behind the xconnect feeder)
    cases = [("504", "504", inputs.downlink_pcap("504"),
              inputs.downlink_pcap("504", ring=True), True, True)]
    if not quick:
        cases += [("imix-down", "imix-down", inputs.downlink_pcap("imix-down"),
                   inputs.downlink_pcap("imix-down", ring=True), True, False),
                  ("504-congested", "504", inputs.downlink_congested_pcap(),
                   inputs.downlink_congested_pcap(ring=True), False, False)]
    out_cases, peer_cases, ratios, methods = {}, {}, {}, {}
    ratio_rounds, comparisons = {}, []
    for spec, sizes, pcap, ring_pcap, with_pcap_rx, with_xconnect in cases:
        print(f"-- downlink {spec} (access side), {N_SUBS} subscribers")
        prof = write_qos_profile(work / "qos_sched.cfg", pipes=N_SUBS,
                                 pipe_rate_Bps=PIPE_RATE_BPS // 8,
                                 port_rate_Bps=QOS_SCHED_PORT_RATE)
        ring_cfg = dp_config(inputs, down_pcap=ring_pcap, ring_feed=True)
        pcap_cfg = dp_config(inputs, down_pcap=pcap, lcores="0@0,1@1")
        replay_cfg = ring_fed_down_config(inputs, ring_pcap, feeder="replay")
        with contextlib.ExitStack() as stack:
            fed = stack.enter_context(Ours(work, f"ours-replay-{spec}", replay_cfg))
            ring = (stack.enter_context(Ours(work, f"ours-ring-{spec}", ring_cfg))
                    if with_xconnect else None)
            own = (stack.enter_context(Ours(work, f"ours-pcap-{spec}", pcap_cfg))
                   if with_pcap_rx else None)
            qs = stack.enter_context(QosSched(work, f"qos_sched-{spec}", pcap, prof))
            hz = fed.tsc_hz
            # The downlink classifies nothing; the process's uplink ACL is named
            # so that every vBNG JSON says which method this host gets.
            methods.update({f"ours:{t}": m for t, m in fed.acl_methods.items()})
            peer = Peer(qs, 1, ["rte-worker-0", "rte-worker-1"], rx_port=0,
                        rx_thread="rte-worker-0")
            res = ab.alternate([ring, fed, own, peer], rounds, warmup_s=warmup,
                               window_s=seconds)
            f_res, p_res = res[fed], res[peer]
            o_res = res[own] if own is not None else None
            r_res = res[ring] if ring is not None else None
        peer_s = _peer_summary(p_res)
        peer_cases[spec] = peer_s
        ck = _case_key(spec)
        ours_mpps = lambda o: o["down"]["mpps_per_core"]  # noqa: E731
        sched_mpps = lambda p: rate(p["tx_pkts"], p["cpu_s"]["rte-worker-1"])  # noqa: E731
        # Ratio per round (all measured back to back), then the median.
        # The headline, like for like: our worker and qos_sched's scheduler
        # thread each take ready mbufs off a ring that another core fills
        # faster than they drain it (ours: the replay feeder; the peer: its
        # rx thread, whose surplus peer_s records).
        fed_s = summarize(f_res, "down", hz)
        fed_s["gbps_per_core"] = frame_gbps(fed_s["mpps_per_core"], sizes)
        fed_s["rx"] = ("net_ring (rte_ring dequeue), filled by the replay feeder (the "
                       "pcap's frames, 64 bytes of each written per send)")
        fed_s["feeder"] = _feeder_summary(f_res, hz)
        out_cases[spec] = fed_s
        key = f"vs_dpdk-qos_sched{ck}_sched_core"
        ratios[key], ratio_rounds[key] = ab.ratio(f_res, p_res, ours_mpps, sched_mpps)
        comparisons.append(common.comparison(
            spec, fed_s["mpps_per_core"],
            "dpdk-qos_sched (scheduler core; ours fed ahead by the replay feeder)",
            peer_s["mpps_per_sched_core"], key, ratios[key], stages_of=f"cases.{spec}",
            ours_rounds=fed_s["windows"], peer_rounds=peer_s["windows"]))
        line = (f"   ours fed ahead {fed_s['mpps_per_core']:.3f} Mpps/core (idle "
                f"{fed_s['idle_share']:.3f}, feeder "
                f"{fed_s['feeder']['produced_mpps_per_core']:.1f}), qos_sched's scheduler "
                f"core {peer_s['mpps_per_sched_core']:.3f} (its rx thread "
                f"{peer_s['rx_thread_mpps_per_core']:.3f}, not sent "
                f"{peer_s['rx_not_sent_share']:.3f}): {ratios[key]:.3f}")
        if r_res is not None:
            # The same worker behind the xconnect feeder (net_pcap's copy
            # of every frame), which it outruns: a figure of that feeder.
            ring_s = summarize(r_res, "down", hz)
            ring_s["gbps_per_core"] = frame_gbps(ring_s["mpps_per_core"], sizes)
            ring_s["rx"] = ("net_ring (rte_ring dequeue), filled by an xconnect feeder "
                            "(net_pcap rx: every byte of every frame copied)")
            out_cases[f"{spec}/xconnect-fed"] = ring_s
            xc = f"vs_dpdk-qos_sched{ck}_sched_core_xconnect_fed"
            ratios[xc], ratio_rounds[xc] = ab.ratio(r_res, p_res, ours_mpps, sched_mpps)
            comparisons.append(common.comparison(
                spec, ring_s["mpps_per_core"],
                "dpdk-qos_sched (scheduler core; ours behind the xconnect feeder)",
                peer_s["mpps_per_sched_core"], xc, ratios[xc],
                stages_of=f"cases.{spec}/xconnect-fed", ours_rounds=ring_s["windows"],
                peer_rounds=peer_s["windows"]))
            line += (f"; ours xconnect-fed {ring_s['mpps_per_core']:.3f} (idle "
                     f"{ring_s['idle_share']:.3f}): {ratios[xc]:.3f}")
        if o_res is not None:
            # Ours reading the pcap itself (net_pcap's copy on our core):
            # against qos_sched's two threads per CPU-second (the whole
            # work on both sides), and against its scheduler thread alone.
            own_s = summarize(o_res, "down", hz)
            own_s["gbps_per_core"] = frame_gbps(own_s["mpps_per_core"], sizes)
            own_s["rx"] = "net_pcap (copy of every frame into a fresh mbuf) on the worker"
            out_cases[f"{spec}/pcap-rx"] = own_s
            both = f"vs_dpdk-qos_sched{ck}"
            ratios[both], ratio_rounds[both] = ab.ratio(o_res, p_res, ours_mpps, "mpps_per_core")
            alone = f"vs_dpdk-qos_sched{ck}_sched_core_pcap_rx"
            ratios[alone], ratio_rounds[alone] = ab.ratio(o_res, p_res, ours_mpps, sched_mpps)
            comparisons += [
                common.comparison(spec, own_s["mpps_per_core"],
                                  "dpdk-qos_sched (2 threads; ours pcap rx)",
                                  peer_s["mpps_per_core"], both, ratios[both],
                                  stages_of=f"cases.{spec}/pcap-rx",
                                  ours_rounds=own_s["windows"]),
                common.comparison(spec, own_s["mpps_per_core"],
                                  "dpdk-qos_sched (scheduler core; ours pcap rx)",
                                  peer_s["mpps_per_sched_core"], alone, ratios[alone],
                                  stages_of=f"cases.{spec}/pcap-rx",
                                  ours_rounds=own_s["windows"], peer_rounds=peer_s["windows"])]
            line += (f"; ours pcap rx {own_s['mpps_per_core']:.3f}: {ratios[alone]:.3f}, per "
                     f"core of qos_sched's 2 ({peer_s['mpps_per_core']:.3f}) {ratios[both]:.3f}")
        print(line)

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
         "frame": "504 B at the access side (QinQ added to 496 B)",
         "ours_rx": "cases.<case>: net_ring filled by the replay feeder (fed ahead); "
                    "cases.<case>/xconnect-fed: net_ring filled by net_pcap rx through "
                    "an xconnect; cases.<case>/pcap-rx: net_pcap on the worker",
         "congested": {"heavy_pipes": CONGESTED_HEAVY_PIPES, "heavy_share": 0.5}},
        out_cases, "504", "dpdk-qos_sched", peer_cases, ratios, rounds, seconds, quick,
        extra={"mixed": mixed, "comparisons": comparisons, "ratio_rounds": ratio_rounds},
        acl_classify=methods)
