"""What a sync of the router's XDP fast-path maps costs with a large table,
for one build or several measured in alternating rounds.

    .venv/bin/python -m bench.xdp_sync_cost [--routes 1000 10000 100000] [--changes 10] \
        [--rounds 1] [BINARY[=LABEL] ...]

For each table size N: the router lab on net_af_xdp (namespaces a, dut,
b; dataplane/router/README.md, "The XDP fast path") starts with N /32
routes via host b from a route_file.  The first sync after the program is
attached is a sync by the route list (the FIB walked and sorted, the
tries empty): it writes them all, and `last_sync_by` says how it compared
them.  Then `--changes` times a route is added and removed again (one
table change each, synced by the FIB's change log), and after each sync
the data plane's own figures are read from `xdp-fast`: `last_sync_us`
(the control thread's time for the whole sync, both ports),
`last_sync_walk_us` (of it, the FIB's walk and sort) and each port's
`last_sync_route_writes` (the bpf() route updates and deletes); beside
them the time from sending the command to seeing its sync on the control
socket.

Builds: BINARY[=LABEL] arguments (default: build/dp/edgeplane-dp), each
started in its own lab one after the other, the order reversed every
other round (`--rounds`), as bench/router_ab.py does with router builds.
A binary finds its XDP object at ../xdp/fwd.o, so copy a build with its
object beside it before rebuilding:

    mkdir -p /tmp/BRANCH/before/dp /tmp/BRANCH/before/xdp
    cp build/dp/edgeplane-dp /tmp/BRANCH/before/dp/ && cp build/xdp/fwd.o /tmp/BRANCH/before/xdp/

Medians over rounds with ranges are printed, and each build's first sync
against the first build's as the median of per-round ratios; everything
goes to build/bench/xdp_sync_cost.json.  No traffic is sent: it is light
enough to run beside other benchmarks, but its absolute times move with
the machine's load (the in-process figures less than the round trip).
"""
import argparse
import ipaddress
import statistics
import tempfile
import time
from pathlib import Path

from bench import common
from lab.dp import binary as default_binary
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


def spread(values, scale=1.0, fmt=".0f"):
    v = [x * scale for x in values]
    return f"{statistics.median(v):{fmt}} ({min(v):{fmt}}-{max(v):{fmt}})"


def measure(binary, n, changes, path):
    """One build at one table size: its first sync, then the changes."""
    with RouterLab(tag="xc", device="af_xdp", peer_napi=True, binary=binary,
                   router={"route_file": str(path)}) as lab:
        first = wait_sync(lab.dp, 0)
        out = {"first_us": first["last_sync_us"], "first_walk_us": first["last_sync_walk_us"],
               "first_writes": sum(p["last_sync_route_writes"] for p in first["ports"]),
               "first_by": sorted({p["last_sync_by"] for p in first["ports"]}),
               "first_syncs": first["syncs"],
               "us": [], "walk_us": [], "writes": [], "round_trip_us": [], "by": []}
        for i in range(changes):
            cmd = ("route-add", {"prefix": CHANGED, "via": B4}) if i % 2 == 0 else \
                ("route-del", {"prefix": CHANGED})
            before = lab.dp.ctl("xdp-fast")["syncs"]
            t0 = time.perf_counter()
            lab.dp.ctl(cmd[0], **cmd[1])
            st = wait_sync(lab.dp, before)
            out["round_trip_us"].append((time.perf_counter() - t0) * 1e6)
            out["us"].append(st["last_sync_us"])
            out["walk_us"].append(st["last_sync_walk_us"])
            out["writes"].append(sum(p["last_sync_route_writes"] for p in st["ports"]))
            out["by"].append(sorted({p["last_sync_by"] for p in st["ports"]}))
        return out


