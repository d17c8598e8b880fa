"""PPPoE session data through the vBNG, both directions, sessions configured
statically (no control plane yet).

Upstream: scapy sends PPPoE session frames (QinQ 100/201, session 0x12,
PPP protocol 0x0021 / 0x0057) from the subscriber's namespace; tshark on
the core host must see plain Ethernet/IP with the same addresses and
payload, TTL/hop limit one lower and valid checksums.  Downstream: the core
host's kernel sends UDP to the subscriber's addresses; tshark on the
subscriber's wire decodes the frames independently: S-tag, C-tag, PPPoE
session id, PPPoE payload length = IP length + 2 (RFC 2516 section 4), PPP
protocol, MACs.
"""
import sys

import pytest

from lab.bng_lab import (ACCESS_MAC, CORE4, CORE6, CORE_HOST_MAC, Capture, Subscriber,
                         bng_available, open_lab, send_frames, sub_counters)
from lab.dp import wait_for

SESSION = 0x12
N = 8


@pytest.fixture(scope="module")
def lab(request, dp_binary):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    return open_lab(request, [Subscriber("p1", id=3, qinq=(100, 201), pppoe=SESSION)],
                    tag="bp")


def _pppoe_frame(s, proto, ip, session=SESSION, length=None):
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.layers.ppp import PPPoE
    from scapy.packet import Raw
    payload = bytes([proto >> 8, proto & 0xff]) + bytes(ip)
    hdr = PPPoE(code=0, sessionid=session, len=length if length is not None else len(payload))
    return bytes(Ether(src=s.mac, dst=ACCESS_MAC) / Dot1AD(vlan=s.qinq[0])
                 / Dot1Q(vlan=s.qinq[1]) / hdr / Raw(payload))


def _udp4(s, dport, tag):
    from scapy.layers.inet import IP, UDP
    return IP(src=s.ipv4, dst=CORE4, ttl=64) / UDP(sport=40000, dport=dport) / tag


def _udp6(s, dport, tag):
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    return IPv6(src=s.ipv6, dst=CORE6, hlim=64) / UDP(sport=40000, dport=dport) / tag


@pytest.mark.parametrize("family", [4, 6])
def test_bng_pppoe_upstream_arrives_as_plain_ip(lab, family):
    s = lab.sub("p1")
    dport = 9000 + family
    tag = f"edgeplane-pppoe-up-v{family}".encode()
    ip = _udp4(s, dport, tag) if family == 4 else _udp6(s, dport, tag)
    proto = 0x0021 if family == 4 else 0x0057
    up0, _ = sub_counters(lab.dp, s.id)
    with Capture(lab.core, "eth0", f"udp dst port {dport}") as cap:
        send_frames(s.host, [_pppoe_frame(s, proto, ip)] * N)
        wait_for(lambda: sub_counters(lab.dp, s.id)[0] - up0 >= N)
    ipf = "ip" if family == 4 else "ipv6"
    rows = cap.fields("eth.type", "eth.src", "eth.dst", f"{ipf}.src", f"{ipf}.dst",
                      "ip.ttl" if family == 4 else "ipv6.hlim", "udp.checksum.status",
                      "data.data", "pppoe.session_id", "vlan.id",
                      display_filter=f"udp.dstport == {dport}")
    assert len(rows) == N, rows
    for r in rows:
        etype, src_mac, dst_mac, src, dst, ttl, csum, data, sess, vid = r
        assert etype == ("0x0800" if family == 4 else "0x86dd"), r
        assert sess == "" and vid == "", f"access encapsulation left on: {r}"
        assert dst_mac == CORE_HOST_MAC, r
        assert src == (s.ipv4 if family == 4 else s.ipv6) and dst in (CORE4, CORE6), r
        assert ttl == "63", r
        assert bytes.fromhex(data) == tag, r
    assert sub_counters(lab.dp, s.id)[0] - up0 >= N


