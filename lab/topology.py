"""Network-namespace topologies for tests, benchmarks and `make run`.

A Topology owns every namespace and veth it creates and removes them when the
`with` block ends, when the process exits, and on SIGTERM/SIGINT, so a failing
test never leaves a namespace behind.  Names carry a short per-run prefix so
two runs (or a stale one) never collide; `python -m lab.topology --sweep`
removes leftovers of crashed runs.

    with Topology("rt") as topo:
        a = topo.host("a")
        dut = topo.host("dut")
        topo.link(a, "eth0", dut, "pa", mac_a="02:00:00:00:00:0a",
                  ipv4_a="198.18.0.2/24")
        a.run("ping -c1 198.18.0.1")

Only addresses in 198.18.0.0/15 and 2001:db8::/32 are accepted, so a test
cannot send traffic anywhere but between its own namespaces.
"""
import atexit
import ipaddress
import os
import shlex
import signal
import subprocess
import sys
import threading
import uuid

from pyroute2 import IPRoute, NetNS, netns

NS_PREFIX = "ep"
ALLOWED = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:db8::/32")]

_live = set()
_live_lock = threading.Lock()
# Every namespace this process created, so a test session can prove it left
# none behind (other runs on the machine may have their own meanwhile).
created_namespaces = set()


def check_address(addr):
    """Refuse any address outside the benchmarking ranges (RFC 2544, RFC 3849)."""
    ip = ipaddress.ip_interface(addr).ip
    if not any(ip in net for net in ALLOWED):
        raise ValueError(f"{addr}: test addresses must be in 198.18.0.0/15 or 2001:db8::/32")
    return addr


def _cleanup_all():
    with _live_lock:
        topos = list(_live)
    for t in topos:
        t.close()


def _on_signal(signum, frame):
    _cleanup_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


atexit.register(_cleanup_all)
for _sig in (signal.SIGTERM, signal.SIGHUP):
    try:
        signal.signal(_sig, _on_signal)
    except ValueError:  # not the main thread
        pass


class Host:
    """One network namespace: a host, a device under test, or a tester."""

    def __init__(self, topo, name, nsname):
        self.topo = topo
        self.name = name
        self.ns = nsname
        self.procs = []

    def _argv(self, cmd):
        argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        return ["ip", "netns", "exec", self.ns] + argv

    def run(self, cmd, check=True, timeout=60, **kw):
        """Run a command in this namespace and wait; output captured as text."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        res = subprocess.run(self._argv(cmd), timeout=timeout, **kw)
        if check and res.returncode != 0:
            raise subprocess.CalledProcessError(res.returncode, cmd, res.stdout, res.stderr)
        return res

    def popen(self, cmd, **kw):
        """Start a command in this namespace; it is killed at teardown."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        p = subprocess.Popen(self._argv(cmd), start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def ipr(self):
        """A pyroute2 handle inside this namespace (caller closes it)."""
        return NetNS(self.ns)

    def addr_add(self, ifname, addr):
        check_address(addr)
        iface = ipaddress.ip_interface(addr)
        with self.ipr() as ns:
            idx = ns.link_lookup(ifname=ifname)[0]
            family = 10 if iface.version == 6 else 2
            kw = {"nodad": True} if iface.version == 6 else {}
            ns.addr("add", index=idx, address=str(iface.ip),
                    prefixlen=iface.network.prefixlen, family=family, **kw)

    def route_add(self, dst, gateway):
        check_address(dst if "/" in dst else dst + "/32")
        check_address(gateway)
        ip = ipaddress.ip_address(gateway)
        with self.ipr() as ns:
            ns.route("add", dst=dst, gateway=gateway, family=10 if ip.version == 6 else 2)

    def neigh_add(self, ifname, ip, mac):
        check_address(ip)
        with self.ipr() as ns:
            idx = ns.link_lookup(ifname=ifname)[0]
            fam = 10 if ipaddress.ip_address(ip).version == 6 else 2
            ns.neigh("replace", dst=ip, lladdr=mac, ifindex=idx, state=0x80, family=fam)

    def offload_off(self, ifname):
        """Turn off checksum/segmentation offloads so a user-space data plane on
        the other end sees complete, wire-sized frames with final checksums."""
        self.run(["ethtool", "-K", ifname, "rx", "off", "tx", "off", "tso", "off",
                  "gso", "off", "gro", "off"], check=False)

    def stop_procs(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait()
        self.procs.clear()


class Topology:
    """A set of namespaces and veth links that is always torn down."""

    def __init__(self, tag="lab"):
        self.prefix = f"{NS_PREFIX}{tag}-{uuid.uuid4().hex[:5]}"
        self.hosts = {}
        self.closed = False

    def __enter__(self):
        with _live_lock:
            _live.add(self)
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def host(self, name):
        nsname = f"{self.prefix}-{name}"
        netns.create(nsname)
        created_namespaces.add(nsname)
        h = Host(self, name, nsname)
        self.hosts[name] = h
        with h.ipr() as ns:
            ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
        # IPv6 on and no DAD delay, so addresses are usable at once.
        for k in ("net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.accept_dad=0",
                  "net.ipv6.conf.all.accept_dad=0"):
            h.run(["sysctl", "-qw", k], check=False)
        return h

    def link(self, a, ifa, b, ifb, mac_a=None, mac_b=None, ipv4_a=None, ipv4_b=None,
             ipv6_a=None, ipv6_b=None, mtu=1500):
        """A veth pair with one end in each host; optional MACs and addresses."""
        tmp_a = f"v{uuid.uuid4().hex[:10]}"
        tmp_b = f"v{uuid.uuid4().hex[:10]}"
        with IPRoute() as ipr:
            ipr.link("add", ifname=tmp_a, kind="veth", peer=tmp_b)
            ipr.link("set", index=ipr.link_lookup(ifname=tmp_a)[0], net_ns_fd=a.ns)
            ipr.link("set", index=ipr.link_lookup(ifname=tmp_b)[0], net_ns_fd=b.ns)
        for host, tmp, name, mac in ((a, tmp_a, ifa, mac_a), (b, tmp_b, ifb, mac_b)):
            with host.ipr() as ns:
                idx = ns.link_lookup(ifname=tmp)[0]
                kw = {"ifname": name, "mtu": mtu}
                if mac:
                    kw["address"] = mac
                ns.link("set", index=idx, **kw)
                ns.link("set", index=idx, state="up")
        for host, name, addr in ((a, ifa, ipv4_a), (b, ifb, ipv4_b), (a, ifa, ipv6_a), (b, ifb, ipv6_b)):
            if addr:
                host.addr_add(name, addr)
        return (a, ifa), (b, ifb)

    def close(self):
        if self.closed:
            return
        self.closed = True
        for h in self.hosts.values():
            h.stop_procs()
        for h in self.hosts.values():
            try:
                netns.remove(h.ns)
            except OSError:
                pass
        with _live_lock:
            _live.discard(self)


def sweep(prefix=NS_PREFIX):
    """Remove namespaces left by crashed runs (names start with the lab prefix)."""
    removed = []
    for name in netns.listnetns():
        if name.startswith(prefix):
            netns.remove(name)
            removed.append(name)
    return removed


if __name__ == "__main__":
    if "--sweep" in sys.argv:
        print("removed:", " ".join(sweep()) or "nothing")