def parse_builds(args):
    builds = []
    for b in args or [str(default_binary())]:
        path, _, label = b.partition("=")
        path = Path(path).resolve()
        if not path.is_file():
            raise SystemExit(f"{path}: no such binary")
        if not (path.parent.parent / "xdp" / "fwd.o").is_file():
            raise SystemExit(f"{path}: no ../xdp/fwd.o beside it (the program it loads)")
        builds.append((label or path.parent.parent.name, path))
    if len({label for label, _ in builds}) != len(builds):
        raise SystemExit("two builds with one label")
    return builds


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench.xdp_sync_cost")
    ap.add_argument("--routes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--changes", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("builds", nargs="*", help="BINARY[=LABEL] (default: the build's)")
    args = ap.parse_args(argv)
    builds = parse_builds(args.builds)
    load = [Path("/proc/loadavg").read_text().split()[0]]
    res = {n: {label: [] for label, _ in builds} for n in args.routes}
    with tempfile.TemporaryDirectory(prefix="xdp_sync_cost") as tmp:
        for n in args.routes:
            path = Path(tmp) / f"routes{n}"
            path.write_text("".join(route_lines(n)))
            for r in range(args.rounds):
                for label, binary in (builds if r % 2 == 0 else builds[::-1]):
                    m = measure(binary, n, args.changes, path)
                    res[n][label].append(m)
                    print(f"  {n} routes, round {r + 1}, {label}: first sync "
                          f"{m['first_us'] / 1000:.1f} ms by {'/'.join(m['first_by'])}, "
                          f"{m['first_writes']} writes", flush=True)
    load.append(Path("/proc/loadavg").read_text().split()[0])
    print(f"load average {load[0]} then {load[1]}; medians over {args.rounds} rounds "
          f"(ranges); a change: medians over rounds of each round's median of {args.changes}")
    print(f"{'routes':>7} {'build':>10} | {'first sync ms':>18} {'of it walk ms':>18} "
          f"{'writes':>7} {'by':>8} {'/ ' + builds[0][0]:>12} | a change: {'sync us':>14} "
          f"{'writes':>6} {'round trip us':>16}")
    summary = {}
    for n in args.routes:
        base = [m["first_us"] for m in res[n][builds[0][0]]]
        for label, _ in builds:
            ms = res[n][label]
            first = [m["first_us"] for m in ms]
            ratios = [a / b for a, b in zip(first, base)]
            per_change = {k: [statistics.median(m[k]) for m in ms]
                          for k in ("us", "writes", "round_trip_us")}
            summary[f"{n}/{label}"] = {
                "routes": n, "build": label, "first_sync_us": statistics.median(first),
                "first_sync_us_rounds": first,
                "first_walk_us": statistics.median(m["first_walk_us"] for m in ms),
                "first_writes": statistics.median(m["first_writes"] for m in ms),
                "first_by": ms[0]["first_by"],
                "first_sync_vs_" + builds[0][0]: statistics.median(ratios),
                "change_sync_us": statistics.median(per_change["us"]),
                "change_writes": statistics.median(per_change["writes"]),
                "change_round_trip_us": statistics.median(per_change["round_trip_us"])}
            print(f"{n:>7} {label:>10} | {spread(first, 1e-3, '.1f'):>18} "
                  f"{spread([m['first_walk_us'] for m in ms], 1e-3, '.1f'):>18} "
                  f"{statistics.median(m['first_writes'] for m in ms):>7.0f} "
                  f"{'/'.join(ms[0]['first_by']):>8} {spread(ratios, 1, '.2f'):>12} | "
                  f"{'':>9} {spread(per_change['us']):>14} "
                  f"{statistics.median(per_change['writes']):>6.0f} "
                  f"{spread(per_change['round_trip_us']):>16}", flush=True)
    path = common.write_result(common.result(
        "xdp_sync_cost",
        {"routes": args.routes, "changes": args.changes, "rounds": args.rounds,
         "builds": {label: str(b) for label, b in builds}, "loadavg": load},
        summary, extra={"rounds": {str(n): res[n] for n in args.routes}}))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
