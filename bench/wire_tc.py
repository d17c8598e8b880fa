"""The tc ingress fast path against Linux forwarding and our XDP fast path,
on the rfc2544-router topology and tester
(docs/benchmarks/rfc2544-router-fast-paths.md, "A copy-free path on veth:
tc ingress").

    sudo PYTHONPATH=. .venv/bin/python -m bench.wire_tc [--rounds 12] [--search]
        [--modes linux,ours,tc_peer,tc_redirect,tc_neigh]

One RouterLab(peer_napi=True), the bench's two-process tester (generator in
host a, sink in host b, both af_packet); per round every mode in turn, each
set up afresh and torn down after its trial, the order rotated by one each
round and reversed every other round:

- linux: the kernel forwarding (bench_rfc2544_router.kernel_dut);
- ours: edgeplane-dp's router with its XDP fast path (start_router);
- tc_peer, tc_redirect, tc_neigh: build/xdp/tcfwd.o (xdp/fwd/tcfwd.bpf.c)
  on pa's tc ingress (clsact, cls_bpf direct action), its maps written as
  the router's would be (route 198.18.100.0/24 -> next hop 5 on port 1 =
  pb, MACs b and pb), ending in bpf_redirect_peer(pb), bpf_redirect(pb)
  or bpf_redirect_neigh(pb, 198.18.1.2).  The kernel keeps the lab's
  addresses and neighbours (redirect_neigh's) but not its forwarding: a
  frame the program passes is not forwarded, and its `forwarded` counter
  must equal the frames sent.

Per mode: a 0.5 s warm-up at 50 kpps, then either one trial at --rate
(600 kpps: above what the generator reaches, so the figure is the rate it
reached, `measured_pps`: every DUT here forwards inside its sendto()) or,
with --search, the bench's zero-loss search (bench_rfc2544_router.search).
Writes build/bench/wire-tc.json: every trial, per mode the median rate,
and per mode the median of its per-round ratios to linux with their
spread; a lossy trial is kept but left out of the ratios.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import time

from bench import bench_rfc2544_router as b, common
from lab.router_lab import B4, MAC_B, MAC_PA, MAC_PB, RouterLab

TCFWD = str(common.ROOT / "build" / "xdp" / "tcfwd.o")
MODES = ("linux", "ours", "tc_peer", "tc_redirect", "tc_neigh")
PROGS = {"tc_peer": "tc_router_fwd_peer", "tc_redirect": "tc_router_fwd",
         "tc_neigh": "tc_router_fwd_neigh"}
NH, PORT = 5, 1                 # the next hop's index and its port (pb)
SMALL = {"max_routes4": 1024, "max_routes6": 1024, "lpm4_tbl8s": 64, "lpm6_tbl8s": 256,
         "max_acl_rules": 1024}


def sh(cmd, ns=None, check=True):
    """A command, in the namespace `ns` if given (nsenter --net: the mount
    namespace, and so /sys/fs/bpf, stays the caller's)."""
    if ns:
        cmd = ["nsenter", f"--net=/run/netns/{ns}"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}{r.stdout.strip()}")
    return r.stdout


def _hex(bs):
    return [f"{x:02x}" for x in bs]


def _mac(m):
    return bytes(int(x, 16) for x in m.split(":"))


class TcProg:
    """build/xdp/tcfwd.o loaded once and pinned; its maps written for the
    lab; attached to pa's ingress per trial.  Unpinned on close."""

    def __init__(self, lab, obj=TCFWD):
        self.lab, self.ns = lab, lab.dut.ns
        self.pin = f"/sys/fs/bpf/wire_tc_{os.getpid()}"
        self.maps = self.pin + "_maps"
        sh(["bpftool", "prog", "loadall", obj, self.pin, "type", "classifier",
            "pinmaps", self.maps])
        pb = json.loads(sh(["ip", "-j", "link", "show", "pb"], self.ns))[0]["ifindex"]
        u32 = lambda v: v.to_bytes(4, "little")  # noqa: E731
        self.put("fwd_cfg_map", u32(0), _mac(MAC_PA) + bytes([1, 1]))      # enabled, no ACL
        self.put("fwd_route4", u32(24) + bytes([198, 18, 100, 0]), u32(NH))
        self.put("fwd_nexthops", u32(NH), _mac(MAC_B) + _mac(MAC_PB) + PORT.to_bytes(2, "little")
                 + (1500).to_bytes(2, "little") + bytes([1, 0, 0, 0]))
        self.put("fwd_tc_ports", u32(PORT), u32(pb))
        self.put("fwd_tc_nh4", u32(NH), bytes(int(x) for x in B4.split(".")))

    def put(self, m, k, v):
        sh(["bpftool", "map", "update", "pinned", f"{self.maps}/{m}", "key", "hex"] + _hex(k)
           + ["value", "hex"] + _hex(v), self.ns)

    def forwarded(self):
        """The `forwarded` counter (fwd_reasons.def's first), summed over CPUs."""
        d = json.loads(sh(["bpftool", "-j", "map", "lookup", "pinned",
                           f"{self.maps}/fwd_counters", "key", "0", "0", "0", "0"]))
        return sum(int.from_bytes(bytes(int(x, 16) for x in c["value"]), "little")
                   for c in d["values"])

    def attach(self, mode):
        sh(["tc", "qdisc", "add", "dev", "pa", "clsact"], self.ns)
        sh(["tc", "filter", "add", "dev", "pa", "ingress", "bpf", "da", "object-pinned",
            f"{self.pin}/{PROGS[mode]}"], self.ns)

    def detach(self):
        sh(["tc", "qdisc", "del", "dev", "pa", "clsact"], self.ns, check=False)

    def close(self):
        self.detach()
        for p in (self.pin, self.maps):
            shutil.rmtree(p, ignore_errors=True)


def order_of(modes, rnd):
    k = rnd % len(modes)
    order = list(modes[k:]) + list(modes[:k])
    return order[::-1] if rnd % 2 else order


def one(lab, tc, mode, rate, trial_s, search):
    if mode == "ours":
        lab.dp_opts["router"] = dict(SMALL, xdp_fast_path="auto")
        b.start_router(lab)
    else:
        b.kernel_dut(lab)
        if mode != "linux":
            sh(["sysctl", "-qw", "net.ipv4.ip_forward=0"], lab.dut.ns)
            tc.attach(mode)
    try:
        f0 = tc.forwarded()
        with b.tester_for(lab, lab.dp if mode == "ours" else None) as t:
            t.trial(50_000, "64", 0.5)
            if search:
                s = b.search(t, "64", trial_s, 0.02, 2_000_000, lambda m: None)
                r = {"rate": s["rate"], "tester_limited": s["tester_limited"], "lost": 0,
                     "load_avg": s["probe"]["load_avg"],
                     "trials": [{k: x[k] for k in ("rate_pps", "measured_pps", "lost")}
                                for x in s["trials"]]}
            else:
                x = t.trial(rate, "64", trial_s)
                r = {"rate": x["measured_pps"], "lost": x["lost"], "sent": x["sent"],
                     "load_avg": x["load_avg"], "p50_ns": x["latency_ns"]["p50"],
                     "softnet_drops": x["softnet_drops"], "tester": x["tester"],
                     "fast_path_share": x["fast_path_share"]}
        r["tc_forwarded"] = tc.forwarded() - f0
    finally:
        if mode == "ours":
            b.stop_router(lab)
        else:
            tc.detach()
            b.kernel_off(lab)
            for dev in ("pa", "pb"):
                sh(["ip", "neigh", "flush", "dev", dev], lab.dut.ns, check=False)
    return r


def summary(rows, modes):
    rounds = sorted({r["round"] for r in rows})
    by = {(r["round"], r["mode"]): r for r in rows}
    out = {}
    for m in modes:
        vals = [by[(n, m)]["rate"] for n in rounds if (n, m) in by and not by[(n, m)]["lost"]]
        ent = {"median_pps": round(statistics.median(vals)) if vals else None,
               "rounds": len(vals)}
        if m != "linux":
            rat = [by[(n, m)]["rate"] / by[(n, "linux")]["rate"] for n in rounds
                   if (n, m) in by and (n, "linux") in by and not by[(n, m)]["lost"]
                   and not by[(n, "linux")]["lost"] and by[(n, "linux")]["rate"]]
            if rat:
                ent.update(vs_linux=round(statistics.median(rat), 3),
                           vs_linux_min=round(min(rat), 3), vs_linux_max=round(max(rat), 3),
                           vs_linux_rounds=[round(x, 3) for x in rat],
                           above_linux=sum(x > 1 for x in rat))
        out[m] = ent
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rate", type=int, default=600_000)
    ap.add_argument("--trial-s", type=float, default=1.5)
    ap.add_argument("--search", action="store_true", help="the zero-loss search per mode")
    ap.add_argument("--obj", default=TCFWD)
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    rows = []
    with RouterLab(tag="wtc", routes=[(b.ROUTED, B4)], start=False, device=b.DUT_DEVICE,
                   peer_napi=True, router=dict(SMALL)) as lab:
        tc = TcProg(lab, a.obj)
        try:
            for rnd in range(a.rounds):
                for mode in order_of(modes, rnd):
                    r = one(lab, tc, mode, a.rate, a.trial_s, a.search)
                    r.update(round=rnd, mode=mode, time=time.strftime("%H:%M:%S", time.gmtime()))
                    rows.append(r)
                    print(f"{rnd:2d} {mode:12s} {r['rate'] / 1e3:7.1f} kpps lost {r['lost']} "
                          f"load {r['load_avg']} tc_forwarded {r['tc_forwarded']}", flush=True)
        finally:
            tc.close()
    s = summary(rows, modes)
    for m, e in s.items():
        print(m, e)
    res = common.result("wire-tc", {"modes": modes, "rounds": a.rounds, "rate": a.rate,
                                    "trial_s": a.trial_s, "search": a.search, "size": "64"},
                        {"modes": s, "trials": rows},
                        ratios={f"{m}_vs_linux": e.get("vs_linux") for m, e in s.items()
                                if m != "linux"})
    print(common.write_result(res))


if __name__ == "__main__":
    main()
