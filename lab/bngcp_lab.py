"""The BNG with its own control plane: subscribers attach by themselves.

    emu (netns)   subemu: N PPPoE or IPoE subscribers, untagged/VLAN/QinQ
    d1, d2 (netns) dhclient / udhcpc on eth0, tagged by tc-BPF (lab.bng_lab)
    hx (netns)    scapy (hostile frames)
         |
    sw (netns) br0 (a plain bridge: tags pass)
         |
    dut (netns) acc [edgeplane-dp bng-uplink/downlink/inject] core
                 ctl ==veth== ctlp  edgeplane upf 198.18.2.1 (PFCP 8805, GTP-U 2152)
                                          |
    cp (netns) edgeplane bng-cp 198.18.2.2: PFCP to the user plane, the control
               packet redirect (GTP-U), AAA (a local file, or freeradius in
               the same namespace), the REST API on a Unix socket
    core (netns) 198.18.1.2: iperf3, subemu reflect

The control plane reaches the user plane only as docs/cups.md describes:
association and sessions over PFCP, subscribers' control frames redirected
to it in GTP-U by the default session (and a PPPoE session's own tunnel),
its answers sent back through the tunnels the user plane chose.

Addresses: IPoE subscribers from 198.18.100.10-250 (gateway 198.18.100.1,
the access port's own address, which the data plane answers ARP for),
PPPoE subscribers from 198.18.104.0/21; IPv6 blocks /56 from
2001:db8:100::/40 with a /60 delegated inside.  The core routes both to
the BNG.

    with BngCpLab() as lab:
        emu = lab.emulator("pppoe", n=4, auth="pap", ipv6=True)
        emu.command("traffic 100 2 198.18.1.2:9000")
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from lab.bng_lab import ACCESS_MAC, ACCESS_MTU, BNG_CORE4, CORE4, shim_objects
from lab.daemon import Daemon, prometheus_samples
from lab.cups_lab import CP_ADDR, UPF_ADDR, CupsLab, Upf, go_binary

PPP_NET4 = "198.18.104.0/21"
PPP_POOL4 = ("198.18.104.1", "198.18.111.254")
IPOE_POOL4 = ("198.18.100.10", "198.18.100.250")
POOL6 = "2001:db8:100::/40"
# In the lab's own work directory: two labs of one tag (a test and
# `make run` side by side) must not answer each other's API calls.
CP_API = "{workdir}/bng-cp-api.sock"
CP_METRICS_PORT = 9102
REFLECT_PORT = 9000


def profiles():
    """Subscriber profiles by name: rates in bit/s."""
    return [{"name": "p10", "up_mbr": "10M", "down_mbr": "10M"},
            {"name": "p1", "up_mbr": "1M", "down_mbr": "1M"},
            {"name": "p2", "up_mbr": "2M", "down_mbr": "2M"},
            {"name": "p5", "up_mbr": "5M", "down_mbr": "5M"},
            {"name": "fast", "up_mbr": "200M", "down_mbr": "200M"}]


def cp_config(tag, workdir, **over):
    """edgeplane bng-cp's configuration (JSON is YAML)."""
    c = {
        "node_id": CP_ADDR,
        "state_dir": str(workdir / "cp-state"),
        "shards": 2,
        "access": {"mode": "cpr", "gtpu": f"{CP_ADDR}:2152"},
        "ports": [{"name": "access", "mac": ACCESS_MAC, "user_plane": "up1"}],
        "pfcp": {"listen": f"{CP_ADDR}:8805", "heartbeat": "2s", "t1": "1s", "n1": 3,
                 "user_planes": [{"name": "up1", "address": f"{UPF_ADDR}:8805"}]},
        "pppoe": {"ac_name": "edgeplane-lab", "auth": ["pap", "chap"], "keepalive": "10s",
                  "keepalive_failures": 3, "restart_timer": "1s"},
        "ipoe": {"lease": "600s"},
        "ipv6": {"dns": ["2001:db8:0:2::53"]},
        "pools": [
            {"name": "ppp4", "range": "-".join(PPP_POOL4), "gateway": PPP_NET4,
             "dns": ["198.18.1.53"]},
            {"name": "ipoe4", "range": "-".join(IPOE_POOL4), "gateway": "198.18.100.1/24",
             "dns": ["198.18.1.53"]},
            {"name": "v6", "prefix": POOL6, "block": 56, "pd": 60},
        ],
        "profiles": profiles(),
        "aaa": {"mode": "local", "local_file": str(workdir / "subscribers.txt"),
                "accept_unknown_ipoe": True, "default_profile": "p10", "default_pool": "ipoe4",
                "default_pool6": "v6", "accounting_file": str(workdir / "accounting.jsonl"),
                "interim": "60s"},
        "limits": {"new_per_second": 20000, "per_mac_per_second": 5},
        "api": {"listen": "unix:" + CP_API.format(workdir=workdir), "metrics": f"{CP_ADDR}:{CP_METRICS_PORT}"},
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(c.get(k), dict):
            c[k] = {**c[k], **v}
        else:
            c[k] = v
    return c


def local_users(n, password="secret", profile="p10", extra=()):
    """The subscriber file: user0 .. user{n-1}, PPPoE from ppp4."""
    lines = [f"user{i} {password} profile={profile} pool=ppp4 pool6=v6" for i in range(n)]
    return "\n".join([*lines, *extra]) + "\n"


def attach_to_switch(topo, sw, h, port, tags=None):
    """h's eth0 on the access switch's bridge br0 as its port `port`
    (tags=(s, c) or vid: the switch tags and untags with tc-BPF)."""
    topo.link(h, "eth0", sw, port, mtu=ACCESS_MTU)
    sw.run(["ip", "link", "set", port, "master", "br0"])
    h.offload_off("eth0")
    sw.offload_off(port)
    if tags is not None:
        switch_tags(sw, port, tags)


def switch_tags(sw, port, tags):
    """The access switch's port tags what the host sends and untags what
    it gets (tags=(s, c): 802.1ad + 802.1Q; an int: one 802.1Q tag), as an
    access node does.  Done on the switch, not on the host (lab.bng_lab
    tags on the host): a DHCP client's packet socket sees frames before
    the host's tc ingress, so a tag popped there is still in what dhclient
    reads, and ISC dhclient drops tagged frames."""
    if isinstance(tags, tuple):
        push, pop = shim_objects(0x88a8, tags[0], tags[1])
    else:
        push, pop = shim_objects(0x8100, tags, 0)
    sw.run(["tc", "qdisc", "add", "dev", port, "clsact"])
    sw.run(["tc", "filter", "add", "dev", port, "ingress", "bpf", "da", "obj", str(push), "sec", "tc"])
    sw.run(["tc", "filter", "add", "dev", port, "egress", "bpf", "da", "obj", str(pop), "sec", "tc"])


class BngCp(Daemon):
    """edgeplane bng-cp in the cp namespace."""

    def __init__(self, host, workdir, config):
        self.host, self.workdir, self.config = host, Path(workdir), config
        self.api_path = config["api"]["listen"].removeprefix("unix:")
        self.proc = None
        self.log = None

    def start(self, wait_ready=True):
        path = self.workdir / "bng-cp.json"
        path.write_text(json.dumps(self.config, indent=1))
        self.log = open(self.workdir / "bng-cp.log", "a")
        self.proc = self.host.popen([str(go_binary("edgeplane")), "bng-cp", "-c", str(path)],
                                    stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"edgeplane bng-cp exited: {self.output()}")
            try:
                st = self.api("GET", "/v1/bng/stats")
                if not wait_ready or st.get("components", {}).get("pfcp", {}).get("user_planes_ready"):
                    return self
            except RuntimeError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"edgeplane bng-cp did not come up: {self.output()}")

    def output(self):
        if self.log:
            self.log.flush()
        p = self.workdir / "bng-cp.log"
        return p.read_text()[-4000:] if p.exists() else ""

    def api(self, method, path, body=None, check=True):
        argv = ["curl", "-s", "--max-time", "20", "--unix-socket", self.api_path, "-X", method,
                "-w", "\n%{http_code}", f"http://bng{path}"]
        if body is not None:
            argv += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"api {method} {path}: curl {r.returncode} {r.stderr}")
        text, _, code = r.stdout.rpartition("\n")
        if check and not code.startswith("2"):
            raise RuntimeError(f"api {method} {path}: {code} {text}")
        return json.loads(text) if text.strip() else {}

    def sessions(self):
        return self.api("GET", "/v1/bng/sessions").get("sessions") or []

    def stats(self):
        return self.api("GET", "/v1/bng/stats")

    def counters(self):
        return self.api("GET", "/v1/bng/counters")

    def cli(self, *args):
        """The operator's CLI (edgeplane bng ...)."""
        r = self.host.run([str(go_binary("edgeplane")), "bng", "--api", "unix:" + self.api_path, *args],
                          check=False)
        return r

    def metrics(self):
        r = self.host.run(["curl", "-s", "--max-time", "5", f"http://{CP_ADDR}:{CP_METRICS_PORT}/metrics"],
                          check=False)
        return prometheus_samples(r.stdout)


