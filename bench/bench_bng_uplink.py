"""`make bench BENCH=bng-uplink`: the vBNG uplink against DPDK l3fwd (LPM).

Intel's vBNG white paper ("Enhancing Performance and Power Efficiency of a
Cloud-Native Broadband Network Gateway (BNG) Using 4th Gen Intel Xeon
Scalable Processors"),
its per-instance configuration: 4K subscribers (subscriber_file),
4K flows (one per subscriber), the 150-rule blacklist evaluated for every
packet (bench/bng_inputs.acl150: bogon sources and destinations, blocked
ports; the traffic matches none), classification on the VLAN pair (or the
PPPoE session + MAC), anti-spoofing, a trTCM policer per subscriber (rates
above the offered load: every packet is metered and green), one forwarding
rule (the white paper's "single forwarding rule": 0.0.0.0/0 to the core router),
the access header stripped.  Frames are 128 B at the access side: QinQ/IPoE
(120 B out) and QinQ/PPPoE (112 B out), plus the upstream iMix of
Intel's vCMTS reference data plane benchmarks (gen's imix-up).

Peer: l3fwd with LPM and the same single route (bench/dpdk_peer.L3fwd,
built by scripts/build-peers), on the same flows as plain Ethernet/IPv4
frames -- l3fwd cannot parse VLAN tags or PPPoE, so it gets the packets
the uplink emits (120 B).  The ratio `vs_dpdk-l3fwd` is our IPoE 128 B
rate per core over l3fwd's.

Second peer, on the main case: l3fwd --lookup=acl with the same 150 deny
rules and the single forwarding rule in one rte_acl trie
(Inputs.l3fwd_acl_rules) -- DPDK's own example doing the uplink's ACL work
and its routing and nothing else.  `vs_dpdk-l3fwd-acl` is ours over it, and
`acl_ceiling` (l3fwd-acl over l3fwd-lpm, both medians of this run) is the
most any pipeline that evaluates the white paper's 150 filters per packet with
rte_acl can reach of l3fwd-lpm before it parses an access header,
classifies, polices or encapsulates anything (docs/bng.md).  That
comparison runs GOAL_PROCS processes of each side, alternated together,
its ratio per round of each side's mean (ab.pooled_ratio: a process's
place in memory moves its figure by 2-4 % for its whole life); then a
stage-timed build of l3fwd-acl alone gives the peer's own stages
(dpdk_peer.l3fwd_acl_stages, `peer_stages`).  On an AVX-512 CPU the
same comparison runs once more with both sides started with the EAL's
--force-max-simd-bitwidth=512 (dpdk_peer.SIMD512_EAL: rte_acl's
AVX512X32 allowed), one process a side: `vs_dpdk-l3fwd-acl_simd512`.
"""
import contextlib
import statistics

from bench import ab, common, host_info
from bench.bng_bench import POLICER, Ours, Peer, dp_config, frame_gbps, result, summarize
from bench.bng_inputs import ACL_RULES, CORE_NH_MAC, N_SUBS, Inputs
from bench.bng_peers import ensure_l3fwd
from bench.dpdk_peer import SIMD512_EAL, L3fwd, l3fwd_acl_stages

GOAL_PROCS = ab.GOAL_PROCS     # processes a side in vs_dpdk-l3fwd-acl (ab.pooled_ratio)


