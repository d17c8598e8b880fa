"""vCMTS lab: a Remote PHY side (namespace `rpd`), a network side (`net`)
and edgeplane-dp (`dut`) between them, one service group, and the service
group profiles the tests and the benchmark share.

    rpd:eth0 (02:00:00:00:0a:02) ---- dut:rpd  [cmts-us rx, DEPI tx]
    net:eth0 (02:00:00:00:0b:02) ---- dut:net  [cmts-ds rx, upstream tx]

The namespaces' interfaces carry no IP address: the tests talk through raw
packet sockets (rpd_model builds and takes apart the UEPI/DEPI side), so
the kernel never answers the L2TPv3 packets or the CPE traffic itself.

The default profile is the per-SG test configuration of Intel's vCMTS
benchmarks (300 CMs, 4 CPE addresses each, 6 filter groups of 16 rules, 2
per CM, 16 classifiers per CM into 3 of the CM's SFs, 8 SFs per CM of which
4 carry traffic, 6 OFDM channels of 1.89 Gbit/s in 2 bonding groups, 100 %
AES); `channels="mixed"` is its alternative: 2 OFDM + 32 SC-QAM channels of
42.24 Mbit/s in 4 bonding groups.
"""
import hashlib
import ipaddress
import socket
import time

from pyroute2 import netns

from lab import rpd_model
from lab.dp import Dp, DpLab
from lab.topology import Topology

CMTS_IP, RPD_IP = "198.18.10.1", "198.18.10.2"
RPD_PORT_MAC, RPD_MAC = "02:00:00:00:0a:01", "02:00:00:00:0a:02"
NET_PORT_MAC, NET_HOST_MAC = "02:00:00:00:0b:01", "02:00:00:00:0b:02"
NET_HOST_IP = "198.18.0.2"
DS_SESSION, US_SESSION = 0x1000, 0x2000
CPE_BASE = ipaddress.ip_address("198.19.0.0")
ETH_P_ALL = 0x0003


def tek(cm_id, kseq):
    """The TEK and IV the lab gives CM cm_id for key sequence kseq."""
    h = hashlib.sha256(b"edgeplane-tek %d %d" % (cm_id, kseq)).digest()
    return h[:16], h[16:32]


def mac(*b):
    return ":".join(f"{x:02x}" for x in b)


class CmSpec:
    """One CM of a profile: identity, CPEs, bonding group, filter groups,
    keys; line() is its config line, model() the RPD model's CableModem."""

    def __init__(self, id, bg, fgs=(), bpi=True, kseq=1):
        self.id, self.bg, self.fgs, self.bpi = id, bg, tuple(fgs), bpi
        self.mac = mac(2, 0, 0, 1, id >> 8, id & 0xFF)
        self.cpes = [(str(CPE_BASE + 4 * id + k), mac(2, 0, k, 2, id >> 8, id & 0xFF))
                     for k in range(4)]
        self.sid = self.said = id
        self.keys = {kseq: tek(id, kseq)} if bpi else {}
        self.ds_kseq = kseq if bpi else None

    def line(self):
        parts = [f"id={self.id}", f"mac={self.mac}",
                 "cpe=" + ",".join(f"{ip}@{m}" for ip, m in self.cpes),
                 f"bg={self.bg}", f"sid={self.sid}"]
        if self.fgs:
            parts.append("fg=" + ",".join(str(g) for g in self.fgs))
        if self.bpi:
            key, iv = self.keys[self.ds_kseq]
            parts += [f"said={self.said}", f"kseq={self.ds_kseq}", f"key={key.hex()}",
                      f"iv={iv.hex()}"]
        else:
            parts.append("bpi=off")
        return " ".join(parts)

    def model(self):
        return rpd_model.CableModem(self.id, self.mac, self.sid, self.said, self.keys,
                                    self.ds_kseq, bpi=self.bpi)


