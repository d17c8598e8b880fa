"""The router's tc fast path ([router] fast_path = tc: xdp/fwd/tcfwd.bpf.c
on the wire devices pa and pb, dataplane/router/xdp_fast_tc.c), with real
frames through edgeplane-dp.

The lab builds the punt pairs (pa_k ==veth== pa_p, pb_k ==veth== pb_p in
the DUT; edgeplane-dp's ports poll pa_p and pb_p).  Host a sends frames
with scapy; tshark on host b (or a) writes what arrives.  The program's
counters (`xdp-fast`, the same report as the XDP fast path's) and the
ports' rx counters (`stats`: what reached the worker through the punt
pair) say which path each frame took.  The module's lab is torn down
(namespaces, so the wires' tc filters with them, and the process) by its
finalizer also when a test fails.
"""
import signal
import time

import pytest

from lab.bng_lab import send_frames
from lab.router_lab import A4, B4, GW_A4, MAC_A, MAC_B, MAC_PA, MAC_PB, RouterLab
from tests.test_router_xdp_fast import (assert_fast_forwarded_ipv4,
                                        assert_removed_route_stops_being_fast_forwarded,
                                        assert_ttl_1_time_exceeded, delta, send_and_capture,
                                        snapshot, udp_frames, wait_synced)


def tc_filters(lab, dev):
    """`tc filter show dev DEV ingress` in the DUT (empty: none)."""
    res = lab.dut.run(["tc", "filter", "show", "dev", dev, "ingress"], check=False)
    return res.stdout.strip()


@pytest.fixture(scope="module")
def lab(request, router_pipeline):
    lab = RouterLab(tag="tf", device="af_xdp", fast_path="tc")
    request.addfinalizer(lab.close)
    lab.__enter__()
    wait_synced(lab, 0)
    return lab


def test_tc_fast_path_reports_its_kind_program_and_devices(lab):
    st = lab.dp.ctl("xdp-fast")
    assert st["active"] and st["kind"] == "tc", st
    # Every wire is a veth with its peer in another namespace: the peer switch.
    assert st["tc_prog"] == "tc_router_fwd_peer", st
    assert {(p["port"], p["tc"]["wire"], p["tc"]["punt"]) for p in st["ports"]} == {
        ("pa", "pa", "pa_k"), ("pb", "pb", "pb_k")}
    assert "tc_router_fwd_p" in tc_filters(lab, "pa") and "tc_router_fwd_p" in tc_filters(lab, "pb")
    assert "tc_router_punt_" in tc_filters(lab, "pa_k")


def test_tc_fast_path_forwards_with_ttl_decremented_and_macs_rewritten_past_the_worker(lab):
    assert_fast_forwarded_ipv4(lab)


def test_tc_a_bench_trial_records_the_fast_path_kind_its_bounds_name(lab):
    """bench/bench_rfc2544_router.py's trial record (dut_delta) carries the
    kind of fast path the DUT ran, which its bounds name."""
    from bench.bench_rfc2544_router import dut_delta, dut_snapshot, fast_path_name
    d = dut_delta(lab.dp, dut_snapshot(lab.dp), 1.0)
    assert d["fast_path_kind"] == "tc", d
    assert fast_path_name(d) == "our tc fast path"


def test_tc_ping_to_the_routers_address_is_answered_by_the_pipeline(lab):
    before = snapshot(lab)
    res = lab.ping("a", GW_A4, count=3)
    moved, worker_rx = delta(before, snapshot(lab))
    assert res.returncode == 0 and " 0% packet loss" in res.stdout, res.stdout
    assert moved.get("punt_local", 0) >= 3 and "forwarded" not in moved, moved
    assert worker_rx >= 3


def test_tc_an_arp_request_is_punted_and_answered_through_the_punt_pair(lab):
    from lab.router_lab import flush_neigh, neigh_state
    flush_neigh(lab.a)
    before = snapshot(lab)
    assert lab.ping("a", GW_A4, count=1).returncode == 0
    moved, _ = delta(before, snapshot(lab))
    assert moved.get("punt_l2", 0) >= 1, moved      # the broadcast request
    assert MAC_PA in neigh_state(lab.a, GW_A4)