def run(args):
    quick = getattr(args, "quick", False)
    rounds, seconds, warmup = (2, 1.0, 0.5) if quick else (5, 2.0, 1.0)
    inputs = Inputs()
    ensure_l3fwd()
    work = common.OUT / "bng-uplink"
    work.mkdir(parents=True, exist_ok=True)
    r4, r6 = inputs.l3fwd_routes()
    cases = [("128", False)] if quick else [("128", False), ("128", True), ("imix-up", False)]
    out_cases, peer_cases, ratios, acl_peer, acl512, methods = {}, {}, {}, {}, {}, {}
    extra_stages, parse_x8 = {}, {}
    ratio_rounds, comparisons = {}, []
    for spec, pppoe in cases:
        name = f"{'pppoe' if pppoe else 'ipoe'}-{spec}"
        print(f"-- uplink {name} ({N_SUBS} subscribers, {ACL_RULES}-rule ACL)")
        pcap = inputs.uplink_pcap(spec, pppoe=pppoe)
        plain = inputs.uplink_pcap(spec, pppoe=pppoe, encap=False)
        cfg = dp_config(inputs, up_pcap=pcap, pppoe=pppoe, lcores="0@0,1@1")
        l3 = L3fwd(work, f"l3fwd-{name}", [f"net_pcap0,rx_pcap={plain},infinite_rx=1",
                                           "net_null0"],
                   "lpm", r4, r6, lcore=1, eth_dest=CORE_NH_MAC)
        with Ours(work, f"ours-{name}", cfg) as ours:
            hz = ours.tsc_hz
            methods["ours"] = ours.acl_methods.get("bng-uplink", "unknown")
            parse_x8 = ours.parse_x8
            with l3:
                peer = Peer(l3, 1, ["l3fwd"])
                res = ab.alternate([ours, peer], rounds, warmup_s=warmup, window_s=seconds)
                o_res, p_res = res[ours], res[peer]
            if name == "ipoe-128":
                acl_peer = _vs_l3fwd_acl(work, inputs, plain, ours, cfg, rounds, seconds,
                                         warmup, methods["ours"])
                methods["dpdk-l3fwd-acl"] = acl_peer["alg"]
                ratio_rounds["vs_dpdk-l3fwd-acl"] = acl_peer.pop("ratio_rounds")
                acl_peer.pop("ours_res")
                # The peer's own stages, beside ours' in the report (never a
                # ratio), with ours paused off its core meanwhile.
                a4, a6 = inputs.l3fwd_acl_rules()
                ours.pause()
                try:
                    extra_stages = {"dpdk-l3fwd-acl": dict(l3fwd_acl_stages(
                        work, "l3fwd-acl-ipoe-128",
                        [f"net_pcap0,rx_pcap={plain},infinite_rx=1", "net_null0"], a4, a6,
                        warmup + 2 * seconds, hz / (acl_peer["mpps_per_core"] * 1e6),
                        lcore=1, eth_dest=CORE_NH_MAC, alg=acl_peer["alg"]), input=name)}
                finally:
                    ours.resume()
        if name == "ipoe-128" and "avx512f" in host_info.cpu()["simd"]:
            acl512 = _vs_l3fwd_acl_simd512(work, inputs, plain, cfg, rounds, seconds, warmup)
            methods["ours_simd512"] = methods["dpdk-l3fwd-acl_simd512"] = acl512["alg"]
            ratio_rounds["vs_dpdk-l3fwd-acl_simd512"] = acl512.pop("ratio_rounds")
            out_cases["ipoe-128/simd512"] = acl512.pop("ours")
        s = summarize(o_res, "up", hz)
        s["gbps_per_core"] = frame_gbps(s["mpps_per_core"], spec)
        out_cases[name] = s
        peer_mpps = [p["mpps_per_core"] for p in p_res]
        peer_cases[name] = {"mpps_per_core": statistics.median(peer_mpps),
                            "mpps_wall": statistics.median(p["mpps_wall"] for p in p_res),
                            "windows": [round(x, 4) for x in peer_mpps]}
        key = "vs_dpdk-l3fwd" + ("" if name == "ipoe-128" else f"_{name}")
        ratios[key], ratio_rounds[key] = ab.ratio(o_res, p_res, lambda o: o["up"]["mpps_per_core"],
                                                  "mpps_per_core")
        comparisons.append(common.comparison(
            name, s["mpps_per_core"], "dpdk-l3fwd", peer_cases[name]["mpps_per_core"], key,
            ratios[key], stages_of=f"cases.{name}", ours_rounds=s["windows"],
            peer_rounds=peer_cases[name]["windows"]))
        print(f"   ours {s['mpps_per_core']:.3f} Mpps/core, l3fwd "
              f"{peer_cases[name]['mpps_per_core']:.3f}, ratio {ratios[key]:.3f}")

    extra, more_peers = {"parse_x8": parse_x8}, {}
    if acl512:
        ratios["vs_dpdk-l3fwd-acl_simd512"] = acl512.pop("ratio")
        more_peers["dpdk-l3fwd-acl_simd512"] = acl512
        comparisons.append(common.comparison(
            "ipoe-128/simd512", out_cases["ipoe-128/simd512"]["mpps_per_core"],
            "dpdk-l3fwd-acl_simd512", acl512["mpps_per_core"], "vs_dpdk-l3fwd-acl_simd512",
            ratios["vs_dpdk-l3fwd-acl_simd512"], stages_of="cases.ipoe-128/simd512",
            ours_rounds=out_cases["ipoe-128/simd512"]["windows"], peer_rounds=acl512["windows"]))
    if acl_peer:
        ratios["vs_dpdk-l3fwd-acl"] = acl_peer.pop("ratio")
        lpm = peer_cases["ipoe-128"]["mpps_per_core"]
        more_peers["dpdk-l3fwd-acl"] = acl_peer
        ours_beside = acl_peer.pop("ours_windows")    # ours as measured beside this peer
        comparisons.append(common.comparison(
            "ipoe-128", ab.median(ours_beside), "dpdk-l3fwd-acl", acl_peer["mpps_per_core"],
            "vs_dpdk-l3fwd-acl", ratios["vs_dpdk-l3fwd-acl"], stages_of="cases.ipoe-128",
            ours_rounds=ours_beside, peer_rounds=acl_peer["windows"]))
        extra["acl_ceiling"] = {
            "l3fwd_acl_over_l3fwd_lpm": acl_peer["mpps_per_core"] / lpm if lpm else 0.0,
            "meaning": f"what DPDK's l3fwd reaches of its own LPM mode when it also "
                       f"evaluates the uplink's {ACL_RULES} rules per packet with rte_acl (and "
                       "does nothing else): the most a pipeline that must do that can reach "
                       "of vs_dpdk-l3fwd before any BNG work"}
    return result(
        "bng-uplink",
        {"acl_rules": ACL_RULES, "policer": POLICER, "routes": 1,
         "frame": "128 B at the access side (QinQ/IPoE; PPPoE variant 128 B)"},
        out_cases, "ipoe-128", "dpdk-l3fwd", peer_cases, ratios, rounds, seconds, quick,
        extra={**extra, "peer_stages": extra_stages, "comparisons": comparisons,
               "ratio_rounds": ratio_rounds},
        more_peers=more_peers, acl_classify=methods)


