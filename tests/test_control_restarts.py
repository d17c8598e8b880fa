"""The restart matrix: kill -9 of each component of the control plane and
of the data plane while iperf3 runs through the router and through the
vBNG, one test per component and function.

The labs: the router lab whose routes and ACL come from the controller,
and the BNG lab whose data plane starts with no subscriber
(lab.control_lab.ControlledBngLab), its subscriber, routes and pipe only
from the controller; the desired state is in a separate etcd process
(Debian's etcd-server) so that the controller and etcd are killed each on
its own.  An iperf3 UDP flow (2 Mbit/s, the rate at which the BNG churn
test claims loss-free delivery on these shared cores) runs across the
function (host a to host b; the subscriber to the core host) while one
component is killed and started again.  Each test checks that the state returns (the controller answers
with the same revision, a change made after the restart reaches the data
plane, the subscriber is back), that traffic resumes, and what the agent
counted; the flow whose configuration did not change loses no packet when
the data plane was not the one killed.  Datagrams the receiving host's
kernel dropped on a full socket buffer are not the path's loss and are
subtracted.
"""
import re
import time

import pytest

from lab.bng_lab import CORE4, Subscriber, bng_available
from lab.control_lab import ControlledBngLab, ControlPlane, bng_node, wait_for
from lab.router_lab import B4, RouterLab
from lab.traffic import Iperf3Server, iperf3_argv, parse_iperf3, rcvbuf_drops

NODE = "restarts"
SUB = Subscriber("s1", id=1, qinq=(100, 200))
SECONDS = 4
# The router's desired state: a route and an ACL whose rule the flow does
# not meet (UDP to 5201 passes, TCP to 22 is denied).
ROUTER_NODE = {"apiVersion": "edgeplane/v1", "router": {
    "routes": [{"prefix": "198.18.100.0/24", "via": B4}],
    "acl": {"default": "permit", "rules": [{"action": "deny", "proto": "tcp", "dport": "22"}]}}}


def open_function(request, name, tmp_path_factory):
    """The lab of one function with its control plane: (lab, the section
    the desired state manages, the iperf3 client host, the server host,
    the server's address)."""
    if name == "bng":
        ok, why = bng_available(request.getfixturevalue("dp_binary"))
        if not ok:
            pytest.skip(why)
        lab = ControlledBngLab([SUB], tag="crb").__enter__()
        request.addfinalizer(lab.close)
        lab.node, lab.section = bng_node([SUB]), "bng"
        lab.client, lab.server, lab.server_ip = lab.sub("s1").host, lab.core, CORE4
    else:
        request.getfixturevalue("router_pipeline")
        lab = RouterLab(tag="crr").__enter__()
        request.addfinalizer(lab.close)
        lab.node, lab.section = ROUTER_NODE, "router"
        lab.client, lab.server, lab.server_ip = lab.a, lab.b, B4
    return lab


@pytest.fixture(scope="module", params=["router", "bng"])
def lab(request, tmp_path_factory):
    lab = open_function(request, request.param, tmp_path_factory)
    with ControlPlane(tmp_path_factory.mktemp("restarts"), lab.dp.ctl_path, node=NODE,
                      external_etcd=True) as cp:
        lab.cp = cp
        cp.wait_converged(cp.apply({"nodes": {NODE: lab.node}})["revision"])
        lab.iperf = Iperf3Server(lab.server)
        yield lab
        lab.iperf.stop()


def through(lab, restart):
    """iperf3 UDP across the function, `restart` called a second into it;
    the client's report (the receiver's totals and, from
    --get-server-output, its per-second intervals) and the receiver's
    socket-buffer drops during the run."""
    drops = rcvbuf_drops(lab.server)
    p = lab.client.popen(iperf3_argv(lab.server_ip, udp=True, bitrate="2M", seconds=SECONDS, length=1200,
                                     extra=["--get-server-output"]))
    time.sleep(1.0)
    restart()
    out, err = p.communicate(timeout=SECONDS + 60)
    r = parse_iperf3(out, err, udp=True, rc=p.returncode)
    r.rcvbuf_drops = rcvbuf_drops(lab.server) - drops
    r.server_intervals = received_per_second(r.report.get("server_output_text", ""))
    return r


