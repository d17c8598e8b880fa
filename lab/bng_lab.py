"""The vBNG lab: kernel subscribers whose frames carry real VLAN/QinQ tags,
behind an access switch, edgeplane-dp with bng-uplink + bng-downlink, a core
host.

    s1 (netns)  eth0 198.18.100.10/24, tc BPF: 802.1ad 100 + 802.1Q 200
    s2 (netns)  eth0 198.18.100.11/24, tc BPF: 802.1Q 101
    p1 (netns)  eth0 (PPPoE frames come from scapy; no kernel addresses)
         |  (veth, MTU 1600: a QinQ frame of a 1500-byte packet is 1526 B)
    sw (netns)  br0: a plain Linux bridge (no VLAN filtering, tags pass)
         |
    dut (netns) acc 02:00:00:00:01:01 [edgeplane-dp] core 02:00:00:00:02:01
                                                      |
    core (netns) eth0 198.18.1.2/24 2001:db8:0:2::2/64 02:00:00:00:02:02

Subscriber i (from 0) has IPv4 198.18.100.(10+i)/32 inside 198.18.100.0/24
and the IPv6 prefix 2001:db8:(100+i)::/56, from which the host takes ::2/64.
The hosts' default gateways are 198.18.100.1 and 2001:db8:(100+i)::1;
`static_gateway` (default) gives them a static neighbour entry pointing at
the BNG's access MAC, because the uplink punts ARP/ND to the control plane
(there is none yet) instead of answering it.  The core host resolves the
BNG's core address by ARP/ND (the downlink's neigh stage answers it) and
routes 198.18.100.0/24 and 2001:db8:100::/40 to it.

Why not `ip link add ... type vlan proto 802.1ad`: this machine's kernel is
built without CONFIG_VLAN_8021Q (and without act_vlan and bridge VLAN
filtering), so VLAN subinterfaces cannot be created.  The hosts tag in the
kernel instead, with a tc (clsact) BPF program per host calling the kernel's
own bpf_skb_vlan_push/pop: egress pushes the C-tag then the 802.1ad S-tag
(or the one 802.1Q tag), ingress checks TPID and VID of each tag and pops
them, dropping anything else -- so a downlink frame with a wrong tag never
reaches the host's IP stack.  One more machine detail: the receiving veth
strips the outer tag into skb metadata and DPDK's net_af_packet re-inserts
it with TPID 0x8100 (rte_vlan_insert), so the BNG's uplink sees
8100/8100 where the wire had 88a8/8100; the downlink's 88a8 reaches the
hosts intact (their ingress program checks it).

Every veth end has its offloads off, so the data plane sees
wire-sized frames with final checksums.  The DUT's kernel has IPv6 off so
only edgeplane-dp speaks on its wires.

    with BngLab([Subscriber("s1", id=1, qinq=(100, 200)),
                 Subscriber("s2", id=2, vlan=101)]) as lab:
        lab.sub("s1").host.run(["ping", "-c1", CORE4])
        lab.dp.ctl("sub-get", id=1)
"""
import hashlib
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path

from lab.dp import Dp, DpLab, check_config
from lab.topology import Topology

ACCESS_MAC = "02:00:00:00:01:01"
CORE_MAC = "02:00:00:00:02:01"
CORE_HOST_MAC = "02:00:00:00:02:02"
CORE4, CORE6 = "198.18.1.2", "2001:db8:0:2::2"
BNG_CORE4, BNG_CORE6 = "198.18.1.1", "2001:db8:0:2::1"
ACCESS_GW4 = "198.18.100.1"
SUB_NET4 = "198.18.100.0/24"
SUB_NET6 = "2001:db8:100::/40"
ACCESS_MTU = 1600


# A tc direct-action program: EGRESS pushes tags, otherwise (ingress) it
# checks and pops them.  Built per (TPID, VID, VID) with clang -D...
SHIM_C = r"""
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("tc") int shim(struct __sk_buff *skb)
{
#ifdef EGRESS
	/* The first push becomes the inner tag once the second one is pushed. */
#if INNER_VID
	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), INNER_VID) != 0)
		return TC_ACT_SHOT;
#endif
	if (bpf_skb_vlan_push(skb, bpf_htons(OUTER_PROTO), OUTER_VID) != 0)
		return TC_ACT_SHOT;
#else
	/* The stack already moved the outer tag into skb metadata. */
	if (!skb->vlan_present || skb->vlan_proto != bpf_htons(OUTER_PROTO) ||
	    (skb->vlan_tci & 0x0fff) != OUTER_VID)
		return TC_ACT_SHOT;
	if (bpf_skb_vlan_pop(skb) != 0)
		return TC_ACT_SHOT;
#if INNER_VID
	if (!skb->vlan_present || skb->vlan_proto != bpf_htons(ETH_P_8021Q) ||
	    (skb->vlan_tci & 0x0fff) != INNER_VID)
		return TC_ACT_SHOT;
	if (bpf_skb_vlan_pop(skb) != 0)
		return TC_ACT_SHOT;
#endif
#endif
	return TC_ACT_OK;
}
char _license[] SEC("license") = "GPL";
"""
# A cache of compiled tag shims in the build tree, not in the shared /tmp,
# where a folder of this fixed name could be someone else's.
SHIM_DIR = Path(__file__).resolve().parent.parent / "build" / "lab" / "bng-shim"


