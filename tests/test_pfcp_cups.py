"""CUPS for the vBNG: a PFCP control plane (pfcp-cp-sim, on go-pfcp, and
omec-project's pfcpsim for the standard procedures) drives the user-plane
function (edgeplane upf), which programs the real edgeplane-dp; subscriber
traffic crosses the BNG with each session's encapsulation, policing and
shaping; rates change under traffic; the final usage is what was sent;
kill -9 of either process changes nothing the control plane can see; and
tshark decodes the whole PFCP exchange without a malformed field.

Lab (lab/cups_lab.py): subscribers s1 (QinQ 100.200) and s2 (VLAN 101) are
kernel hosts; p1 (QinQ 100.201, PPPoE session 0x12) sends scapy frames; the
control plane lives in namespace cp (198.18.2.2), the function beside the
data plane in the DUT (198.18.2.1).
"""
import json
import statistics
import subprocess
import sys
import time

import pytest

from lab import host_load
from lab.bng_lab import (ACCESS_MAC, CORE4, CORE6, Capture, Subscriber, bng_available,
                         send_frames)
from lab.dp import wait_for
from lab.cups_lab import CP_ADDR, CP_ADDR2, UPF_ADDR, CupsLab
from lab.traffic import Iperf3Server, iperf3

PAYLOAD = 1176                      # iperf3 UDP payload (see test_bng_shaping)
FRAME_CREDIT = PAYLOAD + 8 + 20 + 14 + 8 + 24   # rte_sched's bytes a QinQ datagram


@pytest.fixture(scope="module")
def lab(request, dp_binary):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    subs = [Subscriber("s1", id=1, qinq=(100, 200)), Subscriber("s2", id=2, vlan=101),
            Subscriber("p1", id=3, qinq=(100, 201), pppoe=0x12)]
    lab = CupsLab(subs, tag="cups")
    request.addfinalizer(lab.close)
    lab.__enter__()
    # Everything PFCP and GTP-U on the control plane's wire, for the
    # capture test at the end.
    lab.capture = Capture(lab.cph, "eth0", "udp port 8805 or udp port 2152")
    request.addfinalizer(lab.capture.stop)
    lab.iperf_core = Iperf3Server(lab.core)
    lab.seids = {}
    assert lab.cp.request("associate")["cause"] == 1
    return lab


def establish(lab, name, **kw):
    """A session for subscriber `name`, replacing the one a previous test left."""
    old = lab.seids.pop(name, None)
    if old is not None:
        lab.cp.request("delete", up_seid=old)
    r = lab.cp.request("establish", sub=lab.session(name, **kw))
    assert r["cause"] == 1, r
    lab.seids[name] = r["up_seid"]
    return r["up_seid"]


def dp_sub(lab, sub_id):
    return lab.dp.ctl("sub-get", id=sub_id)


def find_sub(lab, name):
    """The data plane's subscriber record of lab subscriber `name` (found by MAC)."""
    mac = lab.sub(name).mac
    for s in lab.dp.ctl("sub-list", limit=1000)["subscribers"]:
        if s.get("mac") == mac:
            return s
    return None


