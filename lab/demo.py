"""`make run`: edgeplane-dp routing between two namespaces, with real tools.

    host a  --veth--  [ DUT: edgeplane-dp router ]  --veth--  host b
    198.18.0.2                                                198.18.1.2

Builds the standard router lab (lab/router_lab.py), pings across it and to
the router itself (IPv4 and IPv6), runs iperf3 TCP and UDP over IPv4 and
IPv6 (server in b) while printing the data plane's per-stage table every
~2 s, then a summary: throughput, loss, ping round trips, cycles per packet
per stage, drops by reason.  Everything is torn down on exit, Ctrl-C or
failure.  Exit status 1 when traffic did not cross.
"""
import argparse
import signal
import sys
import time

from .dp import DpError, binary
from .router_lab import A4, A6, B4, B6, GW_A4, GW_A6, RouterLab, router_available
from .traffic import Iperf3Server, iperf3_finish, iperf3_start, ping_summary, snmp_counter


def banner(text):
    print(f"\n=== {text} " + "=" * max(0, 66 - len(text)), flush=True)


def run_iperf3(lab, name, dst, udp, seconds, rate, watch):
    banner(f"iperf3 {name}: a -> {dst}, {seconds} s" + (f", {rate}bit/s" if udp else ""))
    proc = iperf3_start(lab.a, dst, udp=udp, bitrate=rate if udp else None, seconds=seconds)
    next_show = time.monotonic() + watch
    while proc.poll() is None:
        time.sleep(0.1)
        if time.monotonic() >= next_show and proc.poll() is None:
            print(lab.dp.top(), end="", flush=True)
            next_show += watch
    try:
        r = iperf3_finish(proc)
    except RuntimeError as exc:
        print(f"  iperf3 failed: {exc}")
        return None
    print(f"  -> {r.mbps:.1f} Mbit/s received, {r.received_bytes} bytes"
          + (f", lost {r.lost_packets}/{r.packets} ({r.lost_percent:.3f}%)" if udp
             else f", {r.retransmits} retransmits"), flush=True)
    return r


