"""`make bench BENCH=xdp-steer`: the XDP steering program's cost per path.

1. Compute cost, in-process: build/bin/xdp-steer-bench runs the program with
   BPF_PROG_TEST_RUN on pre-built frames, many repeats per call, every path
   and a no-op XDP program interleaved in each round, and reports medians.
   metrics.ns_above_floor is the full nested VXLAN+GTP-U prioritised path
   (fast parse of three levels, masked index hash, prio_map hit, cpumap
   redirect)
   minus the no-op program: the cost the steering adds to a packet. The
   timing runs at SCHED_FIFO priority 1 (compute_cost says why).
2. Wire behaviour: packets per second that a veth delivers to a namespace
   with the program attached (by the agent, one intent prioritising half of
   the flows) and without it, tcpreplay at top speed on the other end,
   alternating the configurations (and a no-op XDP program, which alone
   moves veth's receive path from the backlog to NAPI).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench import ab, common, host_info
from lab.topology import Topology

ROOT = common.ROOT
BENCH_BIN = ROOT / "build" / "bin" / "xdp-steer-bench"
AGENT = ROOT / "build" / "bin" / "edgeplane"
NOOP = ROOT / "build" / "xdp" / "noop.o"
GEN_MAC, DUT_MAC = "02:00:00:00:00:02", "02:00:00:00:00:01"

INTENT = {
    "intentId": "bench-a",
    "Resources": [
        {"resourceId": "v", "encapsulationID1": "4450", "encapsulationType1": "vxlan"},
        {"resourceId": "g", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
        {"resourceId": "f", "srcIP": "198.18.10.1", "dstPort": "5004"},
    ],
    "Action": {"actionType": "INSERT", "actionName": "PRIO_QUEUE", "rx_queue": "0"},
}


def compute_cost(quick):
    """Runs xdp-steer-bench under SCHED_FIFO (priority 1) when chrt allows.

    On this shared 2-vCPU machine other engineers' builds preempt the timing
    loop: the kernel stops its clock while the thread is off the CPU, but
    each switch leaves cold caches and branch predictors behind, and the
    median moved by 20-30 ns from run to run. At FIFO priority no ordinary
    task preempts a BPF_PROG_TEST_RUN call (each lasts 20-60 ms; the kernel's
    RT throttling keeps 5% of the CPU for others), so the median measures
    the program, not the neighbours. The no-op floor runs the same way.
    """
    repeat, rounds = (200000, 3) if quick else (1000000, 9)
    cmd = [str(BENCH_BIN), "-repeat", str(repeat), "-rounds", str(rounds)]
    sched = "SCHED_OTHER"
    if shutil.which("chrt") and subprocess.run(["chrt", "-f", "1", "true"], capture_output=True).returncode == 0:
        cmd = ["chrt", "-f", "1"] + cmd
        sched = "SCHED_FIFO 1"
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    res = json.loads(out)
    res["sched"] = sched
    return res


def write_pcap(path, frames):
    """Half flow A (prioritised by INTENT), half flow B, VXLAN then GTP-U as in
    the steering paper's Listing 1."""
    from scapy.all import Ether, IP, UDP, Raw, wrpcap
    from scapy.layers.vxlan import VXLAN
    from scapy.contrib.gtp import GTP_U_Header
    pkts = []
    for i in range(frames):
        a = i % 2 == 0
        inner = (IP(src="198.18.10.1" if a else "198.18.10.2", dst="198.18.20.1")
                 / UDP(sport=40000 + i % 64, dport=5004) / Raw(b"x" * 18))
        pkts.append(Ether(src=GEN_MAC, dst=DUT_MAC) / IP(src="198.18.0.2", dst="198.18.0.1")
                    / UDP(sport=49152 + i % 512, dport=4789) / VXLAN(vni=4450, flags=0x08)
                    / Ether(src="02:00:00:00:01:02", dst="02:00:00:00:01:01")
                    / IP(src="198.19.1.2", dst="198.19.1.1") / UDP(sport=2152, dport=2152)
                    / GTP_U_Header(teid=0x8894D0D4 if a else 0x11111111, gtp_type=255) / inner)
    wrpcap(str(path), pkts)


def rx_packets(host):
    return int(host.run("cat /sys/class/net/eth0/statistics/rx_packets").stdout)


def replay(gen, dut, pcap, loops):
    """tcpreplay at top speed; returns (sent, received, seconds)."""
    before = rx_packets(dut)
    out = gen.run(["tcpreplay", "-q", "--topspeed", f"--loop={loops}", "-i", "eth0", str(pcap)],
                  timeout=300).stdout
    time.sleep(0.2)
    got = rx_packets(dut) - before
    m = re.search(r"Actual: (\d+) packets .* in ([\d.]+) seconds", out)
    sent, secs = int(m.group(1)), float(m.group(2))
    return sent, got, secs