def test_tc_frames_the_program_does_not_take_are_forwarded_by_the_pipeline(lab):
    """IPv4 with options: the program punts it (punt_ip_header), the
    pipeline forwards it to b through pb's punt pair, TTL and MACs as the
    program would have."""
    from scapy.layers.inet import IP, UDP, IPOption_NOP
    from scapy.layers.l2 import Ether
    frames = [bytes(Ether(src=MAC_A, dst=MAC_PA)
                    / IP(src=A4, dst=B4, ttl=64, options=[IPOption_NOP()] * 4)
                    / UDP(sport=42000 + i, dport=9) / (b"x" * 18)) for i in range(10)]
    before = snapshot(lab)
    got = send_and_capture(lab, frames, bpf="udp port 9")
    moved, worker_rx = delta(before, snapshot(lab))
    pkts = [p for p in got if IP in p and p[IP].src == A4 and UDP in p and p[UDP].sport >= 42000]
    assert len(pkts) == 10, [p.summary() for p in got]
    assert {(p[Ether].src, p[Ether].dst, p[IP].ttl) for p in pkts} == {(MAC_PB, MAC_B, 63)}
    assert moved.get("punt_ip_header") == 10 and "forwarded" not in moved, moved
    assert worker_rx >= 10


def test_tc_ttl_1_gets_time_exceeded_from_the_pipeline(lab):
    assert_ttl_1_time_exceeded(lab)


def test_tc_a_route_added_at_run_time_is_fast_forwarded_and_its_removal_punts(lab):
    assert_removed_route_stops_being_fast_forwarded(lab)


def test_tc_fast_path_with_net_af_packet_ports_on_the_punt_pairs(router_pipeline):
    """The punt pair's far end may be polled by net_af_packet too: the
    router's address answers, frames to b are forwarded by the program."""
    with RouterLab(tag="tp", device="af_packet", fast_path="tc") as plab:
        wait_synced(plab, 0)
        assert plab.ping("a", GW_A4, count=2).returncode == 0
        before = snapshot(plab)
        assert plab.ping("a", B4, count=3).returncode == 0
        moved, _ = delta(before, snapshot(plab))
        assert moved.get("forwarded", 0) >= 3, moved


def test_tc_stop_detaches_every_filter_and_hook(router_pipeline):
    with RouterLab(tag="ts", device="af_xdp", fast_path="tc") as slab:
        wait_synced(slab, 0)
        for dev in ("pa", "pb", "pa_k", "pb_k"):
            assert tc_filters(slab, dev), dev
        slab.dp.close()
        slab.dp = None
        for dev in ("pa", "pb", "pa_k", "pb_k"):
            assert tc_filters(slab, dev) == "", dev
            qd = slab.dut.run(["tc", "qdisc", "show", "dev", dev]).stdout
            assert "clsact" not in qd, (dev, qd)


def test_tc_a_restart_after_sigkill_replaces_the_stale_program(router_pipeline):
    """A killed data plane leaves its tc programs on the wires, forwarding
    with the maps it last wrote.  The next start replaces them (the same
    handle) with a fresh copy that punts until its first sync, and
    forwards again on its own maps."""
    with RouterLab(tag="tk", device="af_xdp", fast_path="tc") as klab:
        wait_synced(klab, 0)
        old = {p["port"]: p["prog_id"] for p in klab.dp.ctl("xdp-fast")["ports"]}
        klab.dp.send_signal(signal.SIGKILL)
        klab.dp.proc.wait(timeout=10)
        assert f"id {old['pa']} " in tc_filters(klab, "pa")
        klab.dp.close()
        klab.dp = None
        klab.start_dp()
        wait_synced(klab, 0)
        new = {p["port"]: p["prog_id"] for p in klab.dp.ctl("xdp-fast")["ports"]}
        for port in ("pa", "pb"):
            shown = tc_filters(klab, port)
            assert f"id {new[port]} " in shown and f"id {old[port]} " not in shown, shown
            # The lab made no clsact: the hooks are ours (handle 0xe9f1).
            assert shown.count("handle 0xe9f1") == 1 and "0xe9f0" not in shown, shown
        before = snapshot(klab)
        send_frames(klab.a, udp_frames(10), inter=0.002)
        time.sleep(0.1)
        moved, _ = delta(before, snapshot(klab))
        assert moved.get("forwarded") == 10, moved
        # The hooks the dead process made are the restarted one's (its
        # filters' handle says so): its stop leaves no clsact behind.
        klab.dp.close()
        klab.dp = None
        for dev in ("pa", "pb", "pa_k", "pb_k"):
            assert tc_filters(klab, dev) == "", dev
            assert "clsact" not in qdiscs(klab, dev), dev


