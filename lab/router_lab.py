"""The standard router lab: two kernel hosts with edgeplane-dp between them.

        host a                      DUT (netns)                     host b
    eth0 198.18.0.2/24     pa 198.18.0.1/24   pb 198.18.1.1/24    eth0 198.18.1.2/24
         2001:db8:0:1::2/64   2001:db8:0:1::1/64 2001:db8:0:2::1/64    2001:db8:0:2::2/64
         02:00:00:00:00:0a -- 02:00:00:00:01:01 [edgeplane-dp] 02:00:00:00:02:01 -- 02:00:00:00:00:0b

The DUT's veth ends carry no kernel addresses (IPv6 off there too), so only
edgeplane-dp answers on them.  Every veth end has its offloads off, so the
data plane sees wire-sized frames with final checksums.  The hosts route
everything via the DUT and have no static neighbour for it: they resolve
the gateway by ARP and ND, which the router answers.  The router's
neighbours (the two hosts) are static in its config, from the fixed MACs.

    with RouterLab() as lab:
        lab.a.run(f"ping -c1 {B4}")
        lab.dp.ctl("route-add", prefix="198.18.100.0/24", via=B4)

Parameters cover what tests and benchmarks vary: extra routes and
neighbours, ACL rules and default, the ports' DPDK device kind, the worker
layout (one worker polling both ports, or one per port), the links' and
ports' MTUs, extra [engine] and [router] keys, NAPI on the hosts' veth ends
(peer_napi: what the router's XDP fast path needs to send into a veth), and
the router's fast path (fast_path="tc": the tc program on the wires pa and
pb, the DPDK ports on the far ends of punt veth pairs the lab builds in the
DUT, pa_k ==veth== pa_p and pb_k ==veth== pb_p, pa_p and pb_p carrying pa's
and pb's MACs; see dataplane/router/xdp_fast_tc.c):

    host a -- pa [tc fast path] ... pb -- host b
               |punt           |punt
             pa_k==pa_p      pb_k==pb_p   (edgeplane-dp polls pa_p and pb_p)
pipeline="xconnect" builds the same wiring with a patch cable instead of a
router (hosts then share one subnet, see XconnectLab).
"""
from .dp import Dp, DpLab, check_config
from .topology import Topology

# Addresses and MACs of the standard lab (RFC 2544 and RFC 3849 ranges).
A4, A6 = "198.18.0.2", "2001:db8:0:1::2"
B4, B6 = "198.18.1.2", "2001:db8:0:2::2"
GW_A4, GW_A6 = "198.18.0.1", "2001:db8:0:1::1"
GW_B4, GW_B6 = "198.18.1.1", "2001:db8:0:2::1"
MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
MAC_PA, MAC_PB = "02:00:00:00:01:01", "02:00:00:00:02:01"

# fast_path="tc": each wire's punt pair in the DUT, (near end, far end).
PUNT_PAIRS = {"pa": ("pa_k", "pa_p"), "pb": ("pb_k", "pb_p")}

DEVICE_KINDS = {
    # {i}: port index (DPDK vdev names must be unique), {iface}: the veth.
    "af_packet": "net_af_packet{i},iface={iface}",
    "af_xdp": "net_af_xdp{i},iface={iface}",
}


def device_string(kind, i, iface):
    tmpl = DEVICE_KINDS.get(kind, kind)
    return tmpl.format(i=i, iface=iface)


def router_available(binary_path=None):
    """(True, "") when edgeplane-dp has the router pipeline, else (False, why).

    Only the pipeline's absence counts: if the standard config fails --check
    for another reason, the router is there and its tests should say why."""
    res, _ = check_config(router_sections(), binary_path=binary_path)
    text = res.stdout + res.stderr
    if res.returncode != 0 and ("unknown pipeline 'router'" in text
                                or "unknown section type 'router'" in text):
        return False, "edgeplane-dp has no 'router' pipeline yet (dataplane/router/)"
    return True, ""


