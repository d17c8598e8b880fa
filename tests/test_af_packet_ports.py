"""net_af_packet ports deliver IPv4 fragments as they were sent, and what
the kernel drops before our rx is counted, on net_af_packet and net_af_xdp
(dataplane/engine/af_packet.c).

DPDK 22.11's af_packet PMD asks the kernel to reassemble IPv4 in its fanout
(PACKET_FANOUT_FLAG_DEFRAG); edgeplane-dp clears that flag.  Real hosts
send the fragments (ping -s 3000 over 1500-byte MTUs; scapy for lone first
fragments) and tshark on the far host, an independent decoder, counts what
the router forwarded.
"""
import sys

import pytest

from lab.bng_lab import Capture, send_frames
from lab.dp import Dp
from lab.probe import ROOT
from lab.router_lab import A4, B4, MAC_A, MAC_PA, MAC_PB, GW_B4, RouterLab, router_sections


def rx_packets(dp, port):
    return next(p["stats"] for p in dp.ctl("stats")["ports"] if p["name"] == port)


def fragments_seen(cap, src):
    """Frames from src that tshark decodes as IPv4 fragments."""
    return cap.fields("ip.id", display_filter=f"ip.src=={src} && "
                      "(ip.flags.mf==1 || ip.frag_offset>0)")


def test_ping_3000_bytes_crosses_as_fragments(router_lab):
    """5 echo requests of 3028 bytes leave a as 3 fragments each; the router
    gets 15 frames (not 5 datagrams cut to its 2048-byte ring frame, which it
    had to drop as ipv4_bad_total_length) and forwards them; b reassembles
    and answers."""
    lab = router_lab
    dp = lab.dp
    before = rx_packets(dp, "pa")
    bad_len = dp.drops()["ipv4_bad_total_length"]
    with Capture(lab.b, "eth0", f"ip src {A4}") as cap:
        res = lab.a.run(["ping", "-n", "-c", "5", "-i", "0.2", "-W", "2", "-s", "3000", B4],
                        check=False, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    assert rx_packets(dp, "pa")["ipackets"] - before["ipackets"] >= 15
    assert dp.drops()["ipv4_bad_total_length"] == bad_len
    assert len(fragments_seen(cap, A4)) == 15


def test_lone_first_fragments_arrive_and_are_forwarded(router_lab):
    """First fragments whose rest never comes: the kernel used to keep them
    for reassembly until they expired, so the router saw nothing and no
    counter said so."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    lab = router_lab
    frames = [bytes(Ether(src=MAC_A, dst=MAC_PA) / IP(src=A4, dst=B4, id=0x4500 + i, flags="MF")
                    / UDP(sport=40000, dport=9) / (b"f" * 1000)) for i in range(10)]
    before = rx_packets(lab.dp, "pa")["ipackets"]
    with Capture(lab.b, "eth0", f"ip src {A4}") as cap:
        send_frames(lab.a, frames)
    assert rx_packets(lab.dp, "pa")["ipackets"] - before >= 10
    assert len(fragments_seen(cap, A4)) == 10


def test_frames_dropped_on_a_full_ring_are_counted(router_pipeline):
    """A port whose ring nobody drains (no worker polls pb; 512 frames):
    what the kernel drops is the port's imissed and af_packet_drops, not
    lost silently."""
    with RouterLab(tag="fq", start=False) as lab:
        secs = router_sections()
        secs["worker w0"]["rx"] = "pa"
        secs["port pb"]["device"] += ",framecnt=512"
        lab.dp = Dp(lab.dut, secs, name="fq-dut").start()
        # The router cannot answer ARP on pb: b knows its gateway.
        lab.b.run(["ip", "neigh", "replace", GW_B4, "lladdr", MAC_PB, "dev", "eth0"])
        lab.b.run([sys.executable, "-m", "lab.probe", "send", "--dst", A4, "--port", "9",
                   "--count", "1500", "--interval", "0"], cwd=ROOT, timeout=60)
        st = rx_packets(lab.dp, "pb")
        assert st["af_packet_drops"] >= 1500 - 512, st
        assert st["imissed"] >= st["af_packet_drops"], st


def test_af_xdp_frames_dropped_on_a_full_rx_ring_are_counted(router_pipeline):
    """The same on net_af_xdp (a 64-descriptor rx ring nobody drains): the
    kernel counts the frames it could not put in the socket's full rx ring
    as rx_ring_full, which DPDK 22.11's PMD leaves out of imissed; the
    engine adds them (xsk_rx_ring_full)."""
    with RouterLab(tag="xq", start=False) as lab:
        secs = router_sections(device="af_xdp")
        secs["worker w0"]["rx"] = "pa"
        secs["port pb"]["rx_desc"] = 64
        lab.dp = Dp(lab.dut, secs, name="xq-dut").start()
        lab.b.run(["ip", "neigh", "replace", GW_B4, "lladdr", MAC_PB, "dev", "eth0"])
        lab.b.run([sys.executable, "-m", "lab.probe", "send", "--dst", A4, "--port", "9",
                   "--count", "1500", "--interval", "0"], cwd=ROOT, timeout=60)
        st = rx_packets(lab.dp, "pb")
        assert st["xsk_rx_ring_full"] >= 1500 - 2 * 64, st
        assert st["imissed"] >= st["xsk_rx_ring_full"], st


def test_bng_downlink_sees_fragments_as_sent(request, dp_binary):
    """The probe's case: untagged downlink fragments from the core host to a
    subscriber.  10 two-fragment datagrams are 20 frames at the core port
    (they were 10 reassembled packets), and 10 lone first fragments are 10
    more (they were none)."""
    from scapy.layers.inet import IP, UDP, fragment
    from scapy.layers.l2 import Ether
    from lab.bng_lab import CORE4, CORE_HOST_MAC, CORE_MAC, Subscriber, bng_available, open_lab
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    lab = open_lab(request, [Subscriber("s1", id=1, vlan=101)], tag="bf")
    dst = lab.subs[0].ipv4
    whole = [IP(src=CORE4, dst=dst, id=0x5100 + i) / UDP(sport=40000, dport=9) / (b"w" * 2000)
             for i in range(10)]
    pairs = [bytes(Ether(src=CORE_HOST_MAC, dst=CORE_MAC) / f)
             for d in whole for f in fragment(d, fragsize=1480)]
    lone = [bytes(Ether(src=CORE_HOST_MAC, dst=CORE_MAC)
                  / IP(src=CORE4, dst=dst, id=0x5200 + i, flags="MF")
                  / UDP(sport=40000, dport=9) / (b"l" * 1000)) for i in range(10)]
    assert len(pairs) == 20
    before = rx_packets(lab.dp, "core")["ipackets"]
    send_frames(lab.core, pairs)
    send_frames(lab.core, lone)
    assert rx_packets(lab.dp, "core")["ipackets"] - before >= 30