def shim_objects(outer_proto, outer, inner):
    """(egress.o, ingress.o) for these tags, compiled once per machine."""
    SHIM_DIR.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(SHIM_C.encode()).hexdigest()[:10]
    src = SHIM_DIR / f"shim-{key}.c"
    if not src.exists():
        src.write_text(SHIM_C)
    out = []
    for d in ("EGRESS", "INGRESS"):
        obj = SHIM_DIR / f"shim-{key}-{d.lower()}-{outer_proto:x}-{outer}-{inner}.o"
        if not obj.exists():
            tmp = obj.with_suffix(".tmp")
            subprocess.run(["clang", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu",
                            f"-D{d}", f"-DOUTER_PROTO={outer_proto:#x}", f"-DOUTER_VID={outer}",
                            f"-DINNER_VID={inner}", "-c", str(src), "-o", str(tmp)],
                           check=True, capture_output=True, text=True)
            tmp.rename(obj)
        out.append(obj)
    return out


def vlan_shim(host, ifname, sub):
    """Tag everything host sends on ifname with sub's tags, untag what comes in."""
    if sub.qinq:
        egress, ingress = shim_objects(0x88a8, sub.qinq[0], sub.qinq[1])
    else:
        egress, ingress = shim_objects(0x8100, sub.vlan, 0)
    host.run(["tc", "qdisc", "add", "dev", ifname, "clsact"])
    host.run(["tc", "filter", "add", "dev", ifname, "egress", "bpf", "da", "obj", str(egress),
              "sec", "tc"])
    host.run(["tc", "filter", "add", "dev", ifname, "ingress", "bpf", "da", "obj",
              str(ingress), "sec", "tc"])


class Subscriber:
    """One subscriber: its access encapsulation, addresses and profiles.

    kind: qinq=(svlan, cvlan) or vlan=vid; pppoe=session makes it a PPPoE
    subscriber on those tags (frames from scapy, no kernel interface)."""

    def __init__(self, name, id, qinq=None, vlan=None, pppoe=None, index=None, pipe="fast",
                 policer=None, subport=0, kernel=True):
        if (qinq is None) == (vlan is None):
            raise ValueError("a subscriber has qinq=(s, c) or vlan=vid")
        self.name, self.id = name, id
        self.qinq, self.vlan, self.pppoe = qinq, vlan, pppoe
        self.index = id - 1 if index is None else index
        self.pipe, self.policer, self.subport = pipe, policer, subport
        self.kernel = kernel and pppoe is None
        self.mac = f"02:00:00:10:{(self.index >> 8) & 0xff:02x}:{self.index & 0xff:02x}"
        self.ipv4 = f"198.18.100.{10 + self.index}"
        net = 0x100 + self.index
        self.prefix6 = f"2001:db8:{net:x}::/56"
        self.ipv6 = f"2001:db8:{net:x}::2"
        self.gw6 = f"2001:db8:{net:x}::1"
        self.host = None

    def fields(self, with_profiles=True):
        """sub-add fields (also the config line)."""
        f = {"id": self.id}
        if self.qinq:
            f["qinq"] = f"{self.qinq[0]}.{self.qinq[1]}"
        else:
            f["vlan"] = self.vlan
        if self.pppoe is not None:
            f["pppoe"] = self.pppoe
        f["mac"] = self.mac
        f["ipv4"] = self.ipv4
        f["ipv6"] = self.prefix6
        if with_profiles:
            if self.policer:
                f["policer"] = self.policer
            if self.pipe:
                f["pipe"] = self.pipe
            f["subport"] = self.subport
        return f

    def line(self):
        return " ".join(f"{k}={v}" for k, v in self.fields().items())


