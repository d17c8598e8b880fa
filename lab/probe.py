"""Counted UDP probes between lab hosts, for tests that need an exact answer
("did these 50 datagrams to port 5201 arrive?") where iperf3 would hang or
guess.

    n = udp_probe(lab.a, lab.b, B4, port=5201, count=50)   # datagrams received

Run inside a namespace as `python -m lab.probe recv|send ...`; the receiver
prints "ready" once bound, then the number of datagrams it got.
"""
import argparse
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _recv(args):
    fam = socket.AF_INET6 if ":" in args.bind else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((args.bind, args.port))
    print("ready", flush=True)
    deadline = time.monotonic() + args.seconds
    got = 0
    # Until the expected count arrived, the caller closes our stdin (the
    # sender is done and stragglers had time to land), or the deadline.
    while time.monotonic() < deadline and not (0 < args.expect <= got):
        ready, _, _ = select.select([s, sys.stdin], [], [], deadline - time.monotonic())
        if s in ready:
            if s.recv(65535).startswith(b"edgeplane-probe"):
                got += 1
        elif sys.stdin in ready:
            break
    print(got, flush=True)


def _send(args):
    fam = socket.AF_INET6 if ":" in args.dst else socket.AF_INET
    # One socket per flow: distinct source ports, so a receiver that spreads
    # flows by hash (RSS, PACKET_FANOUT) sees several.
    socks = [socket.socket(fam, socket.SOCK_DGRAM) for _ in range(args.flows)]
    for i in range(args.count):
        socks[i % len(socks)].sendto(b"edgeplane-probe %d" % i, (args.dst, args.port))
        time.sleep(args.interval)


def udp_probe(src, dst_host, dst_ip, port, count=50, interval=0.002, grace=0.5, flows=1):
    """Send `count` datagrams from host src to dst_ip:port, received by a
    socket in dst_host; returns how many arrived (grace: seconds allowed for
    the last ones to land after the sender finished; flows: source ports the
    datagrams take turns on)."""
    budget = count * interval + grace + 30
    recv = dst_host.popen([sys.executable, "-m", "lab.probe", "recv", "--bind", dst_ip,
                           "--port", str(port), "--expect", str(count),
                           "--seconds", str(budget)], cwd=ROOT, stdin=subprocess.PIPE)
    line = recv.stdout.readline().strip()
    if line != "ready":
        recv.kill()
        raise RuntimeError(f"probe receiver did not start: {line} {recv.stderr.read()}")
    src.run([sys.executable, "-m", "lab.probe", "send", "--dst", dst_ip, "--port", str(port),
             "--count", str(count), "--interval", str(interval), "--flows", str(flows)],
            cwd=ROOT, timeout=60)
    time.sleep(grace)
    out, err = recv.communicate(timeout=budget)   # closes stdin: "stop now"
    try:
        return int(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise RuntimeError(f"probe receiver: {out} {err}") from exc


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--expect", type=int, default=0)
    r.add_argument("--seconds", type=float, default=5)
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--count", type=int, default=50)
    s.add_argument("--interval", type=float, default=0.002)
    s.add_argument("--flows", type=int, default=1)
    args = ap.parse_args(argv)
    (_recv if args.mode == "recv" else _send)(args)


if __name__ == "__main__":
    main()
