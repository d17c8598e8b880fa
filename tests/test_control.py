"""The control plane end to end: `edgeplane controller` (embedded etcd,
token on its TCP northbound), `edgeplane agent --node` reconciling the
router lab's edgeplane-dp, a real Prometheus scraping the agent.

The router's routes and ACL, and the vBNG's subscribers (a BNG lab whose
data plane starts with none), are configured only through the controller;
the tests kill -9 the data plane, the agent and the controller in turn and
check that the node converges with no operator action, that the agent's
restart changes nothing (a ping across it loses nothing), and that
Prometheus finds the values the control socket reports.  The tests run in
order and share one lab (module scope).
"""
import json
import os
import re
import subprocess
import urllib.error
from pathlib import Path

import pytest

from lab.bng_lab import CORE4, Subscriber, bng_available
from lab.control_lab import (DASHBOARDS, ControlledBngLab, ControlPlane, HTTPError, MultiDpBngLab, bng_node,
                             dashboard_metrics, exposition_names, wait_for)
from lab.router_lab import B4, B6, RouterLab

NODE = "edge1"
ROUTE = {"prefix": "198.18.100.0/24", "via": B4}
DENY_ICMP_TO_B = {"action": "deny", "proto": "icmp", "dst": f"{B4}/32"}


def router(rules, routes=(ROUTE,)):
    return {"apiVersion": "edgeplane/v1",
            "router": {"routes": list(routes), "acl": {"default": "permit", "rules": list(rules)}}}


@pytest.fixture(scope="module")
def lab(router_pipeline, tmp_path_factory):
    with RouterLab(tag="cp") as rl:
        with ControlPlane(tmp_path_factory.mktemp("control"), rl.dp.ctl_path, node=NODE,
                          prometheus=True) as cp:
            rl.cp = cp
            yield rl


def ping(lab, src, dst, count=2):
    return lab.ping(src, dst, count=count).returncode == 0


def static_routes(lab):
    return sorted((r["prefix"], r["via"]) for r in lab.dp.ctl("route-list", table="router")["routes"]
                  if r["kind"] == "static")


def acl_rules(lab):
    return [r["rule"] for r in lab.dp.ctl("acl-list", table="router")["rules"]]


def test_apply_through_the_controller_programs_the_router(lab):
    a = lab.cp.apply({"nodes": {NODE: router([DENY_ICMP_TO_B])}, "comment": "block icmp to b"})
    assert a["revision"] >= 1
    assert [c["kind"] for c in a["plan"]["nodes"][0]["changes"]][:2] == ["node", "section"]
    lab.cp.wait_converged(a["revision"])
    assert static_routes(lab) == [("198.18.100.0/24", B4)]
    assert acl_rules(lab) == [f"deny proto icmp dst {B4}/32"]
    before = lab.dp.drops()["acl_deny"]
    assert not ping(lab, "a", B4)
    assert lab.dp.drops()["acl_deny"] >= before + 2
    assert ping(lab, "a", B6)  # the rule is IPv4's


def test_plan_stores_nothing_and_bad_input_is_refused(lab):
    cur = lab.cp.get("/v1/state")["revision"]
    plan = lab.cp.request("POST", "/v1/plan", {"nodes": {NODE: router([])}})
    assert plan["nodes"][0]["changes"] == [{"op": "update", "kind": "acl", "key": "router.acl"}]
    assert lab.cp.get("/v1/state")["revision"] == cur
    with pytest.raises(HTTPError) as e:
        lab.cp.apply({"nodes": {NODE: router([{"action": "deny", "proto": "tcp", "dport": "22-21"}])}})
    assert e.value.code == 400 and "router.acl.rules[0].dport" in e.value.body
    with pytest.raises(HTTPError) as e:
        lab.cp.request("GET", "/v1/state", token=False)
    assert e.value.code == 401


