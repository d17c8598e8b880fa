"""The control plane end to end: `edgeplane controller` (embedded etcd,
token on its TCP northbound), `edgeplane agent --node` reconciling the
router lab's edgeplane-dp, a real Prometheus scraping the agent.

The router's routes and ACL are configured only through the controller;
the tests kill -9 the data plane, the agent and the controller in turn and
check that the node converges with no operator action, that the agent's
restart changes nothing (a ping across it loses nothing), and that
Prometheus finds the values the control socket reports.  The tests run in
order and share one lab (module scope).
"""
import subprocess

import pytest

from lab.control_lab import ControlPlane, HTTPError, wait_for
from lab.router_lab import A6, B4, B6, RouterLab

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


def test_kill9_of_the_agent_changes_nothing_and_loses_no_packet(lab):
    flow = lab.a.popen(["ping", "-n", "-6", "-c", "60", "-i", "0.05", "-W", "1", B6],
                       stdout=subprocess.PIPE, text=True)
    lab.cp.kill_agent()
    lab.cp.start_agent()
    st = lab.cp.wait_converged(lab.cp.get("/v1/state")["revision"])
    out, _ = flow.communicate(timeout=30)
    assert " 0% packet loss" in out, out
    # The new agent's first pass found the data plane right: no change.
    assert st.get("changes") in (None, {}), st
    assert lab.cp.metric("edgeplane_agent_resyncs_total", reason="start") >= 1


def test_restart_of_the_controller_keeps_the_desired_state(lab):
    cp = lab.cp
    rev = cp.get("/v1/state")["revision"]
    cp.controller.kill()
    cp.controller.wait()
    cp.procs.remove(cp.controller)
    cp.controller = cp._spawn("controller2", cp.controller.args)
    wait_for("controller back", cp._controller_up, timeout=60)
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
