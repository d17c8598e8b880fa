"""Scale-out of subscribers across BNG instances, with traffic.

Three edgeplane-dp vBNG processes on the same access and core veths (each
sees every frame; only the one holding a subscriber forwards it, the
others drop it as unknown), one controller and one agent with the three
sockets.  Six subscribers are placed on two instances, then a third
instance is added: the controller moves two of them (the fair share) and
nothing else.  While the agent applies the rebalance, an unmoved
subscriber pings the core without losing a packet, and the unmoved
subscribers' counters on their data planes go on from where they were
(a subscriber removed and added again would start from zero); the moved
ones forward through the new instance.
"""
import threading

import pytest

from lab.bng_lab import CORE4, Subscriber, bng_available, sub_counters
from lab.control_lab import ControlPlane, MultiDpBngLab, HTTPError, bng_node, wait_for

NODE = "bng3"
SUBS = [Subscriber(f"s{i}", id=i, vlan=100 + i) for i in range(1, 7)]
INSTANCES = ("a", "b", "c")


def node(instances):
    cfg = bng_node(SUBS)
    cfg["bng"]["instances"] = [{"name": n, "dataPlanes": [f"bng-{n}"], "maxSubscribers": 16} for n in instances]
    return cfg


def ping(lab, name, count=2, interval="0.2"):
    return lab.sub(name).host.run(["ping", "-n", "-c", str(count), "-i", interval, "-W", "1", CORE4],
                                  check=False)


@pytest.fixture(scope="module")
def lab(dp_binary, tmp_path_factory):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    socks = tmp_path_factory.mktemp("scale-sock")
    # Three whole vBNG processes (both pipelines each), sockets bng-a, bng-b, bng-c.
    with MultiDpBngLab(SUBS, socks, {n: (f"bng-{n}.sock", {}) for n in INSTANCES}, tag="cpi") as bl:
        sockets = ",".join(str(bl.procs[n].ctl_path) for n in INSTANCES)
        with ControlPlane(tmp_path_factory.mktemp("control-scale"), None, node=NODE,
                          agent_args=["--bng-socket", sockets]) as cp:
            bl.cp = cp
            yield bl


def held(lab):
    return {n: sorted(s["id"] for s in lab.procs[n].ctl("sub-list", limit=64)["subscribers"]) for n in INSTANCES}


def test_a_third_instance_takes_a_share_and_the_rest_keep_forwarding(lab):
    a = lab.cp.apply({"nodes": {NODE: node(INSTANCES[:2])}})
    lab.cp.wait_converged(a["revision"])
    assert held(lab) == {"a": [1, 3, 5], "b": [2, 4, 6], "c": []}
    for s in SUBS:
        assert ping(lab, s.name).returncode == 0, s.name
    dp_of = {i: n for n, ids in held(lab).items() for i in ids}
    before = {s.id: sub_counters(lab.procs[dp_of[s.id]], s.id) for s in SUBS}

    # An unmoved subscriber (1 stays on a: a gives its highest id, 5)
    # pings through the rebalance.
    out = {}
    pinger = threading.Thread(target=lambda: out.update(r=ping(lab, "s1", count=60, interval="0.05")))
    pinger.start()
    wait_for("the pinger's first reply", lambda: sub_counters(lab.procs["a"], 1)[1] > before[1][1] + 2)
    plan = lab.cp.apply({"nodes": {NODE: node(INSTANCES)}})
    rev = plan["revision"]
    moves = {m["id"]: (m["from"], m["to"]) for m in plan["plan"]["nodes"][0]["moves"]}
    assert moves == {5: ("a", "c"), 6: ("b", "c")}, plan
    lab.cp.wait_converged(rev)
    pinger.join(timeout=30)
    r = out["r"]
    assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout

    assert held(lab) == {"a": [1, 3], "b": [2, 4], "c": [5, 6]}
    passes = [p for p in lab.cp.reports(type="pass") if p["revision"] == rev]
    assert passes and passes[0]["changes"] == {"subscriber add": 2, "subscriber remove": 2}, passes
    for s in SUBS:
        if s.id in moves:
            continue
        up, down = sub_counters(lab.procs[dp_of[s.id]], s.id)
        # The entry was not replaced: its counters went on.
        assert up >= before[s.id][0] and down >= before[s.id][1], (s.name, before[s.id], (up, down))
    for s in SUBS:
        assert ping(lab, s.name).returncode == 0, s.name
    for i in moves:
        assert sub_counters(lab.procs["c"], i)[0] > 0


def test_plan_refuses_what_the_budgets_cannot_hold(lab):
    cfg = node(INSTANCES)
    for inst in cfg["bng"]["instances"]:
        inst["maxSubscribers"] = 1
    with pytest.raises(HTTPError) as e:
        lab.cp.request("POST", "/v1/plan", {"nodes": {NODE: cfg}})
    assert e.value.code == 400 and "budget exhausted" in str(e.value.body), e.value.body
