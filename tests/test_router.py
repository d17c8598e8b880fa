"""The router pipeline between two kernel hosts: ping, ARP/ND, iperf3, and
the per-stage counters that show where packets went.

All tests share one lab (module scope); none of them changes a table.
"""
import re
import time
from pathlib import Path

import pytest

from lab.router_lab import (A4, A6, B4, B6, GW_A4, GW_A6, GW_B4, GW_B6, MAC_PA, MAC_PB,
                            flush_neigh, neigh_state)
from lab.traffic import iperf3, rcvbuf_drops

ROUTER_STAGES = ["parse", "neigh", "acl", "route", "rewrite"]
# Drops that must never hit a flow between a and b.
FLOW_DROPS = ["no_route", "neighbor_unresolved", "acl_deny", "tx_full", "bad_tx_port",
              "no_next", "ipv4_bad_checksum", "l2_not_for_us"]


def ping_ok(lab, src, dst, count=3):
    res = lab.ping(src, dst, count=count)
    assert res.returncode == 0 and f"{count} received" in res.stdout, res.stdout + res.stderr
    return res.stdout


def test_pipeline_has_router_stages_in_order(router_lab):
    w = router_lab.dp.ctl("stages")["workers"][0]
    assert w["pipeline"] == "router"
    assert [s["name"] for s in w["stages"]] == ["rx"] + ROUTER_STAGES + ["tx"]


def test_router_ports_receive_frames_starting_on_a_cache_line(router_lab):
    # Ports only the router polls get mbufs whose frames start on a line
    # (a 64-byte frame is one line; the ping tests below cross them).
    ports = router_lab.dp.ctl("ports")["ports"]
    assert [p["frame_line_offset"] for p in ports] == [0] * len(ports), ports


@pytest.mark.parametrize("src,dst", [("a", B4), ("b", A4)], ids=["a_to_b", "b_to_a"])
def test_ping_ipv4_crosses_router_with_ttl_decremented(router_lab, src, dst):
    out = ping_ok(router_lab, src, dst)
    # Linux answers with TTL 64; one router hop on the way back: 63.
    assert re.search(r"ttl=63\b", out), out


@pytest.mark.parametrize("src,dst", [("a", B6), ("b", A6)], ids=["a_to_b", "b_to_a"])
def test_ping_ipv6_crosses_router_with_hop_limit_decremented(router_lab, src, dst):
    out = ping_ok(router_lab, src, dst)
    assert re.search(r"ttl=63\b", out), out


@pytest.mark.parametrize("dst", [GW_A4, GW_B4, GW_A6, GW_B6],
                         ids=["near_v4", "far_v4", "near_v6", "far_v6"])
def test_router_answers_ping_to_its_own_addresses(router_lab, dst):
    ping_ok(router_lab, "a", dst)


def test_gateway_resolved_by_arp(router_lab):
    lab = router_lab
    flush_neigh(lab.a)
    assert "lladdr" not in neigh_state(lab.a, GW_A4)
    before = lab.dp.stages()["neigh"]["pkts_tx"]
    ping_ok(lab, "a", B4, count=1)
    state = neigh_state(lab.a, GW_A4)
    assert f"lladdr {MAC_PA}" in state, state
    # The ARP reply was built by the neigh stage and sent back on pa.
    assert lab.dp.stages()["neigh"]["pkts_tx"] > before


def test_gateway_resolved_by_neighbour_discovery(router_lab):
    lab = router_lab
    flush_neigh(lab.b)
    assert "lladdr" not in neigh_state(lab.b, GW_B6)
    before = lab.dp.stages()["neigh"]["pkts_tx"]
    ping_ok(lab, "b", A6, count=1)
    state = neigh_state(lab.b, GW_B6)
    assert f"lladdr {MAC_PB}" in state and "router" in state, state
    assert lab.dp.stages()["neigh"]["pkts_tx"] > before


def test_ttl_one_is_dropped_and_counted(router_lab):
    lab = router_lab
    before = lab.dp.drops()["ipv4_ttl_expired"]
    res = lab.a.run(["ping", "-n", "-c", "2", "-i", "0.2", "-W", "1", "-t", "1", B4], check=False)
    assert res.returncode != 0
    assert lab.dp.drops()["ipv4_ttl_expired"] >= before + 2


def test_destination_without_route_is_dropped_as_no_route(router_lab):
    lab = router_lab
    before = lab.dp.drops()["no_route"]
    res = lab.ping("a", "198.18.77.1", count=2)
    assert res.returncode != 0
    assert lab.dp.drops()["no_route"] >= before + 2


IPERF_CASES = [
    ("tcp_ipv4", B4, False),
    ("tcp_ipv6", B6, False),
    ("udp_ipv4", B4, True),
    ("udp_ipv6", B6, True),
]


