"""`make bench BENCH=control`: the control plane end to end.

  intents_per_s   one intent = one subscriber changed (its IPv4 address) in
                  a node of 1000, applied through the controller's REST
                  northbound as one revision, counted when the node agent
                  reports that revision converged (the data plane has it):
                  request to data plane programmed, one after the other;
                  intent_agent_pass_ms is the agent's share (its mean
                  reconciliation pass, from its own histogram).
                  Peer: the same change as one `sub-add` on the control
                  socket (what an operator's script would do without us).
  resync_64k_s    the data plane, holding 65,536 subscribers from the
                  desired state, is killed (SIGKILL) and started again with
                  its configuration file (no subscriber): seconds from the
                  new process's exec to all 65,536 subscribers back
                  (sub-list total) with the agent converged; dp_start_s is
                  the data plane's own start-up (exec to its control socket
                  answering, no agent) in it.  Goal: <= 5 s.
                  Peer: the same 65,536 subscribers sent directly as
                  sub-add-bulk lines of 4096 to a fresh data plane (the
                  floor: the data plane's own cost).

Figures are medians over rounds; the ratios are ours / the peer's time.
Everything runs on loopback; the data plane's ports are net_null (no
traffic: the control path's cost is what is measured).  Memory: the
agent's and the controller's resident set (VmRSS) after the 64K apply.
"""
import ipaddress
import statistics
import time

from bench import common
from bench.bench_pfcp import dp_config as pfcp_dp_config
from lab.control_lab import ControlPlane, wait_for
from lab.dp import Dp, config_set

N = 65536
BASE = 1000


def sub(i, alt=False):
    # Tags: S-VLAN 100 + i // 4094, C-VLAN 1 + i % 4094; addresses
    # 198.18.0.0 + i (RFC 2544 range), the changed ones 198.19.128.0 + i.
    base = ipaddress.ip_address("198.19.128.0" if alt else "198.18.0.0")
    return {"id": i, "sTag": 100 + (i - 1) // 4094, "cTag": 1 + (i - 1) % 4094,
            "mac": f"02:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}:01",
            "ipv4": [str(base + i)]}


def node(subs):
    return {"apiVersion": "edgeplane/v1", "bng": {
        "routes": [{"prefix": "0.0.0.0/1", "via": "198.18.1.2"}, {"prefix": "128.0.0.0/1", "via": "198.18.1.2"}],
        "subscribers": subs}}


def dp_config():
    """The PFCP benchmark's BNG (65,536 subscribers, net_null ports) in
    ordinary memory: hugepages are shared, and no packet moves here."""
    return config_set(pfcp_dp_config(), "engine", "memory", "no-huge")


def start_dp(workdir, name="dp"):
    """lab.dp.Dp in the root namespace, its logs kept in workdir/name; a
    64K-subscriber bulk add may take a while to answer."""
    return Dp(None, dp_config(), name=name, workdir=workdir, start_timeout=120, ctl_timeout=120)


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def pass_seconds(cp):
    """The agent's reconciliation passes so far: (count, seconds)."""
    return (cp.metric("edgeplane_agent_pass_duration_seconds_count") or 0,
            cp.metric("edgeplane_agent_pass_duration_seconds_sum") or 0.0)


