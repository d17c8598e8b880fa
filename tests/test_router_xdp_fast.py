"""The router's XDP fast path on net_af_xdp ports (xdp/fwd/fwd.bpf.c,
dataplane/router/xdp_fast.c), with real frames through edgeplane-dp.

Host a sends UDP frames with scapy; tshark on host b writes what arrives
and scapy reads it back.  The program's counters (`xdp-fast`) and the
ports' rx counters (`stats`: what the worker received from the AF_XDP
socket) say which path each frame took: a forwarded frame never reaches
the worker, a punted one does, unchanged.  Each test waits for the control
path's sync after a table change by its `syncs` count, not by a sleep.
"""
import time

import pytest

from lab.bng_lab import Capture, send_frames
from lab.router_lab import A4, A6, B4, B6, GW_A4, MAC_A, MAC_B, MAC_PA, MAC_PB, RouterLab

ROUTED = "198.18.100.0/24"


@pytest.fixture(scope="module")
def lab(request, router_pipeline):
    lab = RouterLab(tag="xf", device="af_xdp", peer_napi=True)
    request.addfinalizer(lab.close)
    lab.__enter__()
    fast = lab.dp.ctl("xdp-fast")
    if not fast.get("active"):
        pytest.fail(f"the fast path is off on net_af_xdp ports: {fast}")
    wait_synced(lab, 0)
    return lab


def wait_synced(lab, before, timeout=5.0):
    """Until the control path synced the maps after a change (syncs > before)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = lab.dp.ctl("xdp-fast")
        if st["syncs"] > before and all(p["synced"] for p in st["ports"]):
            return st
        time.sleep(0.02)
    raise AssertionError(f"no sync within {timeout}s: {lab.dp.ctl('xdp-fast')}")


def read_counters(lab):
    fast = next(p for p in lab.dp.ctl("xdp-fast")["ports"] if p["port"] == "pa")
    rx = next(p for p in lab.dp.ctl("stats")["ports"] if p["name"] == "pa")["stats"]["ipackets"]
    return fast["counters"], rx


def snapshot(lab):
    """(pa's fast-path counters, pa's rx packets at the worker), once two
    reads 50 ms apart agree: the program counts a punt when it redirects
    the frame, the worker's rx when it polls it, so a punt of the kernel's
    own traffic (IPv6 neighbour discovery) read between the two would
    land in one snapshot's counters and the next one's rx."""
    last = read_counters(lab)
    for _ in range(40):
        time.sleep(0.05)
        now = read_counters(lab)
        if now == last:
            break
        last = now
    return last


def delta(before, after):
    c0, rx0 = before
    c1, rx1 = after
    return {k: c1[k] - c0[k] for k in c1 if c1[k] != c0[k]}, rx1 - rx0


def udp_frames(n, dst=B4, ttl=64, dport=9):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    return [bytes(Ether(src=MAC_A, dst=MAC_PA) / IP(src=A4, dst=dst, ttl=ttl, id=0x4000 + i)
                  / UDP(sport=40000 + i, dport=dport) / (b"x" * 18)) for i in range(n)]


def send_and_capture(lab, frames, host="b", bpf="udp"):
    """Send frames from a; the packets tshark saw on host's eth0 (scapy)."""
    from scapy.utils import rdpcap
    with Capture(getattr(lab, host), "eth0", bpf) as cap:
        send_frames(lab.a, frames, inter=0.002)
        time.sleep(0.3)
    return list(rdpcap(str(cap.path)))


def test_a_capture_keeps_its_pcap_while_in_use_and_removes_it_with_the_object(lab):
    """lab.bng_lab.Capture without a path: the pcap's folder (mkdtemp, not
    mktemp's guessable name) lasts while the capture is read after its with
    block, and goes with the object (bngcap-* were left in /tmp)."""
    import gc
    with Capture(lab.b, "eth0", "udp port 9") as cap:
        pass
    folder = cap.path.parent
    assert folder.name.startswith("bngcap-") and cap.path.exists(), cap.path
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert cap.fields("frame.number") == []
    del cap
    gc.collect()
    assert not folder.exists(), folder


def test_fast_path_forwards_with_ttl_decremented_and_a_valid_checksum_past_the_worker(lab):
    assert_fast_forwarded_ipv4(lab)


