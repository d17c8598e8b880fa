"""vBNG benchmark inputs: subscribers, the uplink ACL, packets (pcap) and the
peers' own files, all written from the same lists.

The configuration is the per-instance one of Intel's vBNG white paper
("Enhancing Performance and Power Efficiency of a Cloud-Native Broadband
Network Gateway (BNG) Using 4th Gen Intel Xeon Scalable Processors",
appendix "Application Configuration per Instance"): 4K subscribers, 4K flows (one
per subscriber), a 150-rule uplink blacklist, one reverse-path rule per
subscriber downlink, 5-level HQoS, uplink 128 B and downlink 504 B frames.
The white paper quotes a frame size as "max size of frame at any point in
processing (uplink 128 Byte = 120 byte + 2x4 Byte access VLAN tags)", and so
do we: a size is the larger of input and output frame, FCS included (RFC
2544), so

    uplink   QinQ/IPoE  128 B in  -> 120 B out (tags stripped)
             QinQ/PPPoE 128 B in  -> 112 B out (tags, PPPoE and PPP stripped)
    downlink            496 B in  -> 504 B out (QinQ added)

and the iMix sizes (pcapgen.IMIX: up 65% 84 / 18% 256 / 17% 1280 B, down
15% 84 / 10% 256 / 75% 1280 B) are the access-side sizes the same way.

Everything is deterministic; files land in build/bench/inputs/bng/ and are
reused when present (the file names carry every parameter).  The addresses
only ever exist in pcap files replayed into net_null ports inside one
process: nothing is sent on a network.
"""
import ipaddress
import random
import struct

from bench.common import OUT
from bench.pcapgen import IMIX, size_schedule, write_pcap

INPUTS = OUT / "inputs" / "bng"
VERSION = 2        # bump when frames change: cached files carry it in their names

N_SUBS = 4096
# net_pcap ports cannot take a configured MAC; each has 02:70:63:61:70:NN
# ("pcap" + the device's creation index in the process: the engine probes
# ports in config order).  The frames are addressed to it.
PCAP_MAC = "02:70:63:61:70:{:02x}"
ACCESS_MAC = PCAP_MAC.format(0)      # the access port is always the first pcap device
CORE_MAC = PCAP_MAC.format(0)        # the core port, when it is the only one
RING_MAC = "00:00:00:00:00:00"       # net_ring's: it takes no configured MAC
CORE_NH_IP = "198.18.1.2"            # the core router (uplink default route)
CORE_NH_MAC = "02:00:00:00:02:02"
SUB_V4_BASE = int(ipaddress.ip_address("198.19.1.0"))
SVLAN_BASE = 100                     # 4 S-VLANs of 1024 C-VLANs each


def mac_str(b):
    return ":".join(f"{x:02x}" for x in b)


def ip_str(a):
    return str(ipaddress.ip_address(a))


class Sub:
    """One benchmark subscriber (index i: 0..N-1, id i+1)."""

    def __init__(self, i, pppoe=False):
        self.i = i
        self.id = i + 1
        self.svlan = SVLAN_BASE + i // 1024
        self.cvlan = 1 + i % 1024
        self.ipv4 = ip_str(SUB_V4_BASE + i)
        self.ipv6 = f"2001:db8:{0x1000 + i:x}::/56"
        self.mac = mac_str(bytes([0x02, 0x10, 0, 0, i >> 8, i & 0xff]))
        self.pppoe = (i + 1) if pppoe else None   # session ids 1..N


def subscribers(n=N_SUBS, pppoe=False):
    return [Sub(i, pppoe) for i in range(n)]


# --- the 150-rule uplink blacklist ---------------------------------------------
#
# What an operator's uplink blacklist holds: bogon sources (a subscriber
# must not source these), bogon destinations, and ports that subscriber
# traffic must not reach or serve (RPC/NetBIOS/SMB, amplification
# reflectors, SMTP, telnet, management).  198.18.0.0/15 is a bogon too but
# is the benchmark's own range (RFC 2544), so it is not in the list.  The
# benchmark traffic is UDP from the subscribers' 198.19.x addresses to
# public destinations, source ports 30000-59999, destination ports
# 20000-29999: no rule matches, so every packet runs through the whole
# rule set and passes (checked by matches() below when the files are made).

BOGONS = ["0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
          "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16",
          "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4"]