def bng_sections(subs, pipes=None, policers=None, subports=None, bng_extra=None,
                 engine=None, eal_args=None, workers=("up", "down")):
    """The DUT's configuration (see lab.dp.render)."""
    s = {}
    if eal_args:
        s["eal"] = {"args": eal_args}
    s["engine"] = {"burst": 32, **(engine or {})}
    s["port access"] = {"device": "net_af_packet0,iface=acc", "mac": ACCESS_MAC,
                        "ipv4": f"{ACCESS_GW4}/24"}
    s["port core"] = {"device": "net_af_packet1,iface=core", "mac": CORE_MAC,
                      "ipv4": f"{BNG_CORE4}/24", "ipv6": f"{BNG_CORE6}/64"}
    if "up" in workers:
        s["worker up"] = {"pipeline": "bng-uplink", "rx": "access"}
    if "down" in workers:
        s["worker down"] = {"pipeline": "bng-downlink", "rx": "core"}
    b = {"access_port": "access", "core_port": "core",
         # Default routes as two halves: the router's LPMs take no /0.
         "route": [f"0.0.0.0/1 via {CORE4}", f"128.0.0.0/1 via {CORE4}",
                   f"::/1 via {CORE6}", f"8000::/1 via {CORE6}"],
         "neighbor": [f"{CORE4} {CORE_HOST_MAC}", f"{CORE6} {CORE_HOST_MAC}"],
         "hqos_port_rate": "1G"}
    b["subport"] = [f"{k} {v}" for k, v in (subports or {0: "rate=1G pipes=64"}).items()]
    b["pipe"] = [f"{k} {v}" for k, v in (pipes or {"fast": "rate=500M"}).items()]
    if policers:
        b["policer"] = [f"{k} {v}" for k, v in policers.items()]
    b.update(bng_extra or {})
    lines = [x.line() for x in subs]
    if lines:
        b["subscriber"] = lines
    s["bng"] = b
    return s


def bng_available(binary_path=None):
    """(True, "") when edgeplane-dp has the BNG pipelines, else (False, why)."""
    res, _ = check_config(bng_sections([]), binary_path=binary_path)
    text = res.stdout + res.stderr
    if res.returncode != 0 and ("unknown pipeline 'bng" in text
                                or "unknown section type 'bng'" in text
                                or "unknown section" in text and "bng" in text):
        return False, "edgeplane-dp has no bng pipelines yet (dataplane/bng/)"
    return True, ""


class BngLab(DpLab):
    """Namespaces sw, dut, core and one per subscriber; always torn down."""

    def __init__(self, subs, tag="bng", start=True, static_gateway=True, **dp_opts):
        self.subs = list(subs)
        self.tag = tag
        self.autostart = start
        self.static_gateway = static_gateway
        self.dp_opts = dp_opts
        self.topo = None
        self.dp = None

    def sub(self, name):
        return next(s for s in self.subs if s.name == name)

    def build(self):
        t = self.topo = Topology(self.tag).__enter__()
        self.sw = t.host("sw")
        self.dut = t.host("dut")
        self.core = t.host("core")
        for k in ("net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1"):
            self.dut.run(["sysctl", "-qw", k], check=False)
            self.sw.run(["sysctl", "-qw", k], check=False)
        self.sw.run(["ip", "link", "add", "br0", "type", "bridge", "stp_state", "0",
                     "forward_delay", "0"])
        self.sw.run(["ip", "link", "set", "br0", "mtu", str(ACCESS_MTU), "up"])
        t.link(self.sw, "pdut", self.dut, "acc", mac_b=ACCESS_MAC, mtu=ACCESS_MTU)
        self.sw.run(["ip", "link", "set", "pdut", "master", "br0"])
        t.link(self.core, "eth0", self.dut, "core", mac_a=CORE_HOST_MAC, mac_b=CORE_MAC,
               ipv4_a=f"{CORE4}/24", ipv6_a=f"{CORE6}/64")
        for h, ifn in ((self.dut, "acc"), (self.dut, "core"), (self.core, "eth0"),
                       (self.sw, "pdut")):
            h.offload_off(ifn)
        self.core.run(["ip", "route", "add", SUB_NET4, "via", BNG_CORE4])
        self.core.run(["ip", "-6", "route", "add", SUB_NET6, "via", BNG_CORE6])
        for i, s in enumerate(self.subs):
            self.add_host(s, i)
        return self

    def add_host(self, s, i):
        """A namespace for subscriber s on the access switch."""
        h = s.host = self.topo.host(s.name)
        port = f"p{i}"
        self.topo.link(h, "eth0", self.sw, port, mac_a=s.mac, mtu=ACCESS_MTU)
        self.sw.run(["ip", "link", "set", port, "master", "br0"])
        h.offload_off("eth0")
        self.sw.offload_off(port)
        if not s.kernel:
            return
        vlan_shim(h, "eth0", s)
        # The link carries 8 bytes of tags: the veths are MTU 1600 so the
        # tagged frame passes, and the routes keep IP packets at 1500.
        h.run(["ip", "addr", "add", f"{s.ipv4}/24", "dev", "eth0", "noprefixroute"])
        h.run(["ip", "-6", "addr", "add", f"{s.ipv6}/64", "dev", "eth0", "nodad",
               "noprefixroute"])
        h.run(["ip", "route", "add", SUB_NET4, "dev", "eth0", "mtu", "lock", "1500"])
        h.run(["ip", "-6", "route", "add", f"{s.ipv6}/64", "dev", "eth0", "mtu", "lock",
               "1500"])
        h.run(["ip", "route", "add", "default", "via", ACCESS_GW4, "mtu", "lock", "1500"])
        h.run(["ip", "-6", "route", "add", "default", "via", s.gw6, "mtu", "lock", "1500"])
        if self.static_gateway:
            h.neigh_add("eth0", ACCESS_GW4, ACCESS_MAC)
            h.neigh_add("eth0", s.gw6, ACCESS_MAC)

    def sections(self):
        return bng_sections(self.subs, **self.dp_opts)

    def start_dp(self, **override):
        """Start edgeplane-dp (lab.dp.Dp's memory policy covers a short
        hugepage pool)."""
        if self.dp is not None:
            self.dp.close()
        self.dp_opts.update(override)
        self.dp = Dp(self.dut, self.sections(), name=f"{self.tag}-dut")
        return self.dp.start()

    # -- counters --------------------------------------------------------------
    def sub_get(self, sub_id):
        return self.dp.ctl("sub-get", id=sub_id)

    def drops(self):
        return self.dp.drops()