def start_agent(dut, tmp):
    sock = str(tmp / "api.sock")
    if os.path.exists(sock):
        os.remove(sock)
    p = dut.popen([str(AGENT), "agent", "--iface", "eth0", "--bpffs", str(tmp / "bpffs"),
                   "--state-dir", str(tmp / "state"), "--listen", "unix:" + sock, "--overload", "off"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    curl = ["curl", "-sf", "--unix-socket", sock]
    for _ in range(100):
        if dut.run(curl + ["http://x/v1/stats"], check=False).returncode == 0:
            break
        time.sleep(0.1)
    else:
        raise RuntimeError("agent did not start")
    intents = json.loads(dut.run(curl + ["http://x/v1/intents"]).stdout)["intents"]
    if not intents:
        dut.run(curl + ["-X", "POST", "-H", "Content-Type: application/json",
                        "-d", json.dumps(INTENT), "http://x/v1/intents"])
    return p


def stop_agent(dut, p, tmp):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=10)
    dut.run([str(AGENT), "detach", "--iface", "eth0", "--bpffs", str(tmp / "bpffs"),
             "--state-dir", str(tmp / "state")])


def veth_pps(quick):
    frames, loops, repeats = (1000, 30, 2) if quick else (1000, 150, 3)
    # The pcap, the agent's state and socket, and a bpffs of its own:
    # unmounted and removed at the end, also when a round fails.
    tmp = Path(tempfile.mkdtemp(prefix="bench-xdp-steer-"))
    res = {"with": [], "without": [], "noop": [], "sent_with": [], "sent_without": []}
    try:
        (tmp / "bpffs").mkdir()
        subprocess.run(["mount", "-t", "bpf", "bpf", str(tmp / "bpffs")], check=True)
        pcap = tmp / "mix.pcap"
        write_pcap(pcap, frames)
        with Topology("xb") as topo:
            gen, dut = topo.host("gen"), topo.host("dut")
            topo.link(gen, "eth0", dut, "eth0", mac_a=GEN_MAC, mac_b=DUT_MAC,
                      ipv4_a="198.18.0.2/24", ipv4_b="198.18.0.1/24")
            gen.offload_off("eth0")
            dut.offload_off("eth0")
            replay(gen, dut, pcap, 2)  # warm-up: neighbour caches, page cache

            def rates():
                sent, got, secs = replay(gen, dut, pcap, loops)
                return {"pps": got / secs, "sent_pps": sent / secs}

            def with_agent():
                p = start_agent(dut, tmp)
                try:
                    return rates()
                finally:
                    stop_agent(dut, p, tmp)

            def with_noop():
                # A veth with any XDP program receives through NAPI and a
                # ring instead of the backlog: the no-op program shows what
                # that change alone costs.
                dut.run(["ip", "link", "set", "dev", "eth0", "xdpdrv", "obj", str(NOOP), "sec", "xdp"])
                try:
                    return rates()
                finally:
                    dut.run(["ip", "link", "set", "dev", "eth0", "xdpdrv", "off"])

            said = lambda r: f"{r['pps']:.0f} pps"  # noqa: E731
            rounds = ab.alternate([ab.Call("without", rates, said), ab.Call("with", with_agent, said),
                                   ab.Call("noop", with_noop, said)], repeats)
            for k in ("without", "with", "noop"):
                res[k] = [r["pps"] for r in rounds[k]]
            res["sent_with"] = [r["sent_pps"] for r in rounds["with"]]
            res["sent_without"] = [r["sent_pps"] for r in rounds["without"]]
    finally:
        if (tmp / "bpffs").is_mount():
            subprocess.run(["umount", str(tmp / "bpffs")], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    return ({k: common.median(v) for k, v in res.items()},
            {"frames": frames, "loops": loops, "repeats": repeats},
            {k: [round(x) for x in v] for k, v in res.items()})


def cpu_mhz():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1])
    except OSError:
        pass
    return 0.0


