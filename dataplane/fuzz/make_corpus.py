#!/usr/bin/env python3
"""Write the seed corpus of the `parse` fuzz target: one valid frame per
file, covering each path of the parser and the router stages.  Run from the
repository root with the project venv: .venv/bin/python dataplane/fuzz/make_corpus.py
"""
import os

from scapy.layers.inet import ICMP, IP, TCP, UDP
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
