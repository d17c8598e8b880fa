"""Real traffic tools in lab hosts: iperf3 and ping, with parsed results.

    srv = Iperf3Server(lab.b)           # listens on all of b's addresses
    r = iperf3(lab.a, B4, udp=True, bitrate="30M", seconds=3)
    r.received_bytes, r.lost_packets, r.mbps

iperf3 runs with --json; Iperf3Result keeps the receiver's view (bytes that
arrived, lost and out-of-order datagrams as the server counted them), which
is what a test about the forwarding path needs.
"""
import json
import re
import time


class Iperf3Server:
    """`iperf3 -s` in a host, killed when the host's topology closes (or stop())."""

    def __init__(self, host, port=5201):
        self.host = host
        self.port = port
        self.proc = host.popen(["iperf3", "-s", "-p", str(port)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"iperf3 server exited: {self.proc.stderr.read()}")
            res = host.run(["ss", "-Hltn", f"sport = :{port}"], check=False)
            if res.stdout.strip():
                return
            time.sleep(0.05)
        raise RuntimeError(f"iperf3 server in {host.name} not listening on {port}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
                self.proc.wait()


class Iperf3Result:
    """The parts of an iperf3 --json report the lab looks at."""

    def __init__(self, report, udp):
        self.report = report
        self.udp = udp
        end = report.get("end", {})
        if udp:
            # The receiver's totals (the server reports them back to the client).
            s = end.get("sum_received") or end.get("sum", {})
            self.sent_packets = (end.get("sum_sent") or {}).get("packets", 0)
            self.received_bytes = s.get("bytes", 0)
            self.bits_per_second = s.get("bits_per_second", 0.0)
            self.lost_packets = s.get("lost_packets", 0)
            self.packets = s.get("packets", 0)
            self.lost_percent = s.get("lost_percent", 0.0)
            self.jitter_ms = s.get("jitter_ms", 0.0)
            self.out_of_order = sum(st.get("udp", {}).get("out_of_order", 0)
                                    for st in end.get("streams", []))
            self.retransmits = 0
        else:
            rcv = end.get("sum_received", {})
            snt = end.get("sum_sent", {})
            self.received_bytes = rcv.get("bytes", 0)
            self.bits_per_second = rcv.get("bits_per_second", 0.0)
            self.retransmits = snt.get("retransmits", 0)
            self.lost_packets = self.packets = self.sent_packets = 0
            self.lost_percent = self.jitter_ms = 0.0
            self.out_of_order = 0

    @property
    def mbps(self):
        return self.bits_per_second / 1e6

    def __repr__(self):
        if self.udp:
            return (f"<iperf3 udp {self.mbps:.1f} Mbit/s, {self.received_bytes} B, "
                    f"lost {self.lost_packets}/{self.packets}, ooo {self.out_of_order}>")
        return (f"<iperf3 tcp {self.mbps:.1f} Mbit/s, {self.received_bytes} B, "
                f"retr {self.retransmits}>")


def iperf3_argv(server_ip, udp=False, bitrate=None, seconds=3, port=5201, length=None,
                extra=()):
    argv = ["iperf3", "-c", server_ip, "-p", str(port), "-t", str(seconds), "--json"]
    if udp:
        argv += ["-u", "-b", str(bitrate or "30M")]
    elif bitrate:
        argv += ["-b", str(bitrate)]
    if length:
        argv += ["-l", str(length)]
    return argv + list(extra)


def parse_iperf3(stdout, stderr="", udp=False, rc=0):
    """Iperf3Result, or RuntimeError carrying iperf3's own error text."""
    try:
        report = json.loads(stdout)
    except ValueError as exc:
        raise RuntimeError(f"iperf3 gave no JSON (exit {rc}): {stdout[-500:]} {stderr[-500:]}") from exc
    if "error" in report:
        raise RuntimeError(f"iperf3: {report['error']}")
    return Iperf3Result(report, udp)


def iperf3(host, server_ip, udp=False, bitrate=None, seconds=3, port=5201, length=None,
           extra=(), timeout=None):
    """Run an iperf3 client in `host` to completion.

    An iperf3 server serves one test at a time and tears the last one down
    after its client has already exited; on loaded shared cores the next
    client can arrive first and be told "the server is busy".  That answer
    is retried for up to 10 s: it says nothing about the path under test.
    """
    argv = iperf3_argv(server_ip, udp, bitrate, seconds, port, length, extra)
    deadline = time.monotonic() + 10
    while True:
        res = host.run(argv, check=False, timeout=timeout or seconds + 30)
        if "the server is busy" not in res.stdout or time.monotonic() > deadline:
            return parse_iperf3(res.stdout, res.stderr, udp, res.returncode)
        time.sleep(0.5)


def iperf3_start(host, server_ip, **kw):
    """Start an iperf3 client in the background; finish with iperf3_finish()."""
    udp = kw.get("udp", False)
    p = host.popen(iperf3_argv(server_ip, **kw))
    p.udp = udp
    return p


def iperf3_finish(proc, timeout=60):
    out, err = proc.communicate(timeout=timeout)
    return parse_iperf3(out, err, proc.udp, proc.returncode)


_RTT = re.compile(r"rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
_LOSS = re.compile(r"(\d+) packets transmitted, (\d+) received")


def ping_summary(stdout):
    """{"sent", "received", "rtt_min", "rtt_avg", "rtt_max"} from ping's output."""
    out = {"sent": 0, "received": 0, "rtt_min": None, "rtt_avg": None, "rtt_max": None}
    m = _LOSS.search(stdout)
    if m:
        out["sent"], out["received"] = int(m.group(1)), int(m.group(2))
    m = _RTT.search(stdout)
    if m:
        out["rtt_min"], out["rtt_avg"], out["rtt_max"] = (float(m.group(i)) for i in (1, 2, 3))
    return out


def snmp_counter(host, name):
    """A kernel SNMP counter of the host's namespace: "Icmp.InEchos" (from
    /proc/net/snmp) or "Icmp6InEchos" (from /proc/net/snmp6)."""
    if "." in name:
        group, field = name.split(".", 1)
        lines = [l.split() for l in host.run(["cat", "/proc/net/snmp"]).stdout.splitlines()]
        for hdr, val in zip(lines[::2], lines[1::2]):
            if hdr[0] == group + ":":
                return int(val[hdr.index(field)])
        raise KeyError(name)
    for line in host.run(["cat", "/proc/net/snmp6"]).stdout.splitlines():
        k, v = line.split()
        if k == name:
            return int(v)
    raise KeyError(name)


def rcvbuf_drops(host):
    """Datagrams the host's kernel dropped because a socket buffer was full
    (the receiver fell behind: not a loss in the network under test)."""
    return snmp_counter(host, "Udp.RcvbufErrors") + snmp_counter(host, "Udp6RcvbufErrors")
