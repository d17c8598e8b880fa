"""Synthetic router benchmark inputs: packets (pcap), routes and ACL rules,
written once in each side's own format from the same lists.

Everything is deterministic (fixed random seeds), so every run and both sides read
byte-identical inputs.  Files land in build/bench/inputs/router/ and are
reused when present.

Frame sizes follow RFC 2544 and dataplane/gen (gen.h): a size is the
Ethernet frame *including* the 4-byte FCS, so "64 B" puts 60 bytes in the
pcap record and the mbuf (the FCS is the NIC's).  iMix profiles are those
of Intel's vCMTS reference data plane benchmarks (gen's imix-up /
imix-down): upstream 65% 84 B, 18% 256 B,
17% 1280 B; downstream 15% 84 B, 10% 256 B, 75% 1280 B.

Routes: a synthetic Internet-like IPv4 table (prefix lengths weighted like a
BGP full table: mostly /24, some /16-/23, a few longer than /24 so rte_lpm
uses tbl8 groups), prefixes drawn from unicast space outside 0/8, 10/8,
127/8 and 198/8 (198.18.0.0/15 is the ports' own subnets).  These addresses
only ever exist inside a pcap file replayed into a net_null port in one
process; nothing is sent on any network.

ACL rules: 5-tuple deny rules that never match the generated traffic
(TCP-only rules, sources outside the traffic's 198.18.0.0/24, destination
ports below 1024) so every packet is classified through the whole rule set
and passes.  The traffic is UDP from 198.18.0.0/24, source and destination
ports >= 1024.
"""
import random
import struct

from bench.common import OUT

INPUTS = OUT / "inputs" / "router"

IMIX = {
    "imix-up": [(84, 65), (256, 18), (1280, 17)],
    "imix-down": [(84, 15), (256, 10), (1280, 75)],
}

# Share of each prefix length in the synthetic table (per 1000).
PLEN_WEIGHTS = [(16, 25), (17, 15), (18, 25), (19, 40), (20, 50), (21, 60), (22, 90),
                (23, 100), (24, 565), (25, 8), (26, 8), (27, 6), (28, 4), (29, 2),
                (30, 1), (32, 1)]

IN_MAC = "02:70:63:61:70:00"      # router ingress port: net_pcap0's fixed MAC ("\x02pcap" + 0;
                                  # net_pcap cannot change it, so frames are addressed to it)
OUT_MAC = "02:00:00:00:01:01"     # router egress port (net_null)
SRC_MAC = "02:00:00:00:00:02"     # the sender behind the ingress port
IN_NET = "198.18.0.1/24"
OUT_NET = "198.18.1.1/24"
N_GATEWAYS = 16                   # next hops 198.18.1.2 .. 198.18.1.17 on the egress port


def gateways():
    return [(f"198.18.1.{2 + i}", f"02:00:00:00:02:{i:02x}") for i in range(N_GATEWAYS)]


def ip_str(a):
    return ".".join(str((a >> s) & 0xff) for s in (24, 16, 8, 0))


def _excluded(a):
    return (a >> 24) in (0, 10, 127, 198) or (a >> 24) >= 224


def routes(n, seed=2544):
    """n distinct IPv4 prefixes [(network int, plen)], deterministic."""
    rng = random.Random(seed * 1000003 + n)
    lens = [p for p, _ in PLEN_WEIGHTS]
    wts = [w for _, w in PLEN_WEIGHTS]
    seen = set()
    out = []
    while len(out) < n:
        plen = rng.choices(lens, wts)[0]
        a = rng.getrandbits(32)
        if _excluded(a):
            continue
        net = a & ((0xffffffff << (32 - plen)) & 0xffffffff)
        if (net, plen) in seen:
            continue
        seen.add((net, plen))
        out.append((net, plen))
    return out