class Emulator:
    """subemu -hold on a host: the set-up's report, then commands."""

    def __init__(self, host, args, timeout=120):
        self.host = host
        argv = [str(go_binary("subemu")), "-iface", "eth0", "-hold", *[str(a) for a in args]]
        self.buf = b""
        self.proc = host.popen(argv, stdin=subprocess.PIPE, bufsize=1)
        self.setup = self._line(timeout)
        if self.setup.get("event") != "setup":
            raise RuntimeError(f"subemu: {self.setup}")
        ready = self._line(10)
        assert ready.get("event") == "ready", ready

    def _line(self, timeout):
        """The next JSON line (read from the descriptor: select() does not
        see what a buffered reader already holds)."""
        import select
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and not select.select([fd], [], [], 0)[0]:
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""
                raise RuntimeError(f"subemu: no answer ({self.proc.poll()}): {err}")
            if select.select([fd], [], [], min(left, 0.5))[0]:
                chunk = os.read(fd, 1 << 20)
                if not chunk and self.proc.poll() is not None:
                    continue
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def command(self, line, timeout=180):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._line(timeout)

    def sessions(self, a=None, b=None):
        cmd = "sessions" if a is None else f"sessions {a} {b}"
        return self.command(cmd)["sessions"]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.command("quit", timeout=10)
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait()


