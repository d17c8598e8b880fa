"""The one Python handle on edgeplane-dp: labs, tests and benchmarks use it.

    with Dp(dut, {"engine": {"burst": 32},
                  "port pa": {"device": "net_af_packet0,iface=pa"},
                  "port pb": {"device": "net_af_packet1,iface=pb"},
                  "worker w0": {"pipeline": "xconnect", "rx": "pa, pb",
                                "pairs": "pa:pb"}}) as dp:
        dp.ctl("stages")                # -> the "result" object
        dp.stage_sum("xconnect", "pkts_in")

    with Dp(None, text, name="ours", workdir=build / "bench" / "router"):
        ...                             # root namespace, logs kept (benchmarks)

What it owns, once for the project:
- where the binary is (`binary()`: $EDGEPLANE_DP or build/dp/edgeplane-dp);
- the process: started in a lab Host's namespace (or the root namespace
  when host is None), its configuration, stdout and stderr in its own
  directory (a private temporary one, removed on close, or `workdir`/name,
  kept for a benchmark's logs); start() returns once the control socket
  answers `version` (the readiness wait); stop() insists on a clean exit;
  pause()/resume() (SIGSTOP/SIGCONT) for benchmarks that measure one
  process at a time;
- memory: the engine picks hugepages or ordinary pages (`[engine] memory =
  auto`), but the shared hugepage pool can run dry between its check and
  its allocations.  A start that failed for memory is then retried: with
  `memory = no-huge` when the configuration left the choice to the engine,
  after a pause (a few times) when it asked for `memory = hugepages` (a
  benchmark whose peer runs on hugepages must too), never when it chose
  itself ([eal] args with --no-huge, -m or --socket-mem);
- the control socket (CtlClient: one persistent connection, one JSON line
  each way) and one error class, DpError, of which CtlError (the data plane
  answered {"ok": false}) is the kind that carries the command's error;
- readiness waits on anything else (`wait_for`).

Unix sockets live in the file system, not in the network namespace, so the
caller needs no `ip netns exec` to talk to a data plane in a lab host.
"""
import itertools
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
# EAL memory without hugepages, for callers that choose it themselves in
# [eal] args (what `[engine] memory = no-huge` gives; the engine adds
# --no-shconf with --no-huge).
NO_HUGE_ARGS = "--no-huge -m 1024"
# What a start-up (ours or a DPDK peer's) that ran out of (hugepage) memory
# prints, lower case.  DPDK's table constructors log their own line while
# the errno they leave can be unrelated ("LPM memory allocation failed"
# then "Operation not supported").
MEMORY_ERRORS = ("cannot allocate memory", "memory allocation failed", "allocation failed",
                 "err=-12", "mbuf pool", "cannot get hugepage information",
                 "not enough memory", "out of hugepage memory")
# A sun_path holds 108 bytes; longer workdirs get the socket elsewhere.
SUN_PATH_MAX = 100


def binary():
    """The edgeplane-dp to run: $EDGEPLANE_DP or build/dp/edgeplane-dp."""
    return Path(os.environ.get("EDGEPLANE_DP", DEFAULT_BINARY))


class DpError(RuntimeError):
    """edgeplane-dp failed to start, died, did not stop cleanly, or refused
    a control request (CtlError)."""


class CtlError(DpError):
    """The data plane answered {"ok": false, "error": ...}."""

    def __init__(self, cmd, error, response):
        super().__init__(f"{cmd}: {error}")
        self.cmd = cmd
        self.error = error
        self.response = response


def is_memory_error(text):
    """Whether a start-up's output says it ran out of (hugepage) memory."""
    low = str(text).lower()
    return any(m in low for m in MEMORY_ERRORS)


def retry_on_memory(start, cleanup=None, attempts=6, pause=10.0, log=print, what="start"):
    """start() until it does not fail for memory, at most `attempts` times,
    `pause` seconds apart; cleanup() after each failed try.  For processes
    that must run on hugepages (benchmark peers, and ours beside them): the
    pool is shared with other runs and refills when they end."""
    for i in itertools.count(1):
        try:
            return start()
        except RuntimeError as exc:
            if i >= attempts or not is_memory_error(exc):
                raise
            if cleanup is not None:
                cleanup()
            if log:
                log(f"  ({what}: hugepages short, retrying in {pause:.0f} s)")
            time.sleep(pause)


