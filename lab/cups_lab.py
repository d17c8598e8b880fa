"""The vBNG lab with its control plane split off (CUPS, BBF TR-459).

    s1, s2, p1 ... (the subscribers of lab.bng_lab, behind the access switch)
         |
    dut (netns) acc [edgeplane-dp] core        edgeplane upf  198.18.2.1
         |          ctl ==veth== ctlp ------------> |  (punted frames in, frames to
         |                                          |   subscribers out: AF_PACKET)
         |                                          |  PFCP (UDP 8805), GTP-U (2152)
         |                               cp0 ------ eth0
    core (netns)                                cp (netns) pfcp-cp-sim 198.18.2.2

The data plane's control port `ctl` (net_af_packet on a veth whose other
end, `ctlp`, the function reads and writes) carries the control packet
redirect:
punted frames (PPPoE discovery, DHCP, ...) out, and frames the control
plane sends to subscribers in, which a `bng-inject` worker sends out of
the access port.

edgeplane-dp starts with no subscriber in its configuration: every
subscriber comes from a PFCP session the control plane (`pfcp-cp-sim
serve`, driven line by line) establishes with the user-plane function
(`edgeplane upf`, in the DUT's namespace beside the data plane, talking
to it over its control socket).  The function's state directory and the
data plane can be killed and started again (restart tests).

    with CupsLab([Subscriber("s1", id=1, qinq=(100, 200))]) as lab:
        lab.cp.request("associate")
        r = lab.cp.request("establish", sub=lab.session("s1", dl_mbr=20000))
        lab.sub("s1").host.run(["ping", "-c1", CORE4])
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from lab.bng_lab import BngLab, bng_sections
from lab.daemon import Daemon, prometheus_samples

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "build" / "bin"
UPF_ADDR, CP_ADDR, CP_ADDR2 = "198.18.2.1", "198.18.2.2", "198.18.2.3"
CP_NET = "198.18.2.0/24"


def go_binary(name):
    """build/bin/<name> (`make build`); $EDGEPLANE_BIN overrides the directory."""
    p = Path(os.environ.get("EDGEPLANE_BIN", BIN)) / name
    if not p.exists():
        raise FileNotFoundError(f"{p} not found: run `make build` first")
    return p


class CpSim:
    """pfcp-cp-sim serve in the cp namespace: one JSON command a line."""

    def __init__(self, host, upf=f"{UPF_ADDR}:8805", local=f"{CP_ADDR}:8805"):
        self.host = host
        self.proc = host.popen([str(go_binary("pfcp-cp-sim")), "serve", "--upf", upf, "--local", local],
                               stdin=subprocess.PIPE, bufsize=1)

    def request(self, cmd, check=True, **fields):
        line = json.dumps({"cmd": cmd, **fields})
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        if not out:
            raise RuntimeError(f"pfcp-cp-sim exited: {self.proc.stderr.read()}")
        r = json.loads(out)
        if check and not r.get("ok"):
            raise RuntimeError(f"pfcp-cp-sim {cmd}: {r.get('error')}")
        return r

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()


class Upf(Daemon):
    """edgeplane upf in the DUT's namespace."""

    def __init__(self, host, dp, state_dir, extra=()):
        self.host, self.dp, self.state_dir, self.extra = host, dp, Path(state_dir), list(extra)
        self.proc = None
        self.log = None

    def start(self):
        self.log = open(self.state_dir.parent / "upf.log", "a")
        argv = [str(go_binary("edgeplane")), "upf", "--listen", f"{UPF_ADDR}:8805",
                "--gtpu", f"{UPF_ADDR}:2152", "--dp-socket", str(self.dp.ctl_path),
                "--state-dir", str(self.state_dir), "--logical-port", "access",
                "--metrics", f"{UPF_ADDR}:9101", "--urr-poll", "500ms", "--punt-iface", "ctlp",
                *self.extra]
        self.proc = self.host.popen(argv, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"edgeplane upf exited: {self.output()}")
            if self.metrics():
                return self
            time.sleep(0.1)
        raise RuntimeError(f"edgeplane upf did not come up: {self.output()}")

    def output(self):
        self.log.flush()
        return (self.state_dir.parent / "upf.log").read_text()[-3000:]

    def metrics(self):
        """{(name, labels): value} from its /metrics, {} when unreachable."""
        r = self.host.run(["curl", "-s", "--max-time", "2", f"http://{UPF_ADDR}:9101/metrics"], check=False)
        return prometheus_samples(r.stdout)

    def event(self, name):
        return self.metrics().get(f'edgeplane_upf_events_total{{event="{name}"}}', 0)