def run(args):
    for p in (BENCH_BIN, AGENT):
        if not p.exists():
            raise RuntimeError(f"{p} missing: run `make build-xdp`")
    cost = compute_cost(args.quick)
    ns, above = cost["ns_per_pkt"], cost["ns_above_floor"]
    pps, vcfg, pps_rounds = veth_pps(args.quick)
    mhz = cpu_mhz()
    prio = ns["prioritised"]
    metrics = {
        "ns_above_floor": float(above["prioritised"]),
        "ns_per_pkt": float(prio),
        "mpps_per_core": 1e3 / prio if prio else 0.0,
        "cycles_per_pkt": prio * mhz / 1e3 if mhz else 0.0,
        "paths_ns_per_pkt": {k: float(v) for k, v in ns.items()},
        "paths_ns_above_floor": {k: float(v) for k, v in above.items()},
        # Fastest round minus fastest no-op round (xdp-steer-bench says why).
        "paths_min_ns_above_floor": {k: float(v) for k, v in cost["min_ns_above_floor"].items()},
        "veth_pps_with_xdp": pps["with"],
        "veth_pps_without_xdp": pps["without"],
        "veth_pps_noop_xdp": pps["noop"],
        "veth_sender_pps_with_xdp": pps["sent_with"],
        "veth_sender_pps_without_xdp": pps["sent_without"],
        "goal_ns_above_floor": 30.0,
    }
    peers = {
        "noop-xdp": {"ns_per_pkt": float(ns["noop"])},
        "no-xdp-veth": {"pps": pps["without"]},
        "noop-xdp-veth": {"pps": pps["noop"]},
    }
    ratios = {
        "vs_noop-xdp": prio / ns["noop"] if ns["noop"] else 0.0,
        "veth_with_vs_without_xdp": pps["with"] / pps["without"] if pps["without"] else 0.0,
        "veth_with_vs_noop_xdp": pps["with"] / pps["noop"] if pps["noop"] else 0.0,
    }
    config = {"frame": "Eth/IPv4/UDP/VXLAN/Eth/IPv4/UDP/GTP-U(+PDU session ext)/IPv4/UDP, "
                       f"{cost['frame_bytes']} bytes",
              "level_frames": "parse_plain Eth/IPv4/UDP, parse_vxlan +VXLAN/Eth/IPv4/UDP, "
                              "parse_gtpu +GTP-U(ext)/IPv4/UDP; no rule",
              "fallback_frame": "the nested frame with two GTP-U extension headers (the fast parse hands it "
                                "to the general parse at GTP-U); parse_ipv6: the nested frame IPv6 throughout "
                                "(handed on at the outer header); *_general: the program loaded without the "
                                "fast parse; no rule",
              "repeat": cost["repeat"], "rounds": cost["rounds"], "statistic": "median of rounds",
              "sched": cost["sched"],
              "veth": dict(vcfg, tool="tcpreplay --topspeed", mix="50% prioritised (cpumap), 50% passed"),
              "cpu_mhz": mhz}
    for k in ("parse_plain", "parse_vxlan", "parse_gtpu", "parse_only", "prioritised", "passed", "offloaded",
              "parse_fallback", "parse_fallback_general", "parse_ipv6", "parse_ipv6_general"):
        print(f"  path {k:<22} {ns[k]:6.1f} ns/pkt  ({above[k]:6.1f} above the no-op's {ns['noop']:.1f}; "
              f"fastest round {cost['min_ns_above_floor'][k]:5.1f} above)")
    print(f"  veth: {pps['with']:.0f} pps with XDP, {pps['without']:.0f} without, {pps['noop']:.0f} with the no-op "
          f"(sender {pps['sent_with']:.0f} / {pps['sent_without']:.0f} pps)")
    comparisons = [
        common.comparison("prioritised path", float(prio), "noop-xdp", float(ns["noop"]),
                          "vs_noop-xdp", ratios["vs_noop-xdp"], metric="ns_per_pkt",
                          unit="ns/pkt (BPF_PROG_TEST_RUN)", higher_is_better=False),
        common.comparison("veth rx, 50 % prioritised", pps["with"], "no-xdp-veth",
                          pps["without"], "veth_with_vs_without_xdp",
                          ratios["veth_with_vs_without_xdp"], metric="pps", unit="pps",
                          ours_rounds=pps_rounds["with"], peer_rounds=pps_rounds["without"])]
    # Per-round values (every path and the no-op timed in each round), and
    # what decides the cost of a helper call's return on this host: the CPU
    # and the kernel's speculative-return mitigation (SRSO "Safe RET" sends
    # every kernel ret, a helper's included, through a thunk the return
    # predictor misses).
    rounds = {k: [float(x) for x in v] for k, v in cost["samples"].items()}
    per_round_above = [p - n for p, n in zip(rounds["prioritised"], rounds["noop"])]
    return common.result("xdp-steer", config, metrics, peers, ratios,
                         extra={"comparisons": comparisons, "veth_pps_rounds": pps_rounds,
                                "rounds_ns_per_pkt": rounds,
                                "rounds_prioritised_ns_above_floor": per_round_above,
                                "cpu": host_info.cpu(), "mitigations": host_info.mitigations()})