def _vs_l3fwd_acl(work, inputs, plain, ours, cfg, rounds, seconds, warmup, alg,
                  procs=GOAL_PROCS, extra_eal=(), tag=""):
    """ours (already running, and @p procs - 1 more processes of it on
    @p cfg) against @p procs processes of l3fwd --lookup=acl on the same
    flows, classifying with rte_acl method @p alg (ours), with @p extra_eal,
    all alternated together; the ratio per round is of each side's mean
    (ab.pooled_ratio).  Returns the peer's summary with `ratio`,
    `ratio_rounds`, `ours_windows` and `ours_res` (ours' windows, for the
    caller to pop)."""
    a4, a6 = inputs.l3fwd_acl_rules()
    apps = [L3fwd(work, f"l3fwd-acl-ipoe-128{tag}" + (f"-{k + 1}" if k else ""),
                  [f"net_pcap0,rx_pcap={plain},infinite_rx=1", "net_null0"],
                  "acl", a4, a6, lcore=1, eth_dest=CORE_NH_MAC, alg=alg, extra_eal=extra_eal)
            for k in range(procs)]
    print(f"-- uplink ipoe-128 vs l3fwd --lookup=acl ({ACL_RULES} rules + 1 route, one trie), "
          f"{procs} process{'es' if procs > 1 else ''} a side"
          + (f", both with {' '.join(extra_eal)}" if extra_eal else ""))
    with contextlib.ExitStack() as more:
        os_ = [ours] + [more.enter_context(Ours(work, f"{ours.label}-{k + 1}", cfg))
                        for k in range(1, procs)]
        peers = [Peer(more.enter_context(app), 1, ["l3fwd"]) for app in apps]
        res = ab.alternate(os_ + peers, rounds, warmup_s=warmup, window_s=seconds)
    o_res = [w for x in os_ for w in res[x]]
    p_res = [w for p in peers for w in res[p]]
    mpps = [p["mpps_per_core"] for p in p_res]
    ratio, per_round = ab.pooled_ratio([res[x] for x in os_], [res[p] for p in peers],
                                       lambda o: o["up"]["mpps_per_core"], "mpps_per_core")
    out = {"mpps_per_core": statistics.median(mpps),
           "mpps_wall": statistics.median(p["mpps_wall"] for p in p_res),
           "windows": [round(x, 4) for x in mpps], "lookup": "acl",
           "rules": f"{ACL_RULES} deny + 1 forwarding rule", "alg": alg, "ratio": ratio,
           "ratio_rounds": per_round, "procs": procs,
           "procs_mpps_per_core": [round(statistics.median(w["mpps_per_core"] for w in res[p]), 4)
                                   for p in peers],
           "ours_procs_mpps_per_core": [
               round(statistics.median(w["up"]["mpps_per_core"] for w in res[x]), 4)
               for x in os_],
           "ours_windows": [round(o["up"]["mpps_per_core"], 4) for o in o_res],
           "ours_res": o_res}
    if extra_eal:
        out["eal"] = " ".join(extra_eal)
    print(f"   l3fwd-acl {out['mpps_per_core']:.3f} Mpps/core ({alg}), "
          f"ours/l3fwd-acl {out['ratio']:.3f}")
    return out


def _vs_l3fwd_acl_simd512(work, inputs, plain, cfg, rounds, seconds, warmup):
    """_vs_l3fwd_acl again with both sides started with SIMD512_EAL
    (rte_acl's AVX512X32 allowed), one process a side: ours calibrates its
    method among all of them and l3fwd-acl gets the one ours chose.  Also
    returns `ours`, ours' summary as a case."""
    lcores = "args = --lcores=0@0,1@1"
    assert lcores in cfg, "the uplink's config names its lcores on one line"
    cfg512 = cfg.replace(lcores, f"{lcores} {SIMD512_EAL}", 1)
    with Ours(work, "ours-ipoe-128-simd512", cfg512) as ours:
        out = _vs_l3fwd_acl(work, inputs, plain, ours, cfg512, rounds, seconds, warmup,
                            ours.acl_methods.get("bng-uplink", "unknown"), procs=1,
                            extra_eal=(SIMD512_EAL,), tag="-simd512")
        out["ours"] = summarize(out.pop("ours_res"), "up", ours.tsc_hz)
    out.pop("ours_windows")
    return out
