"""`make run`: the whole edge on one machine, configured through the
controller, with real traffic, Prometheus and a summary.

  router node (netns "dut")                          vBNG node (netns "dut" of the BNG lab)
  ---------------------------------------            ------------------------------------------
  edgeplane controller (embedded etcd)               edgeplane-dp bng-uplink/downlink/inject
  edgeplane agent --node edge1  --(control sockets)->   ^  edgeplane upf (PFCP) <- edgeplane bng-cp
     | XDP steering on port pa                          |                          (PPPoE, IPoE, AAA)
     v                                                emu: subemu, 8 PPPoE + 4 IPoE subscribers
  host a --pa-[XDP]-> edgeplane-dp router --pb-- host b       core: UDP reflector
  Prometheus scraping the agent and the XDP function

  vCMTS node (netns "dut" of the vCMTS lab, lab/demo_cmts.py)
  core host "net" --> edgeplane-dp cmts-ds --DEPI--> RPD model (netns "rpd"): DOCSIS decoded per modem
                  <-- edgeplane-dp cmts-us <--UEPI-- RPD model: each modem's upstream frames

One node agent reconciles every data plane (the router's routes and ACL,
the BNG's core routes and uplink ACL, the host stack's terminate rules,
the vCMTS's cable modems, service flows, classifiers and filter rules) and
the XDP function's intents from one desired configuration applied through
the controller's REST API;
subscribers attach by themselves through the BNG control plane.  Traffic:
iperf3 TCP and UDP through the router (the UDP flow is an XDP prioritised
flow), a few datagrams the router's ACL denies, and every subscriber's UDP
to the core and back through the BNG; the core host's frames to the cable
modems' CPEs through the vCMTS as DEPI to the Remote PHY model, which
decodes them (BPI+ decrypted for the modem that has it), and each modem's
upstream frames as UEPI back through the vCMTS to the core.  A live view (from Prometheus)
every few seconds, then a summary: what ran, rates, drops by reason, and
where any loss happened.  Everything is torn down on exit, Ctrl-C or
failure.  docs/demo.md explains the output.  Exit status 1 when traffic
did not cross a function.
"""
import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .bng_lab import CORE4, CORE6, bng_available
from .bngcp_lab import REFLECT_PORT, BngCpLab
from .control_lab import DASHBOARDS, ControlPlane, free_port
from . import demo_cmts
from .dp import DpError, binary
from .hoststack_lab import B4 as HS_B4
from .hoststack_lab import HostStackLab
from .router_lab import B4, B6, RouterLab, router_available
from .traffic import Iperf3Server, iperf3_finish, iperf3_start, ping_summary, rcvbuf_drops
from .udp_tools import iperf3_pair

NODE = "edge1"
CUSTOMER_NET = "198.18.64.0/24"     # a prefix behind host b, routed by the controller
DISCARD_PORT = 9                    # the router's ACL denies UDP to it (RFC 863 discard)
BNG_SUB_IDS = "8001-8192"           # the agent's; the user plane's are 1-8000


def banner(text):
    print(f"\n=== {text} " + "=" * max(0, 66 - len(text)), flush=True)


def desired_state(cms):
    """The node's whole configuration, as an operator would apply it."""
    return {"apiVersion": "edgeplane/v1",
            "router": {"routes": [{"prefix": CUSTOMER_NET, "via": B4}],
                       "acl": {"default": "permit",
                               "rules": [{"action": "deny", "proto": "udp", "dport": str(DISCARD_PORT)}]}},
            "bng": {"routes": [{"prefix": p, "via": v} for p, v in (
                        ("0.0.0.0/1", CORE4), ("128.0.0.0/1", CORE4), ("::/1", CORE6), ("8000::/1", CORE6))],
                    # Outbound SMTP from subscribers is refused, as operators do.
                    "acl": {"default": "permit", "rules": [{"action": "deny", "proto": "tcp", "dport": "25"}]}},
            "steering": {"intents": [{"name": "iperf-udp", "proto": "udp", "dstIp": B4, "dstPort": 5201,
                                      "cpu": 0}]},
            # The host stack takes iperf3's ports on its service address;
            # every other socket stays with the kernel.
            "udpTermination": {"terminate": [{"address": HS_B4, "ports": "5201-5299"}]},
            # The vCMTS's modems (one with BPI+), service flows, classifiers
            # and filter rules; its channels stay in its configuration file.
            "cmts": demo_cmts.cmts_config(cms)}


