"""The restart matrix: kill -9 of each component of the control plane and
of the data plane while iperf3 runs through the vBNG, one test per
component.

The lab is the BNG lab whose data plane starts with no subscriber
(lab.control_lab.ControlledBngLab), its subscriber, routes and pipe only
from the controller; the desired state is in a separate etcd process
(Debian's etcd-server) so that the controller and etcd are killed each on
its own.  An iperf3 UDP flow (2 Mbit/s, the rate at which the BNG churn
test claims loss-free delivery on these shared cores) runs from the
subscriber to the core host while one component is killed and started
again.  Each test checks that the state returns (the controller answers
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
from lab.traffic import Iperf3Server, iperf3_argv, parse_iperf3, rcvbuf_drops

NODE = "bngr"
SUB = Subscriber("s1", id=1, qinq=(100, 200))
SECONDS = 4


@pytest.fixture(scope="module")
def lab(dp_binary, tmp_path_factory):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    with ControlledBngLab([SUB], tag="crm") as bl:
        with ControlPlane(tmp_path_factory.mktemp("restarts"), bl.dp.ctl_path, node=NODE,
                          external_etcd=True) as cp:
            bl.cp = cp
            bl.node = bng_node([SUB])
            cp.wait_converged(cp.apply({"nodes": {NODE: bl.node}})["revision"])
            bl.iperf = Iperf3Server(bl.core)
            yield bl
            bl.iperf.stop()


def through(lab, restart):
    """iperf3 UDP from the subscriber to the core host, `restart` called a
    second into it; the client's report (the receiver's totals and, from
    --get-server-output, its per-second intervals) and the receiver's
    socket-buffer drops during the run."""
    drops = rcvbuf_drops(lab.core)
    p = lab.sub("s1").host.popen(iperf3_argv(CORE4, udp=True, bitrate="2M", seconds=SECONDS, length=1200,
                                             extra=["--get-server-output"]))
    time.sleep(1.0)
    restart()
    out, err = p.communicate(timeout=SECONDS + 60)
    r = parse_iperf3(out, err, udp=True, rc=p.returncode)
    r.rcvbuf_drops = rcvbuf_drops(lab.core) - drops
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
    """A route added now is programmed: the agent still follows etcd."""
    route = {"prefix": "198.18.250.0/24", "via": CORE4}
    routes = lab.node["bng"]["routes"]
    node = {**lab.node, "bng": {**lab.node["bng"], "routes": routes + [route] if route not in routes else routes[:-1]}}
    a = lab.cp.apply({"nodes": {NODE: node}})
    lab.cp.wait_converged(a["revision"])
    lab.node = node
    have = {r["prefix"] for r in lab.dp.ctl("route-list", table="bng")["routes"] if r["kind"] == "static"}
    assert ("198.18.250.0/24" in have) == (route in node["bng"]["routes"])


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

    def restart():
        lab.dp.kill()
        lab.dp.start()
        wait_for("subscriber back", lambda: lab.dp.ctl("sub-list")["total"] == 1)
    r = through(lab, restart)
    assert cp.metric("edgeplane_agent_resyncs_total", reason="restart") > before
    # Traffic resumed: the receiver's last second has the flow again.
    assert r.server_intervals and r.server_intervals[-1] > 0, r.server_intervals
    assert lab.dp.ctl("sub-get", id=1)["qinq"] == "100.200"
