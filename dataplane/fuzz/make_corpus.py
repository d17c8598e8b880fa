#!/usr/bin/env python3
"""Write the seed corpora of the `parse` fuzz target (one valid frame per
file, covering each path of the parser and the router stages, and one
burst of frames for its comparison of the parse's two paths) and of the
`hs_rx` target (the host stack's receive path: records of a clock byte and
length-prefixed frames, so that one seed can carry a datagram's fragments).
Run from the repository root with the project venv:
.venv/bin/python dataplane/fuzz/make_corpus.py
"""
import os

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet import fragment as fragment4
from scapy.layers.inet6 import ICMPv6DestUnreach, fragment6
from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6NDOptDstLLAddr
from scapy.layers.inet6 import (ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr,
                                IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrHopByHop, IPv6ExtHdrRouting)
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether

P0 = "02:00:00:00:01:01"   # the fuzz harness's access port
HOST = "02:00:00:00:00:0a"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "parse")

FRAMES = {
    "ipv4-udp": Ether(dst=P0, src=HOST) / IP(src="198.18.0.2", dst="198.18.1.2") / UDP(sport=1234, dport=1500) / (b"x" * 18),
    "ipv4-tcp-vlan": Ether(dst=P0, src=HOST) / Dot1Q(vlan=100) / IP(src="198.18.0.2", dst="198.18.16.5") / TCP(dport=22),
    "ipv4-qinq-icmp": Ether(dst=P0, src=HOST) / Dot1AD(vlan=10) / Dot1Q(vlan=20) / IP(src="198.18.0.2", dst="198.18.1.2") / ICMP(),
    "ipv4-echo-local": Ether(dst=P0, src=HOST) / IP(src="198.18.0.2", dst="198.18.0.1") / ICMP(id=1, seq=1) / b"ping",
    "ipv4-fragment": Ether(dst=P0, src=HOST) / IP(src="198.18.0.2", dst="198.18.1.2", flags="MF", frag=0) / UDP(dport=9) / (b"y" * 32),
    "ipv4-options": Ether(dst=P0, src=HOST) / IP(src="198.18.0.2", dst="198.18.1.2", options=b"\x01\x01\x01\x00") / UDP(),
    "ipv6-udp": Ether(dst=P0, src=HOST) / IPv6(src="2001:db8:0:1::2", dst="2001:db8:0:2::2") / UDP(sport=53, dport=9),
    "ipv6-ext-chain": Ether(dst=P0, src=HOST) / IPv6(src="2001:db8:0:1::2", dst="2001:db8:100::1") / IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting() / IPv6ExtHdrDestOpt() / TCP(dport=80),
    "ipv6-fragment": Ether(dst=P0, src=HOST) / IPv6(src="2001:db8:0:1::2", dst="2001:db8:0:2::2") / IPv6ExtHdrFragment(offset=10, m=0) / (b"z" * 16),
    "ipv6-echo-local": Ether(dst=P0, src=HOST) / IPv6(src="2001:db8:0:1::2", dst="2001:db8:0:1::1") / ICMPv6EchoRequest(id=1, seq=1, data=b"ping"),
    "ipv6-ns": Ether(dst="33:33:ff:00:00:01", src=HOST) / IPv6(src="2001:db8:0:1::2", dst="ff02::1:ff00:1", hlim=255) / ICMPv6ND_NS(tgt="2001:db8:0:1::1") / ICMPv6NDOptSrcLLAddr(lladdr=HOST),
    "arp-request": Ether(dst="ff:ff:ff:ff:ff:ff", src=HOST) / ARP(op=1, hwsrc=HOST, psrc="198.18.0.2", pdst="198.18.0.1"),
}

os.makedirs(OUT, exist_ok=True)
for name, pkt in FRAMES.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes(pkt))
print(f"{len(FRAMES)} frames in {OUT}")

# The parse target's burst (fuzz_parse.c): frames joined by b"|EP|", the
# last byte 0x1e for a burst of 16 lanes on port 0.  Plain IPv4 (taken by
# the eight-frame path), one for another MAC, one too short for its gathers,
# and frames the scalar parse must take (fragment, options, IPv6, ARP).
BURST = [FRAMES[k] for k in ("ipv4-udp", "ipv4-fragment", "ipv4-options", "ipv6-udp", "arp-request")]
BURST += [Ether(dst="02:00:00:00:99:99", src=HOST) / IP(src="198.18.0.2", dst="198.18.1.2") / UDP(dport=1500),
          bytes(FRAMES["ipv4-udp"])[:30],
          Ether(dst=P0, src=HOST) / IP(src="198.18.0.2", dst="198.18.1.2") / TCP(dport=80) / b"\x1e"]