def acl_rules(n, seed=1918):
    """n deny rules that no generated packet matches (see module doc).
    Each: dict(proto, src, splen, dst, dplen, sport=(lo,hi), dport=(lo,hi))."""
    rng = random.Random(seed * 1000003 + n)
    rules = []
    for i in range(n):
        kind = i % 3
        if kind == 0:   # TCP to a destination prefix and a service port range
            lo = rng.randrange(1, 65000)
            rules.append(dict(proto=6, src=0, splen=0,
                              dst=rng.getrandbits(32) & 0xffffff00, dplen=24,
                              sport=(0, 65535), dport=(lo, lo + rng.randrange(0, 500))))
        elif kind == 1:  # UDP from a source prefix the traffic never uses
            while True:
                s = rng.getrandbits(32) & 0xffff0000
                if not _excluded(s):
                    break
            rules.append(dict(proto=17, src=s, splen=16, dst=0, dplen=0,
                              sport=(0, 65535), dport=(0, 65535)))
        else:            # UDP to a well-known port (traffic uses >= 1024)
            p = rng.randrange(1, 1024)
            rules.append(dict(proto=17, src=0, splen=0, dst=0, dplen=0,
                              sport=(0, 65535), dport=(p, p)))
    return rules


def flows(n_pkts, table, seed=7):
    """One (src, dst, sport, dport) per packet; dst inside a random route."""
    rng = random.Random(seed * 1000003 + len(table))
    out = []
    for i in range(n_pkts):
        net, plen = table[rng.randrange(len(table))]
        host = rng.getrandbits(32 - plen) if plen < 32 else 0
        dst = net | host
        src = (198 << 24) | (18 << 16) | (2 + i % 250)
        out.append((src, dst, 1024 + (i * 7919) % 64000, 1024 + rng.randrange(0, 64000)))
    return out


def size_schedule(spec, n_pkts, seed=11):
    """Frame sizes (FCS included) for n_pkts packets: "64" or an iMix name.
    Each block of 100 packets holds the profile's shares exactly, shuffled."""
    if spec in IMIX:
        block = []
        for size, pct in IMIX[spec]:
            block += [size] * pct
        rng = random.Random(seed)
        out = []
        while len(out) < n_pkts:
            b = list(block)
            rng.shuffle(b)
            out += b
        return out[:n_pkts]
    return [int(spec)] * n_pkts


def _mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


def build_frame(src, dst, sport, dport, frame_size, dst_mac=IN_MAC, src_mac=SRC_MAC, ttl=64):
    """Ether/IPv4/UDP with valid checksums (scapy builds them), padded with
    zeros to frame_size - 4 bytes (no FCS in the record)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    wire = frame_size - 4
    payload = wire - 14 - 20 - 8
    if payload < 0:
        raise ValueError(f"frame size {frame_size} below IPv4/UDP minimum")
    p = (Ether(dst=dst_mac, src=src_mac) / IP(src=ip_str(src), dst=ip_str(dst), ttl=ttl)
         / UDP(sport=sport, dport=dport) / Raw(b"\0" * payload))
    return bytes(p)


def write_pcap(path, frames):
    """Classic pcap (LINKTYPE_ETHERNET), microsecond timestamps."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)


# --- writers, one per consumer ------------------------------------------------

def write_routes_ours(path, table):
    """router route_file: "<prefix> via <gateway>" per line."""
    gws = gateways()
    with open(path, "w") as f:
        f.write(f"# {len(table)} synthetic IPv4 routes (bench/pcapgen.py)\n")
        for i, (net, plen) in enumerate(table):
            f.write(f"{ip_str(net)}/{plen} via {gws[i % len(gws)][0]}\n")


def acl_rule_ours(r):
    """One rule in the router's acl_file syntax (dataplane/router/README.md)."""
    proto = {6: "tcp", 17: "udp"}[r["proto"]]
    parts = ["deny", "proto", proto]
    if r["splen"]:
        parts += ["src", f"{ip_str(r['src'])}/{r['splen']}"]
    if r["dplen"]:
        parts += ["dst", f"{ip_str(r['dst'])}/{r['dplen']}"]
    if r["sport"] != (0, 65535):
        parts += ["sport", _range(r["sport"])]
    if r["dport"] != (0, 65535):
        parts += ["dport", _range(r["dport"])]
    return " ".join(parts)


def _range(pr):
    lo, hi = pr
    return str(lo) if lo == hi else f"{lo}-{hi}"


