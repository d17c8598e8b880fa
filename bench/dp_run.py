"""Run edgeplane-dp as a benchmark subject and talk to its control socket.

In-process benchmarks give the data plane virtual ports (net_pcap into
net_null, net_ring) in the root namespace: no veth, no netns, so this is a
small process handle rather than lab/'s namespace machinery.

    with DpProcess(config_text, workdir) as dp:
        dp.ctl("stats")            # -> the "result" object of the reply
"""
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from bench.common import ROOT

DP_BIN = Path(os.environ.get("EDGEPLANE_DP", ROOT / "build" / "dp" / "edgeplane-dp"))


class CtlError(RuntimeError):
    pass


def ctl_request(path, cmd, timeout=30.0, **kw):
    """One request on the JSON-line control socket; returns "result" or raises."""
    req = {"cmd": cmd}
    req.update(kw)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
    resp = json.loads(buf)
    if not resp.get("ok"):
        raise CtlError(f"{cmd}: {resp.get('error')}")
    return resp.get("result", {})


class DpProcess:
    """edgeplane-dp -c <workdir>/<name>.conf, started in the foreground.

    The config must set [engine] ctl_socket = self.sock (use .sock when
    building the text: DpProcess.sock_path(workdir, name))."""

    def __init__(self, config, workdir, name="dp", start_timeout=120.0, netns=None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.conf = self.workdir / f"{name}.conf"
        self.sock = self.sock_path(workdir, name)
        self.log = self.workdir / f"{name}.log"
        self.config = config
        self.start_timeout = start_timeout
        self.netns = netns
        self.proc = None

    @staticmethod
    def sock_path(workdir, name="dp"):
        return Path(workdir) / f"{name}.sock"

    def start(self):
        if not DP_BIN.exists():
            raise RuntimeError(f"{DP_BIN} missing: run `make build-dp`")
        self.conf.write_text(self.config)
        if self.sock.exists():
            self.sock.unlink()
        cmd = [str(DP_BIN), "-c", str(self.conf)]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        self._logf = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, stdout=self._logf, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._logf.close()
                self.proc = None
                raise RuntimeError("edgeplane-dp exited during start-up: " + self.tail())
            if self.sock.exists():
                try:
                    self.ctl("version", timeout=2.0)
                    return self
                except (OSError, CtlError, ValueError):
                    pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("edgeplane-dp did not open its control socket: " + self.tail())

    def ctl(self, cmd, timeout=30.0, **kw):
        return ctl_request(self.sock, cmd, timeout=timeout, **kw)

    def tail(self, n=15):
        try:
            return "\n".join(self.log.read_text().splitlines()[-n:])
        except OSError:
            return ""

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.ctl("shutdown", timeout=2.0)
            except (OSError, CtlError, ValueError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
