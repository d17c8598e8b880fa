"""Edge UDP termination labs: edgeplane-dp's host stack with unmodified
programs under libedgeplane-preload.so.

HostStackLab: two nodes, each a namespace with one edgeplane-dp
(`pipeline = hoststack`), the data planes linked to each other, and a
kernel veth between the namespaces carrying the same addresses (the kernel
reference path, and iperf3's TCP control connection, which stays with the
kernel under the preload library).

      node a (client)                                   node b (server)
   kernel: k0 198.18.30.1/24 ------- veth ------- k0 198.18.30.2/24
           2001:db8:30::1/64                          2001:db8:30::2/64
   edgeplane-dp a: port m  ===== net_memif pair ===== edgeplane-dp b: port m
           same addresses, MAC 02:00:00:00:30:01        02:00:00:00:30:02

    with HostStackLab() as lab:
        lab.run("b", ["iperf3", "-s", "-1"], preload=True, background=True)
        lab.run("a", ["iperf3", "-c", B4, "-u", ...], preload=True)

link="af_xdp" puts the data planes on a second veth pair (net_af_xdp)
instead of memif; the kernel veth stays for the control connection.
central=True adds a third namespace c behind a second port of b (af_packet
on a veth, 198.18.31.0/24) for redirect policies: c has b's service address
on its loopback, as an anycast central node would.

SemanticsLab: one namespace whose loopback carries 198.18.20.1,
198.18.20.2 and 2001:db8:20::1, and an edgeplane-dp with the same
addresses on a port that never sees traffic (a net_memif server without a
peer): every datagram between the suite's own sockets is hairpinned inside
the data plane, exactly as the kernel loops them over lo.
"""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .dp import Dp, DpLab, binary
from .topology import Topology

A4, A6 = "198.18.30.1", "2001:db8:30::1"
B4, B6 = "198.18.30.2", "2001:db8:30::2"
C4, GW_C4 = "198.18.31.2", "198.18.31.1"
MAC_A, MAC_B = "02:00:00:00:30:01", "02:00:00:00:30:02"
SEM4, SEM4B, SEM6 = "198.18.20.1", "198.18.20.2", "2001:db8:20::1"


def preload_library(binary_path=None):
    """libedgeplane-preload.so next to the edgeplane-dp under test."""
    dp = Path(binary_path) if binary_path else binary()
    for cand in (dp.parent / "preload" / "libedgeplane-preload.so",
                 dp.parent.parent / "dp" / "preload" / "libedgeplane-preload.so",
                 Path(__file__).resolve().parent.parent / "build" / "dp" / "preload" /
                 "libedgeplane-preload.so"):
        if cand.exists():
            return cand
    raise FileNotFoundError("libedgeplane-preload.so not built: run `make build`")


def semantics_binary():
    """The socket-semantics suite (built with edgeplane-dp)."""
    p = Path(__file__).resolve().parent.parent / "build" / "dp" / "preload" / "hs_semantics"
    if not p.exists():
        raise FileNotFoundError(f"{p} not built: run `make build`")
    return p


class _PreloadMixin:
    """Running programs with or without the preload library in a node."""

    def preload_env(self, node, extra=None):
        env = dict(os.environ)
        env["LD_PRELOAD"] = str(self.preload)
        env["EDGEPLANE_HOSTSTACK"] = str(self.attach_path(node))
        env.update(extra or {})
        return env

    def kernel_env(self):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        return env

    def run(self, node, argv, preload=False, timeout=60, check=False, env=None, **kw):
        h = getattr(self, node)
        e = self.preload_env(node, env) if preload else self.kernel_env()
        if env and not preload:
            e.update(env)
        return h.run(argv, check=check, timeout=timeout, env=e, **kw)

    def popen(self, node, argv, preload=False, env=None, **kw):
        h = getattr(self, node)
        e = self.preload_env(node, env) if preload else self.kernel_env()
        if env and not preload:
            e.update(env)
        return h.popen(argv, env=e, **kw)


def hoststack_sections(node, link, workdir, hoststack=None, engine=None, eal_args=None,
                       central=False, workers=1):
    """One node's edgeplane-dp configuration."""
    v4, v6, mac = (A4, A6, MAC_A) if node == "a" else (B4, B6, MAC_B)
    sections = {"eal": {"args": eal_args}} if eal_args else {}
    sections["engine"] = dict(engine or {})
    if link == "memif":
        role = "client" if node == "a" else "server"
        dev = (f"net_memif{node},role={role},socket={workdir}/memif.sock,"
               f"socket-abstract=no,id=0,mac={mac}")
    elif link == "af_xdp":
        dev = f"net_af_xdp{node},iface=x0"
    else:
        raise ValueError("link: memif or af_xdp")
    sections["port m"] = {"device": dev, "ipv4": f"{v4}/24", "ipv6": f"{v6}/64"}
    rx = "m"
    if central and node == "b":
        sections["port c"] = {"device": "net_af_packet9,iface=bc", "mac": "02:00:00:00:31:01",
                              "ipv4": f"{GW_C4}/24"}
        rx = "m, c"
    for i in range(workers):
        sections[f"worker w{i}"] = {"pipeline": "hoststack", "rx": rx, "lcore": i + 1}
    hs = {"attach_socket": f"{workdir}/{node}.attach"}
    hs.update(hoststack or {})
    sections["hoststack"] = hs
    return sections