def test_rollback_restores_an_earlier_revision_on_the_data_plane(lab):
    blocked = lab.cp.get("/v1/state")["revision"]
    a = lab.cp.apply({"nodes": {NODE: router([])}, "comment": "unblock"})
    lab.cp.wait_converged(a["revision"])
    assert acl_rules(lab) == [] and ping(lab, "a", B4)
    r = lab.cp.request("POST", "/v1/rollback", {"revision": blocked})
    lab.cp.wait_converged(r["revision"])
    assert acl_rules(lab) == [f"deny proto icmp dst {B4}/32"] and not ping(lab, "a", B4)
    revs = lab.cp.get("/v1/revisions")["revisions"]
    assert revs[0]["rollbackOf"] == blocked


def test_kill9_of_the_data_plane_converges_and_counts_a_resync(lab):
    before = lab.cp.metric("edgeplane_agent_resyncs_total", reason="restart") or 0
    lab.dp.kill()
    lab.dp.start()  # the same configuration file: no route, no ACL rule
    wait_for("ACL and route back", lambda: acl_rules(lab) == [f"deny proto icmp dst {B4}/32"]
             and static_routes(lab) == [("198.18.100.0/24", B4)])
    assert lab.cp.metric("edgeplane_agent_resyncs_total", reason="restart") > before
    assert not ping(lab, "a", B4) and ping(lab, "a", B6)
    # Prometheus scrapes every second: let it see this agent's count before
    # the next test kills the agent (the Prometheus test reads it back).
    wait_for("Prometheus scraped the restart resync",
             lambda: lab.cp.prom_query(f'edgeplane_agent_resyncs_total{{reason="restart"}} > {before}'),
             timeout=30)


def test_kill9_of_the_agent_changes_nothing_and_loses_no_packet(lab):
    passes_before = len(lab.cp.reports("pass"))
    flow = lab.a.popen(["ping", "-n", "-6", "-c", "60", "-i", "0.05", "-W", "1", B6],
                       stdout=subprocess.PIPE, text=True)
    lab.cp.kill_agent()
    lab.cp.start_agent()
    # The new agent's own first pass, from its report lines: the node's
    # status may still be the killed agent's until the new one writes it.
    first = wait_for("the new agent's first pass", lambda: next(
        (p for p in lab.cp.reports("pass")[passes_before:] if p["reason"] == "start"), None),
        timeout=30)
    lab.cp.wait_converged(lab.cp.get("/v1/state")["revision"])
    out, _ = flow.communicate(timeout=30)
    assert " 0% packet loss" in out, out
    # The new agent's first pass found the data plane right: no change.
    assert first["converged"] and first.get("changes") in (None, {}), first
    assert lab.cp.metric("edgeplane_agent_resyncs_total", reason="start") >= 1


def test_restart_of_the_controller_keeps_the_desired_state(lab):
    cp = lab.cp
    rev = cp.get("/v1/state")["revision"]
    cp.kill9("controller")
    cp.start_controller()
    assert cp.get("/v1/state")["revision"] == rev
    # The agent's watch came back by itself: a change still reaches it.
    a = cp.apply({"nodes": {NODE: router([DENY_ICMP_TO_B], routes=[ROUTE, {"prefix": "198.18.101.0/24", "via": B4}])}})
    cp.wait_converged(a["revision"])
    assert ("198.18.101.0/24", B4) in static_routes(lab)


def test_metrics_are_clean_by_promtool(lab):
    text = lab.cp.metrics()
    for name in ("edgeplane_dp_stage_cycles_total", "edgeplane_dp_drops_total",
                 "edgeplane_dp_worker_busy_cycles_total", "edgeplane_dp_port_packets_total",
                 "edgeplane_agent_resyncs_total"):
        assert f"# TYPE {name} " in text, name
    res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip(), res.stdout + res.stderr