def write_acl_ours(path, rules):
    with open(path, "w") as f:
        f.write(f"# {len(rules)} ACL rules that the benchmark traffic does not match "
                "(bench/pcapgen.py); default permit\n")
        for r in rules:
            f.write(acl_rule_ours(r) + "\n")


def write_l3fwd_lpm(path4, path6, table, port=1):
    """l3fwd LPM route files: "R<prefix> <port>" (lpm_route_parse.c)."""
    with open(path4, "w") as f:
        for net, plen in table:
            f.write(f"R{ip_str(net)}/{plen} {port}\n")
    with open(path6, "w") as f:
        f.write(f"R2001:db8::/32 {port}\n")


def _l3fwd_acl_line(r):
    return (f"@{ip_str(r['src'])}/{r['splen']} {ip_str(r['dst'])}/{r['dplen']} "
            f"{r['sport'][0]} : {r['sport'][1]} {r['dport'][0]} : {r['dport'][1]} "
            f"{r['proto']}/0xff")


def write_l3fwd_acl(path4, path6, rules, table, port=1):
    """l3fwd ACL rule files (l3fwd_acl.c): "@" deny rules, then "R" routes as
    5-tuple rules.  rte_acl returns the highest-priority match and l3fwd
    gives earlier lines higher priority, so routes are written longest
    prefix first: first match = longest prefix match."""
    with open(path4, "w") as f:
        for r in rules:
            f.write(_l3fwd_acl_line(r) + "\n")
        for net, plen in sorted(table, key=lambda t: -t[1]):
            f.write(f"R0.0.0.0/0 {ip_str(net)}/{plen} 0 : 65535 0 : 65535 0/0 {port}\n")
    with open(path6, "w") as f:
        f.write(f"R0:0:0:0:0:0:0:0/0 2001:db8:0:0:0:0:0:0/32 0 : 65535 0 : 65535 0/0 {port}\n")


# --- the input set -------------------------------------------------------------

N_PKTS = 4000   # 40 iMix blocks; fits the 8192-mbuf pools of both apps with room


class Inputs:
    """Paths of every file one (routes, ACL rules) table pair needs."""

    def __init__(self, n_routes, n_acl):
        self.n_routes, self.n_acl = n_routes, n_acl
        d = INPUTS
        d.mkdir(parents=True, exist_ok=True)
        self.routes_ours = d / f"routes-{n_routes}.txt"
        self.acl_ours = d / f"acl-{n_acl}.txt"
        self.lpm4 = d / f"l3fwd-lpm-{n_routes}.v4"
        self.lpm6 = d / "l3fwd-lpm.v6"
        self.acl4 = d / f"l3fwd-acl-{n_acl}-{n_routes}.v4"
        self.acl6 = d / "l3fwd-acl.v6"
        self._table = None

    def table(self):
        if self._table is None:
            self._table = routes(self.n_routes)
        return self._table

    def ensure(self, l3fwd=True):
        if not self.routes_ours.exists():
            write_routes_ours(self.routes_ours, self.table())
        if not self.acl_ours.exists():
            write_acl_ours(self.acl_ours, acl_rules(self.n_acl))
        if l3fwd and not (self.lpm4.exists() and self.lpm6.exists()):
            write_l3fwd_lpm(self.lpm4, self.lpm6, self.table())
        if l3fwd and not (self.acl4.exists() and self.acl6.exists()):
            write_l3fwd_acl(self.acl4, self.acl6, acl_rules(self.n_acl), self.table())
        return self

    def pcap(self, size_spec, n_pkts=N_PKTS):
        path = INPUTS / f"pkts-{size_spec}-{self.n_routes}.pcap"
        if not path.exists():
            sizes = size_schedule(size_spec, n_pkts)
            frames = [build_frame(s, d, sp, dp, sz)
                      for (s, d, sp, dp), sz in zip(flows(n_pkts, self.table()), sizes)]
            tmp = path.with_suffix(".tmp")
            write_pcap(tmp, frames)
            tmp.rename(path)
        return path


def mean_frame_bytes(size_spec):
    """Mean frame size with FCS (for Mbit/s); Ethernet overhead not included."""
    if size_spec in IMIX:
        return sum(s * w for s, w in IMIX[size_spec]) / sum(w for _, w in IMIX[size_spec])
    return float(size_spec)
