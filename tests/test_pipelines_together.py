"""A router worker and a vBNG uplink/downlink pair in one edgeplane-dp
process, traffic through both at once.

    s1 (QinQ 100.200) -- sw -- acc [bng-uplink / bng-downlink] core -- core host
    ha 198.18.20.2 ------------ ra [router]                     rb -- hb 198.18.21.2

Each pipeline has its own module instances (FIB "router" and "bng", ACL
"router" and "bng-uplink"), each FIB routes between its own ports only, and
the control commands name the instance they change.
"""
import pytest

from lab.bng_lab import CORE4, CORE6, BngLab, Subscriber, bng_available, sub_counters
from lab.traffic import iperf3, Iperf3Server

HA4, HB4 = "198.18.20.2", "198.18.21.2"
HA6, HB6 = "2001:db8:20::2", "2001:db8:21::2"
RA4, RB4 = "198.18.20.1", "198.18.21.1"
RA6, RB6 = "2001:db8:20::1", "2001:db8:21::1"
MAC_RA, MAC_RB = "02:00:00:00:20:01", "02:00:00:00:21:01"
MAC_HA, MAC_HB = "02:00:00:00:20:02", "02:00:00:00:21:02"


class MixedLab(BngLab):
    """The vBNG lab plus two router ports and their hosts in the same DUT."""

    def build(self):
        super().build()
        t = self.topo
        self.ha, self.hb = t.host("ha"), t.host("hb")
        t.link(self.ha, "eth0", self.dut, "ra", mac_a=MAC_HA, mac_b=MAC_RA,
               ipv4_a=f"{HA4}/24", ipv6_a=f"{HA6}/64")
        t.link(self.hb, "eth0", self.dut, "rb", mac_a=MAC_HB, mac_b=MAC_RB,
               ipv4_a=f"{HB4}/24", ipv6_a=f"{HB6}/64")
        for h, ifn, gw4, gw6 in ((self.ha, "eth0", RA4, RA6), (self.hb, "eth0", RB4, RB6)):
            h.offload_off(ifn)
            h.run(["ip", "route", "add", "default", "via", gw4])
            h.run(["ip", "-6", "route", "add", "default", "via", gw6])
        self.dut.offload_off("ra")
        self.dut.offload_off("rb")
        return self

    def sections(self):
        s = super().sections()
        s["port ra"] = {"device": "net_af_packet2,iface=ra", "mac": MAC_RA,
                        "ipv4": f"{RA4}/24", "ipv6": f"{RA6}/64"}
        s["port rb"] = {"device": "net_af_packet3,iface=rb", "mac": MAC_RB,
                        "ipv4": f"{RB4}/24", "ipv6": f"{RB6}/64"}
        s["worker rt"] = {"pipeline": "router", "rx": "ra, rb"}
        s["router"] = {"max_routes4": 1024, "max_routes6": 1024, "lpm4_tbl8s": 64,
                       "lpm6_tbl8s": 256}
        return s


@pytest.fixture(scope="module")
def lab(request, router_pipeline, dp_binary):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    lab = MixedLab([Subscriber("s1", id=1, qinq=(100, 200))], tag="mx",
                   bng_extra={"max_subscribers": 1024})
    request.addfinalizer(lab.close)
    lab.__enter__()
    lab.core_server = Iperf3Server(lab.core, port=5301)
    lab.hb_server = Iperf3Server(lab.hb, port=5302)
    return lab


def test_each_worker_runs_its_own_pipeline(lab):
    kinds = {w["name"]: w["pipeline"] for w in lab.dp.ctl("stages")["workers"]}
    assert kinds == {"up": "bng-uplink", "down": "bng-downlink", "rt": "router"}, kinds
    assert {t["table"] for t in lab.dp.ctl("fib-tables")["tables"]} == {"bng", "router"}
    assert {t["table"] for t in lab.dp.ctl("acl-tables")["tables"]} == {"bng-uplink", "router"}


