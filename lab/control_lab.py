"""The control plane around a data plane: `edgeplane controller` (its
embedded etcd), `edgeplane agent --node` reconciling an edgeplane-dp, and
a Prometheus server scraping the agent.  Every process is started here and
stopped when the `with` block ends.

    with ControlPlane(tmp, dp_socket) as cp:
        cp.apply({"nodes": {"edge1": {...}}})
        cp.wait_converged("edge1", revision)
"""
import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from lab.bng_lab import CORE4, CORE6, BngLab, bng_sections
from lab.dp import Dp

ROOT = Path(__file__).resolve().parent.parent
DASHBOARDS = ROOT / "deploy" / "helm" / "edgeplane" / "dashboards"


def dashboard_metrics():
    """{dashboard file name: the metric names its queries use}, read from
    the JSON in the chart with the generator's own parser."""
    spec = importlib.util.spec_from_file_location("grafana_dashboards", ROOT / "deploy" / "grafana_dashboards.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return {p.name: gen.metric_names(json.loads(p.read_text())) for p in sorted(DASHBOARDS.glob("*.json"))}


def exposition_names(text):
    """The sample names of a Prometheus text exposition."""
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def edgeplane_binary():
    p = Path(os.environ.get("EDGEPLANE_BIN", ROOT / "build" / "bin" / "edgeplane"))
    if not p.exists():
        raise FileNotFoundError(f"{p}: run `make build` first")
    return p


_ports_given = set()


def free_port():
    """A loopback port nobody listens on now, and never one this process
    handed out before: a port given to a server that has not bound it yet
    (the controller's etcd while it starts) is free to the kernel, and
    handing it out again made two servers of one lab collide."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports_given:
            _ports_given.add(port)
            return port


@contextlib.contextmanager
def in_namespace(host):
    """Sockets opened inside are the namespace of host (a lab.topology
    Host; None: this process's own)."""
    if host is None:
        yield
        return
    from pyroute2.netns import popns, pushns
    pushns(host.ns)
    try:
        yield
    finally:
        popns()


def wait_for(what, cond, timeout=30.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout:.0f} s: {what}")
        time.sleep(interval)


class HTTPError(Exception):
    def __init__(self, code, body):
        super().__init__(f"HTTP {code}: {body}")
        self.code, self.body = code, body


class ControlPlane:
    """Controller + agent (+ Prometheus when prometheus=True).  With
    external_etcd=True the desired state is in a separate etcd process
    (Debian's etcd-server) that the controller and the agent name by
    --etcd-endpoints, so that each can be killed on its own."""

    def __init__(self, workdir, dp_socket, node="edge1", prometheus=False, agent=True, host=None,
                 agent_args=(), scrape=(), external_etcd=False):
        """dp_socket: the agent's --dp-socket (None: agent_args names the
        sockets).  host: a lab.topology Host whose namespace every process
        runs in (loopback addresses are that namespace's); None: this one.
        scrape: further (job, "host:port") targets for Prometheus.
        external_etcd: the desired state in a separate etcd process."""
        self.dir = Path(workdir)
        self.dp_socket = str(dp_socket) if dp_socket is not None else None
        self.external_etcd = external_etcd
        self.node = node
        self.want_prometheus = prometheus
        self.want_agent = agent
        self.host = host
        self.agent_args = list(agent_args)
        self.scrape = list(scrape)
        self.procs = []
        self.token = "edgeplane-test-token-0123456789"

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _spawn(self, name, argv):
        out = open(self.dir / f"{name}.log", "a")
        if self.host is not None:
            p = self.host.popen(argv, stdout=out, stderr=subprocess.STDOUT)
        else:
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        p.log_path = self.dir / f"{name}.log"
        self.procs.append(p)
        return p

    def _open(self, req, timeout):
        """urlopen in the control plane's namespace (the connection is made
        there; reading it afterwards needs no namespace)."""
        with in_namespace(self.host):
            return urllib.request.urlopen(req, timeout=timeout)

    def log(self, name):
        return (self.dir / f"{name}.log").read_text()

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        tok = self.dir / "token"
        tok.write_text(self.token + "\n")
        tok.chmod(0o600)
        self.api_port, self.etcd_port = free_port(), free_port()
        self.etcd = f"http://127.0.0.1:{self.etcd_port}"
        self.url = f"http://127.0.0.1:{self.api_port}"
        self.etcd_peer = f"http://127.0.0.1:{free_port()}"
        if self.external_etcd:
            self.start_etcd()
        self.start_controller()
        if self.want_agent:
            self.start_agent()
        if self.want_prometheus:
            self.start_prometheus()

    def start_controller(self):
        argv = [str(edgeplane_binary()), "controller", "--listen", f"tcp:127.0.0.1:{self.api_port}",
                "--api-token-file", str(self.dir / "token")]
        if self.external_etcd:
            argv += ["--etcd-endpoints", self.etcd]
        else:
            argv += ["--data-dir", str(self.dir / "etcd"), "--etcd-listen", self.etcd,
                     "--etcd-peer", self.etcd_peer]
        argv += ["--report", str(self.dir / "controller-report.jsonl"), "--report-interval", "1s"]
        self.controller = self._spawn("controller", argv)
        wait_for("controller answers", self._controller_up, timeout=60)

    def start_etcd(self):
        """Debian's etcd, one member, the limits docs/control.md asks of an
        external cluster."""
        self.etcd_proc = self._spawn("etcd", [
            "etcd", "--name", "m1", "--data-dir", str(self.dir / "etcd-ext"),
            "--listen-client-urls", self.etcd, "--advertise-client-urls", self.etcd,
            "--listen-peer-urls", self.etcd_peer, "--initial-advertise-peer-urls", self.etcd_peer,
            "--initial-cluster", f"m1={self.etcd_peer}", "--max-request-bytes", "67108864",
            "--max-txn-ops", "2048"])
        wait_for("etcd healthy", self._etcd_up, timeout=60)

    def _etcd_up(self):
        if self.etcd_proc.poll() is not None:
            raise RuntimeError(f"etcd exited:\n{self.log('etcd')}")
        try:
            with self._open(self.etcd + "/health", 2) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def kill9(self, name):
        """SIGKILL one process ("controller", "etcd_proc", "agent") and
        wait for it."""
        p = getattr(self, name)
        p.kill()
        p.wait()
        self.procs.remove(p)

    def _controller_up(self):
        if self.controller.poll() is not None:
            raise RuntimeError(f"controller exited:\n{self.log('controller')}")
        try:
            self.get("/v1/state")
            return True
        except (OSError, HTTPError):
            return False

    def start_agent(self):
        # The same port across restarts: Prometheus scrapes it.
        self.metrics_port = getattr(self, "metrics_port", None) or free_port()
        # JSON-line reports: a line per pass and a node report a second.
        self.report_path = self.dir / "agent-report.jsonl"
        self.agent = self._spawn("agent", [
            str(edgeplane_binary()), "agent", "--node", self.node, "--etcd-endpoints", self.etcd,
            *(["--dp-socket", self.dp_socket] if self.dp_socket else []),
            "--metrics", f"127.0.0.1:{self.metrics_port}",
            "--dp-check", "200ms", "--report", str(self.report_path), "--report-interval", "1s",
            *self.agent_args])
        wait_for("agent metrics", lambda: self._metrics_up(), timeout=30)

    def _metrics_up(self):
        if self.agent.poll() is not None:
            raise RuntimeError(f"agent exited:\n{self.log('agent')}")
        try:
            self.metrics()
            return True
        except OSError:
            return False

    def kill_agent(self):
        self.kill9("agent")

    def start_prometheus(self):
        self.prom_port = free_port()
        cfg = self.dir / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n" + "".join(
                f"  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
                for job, target in [("edgeplane-agent", f"127.0.0.1:{self.metrics_port}"), *self.scrape]))
        self.prometheus = self._spawn("prometheus", [
            "prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={self.dir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.prom_port}"])
        wait_for("prometheus up", lambda: self._prom_ready(), timeout=60)

    def _prom_ready(self):
        if self.prometheus.poll() is not None:
            raise RuntimeError(f"prometheus exited:\n{self.log('prometheus')}")
        try:
            with self._open(f"http://127.0.0.1:{self.prom_port}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []

    # -- the northbound --------------------------------------------------------
    def request(self, method, path, body=None, token=True):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with self._open(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise HTTPError(e.code, e.read().decode()) from None

    def get(self, path):
        return self.request("GET", path)

    def apply(self, change):
        return self.request("POST", "/v1/apply", change)

    def status(self):
        try:
            return self.get(f"/v1/nodes/{self.node}/status")
        except HTTPError as e:
            if e.code == 404:
                return None
            raise

    def wait_converged(self, revision, timeout=30, interval=0.1):
        def ok():
            st = self.status()
            return st if st and st["converged"] and st["observedRevision"] >= revision else None
        return wait_for(f"node {self.node} converged to revision {revision}", ok, timeout=timeout,
                        interval=interval)

    # -- telemetry -------------------------------------------------------------
    def reports(self, type=None, path=None):
        """The agent's JSON lines so far (every agent run appends), or
        those of path (the controller's: self.dir / "controller-report.jsonl")."""
        path = path or self.report_path
        if not path.exists():
            return []
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        return [x for x in lines if type is None or x.get("type") == type]

    def metrics(self):
        with self._open(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return r.read().decode()

    def metric(self, name, **labels):
        """The value of one sample of the agent's /metrics, or None."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in self.metrics().splitlines():
            if line.startswith("#") or not line.startswith(name):
                continue
            head, _, value = line.rpartition(" ")
            n, _, rest = head.partition("{")
            if n != name:
                continue
            got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
            if got == want:
                return float(value)
        return None

    def prom_names(self):
        """Every metric name Prometheus has scraped."""
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/label/__name__/values"
        with self._open(url, timeout=5) as r:
            return set(json.loads(r.read())["data"])

    def prom_query(self, q):
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        with self._open(url, timeout=5) as r:
            res = json.loads(r.read())
        assert res["status"] == "success", res
        return res["data"]["result"]


# -- the BNG lab under the controller ------------------------------------------

class ControlledBngLab(BngLab):
    """The BNG lab whose data plane starts with no subscriber: they come
    from the desired state (bng_node)."""

    def sections(self):
        return bng_sections([], **self.dp_opts)


class MultiDpBngLab(ControlledBngLab):
    """The controlled BNG lab with several edgeplane-dp processes on the
    same veths, each with its own control socket in sock_dir: layout is
    {name: (socket file name, bng_sections keyword arguments)}; the first
    is `dp` (the one BngLab's helpers talk to)."""

    def __init__(self, subs, sock_dir, layout, **kw):
        super().__init__(subs, **kw)
        self.sock_dir, self.layout = Path(sock_dir), layout
        self.procs = {}

    def start_dp(self, **override):
        for name, (sock, opts) in self.layout.items():
            sections = bng_sections([], engine={"ctl_socket": str(self.sock_dir / sock)}, **opts)
            self.procs[name] = Dp(self.dut, sections, name=f"{self.tag}-{name}").start()
        self.dp = next(iter(self.procs.values()))
        return self.dp

    def close(self):
        for d in self.procs.values():
            if d is not self.dp:
                d.close()
        super().close()


def bng_node(subs):
    """A node configuration with the BNG lab's core routes (the
    configuration file's, now owned by the desired state), one pipe profile
    and these subscribers."""
    return {"apiVersion": "edgeplane/v1", "bng": {
        "routes": [{"prefix": p, "via": v} for p, v in (("0.0.0.0/1", CORE4), ("128.0.0.0/1", CORE4),
                                                       ("::/1", CORE6), ("8000::/1", CORE6))],
        "pipes": [{"name": "fast", "rate": 500000000}],
        "subscribers": [{"id": s.id, **({"sTag": s.qinq[0], "cTag": s.qinq[1]} if s.qinq else {"vlan": s.vlan}),
                         "mac": s.mac, "ipv4": [s.ipv4], "ipv6": s.prefix6, "pipe": "fast"} for s in subs]}}
