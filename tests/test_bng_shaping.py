"""Downlink shaping under overload, measured at the subscribers' receivers.

What rte_sched counts: the frame as the downlink hands it over -- the IP
packet plus Ethernet (14) plus the access tags (8 for QinQ), no FCS -- plus
`hqos_frame_overhead` (default 24: preamble 8 + IFG 12 + FCS 4).  The UDP
payloads here are 1176 bytes, so every datagram costs
1176 + 8 + 20 + 14 + 8 + 24 = 1250 bytes of pipe credit, and iperf3's
receiver, which counts payload, should see rate x 1176/1250.

Why 1250 and tc_period=40: rte_sched refills a pipe's traffic-class credits
to tc_rate x tc_period every period (it does not carry leftovers over), so
a TC whose rate equals the pipe rate delivers whole frames only:
floor(credits / frame) frames per period.  With 1250-byte frames, 10, 20
and 40 Mbit/s x 40 ms are exactly 40, 80 and 160 frames: the test measures
the shaper, not that rounding (with 1500-byte frames and the default 10 ms
the 10 Mbit/s pipe would give 8 frames of 12500 bytes of credit: 96%).

Why tb_size = 40 ms of the rate: when the scheduler has no credit the
downlink worker finds nothing to do and pauses (adaptive polling, 100 us
asked for); on these two shared cores a pause can last milliseconds.  A
token bucket 4 ms deep (the pipe default) overflows during such a pause
and the pipe delivers 2-5 % less than its rate (measured: the BNG's own tx
counter at 0.982 of 40 Mbit/s with the receiver losing nothing); 40 ms
buckets and 40 ms TC periods carry the credit across the pause.  The
long-term rate a bucket enforces does not depend on its depth.

Queues of 256 packets (64-160 ms at these rates): the offered load comes
from kernel iperf3 senders on the same two busy cores, which stall now
and then; a queue shorter than a stall lets the pipe run dry, which is the
sender's shortfall, not the shaper's.

Tolerance: 3 % of the rate, on the median of the receiver's 1-second
intervals after 2 s of warm-up.  The shaper itself is exact to rte_approx's
1e-7; what moves a 1-second interval is when the receiver's timer fires and
the worker's wake-up after a pause (adaptive polling, <= 100 us per 40 ms
period, 0.25 %).  A pipe that is not shaped gets the offered 1.6x; a
pipe shaped on the wrong byte count (no overhead, no tags) is off by 2-6 %.
"""
import json
import os
import statistics
import subprocess
import time

import pytest

from lab import host_load
from lab.bng_lab import Subscriber, bng_available, open_lab

PAYLOAD = 1176
FRAME_CREDIT = PAYLOAD + 8 + 20 + 14 + 8 + 24      # 1250 bytes per datagram
GOODPUT = PAYLOAD / FRAME_CREDIT
SECONDS = 9
WARMUP = 2

RATES = {"s10": 10e6, "s20": 20e6, "s40": 40e6}
SUBPORT_RATE = 24e6          # subports 1 (cap) and 2 (weights)
CAPPED = ("c1", "c2")
WEIGHTS = {"w1": 1, "w3": 3}
# The weights act through rte_sched's oversubscription watermark, which
# moves by 1/128 per subport tc_period: from one period's credits down to a
# quarter (weights 1 + 3) takes ~265 periods, 5.3 s at 20 ms.  So subport 2
# has 20 ms periods (not 40) and its run is longer and judged late.  The
# cap is judged on subport 1 (40 ms, tc_ov off): the watermark's dithering
# and the shorter periods (credits a paused worker cannot use are lost at
# the period's end) cost subport 2 a few % of its rate under load.
WEIGHTED_TC_PERIOD = 20
WEIGHTED_SECONDS = 14
WEIGHTED_WARMUP = 7


@pytest.fixture(scope="module")
def lab(request, dp_binary):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    subs = [Subscriber("s10", id=21, qinq=(100, 221), pipe="r10"),
            Subscriber("s20", id=22, qinq=(100, 222), pipe="r20"),
            Subscriber("s40", id=23, qinq=(100, 223), pipe="r40"),
            Subscriber("e", id=24, qinq=(100, 224), pipe="r20"),
            Subscriber("c1", id=25, qinq=(100, 225), pipe="r40", subport=1),
            Subscriber("c2", id=26, qinq=(100, 226), pipe="r40", subport=1),
            Subscriber("w1", id=27, qinq=(100, 227), pipe="w1", subport=2),
            Subscriber("w3", id=28, qinq=(100, 228), pipe="w3", subport=2)]
    # tb_size = 40 ms of the rate (the default is 4 ms): see the module doc.
    pipes = {"r10": "rate=10M tc_period=40 tb_size=50000",
             "r20": "rate=20M tc_period=40 tb_size=100000",
             "r40": "rate=40M tc_period=40 tb_size=200000",
             "w1": "rate=40M tc_period=40 tb_size=200000 tc_ov_weight=1",
             "w3": "rate=40M tc_period=40 tb_size=200000 tc_ov_weight=3"}
    subports = {0: "rate=1G pipes=64",
                1: f"rate={int(SUBPORT_RATE)} pipes=64 tc_period=40 tb_size=120000",
                2: f"rate={int(SUBPORT_RATE)} pipes=64 tc_period={WEIGHTED_TC_PERIOD} "
                   "tb_size=120000 tc_ov=on"}
    lab = open_lab(request, subs, tag="bs", pipes=pipes, subports=subports,
                   bng_extra={"hqos_qsize": 256})
    for s in subs:
        # The receivers must not be what drops: 4 MB socket buffers hold
        # ~0.8 s at 40 Mbit/s, whatever else the two cores are doing.
        s.host.run(["sysctl", "-qw", "net.core.rmem_max=8388608"], check=False)
        for port in (5201, 5202):
            _json_server(s.host, port)
    return lab