def test_the_eight_frame_parses_loads_are_chosen_once_for_every_worker(lab):
    # The router's and the uplink's x8 parses read their fields as lines or
    # as gathers, whichever this CPU ran faster when the first worker asked
    # (dataplane/proto/ep_parse_x8.c); parse-x8 names it and its figures.
    px = lab.dp.ctl("parse-x8")
    assert isinstance(px["usable"], bool), px
    if px["usable"]:
        assert px["loads"] in ("lines", "gathers"), px
        if px["chosen_by"] == "timed":
            fig = px["tsc_cycles_a_packet"]
            assert set(fig) == {"untagged", "qinq_pppoe"}, fig
            lines = fig["untagged"]["lines"] + fig["qinq_pppoe"]["lines"]
            gathers = fig["untagged"]["gathers"] + fig["qinq_pppoe"]["gathers"]
            assert (px["loads"] == "lines") == (lines < gathers), px
    assert lab.dp.ctl("parse-x8") == px


def test_frames_on_a_cache_line_except_where_the_downlink_pushes_headers(lab):
    # Frames start on a line on the ports whose receiving pipelines never
    # push a header in front of them (the router's; the vBNG uplink's
    # access port, whose encap moves the start forward); the port the
    # vBNG downlink receives on keeps half a line of room in front, where
    # it pushes its PPPoE/VLAN encapsulation.
    offs = {p["name"]: p["frame_line_offset"] for p in lab.dp.ctl("ports")["ports"]}
    assert offs == {"ra": 0, "rb": 0, "access": 0, "core": 32}, offs


@pytest.mark.parametrize("family", [4, 6])
def test_traffic_crosses_both_pipelines_at_once(lab, family):
    s1 = lab.sub("s1")
    up0, down0 = sub_counters(lab.dp, 1)
    stages0 = {w["name"]: {s["name"]: s for s in w["stages"]}
               for w in lab.dp.ctl("stages")["workers"]}
    bng = s1.host.popen(["iperf3", "-c", CORE4 if family == 4 else CORE6, "-p", "5301",
                         "-t", "3", "-R", "--json"])
    rt = iperf3(lab.ha, HB4 if family == 4 else HB6, seconds=3, port=5302)
    out, _ = bng.communicate(timeout=30)
    assert bng.returncode == 0, out[-500:]
    assert rt.received_bytes > 0
    up1, down1 = sub_counters(lab.dp, 1)
    assert up1 > up0 and down1 > down0
    stages1 = {w["name"]: {s["name"]: s for s in w["stages"]}
               for w in lab.dp.ctl("stages")["workers"]}
    assert stages1["rt"]["rewrite"]["pkts_tx"] > stages0["rt"]["rewrite"]["pkts_tx"]
    assert stages1["down"]["hqos"]["pkts_consumed"] > stages0["down"]["hqos"]["pkts_consumed"]
    assert stages1["up"]["encap"]["pkts_tx"] > stages0["up"]["encap"]["pkts_tx"]


def test_commands_name_their_instance(lab):
    with pytest.raises(Exception, match="several"):
        lab.dp.ctl("route-list")
    with pytest.raises(Exception, match="several"):
        lab.dp.ctl("acl-list")
    bng_routes = {r["prefix"] for r in lab.dp.ctl("route-list", table="bng")["routes"]}
    rt_routes = {r["prefix"] for r in lab.dp.ctl("route-list", table="router")["routes"]}
    # Each FIB has its own ports' subnets, not the other's.
    assert "198.18.20.0/24" in rt_routes and "198.18.20.0/24" not in bng_routes
    assert "198.18.1.0/24" in bng_routes and "198.18.1.0/24" not in rt_routes
    lab.dp.ctl("acl-add", table="router", rule=f"deny proto icmp dst {HB4}/32")
    try:
        assert lab.ha.run(["ping", "-c", "1", "-W", "1", HB4], check=False).returncode != 0
        # The vBNG's ACL is another instance: the subscriber still pings.
        assert lab.sub("s1").host.run(["ping", "-c", "1", "-W", "2", CORE4],
                                       check=False).returncode == 0
    finally:
        lab.dp.ctl("acl-del", table="router", index=0)
    assert lab.ha.run(["ping", "-c", "1", "-W", "2", HB4], check=False).returncode == 0