def _kernel_udp_send(host, dst, port, payload, count, family):
    fam = "AF_INET" if family == 4 else "AF_INET6"
    code = (f"import socket, time; s = socket.socket(socket.{fam}, socket.SOCK_DGRAM)\n"
            f"for i in range({count}):\n"
            f"    s.sendto({payload!r}, ({dst!r}, {port})); time.sleep(0.02)")
    host.run([sys.executable, "-c", code], timeout=30)


@pytest.mark.parametrize("family", [4, 6])
def test_bng_pppoe_downstream_session_header(lab, family):
    s = lab.sub("p1")
    dport = 9100 + family
    payload = b"edgeplane-pppoe-down" + b"x" * (37 * family)   # odd sizes: lengths checked
    dst = s.ipv4 if family == 4 else s.ipv6
    with Capture(s.host, "eth0", "ether proto 0x88a8 or vlan") as cap:
        # The first packet may wait for the core host's ARP/ND of the BNG.
        _kernel_udp_send(lab.core, dst, dport, payload, N, family)
    ipf = "ip" if family == 4 else "ipv6"
    lenf = "ip.len" if family == 4 else "ipv6.plen"
    rows = cap.fields("eth.src", "eth.dst", "ieee8021ad.id", "vlan.id", "pppoe.code",
                      "pppoe.session_id", "pppoe.payload_length", "ppp.protocol", lenf,
                      f"{ipf}.dst", "data.data", display_filter=f"udp.dstport == {dport}")
    assert len(rows) == N, rows
    for r in rows:
        src_mac, dst_mac, svid, cvid, code, sess, plen, proto, iplen, ipdst, data = r
        assert (src_mac, dst_mac) == (ACCESS_MAC, s.mac), r
        assert (svid, cvid) == (str(s.qinq[0]), str(s.qinq[1])), r
        assert code == "0x00" and int(sess, 16) == SESSION, r
        ip_total = int(iplen) if family == 4 else int(iplen) + 40
        # RFC 2516: the PPPoE length covers the PPP protocol field and the IP packet.
        assert int(plen) == ip_total + 2, r
        assert int(proto, 16) == (0x0021 if family == 4 else 0x0057), r
        assert ipdst == dst and bytes.fromhex(data) == payload, r


def test_bng_pppoe_wrong_session_dropped(lab):
    s = lab.sub("p1")
    before = lab.dp.drops().get("bng_pppoe_bad_session", 0) + \
        lab.dp.drops().get("bng_unknown_subscriber", 0)
    send_frames(s.host, [_pppoe_frame(s, 0x0021, _udp4(s, 9200, b"x"), session=0x13)] * 4)
    assert wait_for(lambda: lab.dp.drops().get("bng_pppoe_bad_session", 0)
                    + lab.dp.drops().get("bng_unknown_subscriber", 0) - before >= 4)


def test_bng_pppoe_bad_length_dropped(lab):
    s = lab.sub("p1")
    before = lab.dp.drops().get("bng_pppoe_bad_length", 0)
    ip = _udp4(s, 9201, b"y" * 200)
    send_frames(s.host, [_pppoe_frame(s, 0x0021, ip, length=len(bytes(ip)) + 40)] * 4)
    assert wait_for(lambda: lab.dp.drops().get("bng_pppoe_bad_length", 0) - before >= 4)


def test_bng_pppoe_discovery_punted_not_forwarded(lab):
    """A PADI is control traffic: counted as punted, never forwarded."""
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.layers.ppp import PPPoED
    s = lab.sub("p1")
    before = lab.dp.ctl("bng-stats")["uplink"]["punted"]["pppoe_discovery"]
    padi = bytes(Ether(src=s.mac, dst="ff:ff:ff:ff:ff:ff") / Dot1AD(vlan=s.qinq[0])
                 / Dot1Q(vlan=s.qinq[1]) / PPPoED(code=0x09, sessionid=0))
    send_frames(s.host, [padi] * 3)
    assert wait_for(lambda: lab.dp.ctl("bng-stats")["uplink"]["punted"]["pppoe_discovery"]
                    - before >= 3)