def open_lab(request, subs, tag, **kw):
    """A BngLab closed by the pytest finalizer (module or function scope)."""
    lab = BngLab(subs, tag=tag, **kw)
    request.addfinalizer(lab.close)
    return lab.__enter__()


def sub_counters(dp, sub_id):
    """(uplink green+yellow pkts, downlink pkts) of a subscriber."""
    r = dp.ctl("sub-get", id=sub_id)
    r = r.get("subscriber", r)
    up = r["uplink"]
    return up["green"]["pkts"] + up["yellow"]["pkts"], r["downlink"]["pkts"]


def drop_count(dp, reason):
    return dp.drops().get(reason, 0)


def send_frames(host, frames, iface="eth0", inter=0.005):
    """Send raw frames (bytes) from a namespace with scapy, in a child
    python (scapy's sockets live in the namespace it runs in)."""
    import sys
    hexes = [f.hex() for f in frames]
    code = ("import sys; from scapy.all import sendp, Ether; "
            "fr = [Ether(bytes.fromhex(h)) for h in sys.argv[1:]]; "
            f"sendp(fr, iface={iface!r}, inter={inter}, verbose=False)")
    host.run([sys.executable, "-c", code, *hexes], timeout=60)


class Capture:
    """tshark writing a pcap in a namespace; stop() waits for the file.

        with Capture(host, "eth0", "udp port 9") as cap: ...
        cap.fields("ip.src", "pppoe.session_id")  -> [[...], ...]

    Without path the pcap is written in a folder of its own (mkdtemp: made
    with mode 0700 and a name nobody else can take, unlike mktemp's), which
    stays while the Capture is in use (its fields are read after the with
    block) and is removed with the object: when it is collected, at the
    latest when the interpreter exits (a failed test's traceback may hold
    it until then).  A path given is the caller's to remove."""

    def __init__(self, host, iface, bpf=None, path=None):
        self.host, self.iface = host, iface
        if path is None:
            d = tempfile.mkdtemp(prefix="bngcap-")
            weakref.finalize(self, shutil.rmtree, d, ignore_errors=True)
            path = Path(d) / "capture.pcap"
        self.path = Path(path)
        argv = ["tshark", "-q", "-i", iface, "-w", str(self.path)]
        if bpf:
            argv += ["-f", bpf]
        self.proc = host.popen(argv)
        # tshark reports "Capturing on ..." on stderr once the socket is open.
        import time
        deadline = time.monotonic() + 15
        buf = ""
        while time.monotonic() < deadline and "Capturing on" not in buf:
            line = self.proc.stderr.readline()
            if not line:
                break
            buf += line
        time.sleep(0.2)

    def stop(self):
        import signal
        import time
        time.sleep(0.3)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=15)
        return self.path

    def fields(self, *names, display_filter=None):
        argv = ["tshark", "-r", str(self.path), "-T", "fields", "-E", "separator=|"]
        if display_filter:
            argv += ["-Y", display_filter]
        for n in names:
            argv += ["-e", n]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
        return [line.split("|") for line in out.stdout.splitlines() if line.strip()]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