BLOCKED_PORTS = [  # (proto, port or (lo, hi))
    ("tcp", 23), ("tcp", 25), ("tcp", (135, 139)), ("udp", (135, 139)), ("tcp", 445),
    ("udp", 445), ("tcp", 593), ("tcp", 1433), ("udp", 1434), ("tcp", 3389),
    ("udp", 1900), ("udp", 11211), ("tcp", 11211), ("udp", 19), ("udp", 17),
    ("udp", 69), ("udp", 161), ("udp", 162), ("udp", 389), ("udp", 520), ("udp", 1812),
    ("udp", 3702), ("udp", 5353), ("udp", 5683), ("udp", 10001), ("tcp", 2323),
    ("tcp", 5555), ("tcp", 7547), ("tcp", 37215), ("tcp", 52869), ("tcp", 6379),
    ("tcp", 9200), ("tcp", 27017), ("tcp", 2375), ("tcp", 4444), ("tcp", 6667),
    ("udp", 6881), ("tcp", 6881), ("udp", 111), ("tcp", 111),
]
REFLECTOR_SPORTS = [19, 53, 111, 123, 161, 389, 1900, 3702, 5353, 11211, 17, 520]
ACL_RULES = 150


def _port(p):
    return f"{p[0]}-{p[1]}" if isinstance(p, tuple) else str(p)


def acl150():
    """150 rules as (text, matcher) pairs; text is the ACL module's grammar
    (dataplane/acl/ep_acl.h: permit|deny [proto P] [src PFX] [dst PFX]
    [sport P|LO-HI] [dport P|LO-HI])."""
    rules = []
    for b in BOGONS:
        rules.append(dict(src=b))
    for b in BOGONS:
        rules.append(dict(dst=b))
    for proto, p in BLOCKED_PORTS:
        rules.append(dict(proto=proto, dport=p))
    for p in REFLECTOR_SPORTS:                   # a subscriber serving reflectors
        rules.append(dict(proto="udp", sport=p))
    # Blocked destinations: a list of known-bad /24s (the sort of feed an
    # operator imports), drawn from public space, deterministic.
    rng = random.Random(150)
    while len(rules) < ACL_RULES:
        a = rng.getrandbits(32) & 0xffffff00
        first = a >> 24
        if first in (0, 10, 100, 127, 169, 172, 192, 198, 203) or first >= 224:
            continue
        rules.append(dict(dst=f"{ip_str(a)}/24"))
    return rules[:ACL_RULES]


def acl_text(r):
    parts = ["deny"]
    if "proto" in r:
        parts += ["proto", r["proto"]]
    for k in ("src", "dst"):
        if k in r:
            parts += [k, r[k]]
    for k in ("sport", "dport"):
        if k in r:
            parts += [k, _port(r[k])]
    return " ".join(parts)


def acl_matches(r, proto, src, dst, sport, dport):
    """Does rule r match this IPv4 5-tuple (proto 6/17, addresses as str)?"""
    if "proto" in r and {"tcp": 6, "udp": 17}[r["proto"]] != proto:
        return False
    for k, a in (("src", src), ("dst", dst)):
        if k in r and ipaddress.ip_address(a) not in ipaddress.ip_network(r[k]):
            return False
    for k, p in (("sport", sport), ("dport", dport)):
        if k in r:
            lo, hi = r[k] if isinstance(r[k], tuple) else (r[k], r[k])
            if not lo <= p <= hi:
                return False
    return True


# --- flows -----------------------------------------------------------------------

def _public(rng):
    while True:
        a = rng.getrandbits(32)
        first = a >> 24
        if first in (0, 10, 100, 127, 169, 172, 192, 198, 203) or first >= 224 or a & 0xff == 0:
            continue
        return ip_str(a)


def flows(subs, seed=3):
    """One flow per subscriber: (sub, internet address, sub port, inet port).
    Uplink: sub -> inet, sport = sub port, dport = inet port; downlink the
    reverse."""
    rng = random.Random(seed)
    out = []
    for s in subs:
        out.append((s, _public(rng), 30000 + rng.randrange(30000), 20000 + rng.randrange(10000)))
    return out


def check_acl_passes(fl, rules):
    for s, inet, sp, dp in fl:
        for r in rules:
            if acl_matches(r, 17, s.ipv4, inet, sp, dp):
                raise AssertionError(f"ACL rule '{acl_text(r)}' matches benchmark flow "
                                     f"{s.ipv4}:{sp} -> {inet}:{dp}")


# --- frames ------------------------------------------------------------------------

def _pad(pkt, wire):
    from scapy.packet import Raw
    n = wire - len(pkt)
    if n < 0:
        raise ValueError(f"frame of {wire + 4} B too small for {pkt.summary()}")
    return pkt / Raw(b"\0" * n) if n else pkt