def run_ping(lab, name, src, dst, count):
    res = lab.ping(src, dst, count=count, interval=0.2, timeout=count + 10)
    s = ping_summary(res.stdout)
    rtt = f"rtt avg {s['rtt_avg']:.3f} ms" if s["rtt_avg"] is not None else "no replies"
    print(f"  ping {name:<22} {s['received']}/{s['sent']} replies, {rtt}", flush=True)
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5, help="length of each iperf3 run")
    ap.add_argument("--udp-rate", default="100M", help="iperf3 UDP rate (bit/s)")
    ap.add_argument("--watch", type=float, default=2.0, help="seconds between stage tables")
    args = ap.parse_args(argv)
    # Ctrl-C arrives as KeyboardInterrupt, SIGTERM/SIGHUP as one too (instead
    # of lab.topology's kill-and-die handler), so the `with` below unwinds:
    # edgeplane-dp stopped, its directory removed, namespaces deleted.
    def _interrupt(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    if not binary().exists():
        print(f"{binary()} not found: run `make build` first", file=sys.stderr)
        return 2
    ok, why = router_available()
    pipeline = "router"
    if not ok:
        print(f"warning: {why}\nwarning: falling back to the xconnect pipeline "
              "(one subnet, no routing)", file=sys.stderr)
        pipeline = "xconnect"
    t0 = time.monotonic()
    results, pings = {}, {}
    try:
        with RouterLab(pipeline=pipeline, tag="demo") as lab:
            dst4, dst6 = (B4, B6) if pipeline == "router" else ("198.18.0.3", "2001:db8:0:1::3")
            banner(f"edgeplane-dp ({pipeline}) running in {lab.dut.ns}")
            print(lab.dp.config_path.read_text().rstrip())
            banner("ping")
            pings["a -> b IPv4"] = run_ping(lab, f"a -> b {dst4}", "a", dst4, 5)
            pings["a -> b IPv6"] = run_ping(lab, f"a -> b {dst6}", "a", dst6, 5)
            if pipeline == "router":
                pings["a -> router IPv4"] = run_ping(lab, f"a -> router {GW_A4}", "a", GW_A4, 3)
                pings["a -> router IPv6"] = run_ping(lab, f"a -> router {GW_A6}", "a", GW_A6, 3)
                pings["b -> a IPv4"] = run_ping(lab, f"b -> a {A4}", "b", A4, 3)
                pings["b -> a IPv6"] = run_ping(lab, f"b -> a {A6}", "b", A6, 3)
            Iperf3Server(lab.b)
            for name, dst, udp in (("TCP IPv4", dst4, False), ("UDP IPv4", dst4, True),
                                   ("TCP IPv6", dst6, False), ("UDP IPv6", dst6, True)):
                results[name] = run_iperf3(lab, name, dst, udp, args.seconds, args.udp_rate,
                                           args.watch)
            stages = lab.dp.stages()
            drops = {k: v for k, v in lab.dp.drops().items() if v}
            workers = lab.dp.workers()
            ports = lab.dp.ctl("ports")["ports"]
            # Where UDP loss happens when the data plane dropped nothing:
            # the receiving socket's buffer in host b.
            rcvbuf = (snmp_counter(lab.b, "Udp.RcvbufErrors")
                      + snmp_counter(lab.b, "Udp6RcvbufErrors"))
            lab.dp.stop()   # checks for a clean exit
    except KeyboardInterrupt:
        print("\ninterrupted: lab torn down", file=sys.stderr)
        return 130
    except (DpError, OSError) as exc:
        print(f"\nfailed: {exc}", file=sys.stderr)
        return 1

    banner("summary")
    for name, s in pings.items():
        rtt = (f"rtt min/avg/max {s['rtt_min']:.3f}/{s['rtt_avg']:.3f}/{s['rtt_max']:.3f} ms"
               if s["rtt_avg"] is not None else "no replies")
        print(f"  ping {name:<18} {s['received']}/{s['sent']}  {rtt}")
    for name, r in results.items():
        if r is None:
            print(f"  iperf3 {name:<16} FAILED")
        elif r.udp:
            print(f"  iperf3 {name:<16} {r.mbps:8.1f} Mbit/s  lost {r.lost_packets}/{r.packets}"
                  f" ({r.lost_percent:.3f}%)  jitter {r.jitter_ms:.3f} ms")
        else:
            print(f"  iperf3 {name:<16} {r.mbps:8.1f} Mbit/s  {r.retransmits} retransmits")
    print("  per-stage cost (all runs, summed over workers):")
    for name, s in stages.items():
        print(f"    {name:<10} {s['pkts_in']:>10} pkts  {s['cycles_per_pkt']:8.1f} cycles/pkt"
              f"  dropped {s['pkts_dropped']}")
    print("    (rx and tx include the kernel: af_packet's recv and sendto, and on tx the\n"
          "     veth delivering into the peer's stack; the stages between are the pipeline)")
    for p in ports:
        st = p.get("stats", {})
        print(f"  port {p['name']}: rx {st.get('ipackets', 0)} (missed {st.get('imissed', 0)}, "
              f"errors {st.get('ierrors', 0)}, no mbuf {st.get('rx_nombuf', 0)}), "
              f"tx {st.get('opackets', 0)} (errors {st.get('oerrors', 0)})")
    for w in workers:
        print(f"  worker {w['name']}: busy {w['busy_pct']:.1f}% of its polling time, "
              f"rx {w['rx_pkts']}, tx {w['tx_pkts']}, sleeps {w['sleeps']}")
    print(f"  host b: {rcvbuf} UDP datagrams dropped by a full socket receive buffer")
    print("  drops by reason: " + (", ".join(f"{k}={v}" for k, v in sorted(drops.items()))
                                   or "none"))
    print(f"  total time {time.monotonic() - t0:.1f} s")

    crossed = (all(s["received"] > 0 for k, s in pings.items() if "a -> b" in k)
               and all(r is not None and r.received_bytes > 0 for r in results.values()))
    if not crossed:
        print("FAIL: traffic did not cross edgeplane-dp", file=sys.stderr)
        return 1
    print(f"OK: traffic crossed edgeplane-dp ({pipeline})")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
