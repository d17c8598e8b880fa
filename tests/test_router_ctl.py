"""Router commands on the control socket: round trips, and hostile requests
(wrong field types, bad values) refused with a clear error that changes
nothing."""
import pytest

from lab.dp import CtlError
from lab.router_lab import A4, B4, B6, GW_A4


@pytest.fixture
def dp(router_lab):
    return router_lab.dp


def tables(dp):
    return (dp.ctl("route-list")["routes"], dp.ctl("neigh-list")["neighbors"],
            dp.ctl("acl-list"))


BAD = [
    # (id, command, fields, words in the error)
    ("route_add_prefix_not_string", "route-add", {"prefix": 5, "via": B4},
     ["field 'prefix' must be a string"]),
    ("route_add_missing_via", "route-add", {"prefix": "198.18.5.0/24"}, ["missing field 'via'"]),
    ("route_add_prefix_too_long", "route-add", {"prefix": "198.18.5.0/33", "via": B4},
     ["198.18.5.0/33"]),
    ("route_add_host_bits_set", "route-add", {"prefix": "198.18.5.1/24", "via": B4},
     ["host bits"]),
    ("route_add_via_not_ip", "route-add", {"prefix": "198.18.5.0/24", "via": "gw"},
     ["'gw' is not an IP address"]),
    ("route_add_family_mismatch", "route-add", {"prefix": "198.18.5.0/24", "via": B6},
     ["is IPv6, prefix is IPv4"]),
    ("route_add_via_unconnected", "route-add", {"prefix": "198.18.5.0/24", "via": "198.18.9.9"},
     ["not on a connected subnet"]),
    ("route_add_via_own_address", "route-add", {"prefix": "198.18.5.0/24", "via": GW_A4},
     ["is an address of this router"]),
    ("route_add_replaces_connected", "route-add", {"prefix": "198.18.0.0/24", "via": B4},
     ["connected route"]),
    ("route_del_unknown", "route-del", {"prefix": "198.18.66.0/24"}, ["no route"]),
    ("route_del_connected", "route-del", {"prefix": "198.18.1.0/24"}, ["connected"]),
    ("route_list_limit_not_int", "route-list", {"limit": "all"}, ["must be an integer"]),
    ("neigh_add_bad_mac", "neigh-add", {"ip": "198.18.1.9", "mac": "02:00:00:00:00:zz"},
     ["not a MAC address"]),
    ("neigh_add_multicast_mac", "neigh-add", {"ip": "198.18.1.9", "mac": "01:00:5e:00:00:01"},
     ["not a unicast MAC"]),
    ("neigh_add_mac_not_string", "neigh-add", {"ip": "198.18.1.9", "mac": 2},
     ["field 'mac' must be a string"]),
    ("neigh_add_dev_not_string", "neigh-add", {"ip": "198.18.1.9", "mac": "02:00:00:00:00:09",
                                               "dev": ["pa"]}, ["dev"]),
    ("neigh_add_unknown_dev", "neigh-add", {"ip": "198.18.1.9", "mac": "02:00:00:00:00:09",
                                            "dev": "pz"}, ["no port 'pz'"]),
    ("neigh_add_unconnected", "neigh-add", {"ip": "198.18.9.9", "mac": "02:00:00:00:00:09"},
     ["not on a connected subnet"]),
    ("neigh_del_unknown", "neigh-del", {"ip": "198.18.1.99"}, ["no neighbour"]),
    ("acl_add_bad_action", "acl-add", {"rule": "allow proto tcp"}, ["permit or deny"]),
    ("acl_add_bad_proto", "acl-add", {"rule": "deny proto sctpx"}, ["proto"]),
    ("acl_add_port_with_icmp", "acl-add", {"rule": "deny proto icmp dport 22"}, ["tcp or udp"]),
    ("acl_add_port_out_of_range", "acl-add", {"rule": "deny proto udp dport 70000"}, ["70000"]),
    ("acl_add_index_beyond_end", "acl-add", {"rule": "deny proto udp", "index": 5}, ["index"]),
    ("acl_add_index_negative", "acl-add", {"rule": "deny proto udp", "index": -1}, ["index"]),
    ("acl_add_rule_not_string", "acl-add", {"rule": {"deny": True}}, ["field 'rule' must be a string"]),
    ("acl_del_index_not_int", "acl-del", {"index": "0"}, ["must be an integer"]),
    ("acl_del_missing_index", "acl-del", {}, ["index"]),
    ("acl_del_no_such_rule", "acl-del", {"index": 3}, ["index"]),
    ("acl_replace_rules_not_list", "acl-replace", {"rules": 5}, ["rules"]),
    ("acl_replace_rule_not_string", "acl-replace", {"rules": ["deny proto udp", 7]},
     ["rules[1]"]),
    ("acl_set_default_bad", "acl-set-default", {"action": "maybe"}, ["permit or deny"]),
]


