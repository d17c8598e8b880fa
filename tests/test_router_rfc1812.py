"""What a network engineer checks first on a router, with the kernel's own
tools from the lab hosts: the router is a hop in traceroute and tracepath
(ICMP time exceeded, RFC 792 / RFC 4443 3.3), a destination without a route
gets ICMP unreachable, datagrams larger than a link's MTU are fragmented
(IPv4 without DF, RFC 791) or answered with fragmentation needed / packet
too big (RFC 1191, RFC 8201), which is how path MTU discovery finds the
smaller link; denied packets can be answered as administratively
prohibited (RFC 1812 5.2.7.1); and next hops resolve by ARP and ND without
static neighbours.

Two labs: the standard one (every link 1500), and one whose host a sits on
a 9000-byte link while b's is 1500, with the ACL's ICMP answer on and no
static neighbour at all.
"""
import re

import pytest

from lab.router_lab import A4, A6, B4, B6, GW_A4, GW_A6, RouterLab, flush_neigh


def _lab(request, **kw):
    lab = RouterLab(**kw)
    request.addfinalizer(lab.close)
    return lab.__enter__()


@pytest.fixture(scope="module")
def std_lab(request, router_pipeline):
    return _lab(request, tag="r1")


@pytest.fixture(scope="module")
def mtu_lab(request, router_pipeline):
    """a on a 9000-byte link, b on 1500; acl_icmp on; nothing static.  A
    first exchange each way lets the router learn the hosts (its first
    packets to each are dropped while it asks)."""
    lab = _lab(request, tag="r2", mtus=(9000, 1500), neighbors=[],
               router={"acl_icmp": "on"})
    for dst in (B4, B6):
        lab.a.run(["ping", "-n", "-c", "3", "-i", "0.2", "-W", "1", dst], check=False,
                  timeout=30)
    return lab


def icmp_sent(lab, kind):
    return lab.dp.ctl("fib-stats")["icmp_errors"][kind]


def hops(out):
    """{hop number: address} of traceroute/tracepath output."""
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+):?\??\s+([0-9a-f.:]+)", line)
        if m and (":" in m.group(2) or "." in m.group(2)):
            found.setdefault(int(m.group(1)), m.group(2))
    return found


@pytest.mark.parametrize("family,dst,gw", [(4, B4, GW_A4), (6, B6, GW_A6)],
                         ids=["ipv4", "ipv6"])
def test_traceroute_shows_the_router_as_the_first_hop(std_lab, family, dst, gw):
    lab = std_lab
    before = icmp_sent(lab, "time_exceeded")
    res = lab.a.run(["traceroute", f"-{family}", "-n", "-q", "1", "-w", "2", "-m", "4", dst],
                    check=False, timeout=60)
    got = hops(res.stdout)
    assert got.get(1) == gw and got.get(2) == dst, res.stdout + res.stderr
    assert icmp_sent(lab, "time_exceeded") > before


@pytest.mark.parametrize("family,dst,gw", [(4, B4, GW_A4), (6, B6, GW_A6)],
                         ids=["ipv4", "ipv6"])
def test_tracepath_shows_the_router_and_the_path_mtu(std_lab, family, dst, gw):
    res = std_lab.a.run(["tracepath", f"-{family}", "-n", "-m", "4", dst], check=False,
                        timeout=60)
    got = hops(res.stdout)
    assert got.get(1) == gw, res.stdout + res.stderr
    assert re.search(r"Resume: pmtu 1500 hops 2 back 2", res.stdout), res.stdout


@pytest.mark.parametrize("family,dst,text",
                         [(4, "198.18.77.1", "Destination Net Unreachable"),
                          (6, "2001:db8:77::1", "Destination unreachable: No route")],
                         ids=["ipv4", "ipv6"])
def test_destination_without_route_is_answered_unreachable(std_lab, family, dst, text):
    lab = std_lab
    drops = lab.dp.drops()["no_route"]
    res = lab.a.run(["ping", f"-{family}", "-n", "-c", "1", "-W", "2", dst], check=False)
    assert res.returncode != 0
    assert text in res.stdout, res.stdout
    assert lab.dp.drops()["no_route"] > drops