def _json_server(host, port):
    """iperf3 -s in JSON mode, so --get-server-output hands the receiver's
    own per-interval report back to the client."""
    host.popen(["iperf3", "-s", "-J", "-p", str(port)], stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if host.run(["ss", "-Hltn", f"sport = :{port}"], check=False).stdout.strip():
            return
        time.sleep(0.05)
    raise RuntimeError(f"iperf3 server in {host.name} not listening on {port}")


def _client(lab, sub, bitrate, port=5201, dscp=None, seconds=SECONDS):
    argv = ["iperf3", "-c", sub.ipv4, "-p", str(port), "-u", "-b", str(int(bitrate)),
            "-l", str(PAYLOAD), "-t", str(seconds), "-w", "4M", "--json",
            "--get-server-output"]
    if dscp:
        argv += ["--dscp", dscp]
    return lab.core.popen(argv)


def _receiver(proc, timeout=SECONDS + 30, warmup=WARMUP):
    out, err = proc.communicate(timeout=timeout)
    rep = json.loads(out)
    if "error" in rep:
        raise RuntimeError(f"iperf3: {rep['error']}")
    srv = rep.get("server_output_json") or {}
    ivals = [iv["sum"] for iv in srv.get("intervals", [])]
    steady = [iv["bits_per_second"] for iv in ivals[warmup:-1] if iv["seconds"] > 0.5]
    # The rate judged is the median over sliding 2-second windows.  A
    # saturated subport with 40 ms periods hands out its credits in rounds
    # of about 80 ms, so 1-second intervals alternate between 12 and 13
    # rounds: 1.04 / 0.96 of the rate, in phase for every pipe (seen in CI:
    # 11.74, 10.84, 11.74, ... Mbit/s, whose median is 4 % short while the
    # mean is exact).  Adjacent pairs cancel that beat; the median of the
    # pairs still ignores a second in which the worker was starved.
    pairs = [(a + b) / 2 for a, b in zip(steady, steady[1:])] or steady
    end = srv.get("end", {}).get("sum", {})
    return {"median_bps": statistics.median(pairs) if pairs else 0.0,
            "intervals": [round(x / 1e6, 3) for x in steady],
            "lost_percent": end.get("lost_percent", 0.0), "packets": end.get("packets", 0)}


def _three_pipes(lab):
    procs = {n: _client(lab, lab.sub(n), 1.6 * r) for n, r in RATES.items()}
    res = {n: _receiver(p) for n, p in procs.items()}
    res["loadavg"] = os.getloadavg()[0]
    return res


def test_bng_three_pipes_each_get_their_rate(lab):
    """Up to three runs.  A starved worker (the cores are shared) can only make
    a pipe deliver less -- rte_sched resets TC credits each period, so a
    period the worker sleeps through is lost -- never more; a shaper that
    is wrong is wrong in both runs."""
    runs = []
    for _attempt in range(3):
        res = _three_pipes(lab)
        runs.append(res)
        for n in RATES:
            # Overload really happened: a third of what was offered was dropped.
            assert res[n]["lost_percent"] > 25, (n, res[n])
            # Never above the rate, in any run (beyond the 3 % bound).
            assert res[n]["median_bps"] < RATES[n] * GOODPUT * 1.03, (n, res[n])
        if all(abs(res[n]["median_bps"] / (r * GOODPUT) - 1) < 0.03 for n, r in RATES.items()):
            return
    if all(host_load.overloaded(r["loadavg"]) for r in runs):
        pytest.skip("host too loaded to judge shaping: load average "
                    f"{[round(r['loadavg'], 1) for r in runs]} on {os.cpu_count()} CPUs")
    pytest.fail("pipe rates off by more than 3 % in every run: " + "; ".join(
        f"{n}: " + ", ".join(f"{r[n]['median_bps'] / (RATES[n] * GOODPUT):.3f}" for r in runs)
        for n in RATES) + f"\n{runs}")


def _pings(host, dst, tos, count=25):
    r = host.run(["ping", "-n", "-Q", str(tos), "-c", str(count), "-i", "0.1", "-W", "2", dst],
                 check=False, timeout=30)
    rtts = [float(x.split("time=")[1].split()[0]) for x in r.stdout.splitlines() if "time=" in x]
    return rtts


def _ef_run(lab):
    e = lab.sub("e")
    # 12 s, judged from the 5th: the flood's sender takes a few seconds to
    # reach its rate on the loaded cores (seen: 9 -> 16.8 Mbit/s delivered).
    be = _client(lab, e, 40e6, port=5201, seconds=12)           # 2x the 20 Mbit/s pipe
    ef = _client(lab, e, 2e6, port=5202, dscp="EF", seconds=12)
    time.sleep(5)
    rtt_ef = _pings(lab.core, e.ipv4, 0xb8)                     # DSCP 46 -> TC 0
    # DSCP 0 -> TC 12, the flood's queue, where most pings are dropped with it.
    rtt_be = _pings(lab.core, e.ipv4, 0x00, count=40)
    return _receiver(be, warmup=5), _receiver(ef, warmup=5), rtt_ef, rtt_be


def test_bng_expedited_keeps_throughput_and_latency_under_best_effort_overload(lab):
    """Up to two runs for the pipe-total check only (starvation, see the
    three-pipe test); the EF checks must hold in the run that is judged."""
    for _attempt in range(2):
        r_be, r_ef, rtt_ef, rtt_be = _ef_run(lab)
        total = r_be["median_bps"] + r_ef["median_bps"]
        if abs(total / (20e6 * GOODPUT) - 1) < 0.03:
            break
    # Best effort was overloaded and got what the pipe had left.
    assert r_be["lost_percent"] > 30, r_be
    # EF kept its throughput: next to nothing lost, its full rate received.
    assert r_ef["lost_percent"] < 1.0, r_ef
    assert r_ef["median_bps"] > 0.97 * 2e6, r_ef
    # The pipe as a whole stayed at its rate (EF inside it, not on top).
    ok = abs(total / (20e6 * GOODPUT) - 1) < 0.03
    _skip_if_overloaded(ok, os.getloadavg()[0])
    assert ok, (total, r_be, r_ef)
    # And low latency: EF does not queue behind the flood (relative, not an
    # absolute threshold: the BE queue holds 256 x 1250 B, ~140 ms at this rate).
    assert len(rtt_ef) >= 20 and len(rtt_be) >= 5, (rtt_ef, rtt_be)
    assert statistics.median(rtt_ef) * 4 < statistics.median(rtt_be), (rtt_ef, rtt_be)


def _subport_run(lab, names, seconds=SECONDS, warmup=WARMUP, attempts=2):
    """Each subscriber of @p names offered 36 Mbit/s (its pipe is 40) through
    a 24 Mbit/s subport.  Another run if one fell short of the subport's
    rate (starved worker, as in the three-pipe test)."""
    for _attempt in range(attempts):
        procs = {n: _client(lab, lab.sub(n), 36e6, seconds=seconds) for n in names}
        res = {n: _receiver(p, timeout=seconds + 30, warmup=warmup) for n, p in procs.items()}
        total = sum(r["median_bps"] for r in res.values())
        if abs(total / (SUBPORT_RATE * GOODPUT) - 1) < 0.03:
            break
    res["loadavg"] = os.getloadavg()[0]
    return res


def _skip_if_overloaded(ok, load):
    if not ok and host_load.overloaded(load):
        pytest.skip(f"host too loaded to judge shaping: load average {load:.1f} on "
                    f"{os.cpu_count()} CPUs")


def test_bng_subport_caps_its_pipes(lab):
    run = _subport_run(lab, CAPPED)
    res = {n: run[n] for n in CAPPED}
    total = sum(r["median_bps"] for r in res.values())
    ok = abs(total / (SUBPORT_RATE * GOODPUT) - 1) < 0.03
    _skip_if_overloaded(ok, run["loadavg"])
    assert ok, res
    for r in res.values():
        assert r["lost_percent"] > 25, res


def test_bng_subport_shared_by_weights(lab):
    res = _subport_run(lab, WEIGHTS, WEIGHTED_SECONDS, WEIGHTED_WARMUP, attempts=1)
    share = res["w3"]["median_bps"] / res["w1"]["median_bps"]
    # rte_sched enforces the weights through the subport's oversubscription
    # watermark, adjusted once per subport tc_period: approximate, so +-25 %.
    print(f"weights 1:3 -> share 1:{share:.3f}", res)
    ok = 3 / 1.25 < share < 3 * 1.25
    _skip_if_overloaded(ok, res["loadavg"])
    assert ok, (share, res)