def uplink_frame(s, inet, sport, dport, size, pppoe=False, encap=True):
    """Subscriber -> core.  size: the access frame with FCS.  encap=False:
    the same IP packet as a plain Ethernet frame (what l3fwd is given)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.layers.ppp import PPPoE
    from scapy.packet import Raw
    hdr = 8 + (8 if pppoe else 0)
    ip_len = size - 4 - 14 - hdr
    ip = IP(src=s.ipv4, dst=inet, ttl=64) / UDP(sport=sport, dport=dport) / Raw(b"\0" * (ip_len - 28))
    if not encap:
        return bytes(Ether(dst=CORE_MAC, src=CORE_NH_MAC) / ip)
    l2 = Ether(dst=ACCESS_MAC, src=s.mac) / Dot1AD(vlan=s.svlan) / Dot1Q(vlan=s.cvlan)
    if pppoe:
        # The PPP protocol field spelled out: scapy's PPP layer compresses
        # 0x0021 to one byte (RFC 1661 PFC), which PPPoE forbids (RFC 2516).
        l2 = l2 / PPPoE(code=0, sessionid=s.pppoe) / Raw(b"\x00\x21")
    f = bytes(l2 / ip)
    assert len(f) == size - 4, (len(f), size)
    return f


def _ones_add(a, b):
    s = a + b
    return (s & 0xffff) + (s >> 16)


def downlink_frame(s, inet, sport, dport, size, qos_queue, dst_mac=CORE_MAC):
    """Core -> subscriber, plain Ethernet/IPv4/UDP of size - 8 (the QinQ tags
    the BNG adds make it `size`).

    DPDK's qos_sched reads its scheduling fields at fixed offsets of the
    frame (app_thread.c get_pkt_sched: bytes 14-15 subport, 18-19 pipe, byte
    41 queue).  On this untagged frame those are the IPv4 TOS word, the IPv4
    identification and the low byte of the UDP checksum, so the
    identification carries the subscriber index (qos_sched then spreads the
    4K flows over its 4K pipes as we do), and two payload bytes are chosen so
    that the checksum's low byte selects best-effort queue `qos_queue`
    (active queue index 12..15 of 16) -- the traffic class our DSCP 0 maps to.
    Checksums stay valid."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    wire = size - 8 - 4
    plen = wire - 14 - 28
    base = (Ether(dst=dst_mac, src=CORE_NH_MAC) / IP(src=inet, dst=s.ipv4, ttl=64, id=s.i)
            / UDP(sport=sport, dport=dport))
    target_low = 12 + qos_queue
    raw0 = bytes(base / Raw(b"\0" * plen))
    c0 = struct.unpack_from("!H", raw0, 40)[0]
    for hi in range(0x11, 0xff):
        want = (hi << 8) | target_low
        # checksum = ~sum; adding word w to the payload: ~(sum +' w).
        s_now = 0xffff - c0 if c0 != 0xffff else 0xffff
        s_want = 0xffff - want
        w = _ones_add(s_want, 0xffff - s_now) & 0xffff
        raw = bytes(base / Raw(struct.pack("!H", w) + b"\0" * (plen - 2)))
        if raw[41] == target_low:
            assert len(raw) == wire
            return raw
    raise AssertionError("no checksum adjustment found")


# --- input files -------------------------------------------------------------------

N_PKTS = N_SUBS   # one packet per flow per pcap cycle; fits 8K-mbuf pools with room
# Pipes the congested downlink input overloads (Inputs.downlink_congested_pcap).
CONGESTED_HEAVY_PIPES = 8


def _write(path, frames):
    tmp = path.with_suffix(".tmp")
    write_pcap(tmp, frames)
    tmp.rename(path)
    return path