def router_sections(routes=(), neighbors=None, acl=(), acl_default=None, device="af_packet",
                    workers=1, engine=None, router=None, eal_args=None, pipeline="router",
                    ifaces=("pa", "pb"), mtus=None, fast_path=None):
    """The DUT's configuration as sections (see lab.dp.render).

    fast_path="tc": the ports poll the punt pairs' far ends (pa_p, pb_p),
    the wires ifaces are the tc program's; None leaves [router] as it was
    (xdp_fast_path decides)."""
    wires = ifaces
    if fast_path == "tc":
        ifaces = tuple(PUNT_PAIRS[w][1] for w in wires)
    pa, pb = ifaces
    sections = {}
    if eal_args:
        sections["eal"] = {"args": eal_args}
    sections["engine"] = {"burst": 32, **(engine or {})}
    sections["port pa"] = {"device": device_string(device, 0, pa)}
    sections["port pb"] = {"device": device_string(device, 1, pb)}
    # The veths already carry these MACs; saying so lets the engine check it
    # (net_af_xdp cannot set a MAC, so it is left out there).
    if device != "af_xdp":
        sections["port pa"]["mac"] = MAC_PA
        sections["port pb"]["mac"] = MAC_PB
    if mtus:
        sections["port pa"]["mtu"], sections["port pb"]["mtu"] = mtus
    if fast_path == "tc":
        for port, wire in zip(("pa", "pb"), wires):
            sections[f"port {port}"].update(fast_path_wire=wire, fast_path_punt=PUNT_PAIRS[wire][0])
    if pipeline == "router":
        sections["port pa"].update(ipv4=f"{GW_A4}/24", ipv6=f"{GW_A6}/64")
        sections["port pb"].update(ipv4=f"{GW_B4}/24", ipv6=f"{GW_B6}/64")
    extra = {"pairs": "pa:pb"} if pipeline == "xconnect" else {}
    # Every worker polls both ports: each port then has one rx queue per
    # worker and net_af_packet's PACKET_FANOUT spreads flows over them (the
    # veth's RSS).  A worker per port ("per_port") leaves rx queues that no
    # worker polls on net_af_packet (the engine opens as many queue pairs as
    # there are tx queues, one per worker): flows hashed to them are lost.
    if isinstance(workers, int) and workers >= 1:
        for i in range(workers):
            sections[f"worker w{i}"] = {"pipeline": pipeline, "rx": "pa, pb", "lcore": i + 1,
                                        **extra}
    elif workers == "per_port":
        sections["worker w0"] = {"pipeline": pipeline, "rx": "pa", "lcore": 1, **extra}
        sections["worker w1"] = {"pipeline": pipeline, "rx": "pb", "lcore": 2, **extra}
    else:
        raise ValueError("workers: a count (each polls both ports) or 'per_port'")
    if pipeline == "router":
        if neighbors is None:
            neighbors = [(A4, MAC_A), (A6, MAC_A), (B4, MAC_B), (B6, MAC_B)]
        rt = {}
        if routes:
            rt["route"] = [r if isinstance(r, str) else f"{r[0]} via {r[1]}" for r in routes]
        rt["neighbor"] = [n if isinstance(n, str) else f"{n[0]} {n[1]}" for n in neighbors]
        if acl:
            rt["acl"] = list(acl)
        if acl_default:
            rt["acl_default"] = acl_default
        if fast_path:
            rt["fast_path"] = fast_path
        rt.update(router or {})
        sections["router"] = rt
    return sections