@pytest.mark.parametrize("dst,udp", [c[1:] for c in IPERF_CASES], ids=[c[0] for c in IPERF_CASES])
def test_iperf3_crosses_router_and_stages_count_it(router_lab, dst, udp):
    lab = router_lab
    st0, dr0, rb0 = lab.dp.stages(), lab.dp.drops(), rcvbuf_drops(lab.b)
    r = iperf3(lab.a, dst, udp=udp, bitrate="30M" if udp else None, seconds=3)
    st1, dr1, rb1 = lab.dp.stages(), lab.dp.drops(), rcvbuf_drops(lab.b)
    assert r.received_bytes > 0, r
    if udp:
        assert r.packets > 1000, r
        # A modest rate through an idle router: loss, if any, is tiny once
        # datagrams host b's own kernel dropped (its receiver fell behind
        # on a loaded machine: RcvbufErrors) are set aside.
        assert r.lost_packets - (rb1 - rb0) <= r.packets // 100, (r, rb1 - rb0)
        forwarded = r.packets
    else:
        forwarded = r.received_bytes // 1500   # at least this many full segments
    for stage in ("parse", "acl", "route", "rewrite"):
        grew = st1[stage]["pkts_in"] - st0[stage]["pkts_in"]
        assert grew >= forwarded, (stage, grew, forwarded, r)
    tx = st1["rewrite"]["pkts_tx"] - st0["rewrite"]["pkts_tx"]
    assert tx >= forwarded, (tx, r)
    for reason in FLOW_DROPS:
        assert dr1[reason] == dr0[reason], (reason, dr0[reason], dr1[reason])


def test_cli_top_shows_router_stages_with_cycles(router_lab):
    # Traffic of its own (run alone, nothing came before): 32 bursts at
    # least, two of them timed stage by stage (one in 16).
    ping_ok(router_lab, "a", B4, count=16)
    out = router_lab.dp.top()
    lines = out.splitlines()
    assert lines[0].startswith("worker w0 (router, lcore 1)"), out
    names = [l.split()[0] for l in lines[2:] if l.strip()]
    assert names == ["rx"] + ROUTER_STAGES + ["tx"], out
    route = next(l for l in lines if l.split()[0] == "route")
    assert float(route.split()[5]) > 0, route   # cycles/pkt measured


def test_stage_cycles_add_up_to_the_busy_cycles(router_lab):
    # Most bursts read the clock once and split their time over rx, the
    # stages and tx by the shares of the bursts timed per stage (one in 16):
    # the parts still add up to the worker's busy cycles, to the cycle.
    # The counters are read while the worker runs (a host's own ND or RS
    # may arrive during the read): a snapshot counts once two reads 50 ms
    # apart agree on the busy cycles and every part.
    def cycles(w):
        return w["busy_cycles"], [s["cycles"] for s in w["stages"]]

    def quiet_stages():
        last = None
        for _ in range(100):
            w = router_lab.dp.ctl("stages")["workers"][0]
            if last is not None and cycles(w) == cycles(last):
                return w
            last = w
            time.sleep(0.05)
        raise AssertionError("the worker never stopped forwarding")

    before = quiet_stages()
    ping_ok(router_lab, "a", B4, count=40)    # 80 bursts at least: five timed
    w = quiet_stages()
    busy = w["busy_cycles"] - before["busy_cycles"]
    parts = {s["name"]: s["cycles"] - t["cycles"] for s, t in zip(w["stages"], before["stages"])}
    assert busy > 0 and sum(parts.values()) == busy, (busy, parts)
    for name in ["rx", "parse", "route", "rewrite", "tx"]:
        assert parts[name] > 0, parts


def test_route_list_has_connected_local_and_neighbour_routes(router_lab):
    routes = {(r["prefix"], r["kind"]) for r in router_lab.dp.ctl("route-list")["routes"]}
    for want in [("198.18.0.0/24", "connected"), ("198.18.1.0/24", "connected"),
                 ("2001:db8:0:1::/64", "connected"), ("2001:db8:0:2::/64", "connected"),
                 (f"{GW_A4}/32", "local"), (f"{GW_B6}/128", "local"),
                 (f"{A4}/32", "neighbor"), (f"{B6}/128", "neighbor")]:
        assert want in routes, (want, sorted(routes))


def test_neigh_list_has_static_neighbours_on_their_ports(router_lab):
    got = {(n["ip"], n["mac"], n["port"]) for n in router_lab.dp.ctl("neigh-list")["neighbors"]}
    assert got >= {(A4, "02:00:00:00:00:0A", "pa"), (B4, "02:00:00:00:00:0B", "pb")} or \
        got >= {(A4, "02:00:00:00:00:0a", "pa"), (B4, "02:00:00:00:00:0b", "pb")}, got


def test_lab_readme_example_runs(router_pipeline):
    """lab/README.md's example is real code: run it."""
    text = (Path(__file__).resolve().parent.parent / "lab" / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "lab/README.md", "exec"), {})