def qdiscs(lab, dev):
    return lab.dut.run(["tc", "qdisc", "show", "dev", dev]).stdout


def test_tc_a_clsact_hook_that_was_there_survives_a_crash_and_a_restart(router_pipeline):
    """pa's clsact is an operator's, made before the router started: the
    router's filter on it has handle 0xe9f0 and no stop removes the hook,
    even empty, through a SIGKILL and a restart.  pb's is the router's
    (0xe9f1), but an operator adds an egress filter to it while the
    restarted process runs: its stop removes its own filter and leaves the
    hook with the operator's."""
    with RouterLab(tag="to", device="af_xdp", fast_path="tc", start=False) as olab:
        olab.dut.run(["tc", "qdisc", "add", "dev", "pa", "clsact"])
        olab.start_dp()
        wait_synced(olab, 0)
        assert "handle 0xe9f0" in tc_filters(olab, "pa") and "handle 0xe9f1" in tc_filters(olab, "pb")
        olab.dp.send_signal(signal.SIGKILL)
        olab.dp.proc.wait(timeout=10)
        olab.dp.close()
        olab.dp = None
        olab.start_dp()
        wait_synced(olab, 0)
        assert "handle 0xe9f0" in tc_filters(olab, "pa") and "handle 0xe9f1" in tc_filters(olab, "pb")
        olab.dut.run(["tc", "filter", "add", "dev", "pb", "egress", "pref", "5", "protocol", "all",
                      "u32", "match", "u32", "0", "0"])
        olab.dp.close()
        olab.dp = None
        for dev in ("pa", "pb", "pa_k", "pb_k"):
            assert tc_filters(olab, dev) == "", dev
        assert "clsact" in qdiscs(olab, "pa")
        assert "clsact" in qdiscs(olab, "pb")
        egress = olab.dut.run(["tc", "filter", "show", "dev", "pb", "egress"]).stdout
        assert " u32 " in egress, egress
        assert "clsact" not in qdiscs(olab, "pa_k") and "clsact" not in qdiscs(olab, "pb_k")


@pytest.mark.parametrize("router,ports,error", [
    ({"fast_path": "tc", "xdp_fast_path": "on"}, None,
     "xdp_fast_path applies to fast_path = xdp, not tc"),
    ({"fast_path": "fast"}, None, "fast_path 'fast' is not xdp, tc or off"),
    ({"fast_path": "off", "xdp_fast_path": "on"}, None, "xdp_fast_path = on with fast_path = off"),
    ({"fast_path": "xdp"}, {"fast_path_wire": "pa", "fast_path_punt": "pa_k"},
     "fast_path_wire applies to a router port with [router] fast_path = tc"),
    ({"fast_path": "tc"}, {"fast_path_wire": None},
     "port pa: fast_path = tc needs fast_path_wire"),
    ({"fast_path": "tc"}, {"fast_path_punt": "pa"}, "port pa: fast_path_punt is the wire device"),
    ({"fast_path": "tc"}, {"device": "net_af_xdp0,iface=pa"},
     "port pa: fast_path = tc: the port's device must poll the far end of the punt pair"),
    ({"fast_path": "tc", "tc_fast_path_prog": "/nonexistent/tcfwd.o"}, None,
     "fast_path = tc: cannot read /nonexistent/tcfwd.o"),
])
def test_tc_fast_path_configuration_errors_are_named(router_pipeline, router, ports, error):
    from lab.dp import check_config
    from lab.router_lab import router_sections
    fast = router.pop("fast_path")
    sections = router_sections(device="af_xdp", router=router,
                               fast_path=fast if fast == "tc" else None)
    sections["router"]["fast_path"] = fast
    for k, v in (ports or {}).items():
        if v is None:
            sections["port pa"].pop(k, None)
        else:
            sections["port pa"][k] = v
    res, _ = check_config(sections)
    assert res.returncode != 0 and error in res.stderr + res.stdout, res.stderr + res.stdout