def assert_fast_forwarded_ipv4(lab):
    """40 UDP frames from a arrive at b with TTL 63, a valid checksum and
    the next hop's MACs, all counted `forwarded`, none through the worker
    (also the tc fast path's check, tests/test_router_tc_fast.py)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    before = snapshot(lab)
    got = send_and_capture(lab, udp_frames(40, ttl=64), bpf="udp port 9")
    moved, worker_rx = delta(before, snapshot(lab))
    pkts = [p for p in got if IP in p and p[IP].src == A4 and p[UDP].dport == 9]
    assert len(pkts) == 40, [p.summary() for p in got]
    for p in pkts:
        assert p[Ether].src == MAC_PB and p[Ether].dst == MAC_B, p.summary()
        assert p[IP].ttl == 63
        recomputed = IP(bytes(p[IP]))
        del recomputed.chksum
        assert IP(bytes(recomputed)).chksum == p[IP].chksum, p.show(dump=True)
    assert moved.get("forwarded") == 40, moved
    # The worker received only what the program punted (host a's own ARP,
    # ND or router solicitations, if any), none of the 40.
    assert worker_rx == sum(v for k, v in moved.items() if k.startswith("punt_")), (moved,
                                                                                    worker_rx)


def test_fast_path_forwards_ipv6_with_the_hop_limit_decremented(lab):
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    frames = [bytes(Ether(src=MAC_A, dst=MAC_PA) / IPv6(src=A6, dst=B6, hlim=64)
                    / UDP(sport=41000 + i, dport=9) / (b"x" * 18)) for i in range(20)]
    before = snapshot(lab)
    got = send_and_capture(lab, frames, bpf="ip6 and udp port 9")
    moved, worker_rx = delta(before, snapshot(lab))
    pkts = [p for p in got if IPv6 in p and p[IPv6].src == A6 and UDP in p]
    assert len(pkts) == 20, [p.summary() for p in got]
    assert {(p[Ether].src, p[Ether].dst, p[IPv6].hlim) for p in pkts} == {(MAC_PB, MAC_B, 63)}
    assert moved.get("forwarded") == 20, moved
    assert worker_rx == sum(v for k, v in moved.items() if k.startswith("punt_")), (moved,
                                                                                    worker_rx)


def test_a_bench_trial_records_the_fast_path_kind_its_bounds_name(lab):
    """bench/bench_rfc2544_router.py's trial record (dut_delta) carries the
    kind of fast path the DUT ran, which its bounds name."""
    from bench.bench_rfc2544_router import dut_delta, dut_snapshot, fast_path_name
    d = dut_delta(lab.dp, dut_snapshot(lab.dp), 1.0)
    assert d["fast_path_kind"] == "xdp", d
    assert fast_path_name(d) == "our XDP fast path"


def test_with_an_acl_rule_every_frame_takes_the_full_pipeline_and_is_filtered(lab):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    syncs = lab.dp.ctl("xdp-fast")["syncs"]
    lab.dp.ctl("acl-add", rule=f"deny proto udp dst {B4}/32 dport 5001")
    try:
        wait_synced(lab, syncs)
        before = snapshot(lab)
        got = send_and_capture(lab, udp_frames(20, dport=5001) + udp_frames(20, dport=9))
        moved, worker_rx = delta(before, snapshot(lab))
        ours = [p for p in got if IP in p and p[IP].src == A4]
        ports = [p[UDP].dport for p in ours]
        assert ports.count(9) == 20 and ports.count(5001) == 0, ports
        # The full pipeline's rewrite, from the same next hop: the port's
        # MAC as the source (read when the port is probed, before the
        # configured neighbours are published).
        assert {(p[Ether].src, p[Ether].dst, p[IP].ttl) for p in ours} == {(MAC_PB, MAC_B, 63)}
        # With ACL rules the program punts before it reads the frame: the
        # 40 and whatever host a sent on its own meanwhile (ARP, ND, MLD:
        # one more frame in a CI run) are all punt_acl.
        assert moved.get("punt_acl", 0) >= 40 and "forwarded" not in moved, moved
        assert worker_rx >= 40
    finally:
        syncs = lab.dp.ctl("xdp-fast")["syncs"]
        lab.dp.ctl("acl-del", index=0)
        wait_synced(lab, syncs)
    before = snapshot(lab)
    send_frames(lab.a, udp_frames(10), inter=0.002)
    moved, _ = delta(before, snapshot(lab))
    assert moved.get("forwarded") == 10, moved


def test_a_route_change_is_synced_by_the_fib_change_log_with_one_write_per_port(lab):
    """After the first sync (a whole compare), a change is written from the
    FIB's change log: the changed route alone, no walk of the table."""
    try:
        for cmd, args in (("route-add", {"prefix": ROUTED, "via": B4}),
                          ("route-del", {"prefix": ROUTED})):
            syncs = lab.dp.ctl("xdp-fast")["syncs"]
            lab.dp.ctl(cmd, **args)
            st = wait_synced(lab, syncs)
            assert [(p["last_sync_by"], p["last_sync_route_writes"]) for p in st["ports"]] == \
                [("log", 1), ("log", 1)], (cmd, st)
    finally:
        if any(r.get("prefix") == ROUTED for r in lab.dp.ctl("route-list")["routes"]):
            lab.dp.ctl("route-del", prefix=ROUTED)