class BngCpLab(CupsLab):
    """CupsLab whose control plane is edgeplane bng-cp."""

    def __init__(self, tag="bngcp", users=64, cp=None, upf_args=(), subports=None, **dp_opts):
        dp_opts.setdefault("subports", subports or {0: "rate=1G pipes=4096"})
        dp_opts.setdefault("bng_extra", {"control_port": "ctl", "max_subscribers": 8192})
        super().__init__([], tag=tag, upf_args=("--heartbeat-interval", "2s", *upf_args), **dp_opts)
        self.cp_over = cp or {}
        self.users = users
        self.bngcp = None
        self.access_hosts = {}
        self.emus = []
        self.daemons = []
        self.clients = []

    def build(self):
        super().build()
        self.core.run(["ip", "route", "add", PPP_NET4, "via", BNG_CORE4])
        return self

    def access_host(self, name, tags=None):
        """A namespace on the access switch; tags=(s, c) or vid: tc-BPF tagging."""
        if name in self.access_hosts:
            return self.access_hosts[name]
        i = 100 + len(self.access_hosts)
        h = self.topo.host(name)
        attach_to_switch(self.topo, self.sw, h, f"p{i}", tags)
        self.access_hosts[name] = h
        return h

    def start_dp(self, **override):
        dp = super(CupsLab, self).start_dp(**override)
        if self.upf is None:
            self.upf = Upf(self.dut, self.dp, self.workdir / "state", self.upf_args).start()
            (self.workdir / "subscribers.txt").write_text(local_users(self.users))
            self.bngcp = BngCp(self.cph, self.workdir, cp_config(self.tag, self.workdir, **self.cp_over)).start()
        else:
            self.upf.dp = self.dp
        return dp

    def restart_cp(self, kill=False, **over):
        """Stop (or kill -9) bng-cp and start it again, with the same
        configuration updated by over (top-level keys replaced)."""
        if kill:
            self.bngcp.kill()
        else:
            self.bngcp.stop()
        config = {**self.bngcp.config, **over}
        self.bngcp = BngCp(self.cph, self.workdir, config).start()

    def radius(self, users, secret="testing123"):
        """freeradius in the cp namespace, the control plane its client."""
        r = FreeRadius(self.cph, self.workdir, secret, [CP_ADDR], users)
        self.radiusd = r
        return r

    def emulator(self, mode, n=1, host="emu", **kw):
        """subemu with n subscribers (QinQ from S-tag 100, C-tag 1 by default)."""
        h = self.access_host(host)
        args = ["-mode", mode, "-n", n]
        for k, v in kw.items():
            flag = "-" + k.replace("_", "-")
            if v is True:
                args.append(flag)
            elif v is not False and v is not None:
                args += [flag, v]
        e = Emulator(h, args)
        self.emus.append(e)
        return e

    def reflector(self):
        p = self.core.popen([str(go_binary("subemu")), "reflect", "-listen", f"{CORE4}:{REFLECT_PORT}"])
        self.daemons.append(p)
        time.sleep(0.3)
        return p

    def dhcp_client(self, host, kind, family=4):
        c = DhcpClient(self.access_hosts[host], kind, self.workdir, family)
        self.clients.append(c)
        return c

    def up_subscribers(self):
        """The data plane's subscriber count (what the user plane holds)."""
        return self.dp.ctl("bng-stats")["subscribers"]

    def close(self):
        try:
            for c in self.clients:
                c.stop()
            for e in self.emus:
                e.close()
            for p in self.daemons:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if self.bngcp is not None:
                self.bngcp.stop()
            if getattr(self, "radiusd", None) is not None:
                self.radiusd.stop()
        finally:
            super().close()