@pytest.mark.parametrize("family,dst", [(4, B4), (6, B6)], ids=["ipv4", "ipv6"])
def test_ping_of_3000_bytes_crosses_the_router(std_lab, family, dst):
    """Fragments of a 3000-byte echo on 1500-byte links are forwarded as
    they come, each like any packet (RFC 1812 5.2.6: reassembly is the
    destination's business)."""
    lab = std_lab
    res = lab.a.run(["ping", f"-{family}", "-n", "-c", "2", "-i", "0.3", "-W", "2", "-s",
                     "3000", "-M", "dont", dst], check=False, timeout=30)
    assert res.returncode == 0 and " 0% packet loss" in res.stdout, res.stdout + res.stderr
    assert lab.dp.drops()["ipv4_bad_total_length"] == 0


@pytest.mark.parametrize("family,dst", [(4, B4), (6, B6)], ids=["ipv4", "ipv6"])
def test_larger_than_the_next_link_with_df_gets_the_mtu_back(mtu_lab, family, dst):
    """a's link takes 9000 bytes, b's 1500: a 3000-byte echo with DF (and
    any IPv6 packet) is answered with fragmentation needed / packet too
    big, mtu 1500, and a's kernel learns the path MTU."""
    lab = mtu_lab
    kind = "frag_needed" if family == 4 else "packet_too_big"
    before = icmp_sent(lab, kind)
    res = lab.a.run(["ping", f"-{family}", "-n", "-c", "1", "-W", "2", "-s", "3000", "-M",
                     "do", dst], check=False, timeout=30)
    text = "Frag needed and DF set (mtu = 1500)" if family == 4 else "Packet too big: mtu=1500"
    assert text in res.stdout, res.stdout + res.stderr
    assert icmp_sent(lab, kind) > before
    route = lab.a.run(["ip", f"-{family}", "route", "get", dst], check=False).stdout
    assert "mtu 1500" in route, route


def test_ipv4_without_df_is_fragmented_by_the_router(mtu_lab):
    """The 3000-byte datagram arrives whole over the 9000-byte link; the
    router splits it for b's 1500-byte link; b answers."""
    lab = mtu_lab
    # A path MTU a learned in an earlier case would make a fragment itself.
    lab.a.run(["ip", "route", "flush", "cache"], check=False)
    before = lab.dp.ctl("fib-stats")["fragmented"]["packets"]
    res = lab.a.run(["ping", "-4", "-n", "-c", "2", "-i", "0.3", "-W", "2", "-s", "3000",
                     "-M", "dont", B4], check=False, timeout=30)
    assert res.returncode == 0 and " 0% packet loss" in res.stdout, res.stdout
    assert lab.dp.ctl("fib-stats")["fragmented"]["packets"] >= before + 2


def test_tracepath_discovers_the_smaller_link(mtu_lab):
    lab = mtu_lab
    lab.a.run(["ip", "route", "flush", "cache"], check=False)
    res = lab.a.run(["tracepath", "-4", "-n", "-m", "4", B4], check=False, timeout=60)
    assert re.search(r"pmtu 1500", res.stdout), res.stdout


@pytest.mark.parametrize("family,dst", [(4, B4), (6, B6)], ids=["ipv4", "ipv6"])
def test_neighbours_resolve_without_static_entries(mtu_lab, family, dst):
    """No neighbor line in the config: the router asks (ARP / NS) for the
    hosts on demand and learns them."""
    lab = mtu_lab
    flush_neigh(lab.a)
    lab.a.run(["ping", f"-{family}", "-n", "-c", "3", "-i", "0.3", "-W", "2", dst],
              check=False, timeout=30)
    res = lab.a.run(["ping", f"-{family}", "-n", "-c", "2", "-i", "0.3", "-W", "2", dst],
                    check=False, timeout=30)
    assert res.returncode == 0, res.stdout
    learnt = {n["ip"]: n["state"] for n in lab.dp.ctl("neigh-list")["neighbors"]}
    host = A4 if family == 4 else A6
    assert learnt.get(dst) == "reachable" and learnt.get(host) == "reachable", learnt
    res = lab.dp.ctl("fib-stats")["resolver"]
    assert res["learnt"] >= 2 and (res["arp_requests"] if family == 4 else res["nd_solicits"])


def test_denied_packet_is_answered_administratively_prohibited(mtu_lab):
    lab = mtu_lab
    lab.dp.ctl("acl-add", rule=f"deny proto icmp dst {B4}/32")
    try:
        res = lab.a.run(["ping", "-4", "-n", "-c", "1", "-W", "2", B4], check=False)
        assert res.returncode != 0
        assert "Packet filtered" in res.stdout, res.stdout
        assert icmp_sent(lab, "admin_prohibited") >= 1
    finally:
        lab.dp.ctl("acl-del", index=0)
