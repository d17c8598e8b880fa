"""ACL changes at run time take effect on live traffic, and undoing them
restores it.  Each test has its own lab: they change the rule set."""
import pytest

from lab.probe import udp_probe
from lab.router_lab import A4, B4, B6, RouterLab
from lab.traffic import iperf3

PROBES = 40


def ping_works(lab, dst=B4):
    return lab.ping("a", dst, count=2, interval=0.2).returncode == 0


def test_acl_deny_udp_dport_added_at_run_time_blocks_and_delete_restores(fresh_router_lab):
    lab = fresh_router_lab
    assert udp_probe(lab.a, lab.b, B4, 5201, count=PROBES) == PROBES
    before = lab.dp.drops()["acl_deny"]
    res = lab.dp.ctl("acl-add", rule=f"deny proto udp src {A4}/32 dst {B4}/32 dport 5201")
    assert res["index"] == 0 and res["rules"] == 1
    assert udp_probe(lab.a, lab.b, B4, 5201, count=PROBES) == 0
    assert lab.dp.drops()["acl_deny"] >= before + PROBES
    # Only what the rule names is denied: another port, and TCP to 5201.
    assert udp_probe(lab.a, lab.b, B4, 5202, count=PROBES) == PROBES
    r = iperf3(lab.a, B4, seconds=1)
    assert r.received_bytes > 0, r
    lab.dp.ctl("acl-del", index=0)
    assert lab.dp.ctl("acl-list")["rules"] == []
    assert udp_probe(lab.a, lab.b, B4, 5201, count=PROBES) == PROBES


def test_acl_deny_icmp_blocks_ping_ipv4_but_not_ipv6(fresh_router_lab):
    lab = fresh_router_lab
    lab.dp.ctl("acl-add", rule=f"deny proto icmp dst {B4}/32")
    before = lab.dp.drops()["acl_deny"]
    assert not ping_works(lab, B4)
    assert lab.dp.drops()["acl_deny"] >= before + 2
    assert ping_works(lab, B6)
    lab.dp.ctl("acl-del", index=0)
    assert ping_works(lab, B4)


def test_acl_first_match_wins_and_insert_at_index(fresh_router_lab):
    lab = fresh_router_lab
    lab.dp.ctl("acl-add", rule=f"permit proto icmp dst {B4}/32")
    lab.dp.ctl("acl-add", rule=f"deny proto icmp dst {B4}/32")
    assert ping_works(lab)
    lab.dp.ctl("acl-add", rule="deny proto icmp", index=0)
    rules = [r["rule"] for r in lab.dp.ctl("acl-list")["rules"]]
    assert len(rules) == 3 and rules[0].startswith("deny"), rules
    assert not ping_works(lab)
    lab.dp.ctl("acl-del", index=0)
    assert ping_works(lab)


def test_acl_default_deny_blocks_and_permit_restores(fresh_router_lab):
    lab = fresh_router_lab
    lab.dp.ctl("acl-set-default", action="deny")
    assert lab.dp.ctl("acl-list")["default"] == "deny"
    assert not ping_works(lab, B4) and not ping_works(lab, B6)
    # A permit rule opens exactly its traffic under the deny default (the
    # probe is one-way, so no rule for the return direction is needed).
    lab.dp.ctl("acl-add", rule="permit proto udp dport 5201")
    assert udp_probe(lab.a, lab.b, B4, 5201, count=PROBES) == PROBES
    assert udp_probe(lab.a, lab.b, B4, 5202, count=PROBES) == 0
    lab.dp.ctl("acl-set-default", action="permit")
    assert ping_works(lab, B4) and ping_works(lab, B6)


def test_acl_replace_is_atomic_and_refuses_bad_rule_sets(fresh_router_lab):
    lab = fresh_router_lab
    lab.dp.ctl("acl-replace", rules=[f"deny proto icmp dst {B4}/32", "permit proto tcp"])
    assert not ping_works(lab)
    with pytest.raises(Exception, match=r"rules\[1\]"):
        lab.dp.ctl("acl-replace", rules=["permit proto icmp", "allow everything"])
    # The refused set changed nothing.
    assert len(lab.dp.ctl("acl-list")["rules"]) == 2
    assert not ping_works(lab)
    lab.dp.ctl("acl-replace", rules=[])
    assert lab.dp.ctl("acl-list")["rules"] == []
    assert ping_works(lab)


def test_acl_from_config_file_applies_at_start(request, router_pipeline):
    lab = RouterLab(tag="ra", acl=[f"deny proto icmp dst {B4}/32"], acl_default="permit")
    request.addfinalizer(lab.close)
    lab.__enter__()
    listed = lab.dp.ctl("acl-list")
    assert len(listed["rules"]) == 1 and listed["default"] == "permit"
    assert not ping_works(lab, B4)
    assert ping_works(lab, B6)