with open(os.path.join(OUT, "burst-mixed"), "wb") as f:
    f.write(b"|EP|".join(bytes(fr) for fr in BURST))

# ---- hs_rx: the fuzz harness's port is 02:00:00:00:30:01, 198.18.30.1/24,
# 2001:db8:30::1/64; sockets on 5000 (any), 5001 (::), 5002, 5003 (connected
# to 198.18.30.2:4000), 5004 (IPv6 SO_REUSEPORT pair), 9050.

HP = "02:00:00:00:30:01"
PEER = "02:00:00:00:30:02"
HS_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "hs_rx")


def record(frames, clock=0):
    out = bytes([clock])
    for fr in frames:
        b = bytes(fr)
        out += len(b).to_bytes(2, "big") + b
    return out


def e(l3):
    return Ether(dst=HP, src=PEER) / l3


udp4 = IP(src="198.18.30.2", dst="198.18.30.1") / UDP(sport=4000, dport=5000) / (b"a" * 100)
big4 = IP(src="198.18.30.2", dst="198.18.30.1", id=77) / UDP(sport=4000, dport=5002) / (b"b" * 1860)
big6 = IPv6(src="2001:db8:30::2", dst="2001:db8:30::1") / IPv6ExtHdrFragment(id=99) / \
    UDP(sport=4000, dport=5001) / (b"c" * 1860)
inner = IP(src="198.18.30.1", dst="198.18.30.2") / UDP(sport=5003, dport=4000) / b"x"
HS = {
    "udp4-wildcard": record([e(udp4)]),
    "udp6-dual": record([e(IPv6(src="2001:db8:30::2", dst="2001:db8:30::1") / UDP(sport=1, dport=5001) / b"v6")]),
    "udp4-connected": record([e(IP(src="198.18.30.2", dst="198.18.30.1") / UDP(sport=4000, dport=5003) / b"c")]),
    "udp6-reuseport": record([e(IPv6(src="2001:db8:30::2", dst="2001:db8:30::1") / UDP(sport=7, dport=5004) / b"r")]),
    "udp4-no-socket": record([e(IP(src="198.18.30.2", dst="198.18.30.1") / UDP(sport=1, dport=5999) / b"n")]),
    "udp4-frag": record([e(f) for f in fragment4(big4, fragsize=1480)]),
    "udp4-frag-reversed": record([e(f) for f in reversed(fragment4(big4, fragsize=1480))]),
    "udp4-frag-first-only": record([e(fragment4(big4, fragsize=1480)[0])], clock=80),
    "udp6-frag": record([e(f) for f in fragment6(big6, 1500)]),
    "udp4-telemetry-dscp": record([e(IP(src="198.18.30.2", dst="198.18.30.1", tos=46 << 2) / UDP(sport=1, dport=9050) / b"t")]),
    "udp4-redirect": record([e(IP(src="198.18.30.9", dst="198.18.30.1") / UDP(sport=1, dport=7000) / (b"r" * 2000))]),
    "arp-request": record([Ether(dst="ff:ff:ff:ff:ff:ff", src=PEER) / ARP(op=1, hwsrc=PEER, psrc="198.18.30.2", pdst="198.18.30.1")]),
    "ns": record([Ether(dst="33:33:ff:00:00:01", src=PEER) / IPv6(src="2001:db8:30::2", dst="ff02::1:ff00:1", hlim=255) / ICMPv6ND_NS(tgt="2001:db8:30::1") / ICMPv6NDOptSrcLLAddr(lladdr=PEER)]),
    "na": record([e(IPv6(src="2001:db8:30::3", dst="2001:db8:30::1", hlim=255) / ICMPv6ND_NA(tgt="2001:db8:30::3", S=1) / ICMPv6NDOptDstLLAddr(lladdr="02:00:00:00:30:03"))]),
    "echo4": record([e(IP(src="198.18.30.2", dst="198.18.30.1") / ICMP(id=1, seq=1) / b"ping")]),
    "echo6": record([e(IPv6(src="2001:db8:30::2", dst="2001:db8:30::1") / ICMPv6EchoRequest(id=1, seq=1))]),
    "unreach4-connected": record([e(IP(src="198.18.30.2", dst="198.18.30.1") / ICMP(type=3, code=3) / inner)]),
    "unreach6": record([e(IPv6(src="2001:db8:30::2", dst="2001:db8:30::1") / ICMPv6DestUnreach(code=4) / IPv6(src="2001:db8:30::1", dst="2001:db8:30::2") / UDP(sport=5004, dport=9))]),
}
os.makedirs(HS_OUT, exist_ok=True)
for name, rec in HS.items():
    with open(os.path.join(HS_OUT, name), "wb") as f:
        f.write(rec)
print(f"{len(HS)} records in {HS_OUT}")