# ISC dhclient retransmits a request 10 s after the first by default
# (initial-interval), and a renewal whose retransmission would pass the
# lease's end is sent at the end instead.  With an operator's lease of an
# hour that is many tries; with the lab's 12 s leases a single renewal
# lost while the control plane restarts would cost the lease.  The
# client's timers are scaled down with the lease, as a CPE's are to its
# lease, so a short outage costs a retransmission, not the session.
DHCLIENT_CONF = """initial-interval 1;
backoff-cutoff 2;
"""

# Client scripts: addresses and routes only (never /etc/resolv.conf, which
# namespaces share), and every event written down for the tests.
DHCLIENT_SCRIPT = r"""#!/bin/sh
d=$(dirname "$0")
env | grep -E '^(reason|new_|old_|interface)' | sort >> "$d/$reason.env"
echo "$reason" >> "$d/events"
case "$reason" in
BOUND|RENEW|REBIND|REBOOT)
  ip addr replace "$new_ip_address/$new_subnet_mask" dev "$interface"
  ip route replace default via "$new_routers" dev "$interface" mtu lock 1500 ;;
EXPIRE|RELEASE|STOP)
  [ -n "$old_ip_address" ] && ip addr del "$old_ip_address/$old_subnet_mask" dev "$interface" ;;
BOUND6|RENEW6|REBIND6)
  [ -n "$new_ip6_address" ] && ip -6 addr replace "$new_ip6_address/128" dev "$interface" nodad ;;
esac
exit 0
"""

UDHCPC_SCRIPT = r"""#!/bin/sh
d=$(dirname "$0")
env | grep -E '^(ip|subnet|router|lease|serverid|dns|mask|interface)=' | sort >> "$d/$1.env"
echo "$1" >> "$d/events"
case "$1" in
bound|renew)
  ip addr replace "$ip/$mask" dev "$interface"
  ip route replace default via "$router" dev "$interface" mtu lock 1500 ;;
deconfig)
  ip -4 addr flush dev "$interface" ;;
esac
exit 0
"""