def wait_for(cond, timeout=5.0, step=0.1):
    """Poll cond() until it returns something true or `timeout` seconds
    pass; returns its last value (so `assert wait_for(...)` shows it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


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


def _section_of(line):
    s = line.strip()
    return s[1:-1].strip() if s.startswith("[") and s.endswith("]") else None


def _key_of(line):
    s = line.split("#", 1)[0]
    return s.split("=", 1)[0].strip() if "=" in s else None


def config_get(text, section, key):
    """The value of `key` in [section] of a config text (None if absent)."""
    cur = None
    for line in text.splitlines():
        sec = _section_of(line)
        if sec is not None:
            cur = sec
        elif cur == section and _key_of(line) == key:
            return line.split("#", 1)[0].split("=", 1)[1].strip()
    return None


def config_set(text, section, key, value):
    """The config text with `key = value` in [section]: the key's line
    replaced, else added under the header, else a new section first."""
    lines = text.splitlines()
    cur, header = None, None
    for i, line in enumerate(lines):
        sec = _section_of(line)
        if sec is not None:
            cur = sec
            if sec == section and header is None:
                header = i
        elif cur == section and _key_of(line) == key:
            lines[i] = f"{key} = {value}"
            return "\n".join(lines) + "\n"
    if header is None:
        return f"[{section}]\n{key} = {value}\n\n" + text
    lines.insert(header + 1, f"{key} = {value}")
    return "\n".join(lines) + "\n"


def memory_choice(text):
    """Who chose the EAL's memory: "eal" ([eal] args), else the engine's
    `memory` key (auto, hugepages, no-huge)."""
    args = (config_get(text, "eal", "args") or "").split()
    if any(a in args for a in ("--no-huge", "-m", "--socket-mem")):
        return "eal"
    return config_get(text, "engine", "memory") or "auto"


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
                except OSError:
                    # A timeout: the answer may still come, and would be
                    # read as the next request's.  Start over next time.
                    self.close()
                    raise

    def request(self, obj):
        return self.send_line(json.dumps(obj).encode())


class Dp:
    """A running edgeplane-dp, in a lab Host's namespace or (host None) in
    the root namespace.

    config: sections ({"engine": {...}, ...}) or text.  The control socket
    is `ctl_socket` of [engine] when the configuration names one, else one
    in the instance's own directory.  memory_fallback: retry a start that
    ran out of memory without hugepages (when the configuration left the
    choice to the engine); memory_attempts/memory_pause: how often and how
    far apart a start pinned to hugepages is retried."""

    def __init__(self, host, config, name="dp", binary_path=None, start_timeout=30.0,
                 memory_fallback=True, workdir=None, ctl_timeout=10.0, memory_attempts=6,
                 memory_pause=10.0, log=None):
        self.host = host
        self.sections = config
        self.name = name
        # Absolute: the process starts in its own directory (cwd=self.dir),
        # where a path relative to the caller's would not resolve.
        self.binary = Path(binary_path).resolve() if binary_path else binary()
        self.start_timeout = start_timeout
        self.ctl_timeout = ctl_timeout
        self.keep_dir = workdir is not None
        if workdir is not None:
            self.dir = Path(workdir) / name
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir.mkdir(parents=True)
        else:
            self.dir = Path(tempfile.mkdtemp(prefix=f"epdp-{name}-"))
        self._sock_dir = None
        self.ctl_path = self.dir / "ctl.sock"
        if len(str(self.ctl_path)) > SUN_PATH_MAX:
            self._sock_dir = Path(tempfile.mkdtemp(prefix="epdp-"))
            self.ctl_path = self._sock_dir / "ctl.sock"
        self.config_path = self.dir / "dp.conf"
        self.stdout_path = self.dir / "stdout"
        self.stderr_path = self.dir / "stderr"
        self.proc = None
        self.client = None
        self.returncode = None
        self.memory_fallback = memory_fallback
        self.memory_attempts = memory_attempts
        self.memory_pause = memory_pause
        self.log = log
        self.fell_back = False
        self.memory = None
        self._out = self._err = None

    # -- configuration -------------------------------------------------------
    def config_text(self):
        """The rendered config; [engine] ctl_socket is ours unless it names one."""
        text = render(self.sections)
        named = config_get(text, "engine", "ctl_socket")
        if named is None:
            return config_set(text, "engine", "ctl_socket", self.ctl_path)
        self.ctl_path = Path(named)
        return text

    # -- life cycle ------------------------------------------------------------
    def start(self):
        """Start and wait until the control socket answers; see the class
        doc for the memory policy.  DpError with the output on failure.
        Also starts it again after it stopped or was killed (same
        configuration, same control socket)."""
        self._close_files()
        if self.client is not None:
            self.client.close()
            self.client = None
        text = self.config_text()
        self.memory = memory_choice(text)
        for attempt in itertools.count(1):
            try:
                return self._start_once(text)
            except DpError as exc:
                if self.returncode in (None, 0) or not is_memory_error(exc):
                    raise
                self._close_files()
                if self.memory == "auto" and self.memory_fallback:
                    # The shared hugepage pool ran short after the engine
                    # looked: the same configuration in ordinary memory.
                    text = config_set(text, "engine", "memory", "no-huge")
                    self.memory, self.fell_back = "no-huge", True
                    self._say("out of hugepage memory, starting again with memory = no-huge")
                elif self.memory == "hugepages" and attempt < self.memory_attempts:
                    self._say(f"hugepages short, retrying in {self.memory_pause:.0f} s")
                    time.sleep(self.memory_pause)
                else:
                    raise

    def _say(self, msg):
        if self.log:
            self.log(f"  ({self.name}: {msg})")

    def _popen(self, argv, **kw):
        if self.host is not None:
            return self.host.popen(argv, **kw)
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, **kw)

    def _start_once(self, text):
        if not self.binary.exists():
            raise DpError(f"{self.binary} not found: run `make build` first")
        self.returncode = None
        self.config_path.write_text(text)
        if self.ctl_path.is_socket():
            self.ctl_path.unlink()      # a previous attempt's
        self._out = open(self.stdout_path, "w")
        self._err = open(self.stderr_path, "w")
        # Its own directory as working directory: a core dump would land there.
        self.proc = self._popen([str(self.binary), "-c", str(self.config_path)],
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
                    self.client = CtlClient(self.ctl_path, timeout=self.ctl_timeout)
                    resp = self.client.request({"cmd": "version"})
                    if resp.get("ok"):
                        return self
                except (OSError, ValueError):
                    self.client = None
            if time.monotonic() > deadline:
                self.kill()
                raise DpError(f"{self.name}: control socket {self.ctl_path} did not answer "
                              f"within {self.start_timeout:.0f} s\n{self.output()}")
            time.sleep(0.05)

    def _close_files(self):
        for f in (self._out, self._err):
            if f is not None:
                f.close()
        self._out = self._err = None

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

    @property
    def pid(self):
        return self.proc.pid

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def pause(self):
        """SIGSTOP: the process keeps its memory and takes no CPU (a
        benchmark measures one subject at a time)."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def wait(self, timeout=15.0):
        """Wait for exit; returns the exit status (DpError on timeout)."""
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise DpError(f"{self.name}: still running {timeout:.0f} s after the signal\n"
                          f"{self.output()}") from exc
        for f in (self._out, self._err):
            if f is not None:
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
            if sig != signal.SIGCONT:
                self.proc.send_signal(signal.SIGCONT)   # if it was paused
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
        """Stop (without judging how) and remove the private directory (a
        workdir's is kept: a benchmark's logs)."""
        try:
            if self.running():
                try:
                    self.stop(check=False, timeout=10)
                except DpError:
                    pass
            self.kill()
        finally:
            self._close_files()
            if self._sock_dir is not None:
                shutil.rmtree(self._sock_dir, ignore_errors=True)
            if not self.keep_dir:
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
            self.client = CtlClient(self.ctl_path, timeout=self.ctl_timeout)
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
    starts, so only use that for configs that must fail before launch.
    Without workdir the file is written to a folder of its own, removed
    before returning (the path is then for comparing with what the binary
    said, e.g. the file and line of an error); pass workdir to keep it."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="epcheck-") as d:
            return check_config(text, binary_path, check, d, name)
    path = Path(workdir) / name
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