def test_every_drop_reason_of_the_data_plane_is_a_label(lab):
    reasons = {r["name"] for r in lab.dp.ctl("drop-reasons")["reasons"]}
    text = lab.cp.metrics()
    labelled = {line.split('reason="')[1].split('"')[0] for line in text.splitlines()
                if line.startswith("edgeplane_dp_drops_total{")}
    assert labelled == reasons


def test_prometheus_finds_the_values_the_control_socket_reports(lab):
    assert not ping(lab, "a", B4)  # acl_deny drops, then no traffic
    cp = lab.cp
    seen = {}

    def same():
        want_drops = lab.dp.ctl("drops")["drops"]["acl_deny"]
        w = lab.dp.ctl("stages")["workers"][0]
        acl = next(s for s in w["stages"] if s["name"] == "acl")
        got_d = cp.prom_query('edgeplane_dp_drops_total{reason="acl_deny"}')
        got_c = cp.prom_query(f'edgeplane_dp_stage_cycles_total{{worker="{w["name"]}",stage="acl"}}')
        got_p = cp.prom_query(f'edgeplane_dp_stage_cycles_per_packet{{worker="{w["name"]}",stage="acl"}}')
        seen.update(socket=(want_drops, acl["cycles"], acl["cycles_per_pkt"]), prometheus=(got_d, got_c, got_p))
        return (got_d and got_c and got_p and float(got_d[0]["value"][1]) == want_drops
                and float(got_c[0]["value"][1]) == acl["cycles"]
                and abs(float(got_p[0]["value"][1]) - acl["cycles_per_pkt"]) < 1e-6 * max(1, acl["cycles_per_pkt"]))
    try:
        wait_for("Prometheus has the control socket's acl_deny drops and acl cycles", same, timeout=30, interval=0.5)
    except TimeoutError as e:
        raise AssertionError(f"{e}: last seen {seen}") from None
    # The resync after the data plane's kill -9 was counted by the agent
    # that was then killed in turn: Prometheus kept it.
    assert cp.prom_query('max_over_time(edgeplane_agent_resyncs_total{reason="restart"}[10m]) >= 1')


def test_dashboards_query_only_metrics_prometheus_scraped(lab):
    """Every metric the router, vBNG and vCMTS dashboards query is one Prometheus
    scraped from the agent (the vBNG's data planes export the same names;
    test_bng_dashboard_finds_the_bng checks its selector), the router
    dashboard's data-plane variable finds this router, and every query
    evaluates."""
    used = dashboard_metrics()
    want = set().union(*(used[n] for n in ("edgeplane-router.json", "edgeplane-bng.json", "edgeplane-cmts.json")))
    # Run alone, this test comes before any change (the agent's changes
    # counter has no series until it has changed something) and perhaps
    # before Prometheus's first scrape of the agent: give the agent a
    # change, wait for the scrape (bounded), then say what is missing.
    if "edgeplane_agent_changes_total" not in lab.cp.prom_names():
        lab.cp.wait_converged(lab.cp.apply({"nodes": {NODE: router([DENY_ICMP_TO_B])}})["revision"])
    try:
        wait_for("Prometheus has scraped the dashboards' metrics", lambda: want <= lab.cp.prom_names(),
                 timeout=60, interval=1)
    except TimeoutError:
        pass
    have = lab.cp.prom_names()
    for name in ("edgeplane-router.json", "edgeplane-bng.json", "edgeplane-cmts.json"):
        assert used[name] and used[name] <= have, (name, sorted(used[name] - have))
    boards = {p.name: json.loads(p.read_text()) for p in DASHBOARDS.glob("*.json")}
    var = next(v for v in boards["edgeplane-router.json"]["templating"]["list"] if v["name"] == "dp")
    series = re.fullmatch(r"label_values\((.*), dp\)", var["definition"]).group(1)
    assert {r["metric"]["dp"] for r in lab.cp.prom_query(series)} == {Path(lab.dp.ctl_path).stem}
    # Every query of every dashboard (the XDP one's too) is PromQL this
    # Prometheus evaluates, with Grafana's variables as Grafana fills them.
    for name, board in boards.items():
        for p in board["panels"]:
            for t in p.get("targets", []):
                expr = t["expr"].replace("$__rate_interval", "30s").replace("$dp", ".*")
                try:
                    lab.cp.prom_query(expr)
                except urllib.error.HTTPError as e:
                    raise AssertionError(f"{name} {p['title']!r}: {expr}: {e.read().decode()}") from None