def test_ttl_1_gets_time_exceeded_from_the_full_pipeline(lab):
    assert_ttl_1_time_exceeded(lab)


def assert_ttl_1_time_exceeded(lab):
    """TTL 1 is punted (punt_ttl) and the full pipeline answers time
    exceeded (also the tc fast path's check)."""
    from scapy.layers.inet import ICMP, IP
    before = snapshot(lab)
    got = send_and_capture(lab, udp_frames(3, ttl=1), host="a", bpf="icmp")
    moved, worker_rx = delta(before, snapshot(lab))
    exceeded = [p for p in got if ICMP in p and p[IP].src == GW_A4 and p[ICMP].type == 11]
    assert len(exceeded) == 3, [p.summary() for p in got]
    assert moved.get("punt_ttl") == 3 and "forwarded" not in moved, moved
    assert worker_rx >= 3


def test_the_worker_behind_the_fast_path_blocks_on_its_sockets_and_a_punted_frame_wakes_it(lab):
    """Idle behind the program, the worker waits in ppoll() on its AF_XDP
    sockets for auto's long bound (100 ms: the timer only wakes it for
    nothing, on the CPUs the senders need); what the program punts ends the
    wait, so the punted frames are answered (here TTL 1's time exceeded)."""
    from scapy.layers.inet import ICMP, IP
    poll = lab.dp.ctl("power")["workers"][0]["poll"]
    assert poll["poll_policy"] == "sleep-rx", poll
    assert poll["max_sleep_us"] == 100_000, poll
    assert poll["mechanism"] == "ppoll on the rx queues' sockets", poll
    sleeps = lab.dp.workers()[0]["sleeps"]
    got = send_and_capture(lab, udp_frames(3, ttl=1), host="a", bpf="icmp")
    assert len([p for p in got if ICMP in p and p[IP].src == GW_A4 and p[ICMP].type == 11]) == 3
    assert lab.dp.workers()[0]["sleeps"] > sleeps


def test_a_removed_route_stops_being_fast_forwarded(lab):
    assert_removed_route_stops_being_fast_forwarded(lab)


def assert_removed_route_stops_being_fast_forwarded(lab):
    """A route added at run time is fast-forwarded once synced; once
    removed, its frames are punted (punt_no_route)."""
    from scapy.layers.inet import IP
    dst = "198.18.100.5"
    syncs = lab.dp.ctl("xdp-fast")["syncs"]
    lab.dp.ctl("route-add", prefix=ROUTED, via=B4)
    wait_synced(lab, syncs)
    before = snapshot(lab)
    got = send_and_capture(lab, udp_frames(10, dst=dst))
    moved, _ = delta(before, snapshot(lab))
    assert len([p for p in got if IP in p and p[IP].dst == dst]) == 10
    assert moved.get("forwarded") == 10, moved

    syncs = lab.dp.ctl("xdp-fast")["syncs"]
    lab.dp.ctl("route-del", prefix=ROUTED)
    wait_synced(lab, syncs)
    before = snapshot(lab)
    got = send_and_capture(lab, udp_frames(10, dst=dst))
    moved, _ = delta(before, snapshot(lab))
    assert [p for p in got if IP in p and p[IP].dst == dst] == []
    assert moved.get("punt_no_route") == 10 and "forwarded" not in moved, moved


