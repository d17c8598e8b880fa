"""A handle on one running edgeplane-dp, for tests, `make run` and benchmarks.

    with Dp(dut, {"engine": {"burst": 32},
                  "port pa": {"device": "net_af_packet0,iface=pa"},
                  "port pb": {"device": "net_af_packet1,iface=pb"},
                  "worker w0": {"pipeline": "xconnect", "rx": "pa, pb",
                                "pairs": "pa:pb"}}) as dp:
        dp.ctl("stages")                # -> the "result" object
        dp.stage_sum("xconnect", "pkts_in")

The configuration is written to a private temporary directory together with
the control socket (each instance gets its own, so several run at once).
start() returns once the control socket answers; if the process dies first,
the exception carries its exit status and output; if it ran out of memory
(the machine's hugepage pool is shared), it is started once more without
hugepages (`fell_back`).  stop() sends SIGTERM and
checks for a clean exit; __exit__ always stops the process and removes the
directory, so a failing test leaves nothing running.

Control requests go straight to the Unix socket (one persistent connection,
one JSON line each way).  Unix sockets live in the file system, not in the
network namespace, so the caller needs no `ip netns exec`.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BINARY = ROOT / "build" / "dp" / "edgeplane-dp"
# EAL memory when the hugepage pool is short: ordinary pages, enough for the
# router's default tables (the engine adds --no-shconf with --no-huge).
NO_HUGE_ARGS = "--no-huge -m 1024"
# What a start-up that ran out of (hugepage) memory prints.  DPDK's table
# constructors log their own line while the errno they leave can be unrelated
# ("LPM memory allocation failed" then "Operation not supported").
MEMORY_ERRORS = ("Cannot allocate memory", "memory allocation failed", "mbuf pool")


def binary():
    """The edgeplane-dp to run: $EDGEPLANE_DP or build/dp/edgeplane-dp."""
    return Path(os.environ.get("EDGEPLANE_DP", DEFAULT_BINARY))


class DpError(RuntimeError):
    """edgeplane-dp failed to start, died, or did not stop cleanly."""


class CtlError(RuntimeError):
    """The data plane answered {"ok": false, "error": ...}."""

    def __init__(self, cmd, error, response):
        super().__init__(f"{cmd}: {error}")
        self.cmd = cmd
        self.error = error
        self.response = response


def render(sections):
    """Config text from {"engine": {...}, "port pa": {...}, ...}.

    A section header is the dict key ("router" or "port pa"); a value that is
    a list or tuple becomes one line per item (repeated keys: route, acl,
    ipv4).  A str passes through unchanged, so callers may also hand over text.
    """
    if isinstance(sections, str):
        return sections
    lines = []
    for header, keys in sections.items():
        lines.append(f"[{header}]")
        for key, val in (keys or {}).items():
            vals = val if isinstance(val, (list, tuple)) else [val]
            for v in vals:
                lines.append(f"{key} = {v}")
        lines.append("")
    return "\n".join(lines)


class CtlClient:
    """One connection to the control socket: a JSON object per line each way."""

    def __init__(self, path, timeout=10.0):
        self.path = str(path)
        self.timeout = timeout
        self.sock = None
        self.rfile = None
        self.lock = threading.Lock()

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s
        self.rfile = s.makefile("rb")

    def close(self):
        if self.sock is not None:
            try:
                self.rfile.close()
                self.sock.close()
            except OSError:
                pass
        self.sock = None
        self.rfile = None

    def send_line(self, data):
        """Send raw bytes (a newline is added) and return the parsed response."""
        with self.lock:
            for attempt in (0, 1):
                try:
                    if self.sock is None:
                        self.connect()
                    self.sock.sendall(data + b"\n")
                    line = self.rfile.readline()
                    if not line:
                        raise ConnectionError("control socket closed the connection")
                    return json.loads(line)
                except (ConnectionError, BrokenPipeError) as exc:
                    # The server drops a connection after a refused request
                    # (oversized line); a fresh one is fine to retry once.
                    self.close()
                    if attempt == 1:
                        raise ConnectionError(f"{self.path}: {exc}") from exc

    def request(self, obj):
        return self.send_line(json.dumps(obj).encode())


class Dp:
    """A running edgeplane-dp inside a lab Host (netns)."""

    def __init__(self, host, config, name="dp", binary_path=None, start_timeout=30.0,
                 memory_fallback=True):
        self.host = host
        self.sections = config
        self.name = name
        self.binary = Path(binary_path) if binary_path else binary()
        self.start_timeout = start_timeout
        self.dir = Path(tempfile.mkdtemp(prefix=f"epdp-{name}-"))
        self.ctl_path = self.dir / "ctl.sock"
        self.config_path = self.dir / "dp.conf"
        self.stdout_path = self.dir / "stdout"
        self.stderr_path = self.dir / "stderr"
        self.proc = None
        self.client = None
        self.returncode = None
        self.memory_fallback = memory_fallback
        self.fell_back = False

    # -- configuration -------------------------------------------------------
    def config_text(self):
        """The rendered config, with [engine] ctl_socket pointing at our socket."""
        if isinstance(self.sections, str):
            text = self.sections
            if "ctl_socket" not in text:
                if "[engine]" in text:
                    text = text.replace("[engine]", f"[engine]\nctl_socket = {self.ctl_path}", 1)
                else:
                    text = f"[engine]\nctl_socket = {self.ctl_path}\n\n" + text
            return text
        sections = dict(self.sections)
        engine = dict(sections.get("engine") or {})
        engine.setdefault("ctl_socket", str(self.ctl_path))
        sections = {"engine": engine, **{k: v for k, v in sections.items() if k != "engine"}}
        return render(sections)

    # -- life cycle ------------------------------------------------------------
    def start(self):
        try:
            return self._start_once()
        except DpError as exc:
            if not self._may_fall_back(exc):
                raise
        # The shared hugepage pool ran short (other data planes, benchmarks):
        # the same configuration in ordinary memory (EAL --no-huge).
        self._close_files()
        self.sections = dict(self.sections)
        self.sections["eal"] = {"args": NO_HUGE_ARGS}
        self.fell_back = True
        return self._start_once()

    def _may_fall_back(self, exc):
        """Retry without hugepages only when memory ran out and the caller did
        not choose the EAL's memory itself."""
        return (self.memory_fallback and isinstance(self.sections, dict)
                and "eal" not in self.sections and self.returncode not in (None, 0)
                and any(m in str(exc) for m in MEMORY_ERRORS))

    def _start_once(self):
        if not self.binary.exists():
            raise DpError(f"{self.binary} not found: run `make build` first")
        self.config_path.write_text(self.config_text())
        self._out = open(self.stdout_path, "w")
        self._err = open(self.stderr_path, "w")
        # Its own directory as working directory: a core dump would land there.
        self.proc = self.host.popen([str(self.binary), "-c", str(self.config_path)],
                                    stdout=self._out, stderr=self._err, cwd=self.dir)
        deadline = time.monotonic() + self.start_timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self.returncode = rc
                raise DpError(f"{self.name}: edgeplane-dp exited with {rc} during start-up\n"
                              f"{self.output()}")
            if self.ctl_path.exists():
                try:
                    self.client = CtlClient(self.ctl_path)
                    resp = self.client.request({"cmd": "version"})
                    if resp.get("ok"):
                        return self
                except OSError:
                    self.client = None
            if time.monotonic() > deadline:
                self.kill()
                raise DpError(f"{self.name}: control socket {self.ctl_path} did not answer "
                              f"within {self.start_timeout:.0f} s\n{self.output()}")
            time.sleep(0.05)

    def _close_files(self):
        for f in (getattr(self, "_out", None), getattr(self, "_err", None)):
            if f is not None:
                f.close()

    def output(self):
        """stdout and stderr so far (for error messages)."""
        parts = []
        for label, path in (("stdout", self.stdout_path), ("stderr", self.stderr_path)):
            try:
                text = path.read_text()
            except OSError:
                text = ""
            if text.strip():
                parts.append(f"--- {label} ---\n{text.rstrip()}")
        return "\n".join(parts) or "(no output)"

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=15.0):
        """Wait for exit; returns the exit status (DpError on timeout)."""
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise DpError(f"{self.name}: still running {timeout:.0f} s after the signal\n"
                          f"{self.output()}") from exc
        for f in (self._out, self._err):
            f.flush()
        return self.returncode

    def stop(self, sig=signal.SIGTERM, timeout=15.0, check=True):
        """Signal the process and wait; with check, insist on a clean exit:
        status 0, "stopped cleanly" printed, control socket removed."""
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.wait(timeout)
            except DpError:
                self.kill()
                raise
        else:
            self.returncode = self.proc.returncode
        if check:
            problems = []
            if self.returncode != 0:
                problems.append(f"exit status {self.returncode}")
            if "stopped cleanly" not in self.stdout_path.read_text():
                problems.append("no 'stopped cleanly' on stdout")
            if self.ctl_path.exists():
                problems.append(f"control socket {self.ctl_path} left behind")
            cores = self.core_files()
            if cores:
                problems.append(f"core dump {cores[0]}")
            if problems:
                raise DpError(f"{self.name}: unclean stop: {', '.join(problems)}\n{self.output()}")
        return self.returncode

    def core_files(self):
        return sorted(str(p) for p in self.dir.glob("core*"))

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.returncode = self.proc.returncode

    def close(self):
        """Stop (without judging how) and remove the private directory."""
        try:
            if self.running():
                try:
                    self.stop(check=False, timeout=10)
                except DpError:
                    pass
            self.kill()
        finally:
            self._close_files()
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc):
        self.close()
        return False

    # -- control socket ----------------------------------------------------------
    def ctl_response(self, cmd, **fields):
        """The whole response object, ok or not."""
        if self.client is None:
            self.client = CtlClient(self.ctl_path)
        return self.client.request({"cmd": cmd, **fields})

    def ctl(self, cmd, **fields):
        """Run a command; its "result" object, or CtlError with the error text."""
        resp = self.ctl_response(cmd, **fields)
        if not resp.get("ok"):
            raise CtlError(cmd, resp.get("error", "(no error text)"), resp)
        return resp.get("result", {})

    def cli(self, *args, check=True):
        """`edgeplane-dp ctl -s SOCK ARGS...` (the CLI people use); CompletedProcess."""
        return subprocess.run([str(self.binary), "ctl", "-s", str(self.ctl_path), *args],
                              capture_output=True, text=True, check=check, timeout=30)

    # -- counters ------------------------------------------------------------------
    def stages(self):
        """{stage name: counters summed over workers} (rx and tx included)."""
        out = {}
        for w in self.ctl("stages")["workers"]:
            for s in w["stages"]:
                acc = out.setdefault(s["name"], {"pkts_in": 0, "pkts_out": 0, "pkts_tx": 0,
                                                 "pkts_consumed": 0, "pkts_dropped": 0,
                                                 "cycles": 0, "drops": {}})
                for k in ("pkts_in", "pkts_out", "pkts_tx", "pkts_consumed", "pkts_dropped",
                          "cycles"):
                    acc[k] += s[k]
                for reason, n in s["drops"].items():
                    acc["drops"][reason] = acc["drops"].get(reason, 0) + n
        for acc in out.values():
            acc["cycles_per_pkt"] = acc["cycles"] / acc["pkts_in"] if acc["pkts_in"] else 0.0
        return out

    def stage_sum(self, stage, counter):
        return self.stages().get(stage, {}).get(counter, 0)

    def drops(self):
        """{reason: count} summed over workers and stages."""
        return self.ctl("drops")["drops"]

    def workers(self):
        return self.ctl("stats")["workers"]

    def top(self):
        """The `edgeplane-dp ctl top` table as text."""
        return self.cli("top", check=False).stdout


def check_config(text, binary_path=None, check=True, workdir=None, name="dp.conf"):
    """Run `edgeplane-dp -c FILE [--check]` on a config text; returns
    (CompletedProcess, path of the file).  Without check the binary really
    starts, so only use that for configs that must fail before launch."""
    d = Path(workdir or tempfile.mkdtemp(prefix="epcheck-"))
    path = d / name
    path.write_text(render(text))
    argv = [str(Path(binary_path) if binary_path else binary()), "-c", str(path)]
    if check:
        argv.append("--check")
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return res, path


class DpLab:
    """What every lab with an edgeplane-dp in it shares: build the
    namespaces, start the data plane unless asked not to, and always tear
    both down (also when building or starting fails).  A lab defines
    build() and start_dp() and sets self.topo and self.dp."""

    topo = None
    dp = None
    autostart = True

    def __enter__(self):
        try:
            self.build()
            if self.autostart:
                self.start_dp()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        if self.dp is not None:
            self.dp.close()
        if self.topo is not None:
            self.topo.close()