class SgProfile:
    """A service group: channels, bonding groups, CMs with their SFs,
    classifiers and filter groups (the default profile unless told)."""

    def __init__(self, n_cms=300, channels="ofdm", bpi=True, filters=True, classifiers=True,
                 sf_rate="1G", sf_burst=262144, ch_rate=None, us_channels=2):
        self.channels, self.bgs = [], []
        if channels == "ofdm":
            for c in range(6):
                self.channels.append((c, "ofdm", ch_rate or "1.89G"))
            self.bgs = [[0, 1, 2], [3, 4, 5]]
        elif channels == "mixed":
            for c in range(2):
                self.channels.append((c, "ofdm", ch_rate or "1.89G"))
            for c in range(2, 34):
                self.channels.append((c, "scqam", ch_rate or "42.24M"))
            self.bgs = [[0] + list(range(2, 10)), [1] + list(range(10, 18)),
                        list(range(18, 26)), list(range(26, 34))]
        else:
            raise ValueError(channels)
        self.us_channels = us_channels
        self.filters = filters
        self.classifiers = classifiers
        self.sf_rate, self.sf_burst = sf_rate, sf_burst
        fg = (lambda i: (1 + i % 6, 1 + (i + 1) % 6)) if filters else (lambda i: ())
        self.cms = [CmSpec(i, (i - 1) % len(self.bgs), fg(i), bpi=bpi)
                    for i in range(1, n_cms + 1)]

    def cm(self, id):
        return self.cms[id - 1]

    def models_by_said(self):
        d = {c.said: c.model() for c in self.cms if c.bpi}
        plain = [c for c in self.cms if not c.bpi]
        if plain:
            d[None] = plain[0].model()
        return d

    def table_lines(self):
        """The cm_file: filter rules, CMs, SFs (0-3 carry traffic, 4-7 are
        defined and idle), classifiers (dport 10000-10015 into SFs 1-3)."""
        out = []
        if self.filters:
            for g in range(1, 7):
                for r in range(16):
                    out.append(f"filter {g} {r} permit proto=17 dport={20000 + g * 16 + r}")
        for c in self.cms:
            out.append("cm " + c.line())
            for s in range(8):
                out.append(f"sf {c.id} {s} rate={self.sf_rate} burst={self.sf_burst} "
                           f"prio={min(7, 2 * s) if s < 4 else 1}")
            if self.classifiers:
                for k in range(16):
                    out.append(f"cls {c.id} {k} sf={1 + k % 3} proto=17 dport={10000 + k}")
        return out

    def section(self, cm_file, **extra):
        """The [cmts sg0] keys (lab.dp.render's dict form)."""
        s = {"rpd_port": "rpd", "net_port": "net", "cmts_ip": CMTS_IP, "rpd_ip": RPD_IP,
             "rpd_mac": RPD_MAC, "max_cms": max(64, len(self.cms) + 16), "max_rules": 16384,
             "channel": [f"{c} {t} rate={r} session={DS_SESSION + c:#x} flow={c % 8}"
                         for c, t, r in self.channels],
             "bonding_group": [f"{i} " + ",".join(str(c) for c in bg)
                               for i, bg in enumerate(self.bgs)],
             "us_channel": [f"{u} session={US_SESSION + u:#x}" for u in range(self.us_channels)],
             "cm_file": str(cm_file)}
        s.update(extra)
        return s

    def flow(self, f):
        """Flow f of the downstream traffic: (CM, CPE address, CPE MAC,
        dport) -- consecutive flows go to different CMs; 1 in 10 matches a
        classifier, 1 in 10 a filter rule of the CM's groups."""
        c = self.cms[f % len(self.cms)]
        ip, m = c.cpes[f // len(self.cms) % 4]
        if f % 10 == 0:
            dport = 10000 + f // 10 % 16
        elif f % 10 == 1 and c.fgs:
            dport = 20000 + c.fgs[0] * 16 + f % 16
        else:
            dport = 5000 + f % 1000
        return c, ip, m, dport


def cmts_sections(profile, workdir, engine=None, sg_extra=None, eal_args=None):
    """The DUT's configuration (lab.dp.render form); the cm_file goes to workdir."""
    path = workdir / "cms.txt"
    path.write_text("\n".join(profile.table_lines()) + "\n")
    s = {}
    if eal_args:
        s["eal"] = {"args": eal_args}
    s["engine"] = {"burst": 32, "idle_polls": 100, **(engine or {})}
    s["port rpd"] = {"device": "net_af_packet0,iface=rpd", "mac": RPD_PORT_MAC}
    s["port net"] = {"device": "net_af_packet1,iface=net", "mac": NET_PORT_MAC}
    s["worker ds"] = {"pipeline": "cmts-ds", "rx": "net"}
    s["worker us"] = {"pipeline": "cmts-us", "rx": "rpd"}
    s["cmts"] = {"crypto_sessions": 4 * len(profile.cms) + 256}
    s["cmts sg0"] = profile.section(path, **(sg_extra or {}))
    return s


def inproc_sections(profile, workdir, sock, lcores="0@0,1@1,2@0,3@1", gen=None, sg_extra=None,
                    memory="auto"):
    """The in-process configuration of the benchmark (and of its smoke test):
    a cmts-gen worker plays the network and the RPD into two net_ring ports
    (the SG's net_port and rpd_port), the cmts-ds and cmts-us workers send
    their output to net_null ports.  No kernel, no veth: what is measured is
    the pipelines' compute.

        cmts-gen --ds_in (ring)--> cmts-ds --> ds_out (null)
                 --us_in (ring)--> cmts-us --> us_out (null)

    The generator must be the first worker: a net_ring port loops tx queue i
    back to rx queue i, and the engine gives worker i tx queue i, while the
    cmts workers poll rx queue 0."""
    path = workdir / "cms.txt"
    path.write_text("\n".join(profile.table_lines()) + "\n")
    s = {"eal": {"args": f"--lcores={lcores}"},
         "engine": {"ctl_socket": str(sock), "burst": 32, "idle_polls": 10,
                    "memory": memory},
         "port ds_in": {"device": "net_ring_cdsi"},
         "port us_in": {"device": "net_ring_cusi"},
         "port ds_out": {"device": "net_null_cdso"},
         "port us_out": {"device": "net_null_cuso"},
         "worker gen": {"pipeline": "cmts-gen", "ds_port": "ds_in", "us_port": "us_in",
                        "lcore": 1, **(gen or {})},
         "worker ds": {"pipeline": "cmts-ds", "rx": "ds_in", "tx": "ds_out", "lcore": 2},
         "worker us": {"pipeline": "cmts-us", "rx": "us_in", "tx": "us_out", "lcore": 3},
         "cmts": {"crypto_sessions": 4 * len(profile.cms) + 256},
         "cmts sg0": profile.section(path, rpd_port="us_in", net_port="ds_in",
                                     **(sg_extra or {}))}
    return s


class RawPort:
    """An AF_PACKET socket on an interface inside a namespace."""

    def __init__(self, nsname, ifname):
        netns.pushns(nsname)
        try:
            self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            self.s.bind((ifname, 0))
        finally:
            netns.popns()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)

    def send(self, frames, pace_us=0):
        for f in frames:
            self.s.send(bytes(f))
            if pace_us:
                time.sleep(pace_us / 1e6)

    def recv(self, want=None, timeout=3.0, idle=0.5, keep=None):
        """Frames until `want` arrived, `timeout` passed, or nothing came for
        `idle` seconds after the first; `keep(frame)` filters."""
        out, deadline, last = [], time.monotonic() + timeout, None
        self.s.settimeout(0.05)
        while time.monotonic() < deadline and (want is None or len(out) < want):
            if last is not None and time.monotonic() - last > idle:
                break
            try:
                f = self.s.recv(65535)
            except socket.timeout:
                continue
            if keep is None or keep(f):
                out.append(f)
                last = time.monotonic()
        return out

    def drain(self):
        self.s.settimeout(0.01)
        try:
            while True:
                self.s.recv(65535)
        except socket.timeout:
            pass

    def close(self):
        self.s.close()