class DhcpClient(Daemon):
    """A real DHCP client in a namespace, its script's record in a directory."""

    stop_timeout = 5

    def __init__(self, host, kind, workdir, family=4):
        self.host, self.kind, self.family = host, kind, family
        self.dir = Path(workdir) / f"{host.name}-{kind}{family}"
        self.dir.mkdir(parents=True, exist_ok=True)
        script = self.dir / "script"
        script.write_text(UDHCPC_SCRIPT if kind == "udhcpc" else DHCLIENT_SCRIPT)
        script.chmod(0o755)
        if kind == "dhclient":
            conf = self.dir / "dhclient.conf"
            conf.write_text(DHCLIENT_CONF)
            argv = ["dhclient", "-d", "-v", "-cf", str(conf), "-sf", str(script), "-lf", str(self.dir / "leases"),
                    "-pf", str(self.dir / "pid")]
            argv += ["-6", "-N", "-P"] if family == 6 else ["-4"]
            argv.append("eth0")
        else:
            argv = ["udhcpc", "-f", "-i", "eth0", "-s", str(script), "-t", "10", "-T", "1", "-A", "1"]
        self.log = open(self.dir / "log", "w")
        self.proc = host.popen(argv, stdout=self.log, stderr=self.log)

    def events(self):
        p = self.dir / "events"
        return p.read_text().split() if p.exists() else []

    def env(self, reason):
        p = self.dir / f"{reason}.env"
        if not p.exists():
            return {}
        return dict(line.split("=", 1) for line in p.read_text().splitlines() if "=" in line)

    def output(self):
        self.log.flush()
        return (self.dir / "log").read_text()[-3000:]

    def kill(self):
        """kill -9: no RELEASE, the lease is left to expire."""
        super().kill()


class FreeRadius(Daemon):
    """Debian's freeradius in a namespace: a copy of /etc/freeradius/3.0
    with our client, our users and its own directories (logs, the detail
    files of accounting), run in the foreground as root."""

    CONF = Path("/etc/freeradius/3.0")
    stop_timeout = 5

    def __init__(self, host, workdir, secret, clients, users):
        self.host, self.dir = host, Path(workdir) / "radius"
        self.secret = secret
        subprocess.run(["rm", "-rf", str(self.dir)], check=True)
        subprocess.run(["cp", "-a", str(self.CONF), str(self.dir)], check=True)
        rc = self.dir / "radiusd.conf"
        text = rc.read_text()
        text = text.replace("logdir = /var/log/freeradius", f"logdir = {self.dir}/log")
        text = text.replace("raddbdir = /etc/freeradius/3.0", f"raddbdir = {self.dir}")
        text = text.replace("run_dir = ${localstatedir}/run/${name}", f"run_dir = {self.dir}/run")
        text = text.replace("\tuser = freerad", "#\tuser = freerad").replace("\tgroup = freerad", "#\tgroup = freerad")
        rc.write_text(text)
        (self.dir / "log" / "radacct").mkdir(parents=True)
        (self.dir / "run").mkdir()
        (self.dir / "clients.conf").write_text("".join(
            f"client c{i} {{\n\tipaddr = {c}\n\tsecret = {secret}\n}}\n" for i, c in enumerate(clients)))
        (self.dir / "mods-config" / "files" / "authorize").write_text(users)
        self.log = open(self.dir / "radiusd.out", "w")
        self.proc = host.popen(["freeradius", "-f", "-d", str(self.dir), "-l", "stdout"],
                               stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"freeradius exited: {self.output()}")
            r = host.run(["ss", "-Hlun", "sport = :1812"], check=False)
            if r.stdout.strip():
                return
            time.sleep(0.2)
        raise RuntimeError(f"freeradius did not come up: {self.output()}")

    def output(self):
        self.log.flush()
        return (self.dir / "radiusd.out").read_text()[-3000:]

    def accounting(self):
        """Every accounting request in the detail files: a list of dicts."""
        out = []
        for f in sorted((self.dir / "log" / "radacct").rglob("detail-*")):
            rec = None
            for line in f.read_text().splitlines():
                if not line.strip():
                    if rec:
                        out.append(rec)
                    rec = None
                elif not line.startswith(("\t", " ")):
                    rec = {}
                elif rec is not None and " = " in line:
                    k, _, v = line.strip().partition(" = ")
                    rec[k] = v.strip('"')
            if rec:
                out.append(rec)
        return out

    def coa(self, to, attrs, code="coa"):
        """radclient: a CoA-Request (or Disconnect-Request) to the NAS."""
        body = "\n".join(f'{k} = "{v}"' for k, v in attrs.items()) + "\n"
        r = self.host.run(["radclient", "-x", "-r", "2", "-t", "3", to, code, self.secret],
                          input=body, check=False)
        return r