class Inputs:
    """Paths of everything one benchmark run reads; made on first use."""

    def __init__(self, n_subs=N_SUBS):
        self.n = n_subs
        INPUTS.mkdir(parents=True, exist_ok=True)
        self.dir = INPUTS

    def subs(self, pppoe=False):
        return subscribers(self.n, pppoe)

    def flows(self, pppoe=False):
        return flows(self.subs(pppoe))

    def acl_file(self):
        path = self.dir / f"uplink-acl-{ACL_RULES}.txt"
        if not path.exists():
            rules = acl150()
            check_acl_passes(self.flows(), rules)
            with open(path, "w") as f:
                f.write(f"# {len(rules)}-rule uplink blacklist (bench/bng_inputs.py); "
                        "the benchmark traffic matches none\n")
                for r in rules:
                    f.write(acl_text(r) + "\n")
        return path

    def l3fwd_acl_rules(self):
        """l3fwd --lookup=acl files (its l3fwd_acl.c syntax): the same 150
        deny rules as "@" lines, then the single forwarding rule as one "R"
        rule to port 1 -- l3fwd's ACL mode classifies and routes in one
        rte_acl pass over one trie, so this is DPDK's own example doing the
        uplink's ACL work and its routing, and nothing else."""
        p4 = self.dir / f"l3fwd-acl-{ACL_RULES}.v4"
        p6 = self.dir / f"l3fwd-acl-{ACL_RULES}.v6"
        any4, anyp = "0.0.0.0/0", "0 : 65535"
        with open(p4, "w") as f:
            for r in acl150():
                ports = [(f"{r[k][0]} : {r[k][1]}" if isinstance(r[k], tuple)
                          else f"{r[k]} : {r[k]}") if k in r else anyp
                         for k in ("sport", "dport")]
                proto = {"tcp": "6/0xff", "udp": "17/0xff"}[r["proto"]] if "proto" in r else "0/0"
                f.write(f"@{r.get('src', any4)} {r.get('dst', any4)} {ports[0]} {ports[1]} "
                        f"{proto}\n")
            f.write(f"R{any4} {any4} {anyp} {anyp} 0/0 1\n")
        p6.write_text("R0:0:0:0:0:0:0:0/0 0:0:0:0:0:0:0:0/0 0 : 65535 0 : 65535 0/0 1\n")
        return p4, p6

    def uplink_pcap(self, spec, pppoe=False, encap=True):
        kind = ("pppoe" if pppoe else "ipoe") if encap else ("plain-pppoe" if pppoe else "plain")
        path = self.dir / f"up-{kind}-{spec}-{self.n}-v{VERSION}.pcap"
        if not path.exists():
            sizes = size_schedule(spec, N_PKTS)
            fl = self.flows(pppoe)
            frames = [uplink_frame(s, inet, sp, dp, sz, pppoe, encap)
                      for (s, inet, sp, dp), sz in zip(fl * (N_PKTS // len(fl) + 1), sizes)]
            _write(path, frames)
        return path

    def downlink_pcap(self, spec, core_index=0, ring=False):
        """core_index: the core port's pcap device index (1 when the access
        port is a pcap device too); ring: addressed to a net_ring core port
        (RING_MAC) that a feeder fills from this pcap, frames otherwise the
        same."""
        tag = "ring" if ring else core_index
        path = self.dir / f"down-{spec}-{self.n}-{tag}-v{VERSION}.pcap"
        if not path.exists():
            sizes = size_schedule(spec, N_PKTS)
            fl = self.flows()
            mac = RING_MAC if ring else PCAP_MAC.format(core_index)
            frames = [downlink_frame(s, inet, dp, sp, sz, s.i % 4, mac)
                      for (s, inet, sp, dp), sz in zip(fl * (N_PKTS // len(fl) + 1), sizes)]
            _write(path, frames)
        return path

    def downlink_congested_pcap(self, heavy=CONGESTED_HEAVY_PIPES, core_index=0, ring=False):
        """504 B downlink frames of which every other one goes to one of the
        first `heavy` subscribers (round robin) and the rest one each to the other
        subscribers.  Each heavy pipe is offered intake / (2 * heavy): at
        8 pipes and any intake above 0.25 Mpps that is more than the
        benchmark's 100 Mbit/s pipe rate, so those pipes stay backlogged
        (queues full, tail drops at enqueue, the scheduler's grinders
        working on pipes with packets queued) while the core stays the
        bottleneck for the other half.  Each heavy pipe's packets use one
        queue on both sides (ours: DSCP 0; qos_sched: its queue byte), so
        the mbufs held are heavy * 64."""
        tag = "ring" if ring else core_index
        path = self.dir / f"down-504-congested{heavy}-{self.n}-{tag}-v{VERSION}.pcap"
        if not path.exists():
            fl = self.flows()
            mac = RING_MAC if ring else PCAP_MAC.format(core_index)
            frames = []
            for k in range(N_PKTS // 2):
                s, inet, sp, dp = fl[k % heavy]
                frames.append(downlink_frame(s, inet, dp, sp, 504, s.i % 4, mac))
                s, inet, sp, dp = fl[heavy + k % (len(fl) - heavy)]
                frames.append(downlink_frame(s, inet, dp, sp, 504, s.i % 4, mac))
            _write(path, frames)
        return path

    def l3fwd_routes(self):
        """l3fwd LPM files: the uplink's single forwarding rule (seed).  rte_lpm
        takes depths 1-32 only, so l3fwd's default route is two /1s (the
        same one tbl24 read per lookup)."""
        p4, p6 = self.dir / "l3fwd-default.v4", self.dir / "l3fwd-default.v6"
        p4.write_text("R0.0.0.0/1 1\nR128.0.0.0/1 1\n")
        p6.write_text("R2001:db8::/32 1\n")
        return p4, p6


def mean_frame(spec):
    if spec in IMIX:
        return sum(s * w for s, w in IMIX[spec]) / sum(w for _, w in IMIX[spec])
    return float(spec)