def depi_payloads(frames):
    """The L2TPv3 payloads of the DEPI packets among captured frames."""
    out = []
    for f in frames:
        if len(f) >= 34 and f[12:14] == b"\x08\x00" and f[23] == rpd_model.IPPROTO_L2TP:
            ihl = (f[14] & 0x0F) * 4
            tl = int.from_bytes(f[16:18], "big")
            out.append(f[14 + ihl:14 + tl])
    return out


def uepi_frame(l2tp):
    """An Ethernet/IPv4 frame carrying a UEPI L2TPv3 payload to the CMTS."""
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether
    return bytes(Ether(dst=RPD_PORT_MAC, src=RPD_MAC) /
                 IP(src=RPD_IP, dst=CMTS_IP, proto=rpd_model.IPPROTO_L2TP, ttl=64) / l2tp)


def ds_frame(ip, mac, dport, size, tag):
    """A UDP frame from the network host to a CPE, `size` bytes with FCS,
    numbered by `tag` (in its source port and first payload bytes)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    return bytes(Ether(dst=mac, src=NET_HOST_MAC) / IP(src=NET_HOST_IP, dst=ip) /
                 UDP(sport=1024 + tag % 60000, dport=dport) /
                 tag.to_bytes(4, "big") / bytes(size - 4 - 42 - 4))


def us_frame(cpe_ip, cpe_mac, size, tag):
    """A UDP frame from a CPE to the network host, `size` bytes with FCS."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    return bytes(Ether(dst=NET_HOST_MAC, src=cpe_mac) / IP(src=cpe_ip, dst=NET_HOST_IP) /
                 UDP(sport=4000, dport=4001) / tag.to_bytes(4, "big") /
                 bytes(size - 4 - 42 - 4))


