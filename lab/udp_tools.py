"""iperf3 and sockperf for the edge UDP termination labs: the same commands
run under libedgeplane-preload.so or on the kernel, with parsed results.

    srv = iperf3_server(lab, "b", preload=True, port=5201)
    r = iperf3_client(lab, "a", B4, preload=True, bitrate="300M", seconds=2, length=1860)
    r.lost_percent, r.bits_per_second
    pp = sockperf_ping_pong(lab, B4, preload=True, seconds=2)
    pp["p99"]
"""
import re
import time

from .traffic import iperf3_argv, parse_iperf3


def wait_tcp_listen(host, port, proc, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read()} {proc.stderr.read()}")
        res = host.run(["ss", "-Hltn", f"sport = :{port}"], check=False)
        if res.stdout.strip():
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on TCP {port} in {host.name}")


def wait_udp_bound(host, port, proc, timeout=10, preload=False, lab=None, node=None):
    """A UDP server is ready: its socket is in the kernel (ss) or, under the
    preload library, in the data plane's socket table."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read()} {proc.stderr.read()}")
        if preload:
            socks = lab.dps[node].ctl("hs-sockets")["sockets"]
            if any(s["local"] and s["local"]["port"] == port for s in socks):
                return
        elif host.run(["ss", "-Hlun", f"sport = :{port}"], check=False).stdout.strip():
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing bound UDP {port} in {host.name}")


def iperf3_server(lab, node, preload, port=5201, extra=()):
    """`iperf3 -s -1` (one test, then exit) in a node; returns the process."""
    p = lab.popen(node, ["iperf3", "-s", "-1", "-p", str(port), *extra], preload=preload)
    wait_tcp_listen(getattr(lab, node), port, p)
    return p


def iperf3_client(lab, node, server_ip, preload, bitrate="100M", seconds=2, length=1860,
                  port=5201, parallel=1, extra=(), timeout=None):
    """A UDP iperf3 client to completion: Iperf3Result (receiver's view)."""
    xs = list(extra)
    if parallel > 1:
        xs += ["-P", str(parallel)]
    argv = iperf3_argv(server_ip, udp=True, bitrate=bitrate, seconds=seconds, port=port,
                       length=length, extra=xs)
    res = lab.run(node, argv, preload=preload, timeout=timeout or seconds + 30)
    return parse_iperf3(res.stdout, res.stderr, True, res.returncode)


def iperf3_pair(lab, server_ip, preload, port=5201, **kw):
    """Server in b, client in a, both with or without the library."""
    srv = iperf3_server(lab, "b", preload, port=port)
    try:
        return iperf3_client(lab, "a", server_ip, preload, port=port, **kw)
    finally:
        try:
            srv.wait(timeout=10)
        except Exception:
            srv.kill()
            srv.wait()


_PCT = re.compile(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)")


def parse_sockperf(text):
    """Latency percentiles (usec), the average, drops, and rates from sockperf."""
    out = {"text": text}
    for pct, val in _PCT.findall(text):
        key = {"50.000": "p50", "99.000": "p99", "99.900": "p99.9", "99.990": "p99.99",
               "90.000": "p90", "25.000": "p25", "75.000": "p75"}.get(pct)
        if key:
            out[key] = float(val)
    m = re.search(r"Summary: Latency is ([\d.]+) usec", text)
    if m:
        out["avg"] = float(m.group(1))
    m = re.search(r"# dropped messages = (\d+)", text)
    if m:
        out["dropped"] = int(m.group(1))
    m = re.search(r"Total (\d+) observations", text)
    if m:
        out["observations"] = int(m.group(1))
    m = re.search(r"Summary: Message Rate is (\d+) \[msg/sec\]", text)
    if m:
        out["msg_rate"] = int(m.group(1))
    m = re.search(r"Summary: BandWidth is ([\d.]+) MBps \(([\d.]+) Mbps\)", text)
    if m:
        out["mbps"] = float(m.group(2))
    return out


def _pinned(argv, cpu, rt=None):
    """argv under `taskset -c CPU` when CPU is given and under `chrt -f RT`
    (SCHED_FIFO at priority RT) when RT is (the preload library follows
    the exec into the program)."""
    argv = ["taskset", "-c", str(cpu), *argv] if cpu is not None else list(argv)
    return ["chrt", "-f", str(rt), *argv] if rt else argv


def sockperf_server(lab, node, ip, preload, port=11111, cpu=None, rt=None):
    p = lab.popen(node, _pinned(["sockperf", "sr", "-i", ip, "-p", str(port)], cpu, rt),
                  preload=preload)
    wait_udp_bound(getattr(lab, node), port, p, preload=preload, lab=lab, node=node)
    return p


def _sockperf_client(lab, mode, ip, preload, seconds, size, port, extra, pin=None, rt=None):
    """PIN: {node: cpu} runs that node's sockperf under taskset; RT: both
    sockperf processes at SCHED_FIFO priority RT."""
    pin = pin or {}
    argv = _pinned(["sockperf", mode, "-i", ip, "-p", str(port), "-t", str(seconds),
                    "-m", str(size), *extra], pin.get("a"), rt)
    srv = sockperf_server(lab, "b", ip, preload, port=port, cpu=pin.get("b"), rt=rt)
    try:
        res = lab.run("a", argv, preload=preload, timeout=seconds + 30)
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=5)
        except Exception:
            srv.kill()
            srv.wait()
    out = parse_sockperf(res.stdout + res.stderr)
    out["returncode"] = res.returncode
    return out


def sockperf_ping_pong(lab, ip, preload, seconds=2, size=64, port=11111, extra=(), pin=None,
                       rt=None):
    """`sockperf ping-pong`: latency percentiles in usec (half round trip)."""
    return _sockperf_client(lab, "pp", ip, preload, seconds, size, port, extra, pin, rt)


def sockperf_throughput(lab, ip, preload, seconds=2, size=1472, port=11112, extra=()):
    """`sockperf throughput`: message rate and bandwidth the client reports."""
    return _sockperf_client(lab, "tp", ip, preload, seconds, size, port, extra)