def test_tc_a_missing_punt_device_is_named_at_start_and_the_lab_leaves_nothing(router_pipeline):
    """The router attaches to devices that exist: one the lab did not
    create fails the start with its name, before any program is attached
    (every port's devices are checked first); the failed start and the
    lab's teardown leave no process and no namespace (so none of the wires'
    tc filters)."""
    from pyroute2 import netns
    with RouterLab(tag="tm", device="af_xdp", fast_path="tc", start=False) as mlab:
        mlab.dut.run(["ip", "link", "set", "pb_k", "name", "pb_x"])
        with pytest.raises(Exception) as exc:
            mlab.start_dp()
        assert "port pb: no interface 'pb_k'" in str(exc.value), str(exc.value)
        assert mlab.dp is None or not mlab.dp.running(), "edgeplane-dp still running"
        # Nothing was attached on pa either.
        assert tc_filters(mlab, "pa") == "" and tc_filters(mlab, "pa_k") == ""
        prefix = mlab.topo.prefix
    assert [n for n in netns.listnetns() if n.startswith(prefix)] == []


def test_tc_a_port_that_refuses_the_program_fails_the_start_and_the_ports_before_it_keep_nothing(
        router_pipeline):
    """pa attaches, pb cannot: its ingress priority 1 holds a u32 filter
    (the kernel keeps one classifier kind per priority, so the replace is
    refused).  The start fails naming pb, its device and the program; pa's
    two programs, attached first, are detached, and the clsact hooks this
    process made removed; pb's own filter and hook stay, and no device
    keeps an XDP program.  The kernel's reason reaches the log."""
    with RouterLab(tag="tr", device="af_xdp", fast_path="tc", start=False) as rlab:
        rlab.dut.run(["tc", "qdisc", "add", "dev", "pb", "clsact"])
        rlab.dut.run(["tc", "filter", "add", "dev", "pb", "ingress", "pref", "1", "protocol",
                      "all", "u32", "match", "u32", "0", "0"])
        with pytest.raises(Exception) as exc:
            rlab.start_dp()
        said = str(exc.value)
        # pa was attached before pb failed.
        assert "router: port pa: tc fast path tc_router_fwd_peer on pa" in said, said
        assert ("fast_path = tc: port pb: attaching tc_router_fwd_peer to pb's tc ingress "
                "at priority 1: Invalid argument") in said, said
        # The kernel's reason for the refusal is still printed by libbpf;
        # pb's existing hook is not (an expected EEXIST).
        assert "libbpf: Kernel error message: Specified filter kind does not match" in said, said
        assert "Exclusivity flag" not in said, said
        assert rlab.dp is None or not rlab.dp.running(), "edgeplane-dp still running"
        for dev in ("pa", "pa_k", "pb_k"):
            assert tc_filters(rlab, dev) == "", dev
            assert "clsact" not in rlab.dut.run(["tc", "qdisc", "show", "dev", dev]).stdout, dev
        shown = tc_filters(rlab, "pb")
        assert " u32 " in shown and "bpf" not in shown, shown
        links = rlab.dut.run(["ip", "link"]).stdout
        assert "xdp" not in links, links


def test_tc_a_start_on_existing_clsact_hooks_does_not_print_the_kernels_refusal(router_pipeline):
    """A clsact hook that is there already (an operator's, or one a killed
    process made) is expected: libbpf's hook create fails with EEXIST and
    used to print the kernel's "Exclusivity flag on, cannot modify" (and the
    query for our filter on a found hook, "Cannot find specified filter
    chain"), which a reader of the log took for errors.  Both starts, on the
    operator's hooks and again after a SIGKILL on the hooks the dead process
    left, print neither line; a real refusal is still printed (next test)."""
    with RouterLab(tag="te", device="af_xdp", fast_path="tc", start=False) as elab:
        for dev in ("pa", "pb_k"):
            elab.dut.run(["tc", "qdisc", "add", "dev", dev, "clsact"])
        for start in ("first", "after SIGKILL"):
            elab.start_dp()
            wait_synced(elab, 0)
            assert "handle 0xe9f0" in tc_filters(elab, "pa"), start
            err = elab.dp.stderr_path.read_text()
            assert "Exclusivity flag" not in err and "filter chain" not in err, (start, err)
            elab.dp.send_signal(signal.SIGKILL)
            elab.dp.proc.wait(timeout=10)
            elab.dp.close()
            elab.dp = None