def test_agent_and_controller_write_json_line_reports(lab):
    """--report: a line per reconciliation pass (the restart's among them)
    and a node report a second whose drop counts are the control socket's;
    the controller's fleet report has the node converged."""
    passes = lab.cp.reports("pass")
    assert {"start", "desired", "restart"} <= {p["reason"] for p in passes}, passes
    assert any(p["changes"].get("route add") and p["converged"] for p in passes), passes
    dp = Path(lab.dp.ctl_path).stem
    want = lab.dp.drops()["acl_deny"]  # no traffic now: it stays

    def reported():
        for r in reversed(lab.cp.reports("report")):
            d = next((d for d in r["dataPlanes"] if d["dp"] == dp), None)
            if d and d["up"] and d["drops"].get("acl_deny") == want and "rxPps" in d:
                return r
        return None
    r = wait_for(f"a report with acl_deny={want}", reported, timeout=15)
    assert r["node"] == NODE and r["converged"] and r["observedRevision"] == r["desiredRevision"] > 0, r
    # The controller's fleet report (--report) has the node, converged.
    fleet = lab.cp.reports("fleet", path=lab.cp.dir / "controller-report.jsonl")
    assert fleet and fleet[-1]["nodes"] == [{**fleet[-1]["nodes"][0], "node": NODE, "reporting": True,
                                              "converged": True}] and fleet[-1]["converged"] == 1, fleet[-1:]


# -- the vBNG: subscribers only from the controller ---------------------------

SUBS = [Subscriber("s1", id=1, qinq=(100, 200)), Subscriber("s2", id=2, vlan=101)]


@pytest.fixture(scope="module")
def bng(dp_binary, tmp_path_factory):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    with ControlledBngLab(SUBS, tag="cpb") as bl:
        with ControlPlane(tmp_path_factory.mktemp("control-bng"), bl.dp.ctl_path, node="bng1") as cp:
            bl.cp = cp
            yield bl