class Prom:
    """Instant queries to the demo's Prometheus: {label tuple: value}."""

    def __init__(self, cp):
        self.cp = cp

    def q(self, expr, *labels):
        try:
            res = self.cp.prom_query(expr)
        except (OSError, AssertionError):
            return {}
        return {tuple(r["metric"].get(k, "") for k in labels): float(r["value"][1]) for r in res}

    def one(self, expr):
        v = self.q(expr)
        return next(iter(v.values()), 0.0)


DPS = (("router", "router"), ("bng", "vBNG  "), ("udp", "UDP   "), ("cmts", "vCMTS "))


def fmt_rate(pps):
    return f"{pps:,.0f} pps"


def live_view(prom, t):
    """One block of per-function rates over the last 5 s."""
    w = "[5s]"
    rx = prom.q(f"sum by (dp) (rate(edgeplane_dp_worker_rx_packets_total{w}))", "dp")
    tx = prom.q(f"sum by (dp) (rate(edgeplane_dp_worker_tx_packets_total{w}))", "dp")
    bits = prom.q(f'8 * sum by (dp) (rate(edgeplane_dp_port_bytes_total{{direction="rx"}}{w}))', "dp")
    drops = prom.q(f"sum by (dp, reason) (rate(edgeplane_dp_drops_total{w})) > 0", "dp", "reason")
    xdp = prom.q(f"sum by (verdict) (rate(edgeplane_xdp_packets_total{w})) > 0", "verdict")
    prio = prom.one(f"sum(rate(edgeplane_xdp_flow_packets_total{w}))")
    lines = [f"  t={t:4.0f}s"]
    for dp, what in DPS:
        d = ", ".join(f"{r} {v:,.1f}/s" for (n, r), v in sorted(drops.items()) if n == dp and v >= 0.05) or "none"
        lines.append(f"    {what}  rx {fmt_rate(rx.get((dp,), 0)):>12}  tx {fmt_rate(tx.get((dp,), 0)):>12}"
                     f"  {bits.get((dp,), 0) / 1e6:8.1f} Mbit/s in   drops: {d}")
    v = ", ".join(f"{k[0]} {fmt_rate(x)}" for k, x in sorted(xdp.items())) or "no packets"
    lines.append(f"    XDP     {v}; prioritised flows {fmt_rate(prio)}")
    print("\n".join(lines), flush=True)


