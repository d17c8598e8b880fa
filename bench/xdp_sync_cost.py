"""What a sync of the router's XDP fast-path maps costs with a large table.

    .venv/bin/python -m bench.xdp_sync_cost [--routes 1000 10000 100000] [--changes 10]

For each table size N: the router lab on net_af_xdp (namespaces a, dut,
b; dataplane/router/README.md, "The XDP fast path") starts with N /32
routes via host b from a route_file; the first sync writes them all.  Then
`--changes` times a route is added and removed again (one table change
each), and after each sync the data plane's own figures are read from
`xdp-fast`: `last_sync_us` (the control thread's time for the whole sync,
both ports), `last_sync_walk_us` (of it, the FIB's walk and sort) and each
port's `last_sync_route_writes` (the bpf() route updates and deletes);
beside them the time from sending the command to seeing its sync on the
control socket.  Medians and ranges are printed.  No traffic is sent: it is
light enough to run beside other benchmarks, but its absolute times move
with the machine's load (the in-process figures less than the round trip).
"""
import argparse
import ipaddress
import statistics
import tempfile
import time
from pathlib import Path

from lab.router_lab import B4, RouterLab

# /32s for the table, in the lab's 198.18.0.0/15 but away from its own
# subnets (198.18.0-1.x) and the routes the tests add (198.18.100.0/24).
POOLS = ("198.19.0.0/16", "198.18.128.0/17", "198.18.64.0/18")
CHANGED = "198.18.2.0/24"


def route_lines(n):
    lines = []
    for pool in POOLS:
        net = ipaddress.ip_network(pool)
        for i in range(min(n - len(lines), net.num_addresses)):
            lines.append(f"{net.network_address + i}/32 via {B4}\n")
    if len(lines) < n:
        raise SystemExit(f"at most {len(lines)} routes fit the lab's pools")
    return lines


def wait_sync(dp, before, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = dp.ctl("xdp-fast")
        if st["syncs"] > before and all(p["synced"] for p in st["ports"]):
            return st
        time.sleep(0.001)
    raise SystemExit(f"no sync within {timeout}s: {dp.ctl('xdp-fast')}")


def spread(values):
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def measure(n, changes, tmp):
    path = Path(tmp) / f"routes{n}"
    path.write_text("".join(route_lines(n)))
    with RouterLab(tag="xc", device="af_xdp", peer_napi=True,
                   router={"route_file": str(path)}) as lab:
        first = wait_sync(lab.dp, 0)
        rows = {"us": [], "walk_us": [], "writes": [], "round_trip_us": []}
        for i in range(changes):
            cmd = ("route-add", {"prefix": CHANGED, "via": B4}) if i % 2 == 0 else \
                ("route-del", {"prefix": CHANGED})
            before = lab.dp.ctl("xdp-fast")["syncs"]
            t0 = time.perf_counter()
            lab.dp.ctl(cmd[0], **cmd[1])
            st = wait_sync(lab.dp, before)
            rows["round_trip_us"].append((time.perf_counter() - t0) * 1e6)
            rows["us"].append(st["last_sync_us"])
            rows["walk_us"].append(st["last_sync_walk_us"])
            rows["writes"].append(sum(p["last_sync_route_writes"] for p in st["ports"]))
        return first, rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench.xdp_sync_cost")
    ap.add_argument("--routes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--changes", type=int, default=10)
    args = ap.parse_args(argv)
    with open("/proc/loadavg") as f:
        print(f"load average {f.read().split()[0]}")
    print(f"{'routes':>7} {'first sync us':>14} {'first writes':>12} | a change: "
          f"{'sync us':>18} {'of it walk us':>18} {'route writes':>12} {'round trip us':>18}")
    with tempfile.TemporaryDirectory(prefix="xdp_sync_cost") as tmp:
        for n in args.routes:
            first, r = measure(n, args.changes, tmp)
            writes = sum(p["last_sync_route_writes"] for p in first["ports"])
            print(f"{n:>7} {first['last_sync_us']:>14} {writes:>12} | {'':>9} "
                  f"{spread(r['us']):>18} {spread(r['walk_us']):>18} "
                  f"{spread(r['writes']):>12} {spread(r['round_trip_us']):>18}", flush=True)


if __name__ == "__main__":
    main()
