"""The vBNG downlink benchmark's inputs and its ring-fed configuration do
what bench/bench_bng_downlink.py says they do.

- The congested input sends half of its frames to CONGESTED_HEAVY_PIPES
  subscribers and spreads the other half, one frame each, over the rest.
- The ring-fed copy of an input is the same frames with the net_ring
  port's destination MAC, nothing else changed.
- The ring-fed configuration, with either feeder (net_pcap rx behind an
  xconnect, or the replay of the pcap's frames writing only their first 64
  bytes), really feeds the downlink worker through the
  ring: the frames the feeder sends reach the downlink worker's rx, none
  is dropped before the scheduler (addressed to another MAC, unknown
  subscriber), and the worker sends.
"""
import pytest

from bench.bng_bench import dp_config, ring_fed_down_config
from bench.bng_inputs import CONGESTED_HEAVY_PIPES, N_PKTS, RING_MAC, Inputs
from lab.dp import Dp, wait_for

N = 64     # subscribers: the frames' shape does not depend on the count


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    i = Inputs(n_subs=N)
    i.dir = tmp_path_factory.mktemp("bng-down-inputs")
    return i


def _frames(path):
    from scapy.utils import rdpcap
    return [bytes(p) for p in rdpcap(str(path))]


def test_congested_input_sends_half_to_the_heavy_pipes(inputs):
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether
    frames = _frames(inputs.downlink_congested_pcap())
    assert len(frames) == N_PKTS
    # 504 B on the access wire: 8 bytes of QinQ added, the FCS not in the pcap.
    assert all(len(f) == 504 - 8 - 4 for f in frames)
    subs = [Ether(f)[IP].id for f in frames]           # qos_sched's pipe field
    heavy = [s for s in subs if s < CONGESTED_HEAVY_PIPES]
    assert len(heavy) == N_PKTS // 2
    assert {s: heavy.count(s) for s in set(heavy)} == {
        s: N_PKTS // 2 // CONGESTED_HEAVY_PIPES for s in range(CONGESTED_HEAVY_PIPES)}
    light = {s for s in subs if s >= CONGESTED_HEAVY_PIPES}
    assert light == set(range(CONGESTED_HEAVY_PIPES, N))


@pytest.mark.parametrize("which", ["504", "congested"])
def test_ring_input_differs_only_in_the_destination_mac(inputs, which):
    def pcap(**kw):
        return (inputs.downlink_congested_pcap(**kw) if which == "congested"
                else inputs.downlink_pcap("504", **kw))
    plain, ring = _frames(pcap()), _frames(pcap(ring=True))
    assert len(plain) == len(ring)
    mac = bytes.fromhex(RING_MAC.replace(":", ""))
    for a, b in zip(plain, ring):
        assert b[:6] == mac and a[:6] != mac
        assert a[6:] == b[6:]


# The headline cases run behind the replay feeder (504, the downstream
# iMix and the congested 504); the xconnect feeder on 504 only.
@pytest.mark.parametrize("feeder,case", [("pcap", "504"), ("replay", "504"),
                                         ("replay", "imix-down"), ("replay", "congested")])
def test_ring_fed_config_feeds_the_downlink_worker(inputs, dp_binary, tmp_path, feeder, case):
    pcap = (inputs.downlink_congested_pcap(ring=True) if case == "congested"
            else inputs.downlink_pcap(case, ring=True))
    cfg = ring_fed_down_config(inputs, pcap, feeder=feeder)
    if feeder == "pcap" and case == "504":
        assert cfg == dp_config(inputs, down_pcap=pcap, ring_feed=True)
    dp = Dp(None, cfg, name=f"ringfed-{feeder}-{case}", workdir=tmp_path, start_timeout=180,
            binary_path=dp_binary)
    dp.start()
    try:
        ports = {p["name"]: p for p in dp.ctl("ports")["ports"]}
        assert ports["core"]["device"].startswith("net_ring")
        assert ports["core"]["mac"] == RING_MAC

        def workers():
            return {w["name"]: w for w in dp.ctl("stats")["workers"]}
        assert wait_for(lambda: workers()["down"]["tx_pkts"] >= 20000, timeout=60)
        st = dp.ctl("stages")
        down = next(w for w in st["workers"] if w["name"] == "down")
        dropped = {s["name"]: s["pkts_dropped"] for s in down["stages"]}
        # 64 subscribers share what 4096 share in the benchmark: their
        # pipes are offered more than their rate and hqos drops (tail
        # drop); nothing else may.
        assert all(v == 0 for k, v in dropped.items() if k != "hqos"), dropped
        w = workers()
        assert w["down"]["rx_pkts"] > 0 and w["feed"]["tx_pkts"] >= w["down"]["rx_pkts"]
    finally:
        dp.close()