class CmtsLab(DpLab):
    """Namespaces dut, rpd, net; edgeplane-dp with one SG; raw ports."""

    def __init__(self, profile, tag="cmts", start=True, **dp_opts):
        self.profile = profile
        self.tag = tag
        self.autostart = start
        self.dp_opts = dp_opts
        self.topo = self.dp = None
        self.rpd_port = self.net_port = None

    def build(self):
        t = self.topo = Topology(self.tag).__enter__()
        self.dut, self.rpd, self.net = t.host("dut"), t.host("rpd"), t.host("net")
        for h in (self.dut, self.rpd, self.net):
            for k in ("net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1"):
                h.run(["sysctl", "-qw", k], check=False)
        t.link(self.rpd, "eth0", self.dut, "rpd", mac_a=RPD_MAC, mac_b=RPD_PORT_MAC, mtu=9000)
        t.link(self.net, "eth0", self.dut, "net", mac_a=NET_HOST_MAC, mac_b=NET_PORT_MAC,
               mtu=9000)
        for h, ifn in ((self.dut, "rpd"), (self.dut, "net"), (self.rpd, "eth0"),
                       (self.net, "eth0")):
            h.offload_off(ifn)
        self.rpd_port = RawPort(self.rpd.ns, "eth0")
        self.net_port = RawPort(self.net.ns, "eth0")
        return self

    def start_dp(self, **override):
        """Start edgeplane-dp (lab.dp.Dp's memory policy covers a short
        hugepage pool)."""
        if self.dp is not None:
            self.dp.close()
        self.dp_opts.update(override)
        self.dp = Dp(self.dut, None, name=f"{self.tag}-dut", start_timeout=60)
        self.dp.sections = cmts_sections(self.profile, self.dp.dir, **self.dp_opts)
        return self.dp.start()

    def close(self):
        for p in (self.rpd_port, self.net_port):
            if p is not None:
                p.close()
        super().close()