def test_a_neighbour_learnt_by_arp_reaches_the_fast_path(router_pipeline):
    """No static neighbour: the first frames to b find the next hop
    unresolved and go to the full pipeline, whose worker asks by ARP; once
    b's answer is installed, the sync writes it and the same frames are
    forwarded by the program."""
    with RouterLab(tag="xn", device="af_xdp", peer_napi=True, neighbors=[]) as nlab:
        wait_synced(nlab, 0)
        before = snapshot(nlab)
        # One frame: the worker's ARP request and b's answer can be synced
        # within a few milliseconds, so a second frame may already be forwarded.
        send_frames(nlab.a, udp_frames(1), inter=0.0)
        moved, _ = delta(before, snapshot(nlab))
        assert moved.get("punt_nexthop") == 1 and "forwarded" not in moved, moved
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            fast = nlab.dp.ctl("xdp-fast")
            if MAC_B in str(nlab.dp.ctl("neigh-list")) and all(
                    p["synced"] for p in fast["ports"]):
                break
            time.sleep(0.05)
        # The neighbour's sync runs on the control thread's next tick (every
        # 20 ms at the latest, later on a loaded machine): probe with single
        # frames until the program forwards one, then send the batch.
        while time.monotonic() < deadline:
            before = snapshot(nlab)
            send_frames(nlab.a, udp_frames(1), inter=0.0)
            if delta(before, snapshot(nlab))[0].get("forwarded"):
                break
            time.sleep(0.1)
        before = snapshot(nlab)
        send_frames(nlab.a, udp_frames(10), inter=0.002)
        moved, _ = delta(before, snapshot(nlab))
        assert moved.get("forwarded") == 10, moved


@pytest.mark.parametrize("device,router,error", [
    ("af_packet", {"xdp_fast_path": "on"}, "xdp_fast_path = on: port pa is not net_af_xdp"),
    ("af_xdp", {"xdp_fast_path": "yes"}, "key 'xdp_fast_path': 'yes' is not auto, on or off"),
    ("af_xdp", {"xdp_fast_path": "on", "xdp_fast_path_prog": "/nonexistent/fwd.o"},
     "xdp_fast_path = on: cannot read /nonexistent/fwd.o"),
])
def test_xdp_fast_path_configuration_errors_are_named(router_pipeline, device, router, error):
    from lab.dp import check_config
    from lab.router_lab import router_sections
    res, _ = check_config(router_sections(device=device, router=router))
    assert res.returncode != 0 and error in res.stderr + res.stdout, res.stderr + res.stdout


def test_xdp_fast_path_auto_stays_off_when_a_router_port_is_not_net_af_xdp(router_pipeline):
    """auto with net_af_packet ports: the full pipeline alone, no error."""
    from lab.dp import check_config
    from lab.router_lab import router_sections
    res, _ = check_config(router_sections(device="af_packet"))
    assert res.returncode == 0, res.stderr
    with RouterLab(tag="xo", device="af_packet") as olab:
        assert olab.dp.ctl("xdp-fast") == {"active": False}


def test_a_restart_after_sigkill_replaces_the_program_left_attached(router_pipeline):
    """A killed data plane leaves its XDP program attached to pa and pb
    (the kernel keeps it with the device); the PMD could not attach its own
    and the port failed to start.  The next start removes ours and
    forwards again."""
    import signal
    with RouterLab(tag="xk", device="af_xdp", peer_napi=True) as klab:
        klab.dp.send_signal(signal.SIGKILL)
        klab.dp.proc.wait(timeout=10)
        assert "xdp_router_fwd" in klab.dut.run(["ip", "link", "show", "pa"]).stdout
        klab.dp.close()
        klab.dp = None
        klab.start_dp()
        wait_synced(klab, 0)
        before = snapshot(klab)
        send_frames(klab.a, udp_frames(10), inter=0.002)
        moved, _ = delta(before, snapshot(klab))
        assert moved.get("forwarded") == 10, moved


def bpftool(*args):
    import json
    import subprocess
    res = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, check=True)
    return json.loads(res.stdout) if res.stdout.strip() else None