def udp_sink(host, port):
    """A UDP socket that takes datagrams to port (no ICMP port unreachable
    comes back to count in the usage)."""
    host.popen([sys.executable, "-c",
                "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                f"s.bind(('0.0.0.0', {port}))\nwhile True: s.recv(65536)"])
    assert wait_for(lambda: host.run(["ss", "-Hlun", f"sport = :{port}"], check=False).stdout.strip(),
                    timeout=10)


def udp_send(host, dst, port, payload_len, count, family=4):
    fam = "AF_INET" if family == 4 else "AF_INET6"
    code = (f"import socket, time; s = socket.socket(socket.{fam}, socket.SOCK_DGRAM)\n"
            f"for i in range({count}):\n"
            f"    s.sendto(b'x' * {payload_len}, ({dst!r}, {port})); time.sleep(0.002)")
    host.run([sys.executable, "-c", code], timeout=60)


def test_pfcp_session_carries_traffic_both_ways(lab):
    """IPoE QinQ and single-VLAN subscribers from PFCP sessions: ping and
    iperf3 UDP cross the BNG in both directions, IPv4 and IPv6."""
    establish(lab, "s1", ul_mbr=200000, dl_mbr=200000)
    establish(lab, "s2")
    for name in ("s1", "s2"):
        s = lab.sub(name)
        for dst in (CORE4, CORE6):
            r = s.host.run(["ping", "-c", "3", "-i", "0.2", "-W", "2", dst], check=False)
            assert r.returncode == 0, f"{name} -> {dst}: {r.stdout}{r.stderr}"
        r = lab.core.run(["ping", "-c", "3", "-i", "0.2", "-W", "2", s.ipv4], check=False)
        assert r.returncode == 0, f"core -> {name}: {r.stdout}"
    s1 = lab.sub("s1")
    up = iperf3(s1.host, CORE4, udp=True, bitrate="5M", seconds=2, length=PAYLOAD)
    down = iperf3(s1.host, CORE4, udp=True, bitrate="5M", seconds=2, length=PAYLOAD, extra=["-R"])
    assert up.lost_percent < 2 and up.mbps > 4.5, up
    assert down.lost_percent < 2 and down.mbps > 4.5, down
    rec = find_sub(lab, "s1")
    assert rec["qinq"] == "100.200" and rec["policer"] == "pfcp-u200000-0" and rec["pipe"] == "pfcp-d200000"
    c = dp_sub(lab, rec["id"])
    assert c["uplink"]["green"]["pkts"] > 0 and c["downlink"]["pkts"] > 0, c


def test_pfcp_pppoe_session_frames_pass(lab):
    """A PPPoE session (BBF PPPoE Session ID in the Traffic Endpoint): the
    subscriber's PPPoE frames leave the core side as plain IP."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.layers.ppp import PPPoE
    from scapy.packet import Raw
    establish(lab, "p1")
    p = lab.sub("p1")
    ip = bytes(IP(src=p.ipv4, dst=CORE4, ttl=64) / UDP(sport=40000, dport=9300) / b"cups-pppoe")
    frame = bytes(Ether(src=p.mac, dst=ACCESS_MAC) / Dot1AD(vlan=100) / Dot1Q(vlan=201)
                  / PPPoE(code=0, sessionid=0x12, len=len(ip) + 2) / Raw(b"\x00\x21" + ip))
    with Capture(lab.core, "eth0", "udp dst port 9300") as cap:
        send_frames(p.host, [frame] * 5)
        time.sleep(1)
    rows = cap.fields("ip.src", "pppoe.session_id", display_filter="udp.dstport == 9300")
    assert len(rows) == 5 and all(r[0] == p.ipv4 and r[1] == "" for r in rows), rows


def json_server(host, port):
    """iperf3 -s in JSON mode: --get-server-output hands the receiver's own
    per-interval report back to the client (as test_bng_shaping does)."""
    host.popen(["iperf3", "-s", "-J", "-p", str(port)], stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
    assert wait_for(lambda: host.run(["ss", "-Hltn", f"sport = :{port}"], check=False).stdout.strip(),
                    timeout=10), f"iperf3 server in {host.name} on {port}"


def udp_client(sender, dst, port, mbps, seconds):
    return sender.popen(["iperf3", "-c", dst, "-p", str(port), "-u", "-b", f"{mbps}M", "-l", str(PAYLOAD),
                         "-t", str(seconds), "-w", "4M", "--json", "--get-server-output"])


def receiver_mbps(proc, seconds):
    """The receiver's Mbit/s in each 1-second interval."""
    out, _ = proc.communicate(timeout=seconds + 40)
    rep = json.loads(out)
    assert "error" not in rep, rep.get("error")
    ivals = (rep.get("server_output_json") or {}).get("intervals", [])
    return [iv["sum"]["bits_per_second"] / 1e6 for iv in ivals if iv["sum"]["seconds"] > 0.5]


def test_pfcp_modification_changes_rates_during_traffic(lab):
    """Update QER during iperf3 UDP: the downlink pipe goes from 20 to 8
    Mbit/s and the uplink policer from 10 to 5 Mbit/s while traffic runs;
    the receivers see each change within a second."""
    s1 = lab.sub("s1")
    seid = establish(lab, "s1", cp_seid=0x2001, ul_mbr=10000, dl_mbr=20000)
    json_server(s1.host, 5301)
    json_server(lab.core, 5302)
    seconds = 8
    down = udp_client(lab.core, s1.ipv4, 5301, 30, seconds)
    up = udp_client(s1.host, CORE4, 5302, 20, seconds)
    time.sleep(seconds / 2)
    r = lab.cp.request("modify", up_seid=seid, ul_mbr=5000, dl_mbr=8000)
    assert r["cause"] == 1, r
    dn, un = receiver_mbps(down, seconds), receiver_mbps(up, seconds)
    # Downlink: rte_sched counts the QinQ frame and 24 bytes of overhead;
    # uplink: the policer meters IP bytes (payload + 28).
    for name, got, g, rates in (("downlink", dn, PAYLOAD / FRAME_CREDIT, (20, 8)),
                                ("uplink", un, PAYLOAD / (PAYLOAD + 28), (10, 5))):
        windows = got[1:3], got[5:7]          # before and after the change at 4 s
        for rate, window in zip(rates, windows):
            # Never above the rate in force, at any load: starvation of
            # iperf3 or the worker can only deliver less.  The lower second
            # of the two, since a reader starved for a moment catches up
            # from its socket buffer in the next one.
            assert min(window) < 1.2 * rate * g, (name, rate, got)
        # Reaching it needs a host that can run the programs.
        medians = [statistics.median(w) for w in windows]
        host_load.judge_rate(all(m > 0.8 * r * g for r, m in zip(rates, medians)),
                             f"{name} below the shaped rate (goodput {g:.3f}): "
                             f"{[round(x, 2) for x in got]} for {rates} Mbit/s")


def usage_total(reports):
    ul = sum(r.get("ul_bytes", 0) for r in reports)
    dl = sum(r.get("dl_bytes", 0) for r in reports)
    return ul, dl


def test_pfcp_deletion_returns_the_final_usage(lab):
    """URR (volume, periodic): the periodic reports and the final one in
    the Deletion Response add up to the IP bytes sent each way."""
    s2 = lab.sub("s2")
    cp_seid = 0x3002
    seid = establish(lab, "s2", cp_seid=cp_seid, urr={"period_s": 1})
    n, size = 300, 1000
    udp_sink(lab.core, 9400)
    udp_sink(s2.host, 9401)
    udp_send(s2.host, CORE4, 9400, size, n)
    udp_send(lab.core, s2.ipv4, 9401, size, n)
    time.sleep(2.5)                         # at least one periodic report
    periodic = [r for r in lab.cp.request("reports")["reports"] if r["cp_seid"] == cp_seid]
    assert periodic, "no periodic usage report"
    r = lab.cp.request("delete", up_seid=seid)
    lab.seids.pop("s2", None)
    assert r["cause"] == 1 and len(r["usage"]) == 1, r
    ul, dl = usage_total(periodic + r["usage"])
    ip = size + 28
    assert ul == n * ip and dl == n * ip, (ul, dl, n * ip)
    assert r["usage"][0]["trigger"].startswith("00"), r     # TERMR is octet 6
    # Deleted in the data plane too.
    assert find_sub(lab, "s2") is None


def test_pfcpsim_standard_procedures(lab):
    """omec-project's pfcpsim (an independent PFCP client): association,
    heartbeat, 20 establishments and deletions with 3GPP IEs only.  (The
    function's `deleted` counts Session Deletion Requests alone: sessions of
    earlier tests that it deletes meanwhile because their control plane
    answered a usage report "Session context not found" count apart.)"""
    before = (lab.upf.event("established"), lab.upf.event("deleted"))
    from lab.cups_lab import go_binary
    r = lab.cph.run([str(go_binary("pfcp-cp-sim")), "pfcpsim", "--upf", f"{UPF_ADDR}:8805",
                     "--local", CP_ADDR2, "--sessions", "20"], timeout=120)
    res = json.loads(r.stdout)
    assert res == {"associated": True, "heartbeat": True, "established": 20, "deleted": 20}, res
    after = (lab.upf.event("established"), lab.upf.event("deleted"))
    assert after[0] - before[0] == 20 and after[1] - before[1] == 20, (before, after)


def test_pfcp_kill_9_of_the_function_during_traffic(lab):
    """The function dies (kill -9) and starts again during downlink traffic:
    the data plane keeps forwarding, the sessions are restored from the
    store, the Recovery Time Stamp is unchanged, the session still obeys
    modifications."""
    import threading
    s1 = lab.sub("s1")
    seid = establish(lab, "s1", cp_seid=0x4001, dl_mbr=50000)
    rec0 = find_sub(lab, "s1")
    hb0 = lab.cp.request("heartbeat")["recovery"]
    res = {}
    t = threading.Thread(target=lambda: res.setdefault("r", iperf3(
        s1.host, CORE4, udp=True, bitrate="4M", seconds=5, length=PAYLOAD, extra=["-R"])))
    t.start()
    time.sleep(1.5)
    lab.upf.kill()
    time.sleep(1)
    lab.restart_upf()
    t.join()
    r = res["r"]
    assert r.lost_percent < 1, r
    assert lab.cp.request("heartbeat")["recovery"] == hb0
    rec1 = find_sub(lab, "s1")
    assert rec1["id"] == rec0["id"] and rec1["pipe"] == rec0["pipe"], (rec0, rec1)
    assert lab.cp.request("modify", up_seid=seid, ul_mbr=0, dl_mbr=60000)["cause"] == 1
    assert wait_for(lambda: find_sub(lab, "s1")["pipe"] == "pfcp-d60000", timeout=5)


def test_pfcp_kill_9_of_the_data_plane(lab):
    """edgeplane-dp dies (kill -9) and starts again: the function replays
    every session (the control plane sees nothing), traffic comes back, and
    usage continues from what was counted before the crash."""
    s2 = lab.sub("s2")
    cp_seid = 0x5002
    seid = establish(lab, "s2", cp_seid=cp_seid, urr={"period_s": 30})
    n, size = 200, 800
    udp_sink(lab.core, 9500)
    udp_sink(lab.core, 9501)
    udp_send(s2.host, CORE4, 9500, size, n)
    time.sleep(1.5)                         # read by the function (every 500 ms)
    restarts = lab.upf.event("dp_restart")
    lab.kill_dp()
    time.sleep(0.5)
    lab.start_dp_again()
    assert wait_for(lambda: lab.upf.event("dp_restart") > restarts, timeout=20)
    assert wait_for(lambda: find_sub(lab, "s2") is not None, timeout=10)
    # Traffic back: datagrams to the subscriber reach its own counters in
    # the new data plane (downlink only: nothing the uplink usage counts).
    udp_sink(s2.host, 9502)

    def delivered():
        udp_send(lab.core, s2.ipv4, 9502, 100, 1)
        rec = find_sub(lab, "s2")
        return rec is not None and dp_sub(lab, rec["id"])["downlink"]["pkts"] > 0

    assert wait_for(delivered, timeout=15)
    udp_send(s2.host, CORE4, 9501, size, n)
    time.sleep(1)
    r = lab.cp.request("delete", up_seid=seid)
    lab.seids.pop("s2", None)
    assert r["cause"] == 1, r
    ul, _ = usage_total([x for x in lab.cp.request("reports")["reports"] if x["cp_seid"] == cp_seid] + r["usage"])
    assert ul == 2 * n * (size + 28), (ul, 2 * n * (size + 28))


def cp_frames(lab, teid):
    return [bytes.fromhex(f["frame"]) for f in lab.cp.request("gtpu-frames")["frames"] or []
            if f["teid"] == teid]


def test_pfcp_control_packet_redirect_both_ways(lab):
    """TR-459's redirect: the default session (made right after
    association) sends a subscriber's PPPoE discovery and DHCP to the
    control plane in GTP-U, whole frames with their tags; a session's own
    tunnel carries its LCP; the control plane's answer, sent untagged to
    the tunnel the function chose, reaches the subscriber with its tags."""
    from scapy.layers.dhcp import BOOTP, DHCP
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.layers.ppp import PPPoE, PPPoED
    from scapy.packet import Raw
    lab.cp.request("gtpu-listen", addr=f"{CP_ADDR}:2152")
    r = lab.cp.request("default", cp_seid=0x9000, port="access", teid=0x1000)
    assert r["cause"] == 1, r
    p, s2 = lab.sub("p1"), lab.sub("s2")
    padi = bytes(Ether(src=p.mac, dst="ff:ff:ff:ff:ff:ff") / Dot1AD(vlan=100) / Dot1Q(vlan=201)
                 / PPPoED(code=0x09, sessionid=0))
    send_frames(p.host, [padi])
    dhcp = bytes(Ether(src=s2.mac, dst="ff:ff:ff:ff:ff:ff") / IP(src="0.0.0.0", dst="255.255.255.255")
                 / UDP(sport=68, dport=67) / BOOTP(chaddr=bytes.fromhex(s2.mac.replace(":", "")))
                 / DHCP(options=[("message-type", "discover"), "end"]))
    send_frames(s2.host, [dhcp])        # the host's tc shim tags it (VLAN 101)
    assert wait_for(lambda: len(cp_frames(lab, 0x1000)) >= 2, timeout=10), lab.upf.metrics()
    got = [Ether(f) for f in cp_frames(lab, 0x1000)]
    pd = [f for f in got if f.haslayer(PPPoED)]
    dh = [f for f in got if f.haslayer(BOOTP)]
    assert len(pd) == 1 and pd[0][Dot1Q].vlan in (100, 201) and pd[0].src == p.mac, got
    tags = [t.vlan for t in (pd[0].getlayer(Dot1Q, 1), pd[0].getlayer(Dot1Q, 2)) if t is not None]
    assert tags == [100, 201], tags      # as on the wire (the outer TPID: see lab/bng_lab.py)
    assert len(dh) == 1 and dh[0][Dot1Q].vlan == 101 and dh[0].src == s2.mac, got

    # The session's own tunnel, both ways.
    old = lab.seids.pop("p1", None)
    if old is not None:
        lab.cp.request("delete", up_seid=old)
    r = lab.cp.request("establish", sub=lab.session("p1", redirect=True, cp_addr=CP_ADDR, cp_teid=0x2003))
    assert r["cause"] == 1 and len(r["created"]) == 1, r
    lab.seids["p1"] = r["up_seid"]
    tunnel = r["created"][0]
    assert tunnel["addr"] == UPF_ADDR, tunnel
    lcp = bytes(Ether(src=p.mac, dst=ACCESS_MAC) / Dot1AD(vlan=100) / Dot1Q(vlan=201)
                / PPPoE(code=0, sessionid=0x12, len=10) / Raw(b"\xc0\x21\x09\x01\x00\x08" + b"\x12\x34\x56\x78"))
    send_frames(p.host, [lcp])
    assert wait_for(lambda: cp_frames(lab, 0x2003), timeout=10), lab.upf.metrics()
    assert Ether(cp_frames(lab, 0x2003)[0])[PPPoE].sessionid == 0x12
    pads = bytes(Ether(src=ACCESS_MAC, dst=p.mac, type=0x8863) / PPPoED(code=0x65, sessionid=0x12))
    with Capture(p.host, "eth0", "ether proto 0x88a8 or vlan") as cap:
        lab.cp.request("gtpu-send", to=f"{UPF_ADDR}:2152", teid=tunnel["teid"], frame=pads.hex())
        time.sleep(1)
    rows = cap.fields("ieee8021ad.id", "vlan.id", "pppoe.code", "pppoe.session_id", "eth.dst",
                      display_filter="pppoed")
    assert rows == [["100", "201", "0x65", "0x0012", p.mac]], rows


def doc_block(tag):
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "docs" / "cups.md").read_text()
    m = re.search(rf"<!-- test: {tag} -->\n```json\n(.*?)```", text, re.S)
    assert m, f"docs/cups.md has no '{tag}' block"
    return m.group(1)


def test_pfcp_doc_worked_example(lab):
    """docs/cups.md's worked example, run as written: the commands' answers
    and the subscriber the data plane then holds."""
    old = lab.seids.pop("s1", None)
    if old is not None:
        lab.cp.request("delete", up_seid=old)
    for line in doc_block("cups-example-commands").splitlines():
        req = json.loads(line)
        r = lab.cp.request(req.pop("cmd"), **req)
        assert r.get("cause") == 1, (line, r)
        if "up_seid" in r:
            lab.seids["s1"] = r["up_seid"]
    want = json.loads(doc_block("cups-example-subscriber"))
    got = find_sub(lab, "s1")
    assert {k: got.get(k) for k in want} == want, got
    prof = lab.dp.ctl("profile-list")
    pol = next(p for p in prof["policers"] if p["name"] == "pfcp-u20000-10000")
    assert (pol["mode"], pol["cir"], pol["pir"]) == ("rfc2698", 10_000_000, 20_000_000), pol
    pipe = next(p for p in prof["pipes"] if p["name"] == "pfcp-d50000")
    assert pipe["rate"] == 50_000_000, pipe


def test_pfcp_capture_decodes_without_malformed_fields(lab):
    """Everything PFCP the control plane and the function exchanged in this
    module, decoded by tshark: no malformed field, no expert warning, and
    the BBF IEs show as pfcp.bbf.* fields."""
    lab.capture.stop()
    rows = lab.capture.fields("frame.number", "_ws.expert.message",
                              display_filter="_ws.malformed || _ws.expert.severity >= 0x00600000")
    assert not rows, rows
    types = {r[0] for r in lab.capture.fields("pfcp.msg_type", display_filter="pfcp")}
    for t in ("1", "2", "5", "6", "50", "51", "52", "53", "54", "55", "56", "57"):
        assert t in {x for r in types for x in r.split(",")}, (t, types)
    bbf = lab.capture.fields("pfcp.bbf.logical_port_id_str", "pfcp.bbf.pppoe_session_id",
                             "pfcp.bbf.up_function_features.pppoe",
                             display_filter="pfcp.bbf.logical_port_id_str || pfcp.bbf.pppoe_session_id "
                                            "|| pfcp.bbf.up_function_features.pppoe")
    assert any("access" in r[0].split(",") for r in bbf), bbf
    assert any("0x0012" in r[1].split(",") for r in bbf), bbf
    assert any("1" in r[2].split(",") for r in bbf), bbf
