"""The vBNG uplink benchmark's peers get the rule set ours gets.

`make bench BENCH=bng-uplink` compares ours with l3fwd --lookup=acl, whose
rule file (Inputs.l3fwd_acl_rules) is written in l3fwd's own syntax from the
same 150-rule list as ours (Inputs.acl_file).  These tests read the l3fwd
file back with an independent parser and check, on probe 5-tuples that hit
each rule and on the benchmark's own flows, that it decides what the list
decides: a deny where a rule matches, the forwarding rule otherwise.
"""
import ipaddress
import random

import pytest

from bench.bng_inputs import ACL_RULES, Inputs, acl150, acl_matches

PROTO = {"tcp": 6, "udp": 17}


def parse_l3fwd_line(line):
    """'@src/len dst/len slo : shi dlo : dhi proto/mask' or 'R... port'."""
    kind, rest = line[0], line[1:].split()
    src, dst = ipaddress.ip_network(rest[0]), ipaddress.ip_network(rest[1])
    sport = (int(rest[2]), int(rest[4]))
    dport = (int(rest[5]), int(rest[7]))
    proto, mask = (int(x, 0) for x in rest[8].split("/"))
    port = int(rest[9]) if kind == "R" else None
    return dict(kind=kind, src=src, dst=dst, sport=sport, dport=dport, proto=proto,
                mask=mask, port=port)


def l3fwd_decides(rules, proto, src, dst, sport, dport):
    """First matching line (l3fwd gives earlier lines higher priority)."""
    for r in rules:
        if (ipaddress.ip_address(src) in r["src"] and ipaddress.ip_address(dst) in r["dst"]
                and r["sport"][0] <= sport <= r["sport"][1]
                and r["dport"][0] <= dport <= r["dport"][1]
                and proto & r["mask"] == r["proto"] & r["mask"]):
            return r
    return None


@pytest.fixture(scope="module")
def l3fwd_rules(tmp_path_factory):
    inputs = Inputs()
    inputs.dir = tmp_path_factory.mktemp("bng-inputs")
    p4, p6 = inputs.l3fwd_acl_rules()
    lines = [ln for ln in p4.read_text().splitlines() if ln.strip()]
    assert p6.read_text().startswith("R")
    return inputs, [parse_l3fwd_line(ln) for ln in lines]


def test_l3fwd_acl_file_has_the_150_deny_rules_then_one_route(l3fwd_rules):
    _, rules = l3fwd_rules
    assert len(rules) == ACL_RULES + 1
    assert all(r["kind"] == "@" for r in rules[:-1])
    last = rules[-1]
    assert last["kind"] == "R" and last["port"] == 1
    assert last["src"].prefixlen == 0 and last["dst"].prefixlen == 0


def _probe(rule, rng):
    """A 5-tuple inside @p rule (a dict of acl150)."""
    def inside(net):
        n = ipaddress.ip_network(net)
        return str(n[rng.randrange(n.num_addresses)])
    proto = PROTO[rule["proto"]] if "proto" in rule else rng.choice([6, 17])
    ports = []
    for k in ("sport", "dport"):
        p = rule.get(k)
        lo, hi = (p if isinstance(p, tuple) else (p, p)) if p is not None else (1, 65535)
        ports.append(rng.randint(lo, hi))
    return (proto, inside(rule["src"]) if "src" in rule else "8.8.8.8",
            inside(rule["dst"]) if "dst" in rule else "9.9.9.9", ports[0], ports[1])


def test_l3fwd_acl_file_denies_what_the_rule_list_denies(l3fwd_rules):
    _, rules = l3fwd_rules
    rng = random.Random(7)
    ours = acl150()
    for i, rule in enumerate(ours):
        for _ in range(3):
            t = _probe(rule, rng)
            denied_by_list = any(acl_matches(r, *t) for r in ours)
            assert denied_by_list, f"probe {t} of rule {i} does not hit the list"
            hit = l3fwd_decides(rules, *t)
            assert hit is not None and hit["kind"] == "@", f"rule {i}: {t} -> {hit}"


def test_l3fwd_acl_file_forwards_every_benchmark_flow(l3fwd_rules):
    inputs, rules = l3fwd_rules
    for s, inet, sport, dport in inputs.flows():
        hit = l3fwd_decides(rules, 17, s.ipv4, inet, sport, dport)
        assert hit is not None and hit["kind"] == "R", (s.ipv4, inet, sport, dport)