def intents_round(cp, dp, n):
    subs = [sub(i) for i in range(1, BASE + 1)]
    a = cp.apply({"nodes": {"edge1": node(subs)}})
    cp.wait_converged(a["revision"], timeout=120)
    lat = []
    passes0 = pass_seconds(cp)
    t0 = time.monotonic()
    for k in range(n):
        i = 1 + k % BASE
        subs[i - 1] = sub(i, alt=(k // BASE) % 2 == 0)
        s = time.monotonic()
        a = cp.apply({"nodes": {"edge1": node(subs)}})
        cp.wait_converged(a["revision"], timeout=30, interval=0.002)
        lat.append(time.monotonic() - s)
    ours = n / (time.monotonic() - t0)
    passes1 = pass_seconds(cp)
    pass_ms = 1000 * (passes1[1] - passes0[1]) / max(1, passes1[0] - passes0[0])
    # Peer: the same changes straight to the control socket.
    t0 = time.monotonic()
    for k in range(n):
        i = 1 + k % BASE
        f = sub(i, alt=(k // BASE) % 2 == 1)
        dp.ctl("sub-add", id=i, qinq=f"{f['sTag']}.{f['cTag']}", mac=f["mac"], ipv4=f["ipv4"])
    direct = n / (time.monotonic() - t0)
    return ours, direct, statistics.median(lat), pass_ms


def kill9_restart(dp):
    dp.kill()
    dp.start()  # the same configuration; returns when the control socket answers


def resync_round(cp, dp):
    # From the new process's exec: its own start-up is in the figure
    # (dp_start_s says how much of it that is).
    t0 = time.monotonic()
    kill9_restart(dp)
    wait_for("64K subscribers back", lambda: dp.ctl("sub-list", limit=1)["total"] == N, timeout=300, interval=0.02)
    wait_for("agent converged", lambda: (cp.status() or {}).get("converged"), timeout=60, interval=0.02)
    return time.monotonic() - t0


def direct_round(workdir):
    with start_dp(workdir) as dp:
        subs = []
        for i in range(1, N + 1):
            f = sub(i)
            subs.append({"id": i, "qinq": f"{f['sTag']}.{f['cTag']}", "mac": f["mac"], "ipv4": f["ipv4"]})
        t0 = time.monotonic()
        for s in range(0, N, 4096):
            dp.ctl("sub-add-bulk", subscribers=subs[s:s + 4096])
        return time.monotonic() - t0


def dp_start(workdir):
    """Seconds from exec to the control socket answering, no agent."""
    t0 = time.monotonic()
    with start_dp(workdir):
        return time.monotonic() - t0


def run(args):
    rounds = 1 if args.quick else 3
    n_intents = 50 if args.quick else 300
    work = common.OUT / "control-work"
    work.mkdir(parents=True, exist_ok=True)
    ours_i, direct_i, lat_i, pass_i, resync, direct_r, starts = [], [], [], [], [], [], []
    mem = {}
    with start_dp(work) as dp:
        with ControlPlane(work / "cp", dp.ctl_path, node="edge1") as cp:
            for _ in range(rounds):
                o, d, l, p = intents_round(cp, dp, n_intents)
                ours_i.append(o)
                pass_i.append(p)
                direct_i.append(d)
                lat_i.append(l)
            t0 = time.monotonic()
            a = cp.apply({"nodes": {"edge1": node([sub(i) for i in range(1, N + 1)])}})
            cp.wait_converged(a["revision"], timeout=600)
            apply_64k = time.monotonic() - t0
            mem = {"agent_rss_mib": rss_kib(cp.agent.pid) / 1024,
                   "controller_rss_mib": rss_kib(cp.controller.pid) / 1024}
            for r in range(rounds):
                resync.append(resync_round(cp, dp))
                direct_r.append(direct_round(work / f"direct{r}"))
                starts.append(dp_start(work / f"start{r}"))
    metrics = {"intents_per_s": common.median(ours_i), "intent_p50_ms": 1000 * common.median(lat_i),
               "intent_agent_pass_ms": common.median(pass_i),
               "resync_64k_s": common.median(resync), "dp_start_s": common.median(starts),
               "apply_64k_s": apply_64k, **mem}
    peers = {"control-socket": {"intents_per_s": common.median(direct_i),
                                "sub_add_bulk_64k_s": common.median(direct_r)}}
    ratios = {"intents_vs_control-socket": metrics["intents_per_s"] / peers["control-socket"]["intents_per_s"],
              "resync_vs_sub_add_bulk": metrics["resync_64k_s"] / peers["control-socket"]["sub_add_bulk_64k_s"]}
    config = {"subscribers": N, "intent_base": BASE, "intents": n_intents, "rounds": rounds,
              "agent": "--dp-check 200ms", "ports": "net_null", "rounds_raw": {
                  "intents_per_s": ours_i, "resync_64k_s": resync, "direct_64k_s": direct_r}}
    return common.result("control", config, metrics, peers, ratios,
                         extra={"goal": {"resync_64k_s": 5.0}})