_INTERVAL = re.compile(r"\]\s+[\d.]+-[\d.]+\s+sec\s.*\s(\d+)/(\d+) \(")


def received_per_second(text):
    """Datagrams received in each of the receiver's intervals (its text
    report, "Lost/Total"; the summary after the dashes left out)."""
    out = []
    for line in text.split("- - -")[0].splitlines():
        m = _INTERVAL.search(line)
        if m:
            out.append(int(m.group(2)) - int(m.group(1)))
    return out


def assert_no_loss(r):
    assert r.packets > 100 * SECONDS, r
    assert r.lost_packets - r.rcvbuf_drops <= 0, (r, r.rcvbuf_drops)


def change_reaches_the_data_plane(lab):
    """A route added (or removed) now is programmed: the agent still
    follows etcd."""
    sec = lab.section
    route = {"prefix": "198.18.250.0/24", "via": lab.node[sec]["routes"][0]["via"]}
    routes = lab.node[sec]["routes"]
    node = {**lab.node, sec: {**lab.node[sec], "routes": routes + [route] if route not in routes else routes[:-1]}}
    a = lab.cp.apply({"nodes": {NODE: node}})
    lab.cp.wait_converged(a["revision"])
    lab.node = node
    have = {r["prefix"] for r in lab.dp.ctl("route-list", table=sec)["routes"] if r["kind"] == "static"}
    assert ("198.18.250.0/24" in have) == (route in node[sec]["routes"])


def test_restart_matrix_controller(lab):
    cp = lab.cp
    rev = cp.get("/v1/state")["revision"]

    def restart():
        cp.kill9("controller")
        cp.start_controller()
    r = through(lab, restart)
    assert_no_loss(r)
    assert cp.get(f"/v1/nodes/{NODE}")["revision"] <= rev == cp.get("/v1/state")["revision"]
    change_reaches_the_data_plane(lab)


def test_restart_matrix_etcd(lab):
    cp = lab.cp
    before = cp.metric("edgeplane_agent_resyncs_total", reason="desired")

    def restart():
        cp.kill9("etcd_proc")
        cp.start_etcd()
    r = through(lab, restart)
    assert_no_loss(r)
    # The agent's watch came back: the change is a pass prompted by etcd.
    change_reaches_the_data_plane(lab)
    assert cp.metric("edgeplane_agent_resyncs_total", reason="desired") > before


def test_restart_matrix_agent(lab):
    cp = lab.cp

    def restart():
        cp.kill9("agent")
        cp.start_agent()
    r = through(lab, restart)
    assert_no_loss(r)
    # The new agent's first pass found the data plane right: nothing sent.
    st = wait_for("the new agent's first pass", lambda: (s := cp.status()) and s["resyncs"].get("start") and s)
    assert st["converged"] and not st.get("changes"), st
    assert cp.metric("edgeplane_agent_resyncs_total", reason="start") >= 1


def test_restart_matrix_data_plane(lab):
    cp = lab.cp
    before = cp.metric("edgeplane_agent_resyncs_total", reason="restart") or 0

    def restored():
        if lab.section == "bng":
            return lab.dp.ctl("sub-list")["total"] == 1
        return [x["rule"] for x in lab.dp.ctl("acl-list", table="router")["rules"]] == ["deny proto tcp dport 22"]

    def restart():
        lab.dp.kill()
        lab.dp.start()
        wait_for("the desired state back on the data plane", restored)
    r = through(lab, restart)
    assert cp.metric("edgeplane_agent_resyncs_total", reason="restart") > before
    # Traffic resumed: the receiver's last second has the flow again.
    assert r.server_intervals and r.server_intervals[-1] > 0, r.server_intervals
    assert restored()