@pytest.mark.parametrize("cmd,fields,words", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_router_command_refuses_bad_request_and_changes_nothing(dp, cmd, fields, words):
    before = tables(dp)
    with pytest.raises(CtlError) as exc:
        dp.ctl(cmd, **fields)
    assert exc.value.error.startswith(f"{cmd}: "), exc.value.error
    for w in words:
        assert w in exc.value.error, exc.value.error
    assert tables(dp) == before
    assert dp.ctl("version")["edgeplane_dp"]


def test_route_add_list_replace_delete_round_trip(dp):
    dp.ctl("route-add", prefix="198.18.44.0/24", via=B4)
    r = [x for x in dp.ctl("route-list")["routes"] if x["prefix"] == "198.18.44.0/24"]
    assert r == [{"prefix": "198.18.44.0/24", "kind": "static", "nexthop": r[0]["nexthop"],
                  "via": B4, "port": "pb", "resolved": True}], r
    dp.ctl("route-add", prefix="198.18.44.0/24", via=A4)
    r = [x for x in dp.ctl("route-list")["routes"] if x["prefix"] == "198.18.44.0/24"]
    assert len(r) == 1 and r[0]["via"] == A4 and r[0]["port"] == "pa", r
    dp.ctl("route-del", prefix="198.18.44.0/24")
    assert not [x for x in dp.ctl("route-list")["routes"] if x["prefix"] == "198.18.44.0/24"]


def test_route_via_gateway_without_neighbour_is_listed_unresolved(dp):
    dp.ctl("route-add", prefix="2001:db8:44::/48", via="2001:db8:0:2::99")
    try:
        r = [x for x in dp.ctl("route-list")["routes"] if x["prefix"] == "2001:db8:44::/48"]
        assert len(r) == 1 and r[0]["resolved"] is False and r[0]["port"] == "pb", r
    finally:
        dp.ctl("route-del", prefix="2001:db8:44::/48")


def test_neigh_add_list_delete_round_trip(dp):
    dp.ctl("neigh-add", ip="198.18.1.50", mac="02:00:00:00:00:50")
    try:
        n = [x for x in dp.ctl("neigh-list")["neighbors"] if x["ip"] == "198.18.1.50"]
        assert len(n) == 1 and n[0]["port"] == "pb" and n[0]["mac"].lower() == "02:00:00:00:00:50"
        assert any(r["prefix"] == "198.18.1.50/32" and r["kind"] == "neighbor"
                   for r in dp.ctl("route-list")["routes"])
    finally:
        dp.ctl("neigh-del", ip="198.18.1.50")
    assert not [x for x in dp.ctl("neigh-list")["neighbors"] if x["ip"] == "198.18.1.50"]
    assert not any(r["prefix"] == "198.18.1.50/32" for r in dp.ctl("route-list")["routes"])


def test_cli_sends_router_commands(dp):
    # The CLI turns key=value into JSON fields; its exit status follows "ok".
    ok = dp.cli("route-add", "prefix=198.18.45.0/24", f"via={B4}")
    assert ok.returncode == 0
    bad = dp.cli("route-add", "prefix=198.18.45.0/24", "via=nowhere", check=False)
    assert bad.returncode == 1 and "not an IP address" in bad.stderr
    dp.cli("route-del", "prefix=198.18.45.0/24")
