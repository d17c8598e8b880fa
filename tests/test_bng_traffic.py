"""vBNG end to end with kernel subscribers: iperf3 TCP and UDP, IPv4 and
IPv6, through bng-uplink and bng-downlink, for a QinQ (802.1ad + 802.1Q)
and a single-VLAN IPoE subscriber (lab/bng_lab.py: how the hosts tag).

Each test checks the traffic at the far end (iperf3's receiver) and the
BNG's own per-subscriber counters, so a test passes only if the packets
went through the subscriber's pipelines, not around them.
"""
import pytest

from lab.bng_lab import (ACCESS_GW4, ACCESS_MAC, CORE4, CORE6, Subscriber, bng_available,
                         open_lab, send_frames, sub_counters)
from lab.dp import wait_for
from lab.router_lab import neigh_state
from lab.traffic import Iperf3Server, iperf3

PORTS = {"q1": 5201, "v1": 5202}


@pytest.fixture(scope="module")
def lab(request, dp_binary):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    lab = open_lab(request, [Subscriber("q1", id=1, qinq=(100, 200)),
                             Subscriber("v1", id=2, vlan=101)], tag="bt")
    lab.servers = [Iperf3Server(lab.core, port=p) for p in PORTS.values()]
    return lab


def _dst(family):
    return CORE4 if family == 4 else CORE6


@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("name", ["q1", "v1"])
def test_bng_tcp_upload_and_download(lab, name, family):
    s = lab.sub(name)
    up0, down0 = sub_counters(lab.dp, s.id)
    up = iperf3(s.host, _dst(family), seconds=2, port=PORTS[name])
    down = iperf3(s.host, _dst(family), seconds=2, port=PORTS[name], extra=["-R"])
    assert up.received_bytes > 1_000_000, up
    assert down.received_bytes > 1_000_000, down
    up1, down1 = sub_counters(lab.dp, s.id)
    # Every data segment crossed the subscriber's own uplink and downlink.
    assert up1 - up0 > up.received_bytes / 1500, (up0, up1)
    assert down1 - down0 > down.received_bytes / 1500, (down0, down1)


@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("name", ["q1", "v1"])
def test_bng_udp_both_directions_without_loss(lab, name, family):
    s = lab.sub(name)
    for extra in ([], ["-R"]):
        r = iperf3(s.host, _dst(family), udp=True, bitrate="10M", seconds=2, length=1200,
                   port=PORTS[name], extra=extra)
        assert r.packets > 1500, r
        # 10 Mbit/s is far below what the lab carries, but the two cores are
        # shared: a worker descheduled long enough overflows its af_packet
        # ring (seen: 75 of 2056 once).  Loss-free delivery is the churn
        # test's claim, at 2 Mbit/s; here at most 1 %.
        assert r.lost_percent <= 1.0, r


def test_bng_access_gateway_arp_answered(lab):
    """The uplink answers ARP for the access port's address (access_nd =
    answer): a host without a static entry resolves its gateway to the BNG.

    On the single-VLAN subscriber: the answer keeps the request's tags, and
    a QinQ request reaches the BNG as 8100/8100 (net_af_packet re-inserts
    the kernel-stripped S-tag with TPID 0x8100, lab/bng_lab.py), so the
    QinQ host's shim would rightly refuse the 8100 outer tag of the reply."""
    s = lab.sub("v1")
    s.host.run(["ip", "neigh", "del", ACCESS_GW4, "dev", "eth0"], check=False)
    before = lab.dp.ctl("bng-stats")["uplink"].get("nd_answered", 0)
    r = s.host.run(["ping", "-n", "-c", "2", "-i", "0.3", "-W", "2", CORE4], check=False)
    state = neigh_state(s.host, ACCESS_GW4)
    s.host.neigh_add("eth0", ACCESS_GW4, ACCESS_MAC)    # leave the module's lab as it was
    assert " 0% packet loss" in r.stdout, r.stdout
    assert ACCESS_MAC in state, state
    assert lab.dp.ctl("bng-stats")["uplink"]["nd_answered"] > before


def test_bng_unknown_vlan_dropped_and_counted(lab):
    """A frame on VLAN pair nobody owns is dropped as bng_unknown_subscriber.
    Sent into the access switch itself (the hosts' shims would tag it again)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    s = lab.sub("q1")
    before = lab.dp.drops().get("bng_unknown_subscriber", 0)
    frame = (Ether(src=s.mac, dst=ACCESS_MAC) / Dot1AD(vlan=100) / Dot1Q(vlan=999)
             / IP(src=s.ipv4, dst=CORE4) / UDP(sport=1234, dport=9))
    send_frames(lab.sw, [bytes(frame)] * 5, iface="br0")
    assert wait_for(lambda: lab.dp.drops().get("bng_unknown_subscriber", 0) - before >= 5)