def sub_ping(lab, name, count=2):
    return lab.sub(name).host.run(["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "1", CORE4],
                                  check=False).returncode == 0


def test_bng_subscribers_come_from_the_controller(bng):
    assert bng.dp.ctl("sub-list")["total"] == 0 and not sub_ping(bng, "s1", count=1)
    a = bng.cp.apply({"nodes": {"bng1": bng_node(SUBS)}})
    st = bng.cp.wait_converged(a["revision"])
    # The routes and the pipe were already right: only the subscribers were sent.
    assert st["changes"] == {"subscriber add": 2}, st
    assert sub_ping(bng, "s1") and sub_ping(bng, "s2")
    assert bng.dp.ctl("sub-get", id=1)["qinq"] == "100.200"


def test_bng_kill9_reprograms_the_subscribers(bng):
    before = bng.cp.metric("edgeplane_agent_resyncs_total", reason="restart") or 0
    bng.dp.kill()
    bng.dp.start()
    wait_for("subscribers back", lambda: bng.dp.ctl("sub-list")["total"] == 2)
    assert bng.cp.metric("edgeplane_agent_resyncs_total", reason="restart") > before
    assert sub_ping(bng, "s1") and sub_ping(bng, "s2")


def test_bng_subscriber_removed_by_the_controller_stops_forwarding(bng):
    a = bng.cp.apply({"nodes": {"bng1": bng_node(SUBS[:1])}})
    bng.cp.wait_converged(a["revision"])
    assert bng.dp.ctl("sub-list")["total"] == 1
    assert sub_ping(bng, "s1") and not sub_ping(bng, "s2", count=1)


def test_bng_dashboard_finds_the_bng(bng):
    """The vBNG dashboard's metrics are all in the agent's exposition of a
    BNG data plane, and its data-plane selector (workers of a bng-*
    pipeline) matches it."""
    text = bng.cp.metrics()
    used = dashboard_metrics()["edgeplane-bng.json"]
    assert used <= exposition_names(text), sorted(used - exposition_names(text))
    dp = Path(bng.dp.ctl_path).stem
    assert re.search(rf'^edgeplane_dp_worker_rx_packets_total{{dp="{dp}",pipeline="bng-uplink",', text, re.M), text


# -- a split vBNG: bng-uplink and bng-downlink in processes of their own -----

def split_layout():
    """The uplink and the downlink pipelines in two edgeplane-dp processes
    (the Helm chart's layout), each on both ports' veths, each with its own
    tables and control socket: a subscriber pings the core only when both
    have it."""
    return {"uplink": ("uplink.sock", {"workers": ("up",)}),
            "downlink": ("downlink.sock", {"workers": ("down",)})}


@pytest.fixture(scope="module")
def split(dp_binary, tmp_path_factory):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    socks = tmp_path_factory.mktemp("split-sock")
    with MultiDpBngLab(SUBS, socks, split_layout(), tag="cps") as bl:
        up, down = bl.procs["uplink"].ctl_path, bl.procs["downlink"].ctl_path
        with ControlPlane(tmp_path_factory.mktemp("control-split"), up, node="bng2",
                          agent_args=["--bng-socket", f"{up},{down}"]) as cp:
            bl.cp = cp
            yield bl


def test_split_bng_pair_is_programmed_on_both_processes(split):
    a = split.cp.apply({"nodes": {"bng2": bng_node(SUBS)}})
    st = split.cp.wait_converged(a["revision"])
    assert st["changes"] == {"subscriber add": 4}, st      # two subscribers, two processes
    for d in split.procs.values():
        assert d.ctl("sub-list")["total"] == 2
    # Up through bng-uplink's process, the echo reply back through bng-downlink's.
    assert sub_ping(split, "s1") and sub_ping(split, "s2")


def test_split_bng_kill9_of_the_downlink_reprograms_only_it(split):
    before = split.cp.status()["changes"]["subscriber add"]
    down = split.procs["downlink"]
    down.kill()
    down.start()
    wait_for("downlink converged again", lambda: down.ctl("sub-list")["total"] == 2
             and split.cp.status()["converged"]
             and split.cp.status()["changes"]["subscriber add"] == before + 2)
    assert split.procs["uplink"].ctl("sub-list")["total"] == 2
    assert sub_ping(split, "s1") and sub_ping(split, "s2")


def test_schemathesis_finds_nothing_in_the_controller(tmp_path):
    """schemathesis over the controller's document against the real
    controller (TCP, token): no 5xx, every answer as the document says,
    what it refuses refused, what it accepts accepted (but for the model's
    own checks, tests/controller_api_schemathesis.toml).  A fixed seed makes
    a failure repeatable."""
    root = Path(__file__).resolve().parent.parent
    seed = os.environ.get("EDGEPLANE_SCHEMATHESIS_SEED", "20261124")
    with ControlPlane(tmp_path, tmp_path / "no-dp.sock", node="st1", agent=False) as cp:
        r = subprocess.run([str(root / ".venv" / "bin" / "schemathesis"), "--config-file",
                            str(root / "tests" / "controller_api_schemathesis.toml"), "run",
                            str(root / "control" / "model" / "openapi.yaml"), "--url", cp.url,
                            "--seed", seed, "--no-color"],
                           env={**os.environ, "EDGEPLANE_API_TOKEN": cp.token}, cwd=tmp_path,
                           capture_output=True, text=True, timeout=170)
        assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