def route4_map_id(lab, port="pa"):
    """The id of @port's fwd_route4: its program's, not another router's."""
    prog = next(p for p in lab.dp.ctl("xdp-fast")["ports"] if p["port"] == port)["prog_id"]
    for mid in bpftool("prog", "show", "id", str(prog))["map_ids"]:
        if bpftool("map", "show", "id", str(mid))["name"] == "fwd_route4":
            return mid
    raise AssertionError(f"no fwd_route4 among program {prog}'s maps")


def foreign_keys(n):
    """@n distinct IPv4 LPM keys in 198.19.0.0/16 (/32s, then /31s, ...),
    as bpftool's hex bytes: the prefix length (host order), the address."""
    keys = []
    for plen in range(32, 16, -1):
        for k in range(0, 1 << 16, 1 << (32 - plen)):
            keys.append(f"{plen:02x} 00 00 00 c6 13 {k >> 8:02x} {k & 0xff:02x}")
            if len(keys) == n:
                return keys
    raise AssertionError(f"{n} keys do not fit 198.19.0.0/16")


def bpftool_batch(tmp_path, name, lines):
    """bpftool's commands in one process (131K map updates in about 0.4 s)."""
    import subprocess
    path = tmp_path / name
    path.write_text("".join(f"{line}\n" for line in lines))
    res = subprocess.run(["bpftool", "batch", "file", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:] + res.stdout[-500:]


def port_state(lab, port="pa"):
    return next(p for p in lab.dp.ctl("xdp-fast")["ports"] if p["port"] == port)


def wait_port(lab, cond, what, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = port_state(lab)
        if cond(st):
            return st
        time.sleep(0.02)
    raise AssertionError(f"{what} within {timeout}s: {lab.dp.ctl('xdp-fast')}")


def test_a_full_route_map_punts_and_the_sync_retries_until_it_fits_without_a_table_change(
        router_pipeline, tmp_path):
    """Another writer (an operator's bpftool) fills pa's IPv4 trie to its
    max_entries; the router's next route then cannot be written (ENOSPC).
    The port punts every frame to the full pipeline (which still forwards
    them), counts the failure with its text, and retries on later ticks
    with a growing wait.  Once the foreign entries are gone, a retry, with
    no table change, brings the port back in sync and the fast path
    forwards again; the trie is left with the FIB's routes alone.  The log
    says each change of state once."""
    from scapy.layers.inet import IP
    dst = "198.18.100.5"
    with RouterLab(tag="xr", device="af_xdp", peer_napi=True) as rlab:
        wait_synced(rlab, 0)
        pa = port_state(rlab)
        cap = pa["max_routes"]["ipv4"]
        mid = route4_map_id(rlab)
        held = len(bpftool("map", "dump", "id", str(mid)))
        keys = foreign_keys(cap - held)
        bpftool_batch(tmp_path, "fill", [f"map update id {mid} key hex {k} value hex 00 00 00 00"
                                         for k in keys])

        rlab.dp.ctl("route-add", prefix=ROUTED, via=B4)
        pa = wait_port(rlab, lambda p: not p["synced"] and p["sync_failures"] >= 1,
                       "no failed sync")
        assert "IPv4 route" in pa["last_error"] and "No space left on device" in pa["last_error"], pa
        assert f"holds at most {cap}" in pa["last_error"], pa
        routes = rlab.dp.ctl("route-list")

        # Not in sync: every frame to the full pipeline, which forwards it.
        before = snapshot(rlab)
        got = send_and_capture(rlab, udp_frames(10, dst=dst))
        moved, worker_rx = delta(before, snapshot(rlab))
        assert len([p for p in got if IP in p and p[IP].dst == dst]) == 10
        assert moved.get("punt_disabled", 0) >= 10 and "forwarded" not in moved, moved
        assert worker_rx >= 10

        # Retried with no table change, each failure counted, the wait
        # doubling to at most a second.
        tried = port_state(rlab)["sync_attempts"]
        time.sleep(2.2)
        pa = port_state(rlab)
        assert pa["sync_attempts"] >= tried + 1 and not pa["synced"], pa
        assert pa["sync_failures"] >= 3, pa
        assert 0 <= pa["retry_in_ms"] <= 1000, pa
        assert rlab.dp.ctl("xdp-fast")["sync_retries"] >= 2

        # One slot freed: the next retry writes the route, then removes
        # what the trie holds beyond the FIB (the other foreign entries).
        bpftool("map", "delete", "id", str(mid), "key", "hex", *keys[0].split())
        pa = wait_port(rlab, lambda p: p["synced"], "no recovery", timeout=5.0)
        assert "retry_in_ms" not in pa
        assert len(bpftool("map", "dump", "id", str(mid))) == held + 1
        assert rlab.dp.ctl("route-list") == routes, "the recovery needed no table change"
        before = snapshot(rlab)
        got = send_and_capture(rlab, udp_frames(10, dst=dst))
        moved, _ = delta(before, snapshot(rlab))
        assert len([p for p in got if IP in p and p[IP].dst == dst]) == 10
        assert moved.get("forwarded") == 10, moved

        log = rlab.dp.stdout_path.read_text()
        assert log.count("port pa: XDP fast path off") == 1, log
        assert log.count("port pa: XDP fast path in sync again") == 1, log


def test_a_fib_sized_past_the_fast_paths_tries_is_said_once_at_start(router_pipeline):
    with RouterLab(tag="xw", device="af_xdp", peer_napi=True,
                   router={"max_routes4": "200000"}) as wlab:
        wait_synced(wlab, 0)
        log = wlab.dp.stdout_path.read_text()
        said = ("router: max_routes4 200000 exceeds the XDP fast path's IPv4 trie (131072 "
                "entries): past that many routes every frame goes to the full pipeline")
        assert log.count(said) == 1, log
        assert "max_routes6" not in log, log


def link_monitor(host, dev):
    """`ip -o monitor link` in @host, returned once it has seen a change
    made on @dev after it started (so it misses nothing that follows)."""
    import os
    import select
    mon = host.popen(["ip", "-o", "monitor", "link"])
    # `ip monitor` joins the netlink group some time after it is spawned: a
    # change made before that is never seen.  So the change is made again
    # (txqueuelen 999, 998, ...) every half second until the monitor shows
    # one.  Raw reads: nothing waits in the file object's buffer, so the
    # caller's read() later has all that followed.
    seen, fd = b"", mon.stdout.fileno()
    deadline = time.monotonic() + 10
    qlen = 999
    while time.monotonic() < deadline:
        host.run(["ip", "link", "set", "dev", dev, "txqueuelen", str(qlen)])
        qlen = 1997 - qlen
        until = time.monotonic() + 0.5
        while time.monotonic() < until:
            if select.select([fd], [], [], 0.1)[0]:
                seen += os.read(fd, 65536)
                if f"{dev}@".encode() in seen:
                    return mon
    raise AssertionError(f"ip monitor saw no change on {dev}: {seen!r}")


def test_a_port_that_refuses_the_program_fails_the_start_and_the_ports_before_it_keep_nothing(
        router_pipeline):
    """pa's program is attached (net_af_xdp, at its rx queue's setup), pb's
    cannot be: pb holds another program in generic mode, which the PMD's
    native attach may not replace.  The start fails naming pb; pa's
    program, seen attached by a link monitor, is removed with the port, and
    pb keeps its own."""
    with RouterLab(tag="xr", device="af_xdp", peer_napi=True, start=False) as rlab:
        from lab.dp import ROOT
        noop = str(ROOT / "build" / "xdp" / "noop.o")
        rlab.dut.run(["ip", "link", "set", "dev", "pb", "xdpgeneric", "obj", noop, "sec", "xdp"])
        mon = link_monitor(rlab.dut, "pa")
        with pytest.raises(Exception) as exc:
            rlab.start_dp()
        said = str(exc.value)
        assert ("router: port pb: pb holds another XDP program, xdp_noop, which net_af_xdp "
                "will not replace: the port cannot start") in said, said
        assert "port pb: rx queue 0: Invalid argument" in said, said
        assert rlab.dp is None or not rlab.dp.running(), "edgeplane-dp still running"
        rlab.dut.stop_procs()
        seen = [line for line in mon.stdout.read().splitlines() if "pa@" in line]
        assert any("xdp/id:" in line for line in seen), seen
        assert "xdp" not in rlab.dut.run(["ip", "link", "show", "pa"]).stdout
        assert "xdp_noop" in rlab.dut.run(["ip", "link", "show", "pb"]).stdout