class RouterLab(DpLab):
    """Namespaces a, dut, b; edgeplane-dp in dut.  Always torn down."""

    def __init__(self, pipeline="router", tag="rt", start=True, host_addrs=None,
                 peer_napi=False, binary=None, punt_pairs=None, **dp_opts):
        """binary: an edgeplane-dp other than the build's (an A/B's).
        punt_pairs: build the tc fast path's punt pairs (default: when
        fast_path="tc"), so that a bench can start either kind of DUT."""
        self.punt_pairs = punt_pairs
        self.pipeline = pipeline
        self.binary = binary
        self.peer_napi = peer_napi
        self.tag = tag
        self.autostart = start
        self.dp_opts = dp_opts
        self.host_addrs = host_addrs
        self.topo = None
        self.dp = None

    # Host addressing: router lab = two subnets; xconnect = one subnet.
    def _addrs(self):
        if self.host_addrs:
            return self.host_addrs
        if self.pipeline == "router":
            return {"a": (f"{A4}/24", f"{A6}/64", GW_A4, GW_A6),
                    "b": (f"{B4}/24", f"{B6}/64", GW_B4, GW_B6)}
        return {"a": ("198.18.0.2/24", "2001:db8:0:1::2/64", None, None),
                "b": ("198.18.0.3/24", "2001:db8:0:1::3/64", None, None)}

    def build(self):
        self.topo = Topology(self.tag).__enter__()
        t = self.topo
        self.a = t.host("a")
        self.dut = t.host("dut")
        self.b = t.host("b")
        # The DUT kernel stays silent on the data plane's wires: no IPv6
        # (no link-local, RS or MLD) on interfaces created from now on.
        for k in ("net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1"):
            self.dut.run(["sysctl", "-qw", k], check=False)
        addrs = self._addrs()
        a4, a6, gwa4, gwa6 = addrs["a"]
        b4, b6, gwb4, gwb6 = addrs["b"]
        # mtus=(pa, pb): the links' MTUs and the router ports' (default 1500).
        mtu_a, mtu_b = self.dp_opts.get("mtus") or (1500, 1500)
        t.link(self.a, "eth0", self.dut, "pa", mac_a=MAC_A, mac_b=MAC_PA, ipv4_a=a4, ipv6_a=a6,
               mtu=mtu_a)
        t.link(self.b, "eth0", self.dut, "pb", mac_a=MAC_B, mac_b=MAC_PB, ipv4_a=b4, ipv6_a=b6,
               mtu=mtu_b)
        for h, ifname in ((self.a, "eth0"), (self.dut, "pa"), (self.dut, "pb"), (self.b, "eth0")):
            h.offload_off(ifname)
        if self.punt_pairs or (self.punt_pairs is None and self.dp_opts.get("fast_path") == "tc"):
            # The punt pairs: the far end carries the wire's MAC (what the
            # pipeline answers ARP and ND with); the near end none of ours.
            for wire, mac, mtu in (("pa", MAC_PA, mtu_a), ("pb", MAC_PB, mtu_b)):
                near, far = PUNT_PAIRS[wire]
                t.link(self.dut, near, self.dut, far, mac_b=mac, mtu=mtu)
                self.dut.offload_off(near)
                self.dut.offload_off(far)
        if self.peer_napi:
            # XDP redirect into a veth (the router's XDP fast path sending
            # on pa or pb) needs NAPI on the veth's peer, the hosts' eth0:
            # GRO on there enables it (Linux 6.18 veth.c, veth_xdp_xmit
            # drops the frame when the peer's rq has no NAPI).  A real NIC
            # has no such condition.  Both hosts, so that every DUT in a
            # lab (ours and Linux forwarding) delivers through it alike.
            for h in (self.a, self.b):
                h.run(["ethtool", "-K", "eth0", "gro", "on"])
        for h, gw4, gw6 in ((self.a, gwa4, gwa6), (self.b, gwb4, gwb6)):
            if gw4:
                h.run(["ip", "route", "add", "default", "via", gw4])
            if gw6:
                h.run(["ip", "-6", "route", "add", "default", "via", gw6])
        return self

    def sections(self):
        return router_sections(pipeline=self.pipeline, **self.dp_opts)

    def start_dp(self, **override):
        """Start (or restart with changed options) edgeplane-dp in the DUT."""
        if self.dp is not None:
            self.dp.close()
        self.dp_opts.update(override)
        self.dp = Dp(self.dut, self.sections(), name=f"{self.tag}-dut", binary_path=self.binary)
        try:
            self.dp.start()
        except BaseException:
            self.dp.close()
            raise
        return self.dp

    # Convenience for tests and the demo.
    def ping(self, src, dst, count=3, interval=0.2, wait=1, timeout=10, check=False):
        """ping from host `src` ("a" or "b"); CompletedProcess.  wait: seconds
        ping waits for the last reply (what a failing ping costs)."""
        h = getattr(self, src)
        argv = ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", str(wait), dst]
        return h.run(argv, check=check, timeout=timeout)


def flush_neigh(host, ifname="eth0"):
    """Forget learned neighbours so the next packet resolves again."""
    host.run(["ip", "neigh", "flush", "dev", ifname], check=False)
    host.run(["ip", "-6", "neigh", "flush", "dev", ifname], check=False)


def neigh_state(host, ip):
    """`ip neigh show IP` in host: e.g. '198.18.0.1 dev eth0 lladdr ... REACHABLE'."""
    res = host.run(["ip", "neigh", "show", ip], check=False)
    return res.stdout.strip()