class CupsLab(BngLab):
    """BngLab whose subscribers come from PFCP sessions."""

    def __init__(self, subs, tag="cups", upf_args=(), **dp_opts):
        super().__init__(subs, tag=tag, **dp_opts)
        self.upf_args = upf_args
        self.upf = None
        self.cp = None
        self.workdir = Path(tempfile.mkdtemp(prefix=f"cups-{tag}-"))

    def build(self):
        super().build()
        self.topo.link(self.dut, "ctl", self.dut, "ctlp", mtu=1600)
        self.dut.offload_off("ctl")
        self.dut.offload_off("ctlp")
        self.cph = self.topo.host("cp")
        self.topo.link(self.cph, "eth0", self.dut, "cp0", ipv4_a=f"{CP_ADDR}/24", ipv4_b=f"{UPF_ADDR}/24")
        self.cph.run(["ip", "addr", "add", f"{CP_ADDR2}/24", "dev", "eth0"])
        return self

    def sections(self):
        # No subscriber lines: PFCP brings them.  Pipe and policer
        # profiles too (the function creates one per rate).
        opts = dict(self.dp_opts)
        opts.setdefault("pipes", {"default": "rate=1G"})
        # No DPDK telemetry socket: its start-up check blocks while another
        # DPDK process on the machine is stopped (benchmarks SIGSTOP theirs).
        opts.setdefault("eal_args", "--no-telemetry")
        extra = dict(opts.pop("bng_extra", None) or {})
        extra.setdefault("control_port", "ctl")
        sec = bng_sections([], bng_extra=extra, **opts)
        out = {}
        for k, v in sec.items():
            out[k] = v
            if k == "port core":
                out["port ctl"] = {"device": "net_af_packet2,iface=ctl"}
        out["worker inject"] = {"pipeline": "bng-inject", "rx": "ctl"}
        return out

    def start_dp(self, **override):
        dp = super().start_dp(**override)
        if self.upf is None:
            self.upf = Upf(self.dut, self.dp, self.workdir / "state", self.upf_args).start()
            self.cp = CpSim(self.cph)
        else:
            self.upf.dp = self.dp
        return dp

    def kill_dp(self):
        """kill -9 of edgeplane-dp (its tables are gone)."""
        if self.dp.client is not None:
            self.dp.client.close()
            self.dp.client = None
        self.dp.kill()

    def start_dp_again(self):
        """The same configuration and control socket path again."""
        self.dp.start()

    def restart_upf(self):
        self.upf.stop()
        self.upf = Upf(self.dut, self.dp, self.workdir / "state", self.upf_args).start()

    def session(self, name, **kw):
        """The establishment's description of subscriber `name`."""
        s = self.sub(name)
        spec = {"cp_seid": 0x1000 + s.id, "port": "access", "mac": s.mac, "ipv4": s.ipv4,
                "ipv6": s.prefix6}
        if s.qinq:
            spec["stag"], spec["ctag"] = s.qinq
        else:
            spec["ctag"] = s.vlan
        if s.pppoe:
            spec["pppoe"] = s.pppoe
        spec.update(kw)
        return spec

    def close(self):
        try:
            if self.cp is not None:
                self.cp.close()
            if self.upf is not None:
                self.upf.stop()
        finally:
            super().close()
            shutil.rmtree(self.workdir, ignore_errors=True)