class DirectLab:
    """edgeplane bng-cp in direct mode: the control plane on the access link
    itself (access mode "direct", no user plane), subscribers' hosts on a
    plain bridge, untagged unless a host asks for tags.  What it checks is
    the control plane's own handling of a line, with real clients, apart
    from the user plane's.

        cp (netns) acc -- br0 (sw) -- eth0 of each subscriber host
    """

    def __init__(self, tag="bcdir", users=16, cp=None):
        from lab.topology import Topology
        self.tag, self.users, self.cp_over = tag, users, cp or {}
        self.topo = Topology(tag)
        self.hosts, self.emus, self.clients = {}, [], []
        self.bngcp = None
        self.workdir = None

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self):
        self.topo.__enter__()
        # The control plane's config, state, logs and API socket, and the
        # DHCP clients' folders: removed by close().
        self.workdir = Path(tempfile.mkdtemp(prefix=f"edgeplane-{self.tag}-"))
        self.cph, self.sw = self.topo.host("cp"), self.topo.host("sw")
        self.sw.run(["ip", "link", "add", "br0", "type", "bridge"])
        self.sw.run(["ip", "link", "set", "br0", "up"])
        self.topo.link(self.cph, "acc", self.sw, "pcp", mac_a=ACCESS_MAC, mtu=ACCESS_MTU)
        self.sw.run(["ip", "link", "set", "pcp", "master", "br0"])
        self.cph.offload_off("acc")
        self.cph.run(["ip", "addr", "add", f"{CP_ADDR}/32", "dev", "lo"])  # the metrics listener's
        (self.workdir / "subscribers.txt").write_text(local_users(self.users))
        over = {"access": {"mode": "direct", "iface": "acc"},
                "api": {"listen": "unix:" + CP_API.format(workdir=self.workdir)}, **self.cp_over}
        self.bngcp = BngCp(self.cph, self.workdir, cp_config(self.tag, self.workdir, **over)).start(wait_ready=False)

    def __exit__(self, *exc):
        self.close()
        return False

    def host(self, name, tags=None):
        """A subscriber namespace on the switch (tags as BngCpLab.access_host)."""
        h = self.topo.host(name)
        attach_to_switch(self.topo, self.sw, h, f"p{len(self.hosts)}", tags)
        self.hosts[name] = h
        return h

    def emulator(self, mode, n, host, **kw):
        args = ["-mode", mode, "-n", n]
        for k, v in kw.items():
            args += ["-" + k.replace("_", "-"), v]
        e = Emulator(self.hosts[host], args)
        self.emus.append(e)
        return e

    def dhcp_client(self, host, kind, family=4):
        c = DhcpClient(self.hosts[host], kind, self.workdir, family)
        self.clients.append(c)
        return c

    def close(self):
        try:
            for c in self.clients:
                c.stop()
            for e in self.emus:
                e.close()
            if self.bngcp is not None:
                self.bngcp.stop()
        finally:
            self.topo.close()
            if self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