class Edge:
    """Both labs, the control plane and the XDP function; close() undoes all."""

    def __init__(self, args):
        self.args = args
        self.stack = contextlib.ExitStack()
        self.work = Path(tempfile.mkdtemp(prefix="edgeplane-demo-"))
        self.stack.callback(shutil.rmtree, self.work, ignore_errors=True)

    def close(self):
        self.stack.close()

    def start(self):
        t0 = time.monotonic()
        banner("bringing up the edge")
        self.router = self.stack.enter_context(RouterLab(tag="demo"))
        print(f"  router lab: hosts a, b and edgeplane-dp (router) in {self.router.dut.ns}", flush=True)
        self.bng = self.stack.enter_context(BngCpLab(tag="demob", users=16, upf_args=("--sub-ids", "1-8000")))
        print(f"  vBNG lab: edgeplane-dp (bng), edgeplane upf and bng-cp in {self.bng.dut.ns} / {self.bng.cph.ns}",
              flush=True)
        self.udp = self.stack.enter_context(HostStackLab(tag="demou"))
        print(f"  UDP termination lab: two edgeplane-dp host stacks (memif) in {self.udp.a.ns} / {self.udp.b.ns}",
              flush=True)
        self.cmts = self.stack.enter_context(demo_cmts.DemoCmtsLab(tag="democ"))
        print(f"  vCMTS lab: edgeplane-dp (cmts-ds, cmts-us; {demo_cmts.N_MODEMS} modems to come from the "
              f"controller) in {self.cmts.dut.ns}, core host in {self.cmts.net.ns}, RPD model in {self.cmts.rpd.ns}",
              flush=True)
        # The agent names a data plane by its socket's file name.
        socks = self.work / "sockets"
        socks.mkdir()
        (socks / "router.sock").symlink_to(self.router.dp.ctl_path)
        (socks / "bng.sock").symlink_to(self.bng.dp.ctl_path)
        (socks / "udp.sock").symlink_to(self.udp.dps["b"].ctl_path)
        (socks / "cmts.sock").symlink_to(self.cmts.dp.ctl_path)
        # The XDP function pins its maps in a bpffs of its own.
        bpffs = self.work / "bpffs"
        bpffs.mkdir()
        subprocess.run(["mount", "-t", "bpf", "bpf", str(bpffs)], check=True)
        self.stack.callback(subprocess.run, ["umount", "-l", str(bpffs)], check=False)
        self.xdp_port = free_port()
        node_ns = self.router.dut
        self.cp = self.stack.enter_context(ControlPlane(
            self.work / "control", None, node=NODE, prometheus=True, host=node_ns,
            agent_args=["--router-socket", str(socks / "router.sock"), "--bng-socket", str(socks / "bng.sock"),
                        "--udp-socket", str(socks / "udp.sock"), "--cmts-socket", str(socks / "cmts.sock"),
                        "--sub-ids", BNG_SUB_IDS, "--resync", "10s",
                        "--iface", "pa", "--bpffs", str(bpffs), "--state-dir", str(self.work / "xdp-state"),
                        "--listen", f"tcp:127.0.0.1:{self.xdp_port}", "--api-insecure-loopback",
                        "--overload", "off", "--report-interval", "5s"],
            scrape=[("edgeplane-xdp", f"127.0.0.1:{self.xdp_port}")]))
        print(f"  controller (embedded etcd), node agent {NODE} (+ XDP steering on pa), Prometheus: in {node_ns.ns}",
              flush=True)
        print(f"  ... up in {time.monotonic() - t0:.0f} s", flush=True)

    def configure(self):
        banner("configuring through the controller (POST /v1/apply)")
        a = self.cp.apply({"nodes": {NODE: desired_state(self.cmts.cms)}, "comment": "make run"})
        counts = a["plan"]["nodes"][0]["counts"]
        print(f"  revision {a['revision']}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
        st = self.cp.wait_converged(a["revision"], timeout=60)
        print(f"  node {NODE} converged: " + ", ".join(f"{k} {v}" for k, v in sorted(st["changes"].items())),
              flush=True)
        return a["revision"]

    def subscribers(self):
        banner("subscribers attach through the BNG control plane")
        t0 = time.monotonic()
        self.pppoe = self.bng.emulator("pppoe", n=8, host="emu", auth="pap", svlan=100, cvlan=1,
                                       user="user%d", timeout="60s")
        self.ipoe = self.bng.emulator("ipoe", n=4, host="emu2", svlan=200, cvlan=1, timeout="60s")
        self.bng.reflector()
        up = self.pppoe.setup.get("up", 0) + self.ipoe.setup.get("up", 0)
        print(f"  {self.pppoe.setup.get('up', 0)} PPPoE (QinQ 100.x, PAP) and {self.ipoe.setup.get('up', 0)} IPoE "
              f"(QinQ 200.x, DHCPv4) subscribers up in {time.monotonic() - t0:.1f} s; the user plane holds "
              f"{self.bng.up_subscribers()}", flush=True)
        return up


def in_thread(fn, *a, **kw):
    """Start fn in a thread; its result or exception in the returned dict."""
    box = {}

    def run():
        try:
            box["result"] = fn(*a, **kw)
        except Exception as exc:  # reported by the summary
            box["error"] = exc
    box["thread"] = threading.Thread(target=run, daemon=True)
    box["thread"].start()
    return box


def run_traffic(edge, args, prom):
    """Pings (IPv4, IPv6), iperf3 TCP then UDP through the router (the UDP
    flow XDP-prioritised), the ACL's datagrams, then UDP through the host
    stacks; subscribers' UDP through the BNG and the cable modems' traffic
    through the vCMTS all along; a live view meanwhile."""
    secs = args.seconds
    banner(f"traffic for about {3 * secs + 3} s (live view every {args.watch:.0f} s, from Prometheus)")
    r = edge.router
    Iperf3Server(r.b)
    # Every subscriber sends sub_pps datagrams of 500 bytes a second to the
    # core's reflector, which sends each back: both directions' loss.
    emus = {"pppoe": edge.pppoe, "ipoe": edge.ipoe}
    before = {name: emu_totals(emu) for name, emu in emus.items()}
    ports_before = port_packets(edge.bng.dp)
    core_rcvbuf = rcvbuf_drops(edge.bng.core)
    bng = {name: in_thread(emu.command, f"traffic {args.sub_pps} {3 * secs} {CORE4}:{REFLECT_PORT} 500",
                           timeout=6 * secs + 60)
           for name, emu in emus.items()}
    cmts = in_thread(demo_cmts.run_traffic, edge.cmts, 3 * secs, args.cmts_pps)
    t0 = time.monotonic()
    next_view = [t0 + args.watch]

    def watch(box):
        while box["thread"].is_alive():
            box["thread"].join(0.1)
            if time.monotonic() >= next_view[0]:
                live_view(prom, time.monotonic() - t0)
                next_view[0] += args.watch
        return box

    def router_iperf3(udp):
        # UDP: a rate and a socket buffer the receiving host keeps up with
        # on two shared cores, so that what is lost is what the network
        # lost; host b's socket-buffer drops are counted apart anyway.
        proc = iperf3_start(r.a, B4, udp=udp, bitrate=args.udp_rate if udp else None, seconds=secs,
                            extra=("-w", "4M") if udp else ())
        return iperf3_finish(proc)

    out = {"ping": {}}
    for fam, dst in (("IPv4", B4), ("IPv6", B6)):
        out["ping"][fam] = ping_summary(r.ping("a", dst, count=5, interval=0.2).stdout)
    rb0 = rcvbuf_drops(r.b)
    out["TCP"] = watch(in_thread(router_iperf3, False))
    # Datagrams to the discard port: the router's ACL drops them.
    r.a.run(["bash", "-c", f"for i in $(seq {args.denied}); do echo x > /dev/udp/{B4}/{DISCARD_PORT}; done"],
            check=False)
    out["UDP"] = watch(in_thread(router_iperf3, True))
    out["rcvbuf"] = rcvbuf_drops(r.b) - rb0
    # Unmodified iperf3 on both sides under libedgeplane-preload.so: its
    # UDP socket is the host stack's (the terminate rule from the
    # controller), its TCP control connection the kernel's.
    out["hoststack"] = watch(in_thread(iperf3_pair, edge.udp, HS_B4, preload=True, bitrate=args.udp_rate,
                                       seconds=secs, length=1400))
    out["bng"] = {name: watch(box) for name, box in bng.items()}
    out["cmts"] = watch(cmts)
    live_view(prom, time.monotonic() - t0)
    # The emulator counts what came back within 0.5 s of the end; on
    # loaded cores a datagram can take longer through the emulator's own
    # packet socket.  What came back at all, once the counts stop moving:
    late = {name: emu_totals(emu) for name, emu in emus.items()}
    for _ in range(30):
        time.sleep(0.2)
        now = {name: emu_totals(emu) for name, emu in emus.items()}
        if now == late:
            break
        late = now
    for name in emus:
        out["bng"][name]["all"] = tuple(a - b for a, b in zip(late[name], before[name]))
    out["core_rcvbuf"] = rcvbuf_drops(edge.bng.core) - core_rcvbuf
    after = port_packets(edge.bng.dp)
    out["bng_ports"] = {k: after[k] - ports_before.get(k, 0) for k in after}
    return out


def port_packets(dp):
    """{(port, "rx"|"tx"): packets} from a data plane's ethdev counters."""
    out = {}
    for p in dp.ctl("ports")["ports"]:
        st = p.get("stats", {})
        out[(p["name"], "rx")], out[(p["name"], "tx")] = st.get("ipackets", 0), st.get("opackets", 0)
    return out


def emu_totals(emu):
    """(datagrams sent, datagrams back) over an emulator's subscribers."""
    ss = emu.sessions()
    return sum(x["tx"] for x in ss), sum(x["rx"] for x in ss)


def summary(edge, out, prom, revision):
    banner("summary")
    ok = True
    st = edge.cp.status() or {}
    print(f"  control plane: revision {revision} applied, node {NODE} "
          f"{'converged' if st.get('converged') else 'NOT converged'} (observed {st.get('observedRevision')}), "
          f"passes {st.get('resyncs')}")
    for fam, p in out["ping"].items():
        rtt = f"rtt avg {p['rtt_avg']:.3f} ms" if p["rtt_avg"] is not None else "no replies"
        print(f"  router  ping a -> b {fam}: {p['received']}/{p['sent']} replies, {rtt}")
        ok = ok and p["received"] > 0
    # Router and host stack: iperf3's own view (the receiver's).
    for name, what in (("TCP", "router  iperf3 TCP a -> b"), ("UDP", "router  iperf3 UDP a -> b"),
                       ("hoststack", "UDP termination iperf3 (preload) a -> b")):
        box = out[name]
        x = box.get("result")
        if x is None:
            print(f"  {what}: FAILED: {box.get('error')}")
            ok = False
            continue
        if x.udp:
            print(f"  {what}: {x.mbps:7.1f} Mbit/s, lost {x.lost_packets}/{x.packets} "
                  f"({x.lost_percent:.3f} %), jitter {x.jitter_ms:.3f} ms")
        else:
            print(f"  {what}: {x.mbps:7.1f} Mbit/s, {x.retransmits} retransmits")
        ok = ok and x.received_bytes > 0
        if name == "UDP":
            print(f"          host b's UDP socket buffer overflowed {out['rcvbuf']} times "
                  "(the receiving host's loss, not the network's)")
    # BNG: the emulator's view (sent, and came back through the reflector).
    for name, box in out["bng"].items():
        res = box.get("result") or {}
        tx, rx = res.get("tx", 0), res.get("rx", 0)
        if box.get("error") is not None or not tx:
            print(f"  vBNG    {name} subscribers' traffic FAILED: {box.get('error') or res}")
            ok = False
            continue
        atx, arx = box["all"]
        print(f"  vBNG    {name:<5} subscribers' UDP to the core and back: {rx}/{tx} datagrams back within 0.5 s, "
              f"{arx}/{atx} at all ({100 * (atx - arx) / max(atx, 1):.3f} % lost)")
        ok = ok and rx > 0
    # Where the datagrams went, hop by hop (the BNG's port counters include
    # a few control frames: LCP echoes, ARP/ND).
    sent = sum(b["all"][0] for b in out["bng"].values())
    back = sum(b["all"][1] for b in out["bng"].values())
    bp = out["bng_ports"]
    print(f"          path: subscribers sent {sent:,} -> BNG access rx {bp.get(('access', 'rx'), 0):,} -> core tx "
          f"{bp.get(('core', 'tx'), 0):,} -> reflector (socket buffer overflows: {out['core_rcvbuf']}) -> core rx "
          f"{bp.get(('core', 'rx'), 0):,} -> access tx {bp.get(('access', 'tx'), 0):,} -> emulator read {back:,}")
    if back < sent:
        up_ok = bp.get(("core", "tx"), 0) >= sent
        down_ok = bp.get(("access", "tx"), 0) >= bp.get(("core", "rx"), 0)
        where = ("after the BNG's access port (the lab's bridge and the emulator's packet socket, on a host "
                 f"with load average {os.getloadavg()[0]:.1f})" if up_ok and down_ok
                 else "in the BNG or before it: see its drops and port errors below")
        print(f"          the {sent - back:,} missing datagrams were lost {where}")
    # vCMTS: the RPD model's view (what it decoded, what came back).
    box = out["cmts"]
    if box.get("error") is not None:
        print(f"  vCMTS   traffic FAILED: {box['error']}")
        ok = False
    else:
        lines, cmts_ok = demo_cmts.summary_lines(box["result"], edge.cmts.cms)
        print("\n".join("  " + x for x in lines))
        ok = ok and cmts_ok
    # Data planes, from Prometheus
    rx = prom.q("sum by (dp) (edgeplane_dp_worker_rx_packets_total)", "dp")
    tx = prom.q("sum by (dp) (edgeplane_dp_worker_tx_packets_total)", "dp")
    drops = prom.q("sum by (dp, reason) (edgeplane_dp_drops_total) > 0", "dp", "reason")
    cycles = " + ".join(f"sum by (dp, worker) (edgeplane_dp_worker_{k}_cycles_total)"
                        for k in ("busy", "idle", "sleep"))
    busy = prom.q(f"100 * sum by (dp, worker) (edgeplane_dp_worker_busy_cycles_total) / ({cycles})", "dp", "worker")
    cpp = prom.q("sum by (dp, stage) (edgeplane_dp_stage_cycles_total) / "
                 "sum by (dp, stage) (edgeplane_dp_stage_packets_total{direction=\"in\"}) > 0", "dp", "stage")
    perr = prom.q("sum by (dp, port, kind) (edgeplane_dp_port_errors_total) > 0", "dp", "port", "kind")
    for dp, _ in DPS:
        e = ", ".join(f"{p} {k}={v:,.0f}" for (n, p, k), v in sorted(perr.items()) if n == dp)
        if e:
            print(f"  edgeplane-dp {dp}: port errors (before a worker saw the packet): {e}")
        d = ", ".join(f"{r}={v:,.0f}" for (n, r), v in sorted(drops.items()) if n == dp) or "none"
        print(f"  edgeplane-dp {dp}: rx {rx.get((dp,), 0):,.0f} tx {tx.get((dp,), 0):,.0f} packets; "
              f"drops by reason: {d}")
        # "service" is the worker's between-bursts work (timers, messages),
        # counted per item served, not per packet: not shown here.
        print("      cycles/packet: " + ", ".join(f"{s} {v:,.0f}" for (n, s), v in sorted(cpp.items())
                                             if n == dp and s != "service"))
        print("      worker busy: " + ", ".join(f"{w} {v:.1f} %" for (n, w), v in sorted(busy.items()) if n == dp))
    denied = drops.get(("router", "acl_deny"), 0)
    print(f"  router ACL: {denied:.0f} of the {edge.args.denied} datagrams to UDP port {DISCARD_PORT} denied "
          "(rule from the controller)")
    xdp = prom.q("sum by (verdict) (edgeplane_xdp_packets_total) > 0", "verdict")
    flows = prom.q("sum by (intent) (edgeplane_xdp_flow_packets_total)", "intent")
    print("  XDP steering on the router's port pa: " + (", ".join(f"{k[0]} {v:,.0f}" for k, v in sorted(xdp.items()))
                                                      or "no packets")
          + "; prioritised: " + (", ".join(f"{k[0]} {v:,.0f} packets" for k, v in flows.items()) or "none"))
    passes, reports = edge.cp.reports("pass"), edge.cp.reports("report")
    print(f"  the agent's JSON lines (--report): {len(passes)} reconciliation passes and {len(reports)} node "
          f"reports, kept in {edge.args.report}; the pass that applied the configuration and the router "
          "in the last report:")
    applied = [p for p in passes if p["changes"]]
    if applied:
        print("    " + json.dumps(applied[0]))
    if reports:
        last = reports[-1]
        router = next((d for d in last["dataPlanes"] if d["dp"] == "router"), None)
        print("    " + json.dumps({k: last[k] for k in ("time", "type", "node", "periodS", "observedRevision",
                                                         "converged")} | {"dataPlanes": [router, "..."]}))
    fleet = edge.cp.reports("fleet", path=edge.cp.dir / "controller-report.jsonl")
    if fleet:
        print("  the controller's fleet report (--report), the last line:\n    " + json.dumps(fleet[-1]))
    edge.args.report.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(edge.cp.report_path, edge.args.report)
    found = dashboards_found(prom)
    print("  Grafana dashboards (deploy/helm/edgeplane/dashboards), the data planes each one's selector finds in "
          "this Prometheus: " + "; ".join(f"{board} -> {', '.join(dps) or 'none'}" for board, dps in found.items()))
    return ok


def dashboards_found(prom):
    """{dashboard: the `dp` label values its data-plane variable's query
    finds}, for the dashboards that have one (the XDP one has none)."""
    found = {}
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        var = next((v for v in board["templating"]["list"] if v["name"] == "dp"), None)
        if var is None:
            continue
        series = re.fullmatch(r"label_values\((.*), dp\)", var["definition"]).group(1)
        found[board["title"].removeprefix("edgeplane: ")] = sorted({k[0] for k in prom.q(series, "dp")})
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=6, help="length of each iperf3 run")
    ap.add_argument("--udp-rate", default="50M", help="iperf3 UDP rate (bit/s) through the router")
    ap.add_argument("--sub-pps", type=int, default=100, help="datagrams a second each subscriber sends")
    ap.add_argument("--cmts-pps", type=int, default=200, help="downstream frames a second through the vCMTS")
    ap.add_argument("--denied", type=int, default=50, help="datagrams the router's ACL is to deny")
    ap.add_argument("--watch", type=float, default=3.0, help="seconds between live views")
    ap.add_argument("--report", type=Path, default=Path("build/run/agent-report.jsonl"),
                    help="where the agent's JSON lines are kept after the run")
    args = ap.parse_args(argv)

    # Ctrl-C arrives as KeyboardInterrupt, SIGTERM/SIGHUP as one too
    # (instead of lab.topology's kill-and-die handler), so the ExitStack
    # unwinds: processes stopped, bpffs unmounted, namespaces deleted.
    def _interrupt(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    if not binary().exists():
        print(f"{binary()} not found: run `make build` first", file=sys.stderr)
        return 2
    for ok, why in (router_available(), bng_available()):
        if not ok:
            print(f"cannot run the demo: {why}", file=sys.stderr)
            return 2
    t0 = time.monotonic()
    edge = Edge(args)
    try:
        edge.start()
        revision = edge.configure()
        up = edge.subscribers()
        prom = Prom(edge.cp)
        out = run_traffic(edge, args, prom)
        time.sleep(1.5)  # one more scrape after the traffic
        ok = summary(edge, out, prom, revision) and up > 0
    except KeyboardInterrupt:
        print("\ninterrupted: tearing the edge down", file=sys.stderr)
        return 130
    except (DpError, OSError, RuntimeError, TimeoutError) as exc:
        print(f"\nfailed: {exc}", file=sys.stderr)
        for name in ("controller", "agent", "prometheus"):
            p = edge.work / "control" / f"{name}.log"
            if p.exists():
                print(f"--- {name} log (tail)\n{p.read_text()[-1500:]}", file=sys.stderr)
        return 1
    finally:
        edge.close()
    print(f"  total time {time.monotonic() - t0:.0f} s; namespaces and processes removed")
    if not ok:
        print("FAIL: traffic did not cross every function", file=sys.stderr)
        return 1
    print("OK: traffic crossed the router (with XDP steering in front), the vBNG, the UDP termination and the vCMTS, "
          "configured by the controller")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