class HostStackLab(_PreloadMixin, DpLab):
    """Two host-stack nodes (see the module docstring).  Always torn down."""

    def __init__(self, link="memif", tag="hs", start=True, hoststack=None, engine=None,
                 central=False, workers=1, binary_path=None, cpus=None):
        self.link = link
        # {node: "0"}: pin that node's edgeplane-dp ([engine] cpus).
        self.cpus = dict(cpus or {})
        self.tag = tag
        self.autostart = start
        self.hs_opts = {"a": dict(hoststack or {}), "b": dict(hoststack or {})}
        self.engine = engine
        self.central = central
        self.workers = workers
        self.preload = preload_library(binary_path)
        self.workdir = Path(tempfile.mkdtemp(prefix="ephs-"))
        self.dps = {}
        self.topo = None
        self.dp = None

    def attach_path(self, node):
        return self.workdir / f"{node}.attach"

    def build(self):
        self.topo = Topology(self.tag).__enter__()
        t = self.topo
        self.a = t.host("a")
        self.b = t.host("b")
        t.link(self.a, "k0", self.b, "k0", ipv4_a=f"{A4}/24", ipv4_b=f"{B4}/24",
               ipv6_a=f"{A6}/64", ipv6_b=f"{B6}/64")
        if self.link == "af_xdp":
            for h in (self.a, self.b):
                h.run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], check=False)
            t.link(self.a, "x0", self.b, "x0", mac_a=MAC_A, mac_b=MAC_B)
            for h in (self.a, self.b):
                h.offload_off("x0")
        if self.central:
            self.c = t.host("c")
            self.b.run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], check=False)
            t.link(self.b, "bc", self.c, "c0", mac_a="02:00:00:00:31:01",
                   mac_b="02:00:00:00:31:02", ipv4_b=f"{C4}/24")
            self.b.offload_off("bc")
            self.c.offload_off("c0")
            # The central node answers for b's service address (anycast).
            self.c.run(["ip", "addr", "add", f"{B4}/32", "dev", "lo"])
        return self

    def sections(self, node):
        engine = dict(self.engine or {})
        if node in self.cpus:
            engine["cpus"] = self.cpus[node]
        return hoststack_sections(node, self.link, self.workdir, self.hs_opts[node],
                                  engine, central=self.central, workers=self.workers)

    def start_dp(self, nodes=("b", "a")):
        """Start (or restart) the data planes; b first: it is the memif server."""
        for node in nodes:
            self.stop_dp(node)
            if node == "b" and self.link == "memif":
                # net_memif leaves its server socket file behind.
                (self.workdir / "memif.sock").unlink(missing_ok=True)
            dp = Dp(getattr(self, node), self.sections(node), name=f"{self.tag}-{node}")
            try:
                dp.start()
            except BaseException:
                dp.close()
                raise
            self.dps[node] = dp
        self.dp = self.dps.get("b")
        return self.dps

    def stop_dp(self, node):
        dp = self.dps.pop(node, None)
        if dp is not None:
            dp.close()

    def close(self):
        try:
            for node in list(self.dps):
                self.stop_dp(node)
            self.dp = None
            if self.topo is not None:
                self.topo.close()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


class SemanticsLab(_PreloadMixin, DpLab):
    """One namespace, its loopback and an edgeplane-dp with the same addresses."""

    def __init__(self, tag="sem", binary_path=None, hoststack=None):
        self.tag = tag
        self.hoststack = dict(hoststack or {})
        self.preload = preload_library(binary_path)
        self.workdir = Path(tempfile.mkdtemp(prefix="ephsem-"))
        self.topo = None
        self.dp = None

    def attach_path(self, node="s"):
        return self.workdir / "s.attach"

    def build(self):
        self.topo = Topology(self.tag).__enter__()
        self.s = self.topo.host("s")
        for a in (f"{SEM4}/24", f"{SEM4B}/24", f"{SEM6}/64"):
            self.s.addr_add("lo", a)
        return self

    def sections(self):
        return {
            "engine": {},
            "port m": {"device": f"net_memif9,role=server,socket={self.workdir}/memif.sock,"
                                 "socket-abstract=no,id=0",
                       "ipv4": [f"{SEM4}/24", f"{SEM4B}/24"], "ipv6": f"{SEM6}/64"},
            "worker w0": {"pipeline": "hoststack", "rx": "m", "lcore": 1},
            "hoststack": {"attach_socket": str(self.attach_path()), **self.hoststack},
        }

    def start_dp(self):
        self.dp = Dp(self.s, self.sections(), name=f"{self.tag}-dp")
        self.dp.start()
        return self.dp

    def close(self):
        try:
            super().close()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


def suite(lab, preload, cases=(), timeout=300, env=None, status=None):
    """Run hs_semantics in the lab's namespace: {case: record}; `status`, a
    dict, receives the exit status and the tail of stderr."""
    import json

    argv = [str(semantics_binary()), "--v4", SEM4, "--v4b", SEM4B, "--v6", SEM6, *cases]
    res = lab.run("s", argv, preload=preload, timeout=timeout, env=env)
    if status is not None:
        status.update(exit=res.returncode, stderr=res.stderr[-4000:])
    out = {}
    for line in res.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            out[rec["case"]] = rec
    if not out:
        raise RuntimeError(f"hs_semantics printed nothing (exit {res.returncode}): "
                           f"{res.stdout[-500:]} {res.stderr[-500:]}")
    return out


def semantics_cases():
    """The suite's case names (hs_semantics --list)."""
    res = subprocess.run([str(semantics_binary()), "--list"], capture_output=True, text=True,
                         timeout=30)
    return [c for c in res.stdout.split() if c]
