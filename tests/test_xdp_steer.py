"""XDP steering function in network namespaces (docs/xdp-steering.md).

    gen ──┐            ┌── dut  (edgeplane agent, XDP on eth0, UDP sockets)
          └── sw/br0 ──┤
                       └── alt  (alternative node, tshark capture)

gen sends nested VXLAN+GTP-U and plain GTP-U traffic (scapy frames on a raw
socket, paced) to dut. Prioritised flows reach a socket on dut; under
overload the rest is rewritten by XDP to alt's MAC and IP and leaves dut's
port with XDP_TX; the bridge, with static FDB entries so nothing floods,
delivers it to alt, where tshark captures it and checks its checksums.
Intents change and the agent restarts while traffic runs; every packet is
accounted for at dut or at alt.

This file is also the helper it runs inside the namespaces:
    python tests/test_xdp_steer.py send IFACE FLOWS_JSON RATE
    python tests/test_xdp_steer.py recv      (counts until stdin closes)
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GEN_MAC, DUT_MAC, ALT_MAC = "02:00:00:00:00:02", "02:00:00:00:00:01", "02:00:00:00:00:03"
GEN4, DUT4, ALT4 = "198.18.0.2", "198.18.0.1", "198.18.0.3"
GEN6, DUT6, ALT6 = "2001:db8::2", "2001:db8::1", "2001:db8::3"
MARK = re.compile(rb"flow=(\w+);seq=(\d+);")

# Flows: name -> how gen builds it. "vxlan-gtp" is the steering paper's
# nesting MAC/IP/UDP/VXLAN/MAC/IP/UDP/GTP/IP/L4 (docs/xdp-steering.md); "gtp6" is GTP-U over IPv6 with an
# IPv4 inner packet.
FLOWS = {
    "A": {"kind": "vxlan-gtp", "vni": 4450, "teid": 0x8894D0D4, "src": "198.18.10.1", "dport": 5004},
    "B": {"kind": "vxlan-gtp", "vni": 4450, "teid": 0x11111111, "src": "198.18.10.2", "dport": 5004},
    "C": {"kind": "gtp6", "teid": 0x2222, "src": "198.18.10.3", "dport": 6000},
}

DPP_INTENT_A = {
    "intentId": "prio-a",
    "Resources": [
        {"resourceId": "F8A4C949", "encapsulationID1": "4450", "encapsulationType1": "vxlan"},
        {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
        {"resourceId": "5A07C587", "srcIP": "198.18.10.1", "dstPort": "5004"},
    ],
    "Action": {"actionType": "INSERT", "actionName": "PRIO_QUEUE", "rx_queue": "0"},
    "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}],
}


# --- helpers run inside the namespaces ------------------------------------

def build_frames(flows, per_flow):
    """Interleaved frames, each carrying flow=<name>;seq=<n>; in its payload."""
    from scapy.all import Ether, IP, IPv6, UDP, Raw
    from scapy.layers.vxlan import VXLAN
    from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
    out = []
    for seq in range(per_flow):
        for name in flows:
            f = FLOWS[name]
            inner = (IP(src=f["src"], dst="198.18.20.1") / UDP(sport=40000, dport=f["dport"])
                     / Raw(b"flow=%s;seq=%d;" % (name.encode(), seq) + b"x" * 40))
            gtp = (GTP_U_Header(teid=f["teid"], gtp_type=255, E=1, next_ex=0x85)
                   / GTPPDUSessionContainer(type=1, QFI=9) / inner)
            if f["kind"] == "vxlan-gtp":
                frame = (Ether(src=GEN_MAC, dst=DUT_MAC) / IP(src=GEN4, dst=DUT4)
                         / UDP(sport=49152 + seq % 1000, dport=4789) / VXLAN(vni=f["vni"], flags=0x08)
                         / Ether(src="02:00:00:00:01:02", dst="02:00:00:00:01:01")
                         / IP(src="198.19.1.2", dst="198.19.1.1") / UDP(sport=2152, dport=2152) / gtp)
            else:
                frame = (Ether(src=GEN_MAC, dst=DUT_MAC) / IPv6(src=GEN6, dst=DUT6)
                         / UDP(sport=2152, dport=2152) / gtp)
            out.append(bytes(frame))
    return out


def helper_send(iface, flows, per_flow, rate):
    frames = build_frames(flows, per_flow)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    print("start", flush=True)
    t0 = time.perf_counter()
    for i, fr in enumerate(frames):
        delay = t0 + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        s.send(fr)
    print(json.dumps({"sent": len(frames), "seconds": time.perf_counter() - t0}))


def helper_recv():
    """Count datagrams per flow on dut's VXLAN and GTP-U ports until stdin
    closes (the test closes it once its sender is done)."""
    import select
    socks = []
    for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        for port in (4789, 2152):
            s = socket.socket(fam, socket.SOCK_DGRAM)
            if fam == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((addr, port))
            socks.append(s)
    counts, seqs = {}, {}
    print("ready", flush=True)
    done = False
    while not done:
        r, _, _ = select.select(socks + [sys.stdin], [], [], 1.0)
        for s in r:
            if s is sys.stdin:
                done = not sys.stdin.read(1)
                continue
            data = s.recv(65535)
            m = MARK.search(data)
            if m:
                name = m.group(1).decode()
                counts[name] = counts.get(name, 0) + 1
                seqs.setdefault(name, set()).add(int(m.group(2)))
    print(json.dumps({"counts": counts, "unique": {k: len(v) for k, v in seqs.items()}}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "send":
        helper_send(sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif sys.argv[1] == "recv":
        helper_recv()
    sys.exit(0)


# --- the tests -------------------------------------------------------------

import pytest  # noqa: E402

from lab.topology import Topology  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
AGENT = ROOT / "build" / "bin" / "edgeplane"
NOOP = ROOT / "build" / "xdp" / "noop.o"
ME = str(Path(__file__).resolve())


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.path)


class Node:
    """The lab and the agent on dut."""

    def __init__(self, topo, tmp):
        self.topo, self.tmp = topo, Path(tmp)
        self.gen, self.dut, self.alt, self.sw = (topo.host(n) for n in ("gen", "dut", "alt", "sw"))
        self.sw.run("ip link add br0 type bridge")
        for h, mac, v4, v6, port in ((self.gen, GEN_MAC, GEN4, GEN6, "p-gen"), (self.dut, DUT_MAC, DUT4, DUT6, "p-dut"),
                                     (self.alt, ALT_MAC, ALT4, ALT6, "p-alt")):
            topo.link(h, "eth0", self.sw, port, mac_a=mac, ipv4_a=v4 + "/24", ipv6_a=v6 + "/64")
            h.offload_off("eth0")
            self.sw.run(f"ip link set {port} master br0")
            # Static entries: the bridge never floods an offloaded frame
            # back to dut, where XDP would offload it again.
            self.sw.run(f"bridge fdb replace {mac} dev {port} master static")
        self.sw.run("ip link set br0 up")
        # XDP_TX from dut's eth0 lands on p-dut: a veth accepts XDP frames
        # only when it has an XDP program itself.
        self.sw.run(f"ip link set dev p-dut xdpdrv obj {NOOP} sec xdp")
        self.bpffs = self.tmp / "bpffs"
        self.bpffs.mkdir()
        subprocess.run(["mount", "-t", "bpf", "bpf", str(self.bpffs)], check=True)
        self.sock = str(self.tmp / "api.sock")
        self.report = self.tmp / "report.jsonl"
        self.agent = None

    def start_agent(self, *extra):
        if os.path.exists(self.sock):
            os.remove(self.sock)
        self.agent = self.dut.popen([str(AGENT), "agent", "--iface", "eth0", "--bpffs", str(self.bpffs),
                                     "--state-dir", str(self.tmp / "state"), "--listen", "unix:" + self.sock,
                                     "--alt-node", f"{ALT_MAC},{ALT4},{ALT6}", "--load-interval", "200ms",
                                     "--report", str(self.report), "--report-interval", "500ms", *extra],
                                    stdout=subprocess.DEVNULL, stderr=open(self.tmp / "agent.log", "a"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.agent.poll() is not None:
                raise AssertionError("agent exited: " + (self.tmp / "agent.log").read_text())
            try:
                if self.api("GET", "/v1/stats")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("agent API did not come up: " + (self.tmp / "agent.log").read_text())

    def stop_agent(self):
        self.agent.send_signal(signal.SIGTERM)
        assert self.agent.wait(timeout=10) == 0, (self.tmp / "agent.log").read_text()

    def api(self, method, path, body=None):
        c = UnixHTTP(self.sock)
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        raw = r.read()
        c.close()
        return r.status, (json.loads(raw) if raw and raw[:1] in b"{[" else raw.decode())

    def stats(self):
        code, st = self.api("GET", "/v1/stats")
        assert code == 200
        return st

    def recv(self):
        p = self.dut.popen([PY, ME, "recv"], stdin=subprocess.PIPE)
        assert p.stdout.readline().strip() == "ready"
        return p

    def send(self, flows, per_flow, rate, background=False):
        cmd = [PY, ME, "send", "eth0", json.dumps(flows), str(per_flow), str(rate)]
        if background:
            # Returns once frames are built and the first is about to go.
            p = self.gen.popen(cmd)
            assert p.stdout.readline().strip() == "start"
            return p
        return json.loads(self.gen.run(cmd, timeout=60).stdout.splitlines()[-1])

    def capture(self, name):
        """tshark on alt; returns (process, pcap path) once it is capturing."""
        path = self.tmp / f"{name}.pcap"
        p = self.alt.popen(["tshark", "-i", "eth0", "-n", "-q", "-f", "udp", "-w", str(path)])
        deadline = time.monotonic() + 15
        line = ""
        while time.monotonic() < deadline and "Capturing on" not in line:
            line = p.stderr.readline()
        assert "Capturing on" in line, "tshark did not start"
        return p, path


def finish(p, timeout=30):
    """Stop a receiver (after letting the last frames land) and read it."""
    time.sleep(0.3)
    out, _ = p.communicate(input="", timeout=timeout)
    return json.loads(out.strip().splitlines()[-1])


def stop_capture(p):
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=10)


def read_capture(path):
    """Per flow: frames at alt, with tshark's view of the outer headers."""
    fields = ["eth.dst", "eth.src", "ip.dst", "ipv6.dst", "ip.checksum.status", "udp.checksum.status"]
    out = subprocess.run(["tshark", "-r", str(path), "-n", "-o", "ip.check_checksum:TRUE",
                          "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|",
                          "-E", "occurrence=f"] + sum((["-e", f] for f in fields), []),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    from scapy.all import rdpcap
    frames = rdpcap(str(path))
    assert len(frames) == len(out)
    flows = {}
    for fr, line in zip(frames, out):
        m = MARK.search(bytes(fr))
        if m:
            flows.setdefault(m.group(1).decode(), []).append(dict(zip(fields, line.split("|"))))
    return flows


@pytest.fixture(scope="module")
def node():
    if not AGENT.exists() or not NOOP.exists():
        pytest.fail("build/bin/edgeplane or build/xdp/noop.o missing: run `make build-xdp`", pytrace=False)
    # The agent's logs and etcd data (~60 MB a run) and its bpffs: removed
    # at the end, also when building the lab fails (the bpffs unmounted
    # first, so that the removal does not walk into it).
    with tempfile.TemporaryDirectory(prefix="xdp-steer-") as tmp:
        try:
            with Topology("xs") as topo:
                n = Node(topo, tmp)
                try:
                    n.start_agent()
                    yield n
                finally:
                    if n.agent is not None and n.agent.poll() is None:
                        n.stop_agent()
                    topo.close()
        finally:
            if (Path(tmp) / "bpffs").is_mount():
                subprocess.run(["umount", str(Path(tmp) / "bpffs")], check=False)


@pytest.fixture
def clean(node):
    """No intents, no overload, before and after each test."""
    def reset():
        for it in node.api("GET", "/v1/intents")[1]["intents"]:
            assert node.api("DELETE", f"/v1/intents/{it['id']}")[0] == 204
        assert node.api("PUT", "/v1/overload", {"mode": "off"})[0] == 200
    reset()
    yield node
    reset()


def delta(before, after, group, name):
    return (after["counters"][group].get(name, {}).get("packets", 0)
            - before["counters"][group].get(name, {}).get("packets", 0))


def test_attached_natively_with_pinned_maps(node):
    st = node.stats()
    assert st["xdpMode"] in ("native", "updated")
    pins = sorted(os.listdir(node.bpffs / "edgeplane" / "eth0"))
    assert pins == ["alt_map", "cpu_map", "mask_map", "node_map", "prio_map", "stats_map", "xdp_link"]
    out = node.dut.run("ip -d link show dev eth0").stdout
    assert "xdp" in out and "prog/xdp" in out


def test_prioritised_and_headroom_reach_dut_socket(clean):
    n = clean
    cpu = os.cpu_count() - 1
    intent = dict(DPP_INTENT_A, Action=dict(DPP_INTENT_A["Action"], rx_queue=str(cpu)))
    code, body = n.api("POST", "/v1/intents", intent)
    assert code == 201, body
    before = n.stats()
    r = n.recv()
    sent = n.send(["A", "B", "C"], 100, 1000)
    got = finish(r)
    after = n.stats()
    assert sent["sent"] == 300
    assert got["unique"] == {"A": 100, "B": 100, "C": 100}
    assert delta(before, after, "paths", "prio_cpu") == 100
    assert delta(before, after, "paths", "headroom") >= 200
    assert delta(before, after, "verdicts", "redirect") == 100
    flow = [f for f in after["flows"] if f["intent"] == "prio-a"][0]
    assert flow["packets"] - next(f for f in before["flows"] if f["intent"] == "prio-a")["packets"] == 100


def test_overload_offloads_to_alt_node_with_rewritten_headers(clean):
    n = clean
    assert n.api("POST", "/v1/intents", DPP_INTENT_A)[0] == 201
    assert n.api("PUT", "/v1/overload", {"mode": "host"})[1]["hostOverloaded"] is True
    before = n.stats()
    cap, pcap = n.capture("offload")
    r = n.recv()
    n.send(["A", "B", "C"], 100, 1000)
    got = finish(r)
    stop_capture(cap)
    after = n.stats()
    at_alt = read_capture(pcap)
    # Prioritised traffic stays; the rest goes to alt, none lost.
    assert got["unique"] == {"A": 100}, (after["counters"]["paths"], {k: len(v) for k, v in at_alt.items()},
                                         n.dut.run("nstat -az Udp*").stdout)
    assert sorted(at_alt) == ["B", "C"] and len(at_alt["B"]) == 100 and len(at_alt["C"]) == 100
    for f in at_alt["B"]:
        assert (f["eth.dst"], f["eth.src"], f["ip.dst"]) == (ALT_MAC, DUT_MAC, ALT4)
        assert f["ip.checksum.status"] == "1" and f["udp.checksum.status"] == "1", f
    for f in at_alt["C"]:
        assert (f["eth.dst"], f["ipv6.dst"]) == (ALT_MAC, ALT6)
        assert f["udp.checksum.status"] == "1", f
    assert delta(before, after, "paths", "offload") == 200
    assert delta(before, after, "verdicts", "tx") == 200

    # With every CPU overloaded too, prioritised traffic overflows as well.
    assert n.api("PUT", "/v1/overload", {"mode": "all"})[0] == 200
    cap, pcap = n.capture("overflow")
    n.send(["A"], 50, 1000)
    stop_capture(cap)
    at_alt = read_capture(pcap)
    assert len(at_alt.get("A", [])) == 50
    assert delta(after, n.stats(), "paths", "prio_overflow") == 50


def test_intents_added_and_removed_during_traffic(clean):
    n = clean
    assert n.api("PUT", "/v1/overload", {"mode": "host"})[0] == 200
    cap, pcap = n.capture("churn")
    r = n.recv()
    s = n.send(["A"], 1500, 500, background=True)  # 3 s of flow A
    time.sleep(1.0)
    assert n.api("POST", "/v1/intents", DPP_INTENT_A)[0] == 201
    time.sleep(1.0)
    assert n.api("DELETE", "/v1/intents/prio-a")[0] == 204
    assert s.wait(timeout=30) == 0
    got = finish(r)
    stop_capture(cap)
    at_alt = read_capture(pcap)
    at_dut = got["unique"].get("A", 0)
    # Before the intent and after its removal flow A is offloaded; while it
    # exists it stays on dut. Every packet is at one of the two.
    assert at_dut > 200 and len(at_alt.get("A", [])) > 200
    assert at_dut + len(at_alt["A"]) == 1500


def test_agent_restart_during_traffic_loses_nothing(clean):
    n = clean
    cpu = os.cpu_count() - 1
    intent = dict(DPP_INTENT_A, Action=dict(DPP_INTENT_A["Action"], rx_queue=str(cpu)))
    assert n.api("POST", "/v1/intents", intent)[0] == 201
    before = n.stats()
    r = n.recv()
    s = n.send(["A"], 1500, 500, background=True)
    time.sleep(0.8)
    n.stop_agent()
    time.sleep(0.5)  # traffic runs with no agent at all
    n.start_agent()
    assert s.wait(timeout=30) == 0
    got = finish(r)
    after = n.stats()
    assert after["xdpMode"] == "updated"  # pinned link updated in place
    assert got["unique"] == {"A": 1500}
    # Steered through the whole run, counters kept across the restart.
    assert delta(before, after, "paths", "prio_cpu") == 1500
    assert [i["id"] for i in n.api("GET", "/v1/intents")[1]["intents"]] == ["prio-a"]
    assert next(f for f in after["flows"] if f["intent"] == "prio-a")["packets"] >= 1500


@pytest.mark.parametrize("name,body,code,reason", [
    ("not-json", "{", 400, "not a JSON object"),
    ("vni-over-24-bits", {"Resources": [{"encapsulationID1": "700000445", "encapsulationType1": "vxlan"}],
                          "Action": {"actionName": "PRIO_QUEUE"}}, 400, "VNI"),
    ("unknown-encapsulation", {"Resources": [{"encapsulationID1": "1", "encapsulationType1": "geneve"}],
                               "Action": {"actionName": "PRIO_QUEUE"}}, 400, "geneve"),
    ("wrong-flow-hash", dict(DPP_INTENT_A, intentId="x", Action=dict(DPP_INTENT_A["Action"], flow_hash="E918D704")),
     400, "flow_hash"),
    ("other-interface", dict(DPP_INTENT_A, intentId="y", Params=[{"paramName": "interfaceName", "paramValue": "eth9"}]),
     400, "this agent steers eth0"),
    ("mec-drop", {"trafficRuleId": "t", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["1"]}], "action": "DROP"},
     400, "PASSTHROUGH"),
    ("batch-second-invalid", {"intents": [dict(DPP_INTENT_A, intentId="ok"),
                                          {"Resources": [{"dstPort": "0"}], "Action": {"actionName": "PRIO_QUEUE"}}]},
     400, "intents[1]"),
    ("duplicate", DPP_INTENT_A, 409, "already exists"),
])
def test_malformed_intents_refused(clean, name, body, code, reason):
    n = clean
    assert n.api("POST", "/v1/intents", DPP_INTENT_A)[0] == 201
    before = n.api("GET", "/v1/intents")[1]
    got, resp = n.api("POST", "/v1/intents", body)
    assert got == code and reason in resp["error"], resp
    after = n.api("GET", "/v1/intents")[1]
    assert [i["id"] for i in after["intents"]] == [i["id"] for i in before["intents"]] == ["prio-a"]


def test_reports_and_metrics(node):
    time.sleep(1.1)
    lines = [json.loads(x) for x in node.report.read_text().splitlines() if x.strip()]
    assert lines and all("counters" in x and "overload" in x for x in lines)
    code, text = node.api("GET", "/metrics")
    assert code == 200
    assert re.search(r'^edgeplane_xdp_packets_total\{verdict="pass"\} [1-9]', text, re.M)
    assert 'edgeplane_xdp_drops_total{reason="trunc_gtp"}' in text


def test_dashboard_queries_name_metrics_the_function_exports(node):
    """Every metric the XDP steering dashboard queries is in the agent's
    /metrics (with an intent applied, so per-flow series exist)."""
    from lab.control_lab import dashboard_metrics, exposition_names
    assert node.api("POST", "/v1/intents", DPP_INTENT_A)[0] in (201, 409)
    code, text = node.api("GET", "/metrics")
    assert code == 200
    used = dashboard_metrics()["edgeplane-xdp.json"]
    assert used and used <= exposition_names(text), sorted(used - exposition_names(text))


def unix_api(path, method, url, body=None):
    c = UnixHTTP(path)
    c.request(method, url, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    raw = r.read()
    c.close()
    return r.status, json.loads(raw) if raw else None


def test_steering_from_the_controller_programs_the_attached_program(clean):
    """The node agent's steering section on the real XDP program: the
    controller (embedded etcd) and `edgeplane agent --node` run in dut's
    namespace, the northbound on a Unix socket the test reaches; an intent
    applied through the controller steers flow A to its CPU (counted by the
    program), and removing it from the desired state removes it."""
    n = clean
    cpu = os.cpu_count() - 1
    ctl = str(n.tmp / "controller.sock")
    controller = n.dut.popen([str(AGENT), "controller", "--listen", "unix:" + ctl, "--data-dir", str(n.tmp / "etcd"),
                              "--etcd-listen", "http://127.0.0.1:23790", "--etcd-peer", "http://127.0.0.1:23800"],
                             stdout=subprocess.DEVNULL, stderr=open(n.tmp / "controller.log", "a"))
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(ctl):
            assert controller.poll() is None and time.monotonic() < deadline, (n.tmp / "controller.log").read_text()
            time.sleep(0.1)
        n.stop_agent()
        n.start_agent("--node", "xs1", "--etcd-endpoints", "http://127.0.0.1:23790", "--dp-check", "200ms")

        def apply(intents):
            code, a = unix_api(ctl, "POST", "/v1/apply", {"nodes": {"xs1": {
                "apiVersion": "edgeplane/v1", "steering": {"intents": intents}}}})
            assert code == 200, a
            deadline = time.monotonic() + 30
            while True:
                code, st = unix_api(ctl, "GET", "/v1/nodes/xs1/status")
                if code == 200 and st["converged"] and st["observedRevision"] >= a["revision"]:
                    return st
                assert time.monotonic() < deadline, st
                time.sleep(0.1)

        apply([{"name": "a", "vni": 4450, "teid": 0x8894D0D4, "srcIp": "198.18.10.1", "proto": "udp",
                "dstPort": 5004, "cpu": cpu}])
        assert [i["id"] for i in n.api("GET", "/v1/intents")[1]["intents"]] == ["desired-a"]
        before = n.stats()
        r = n.recv()
        assert n.send(["A", "B"], 100, 1000)["sent"] == 200
        got = finish(r)
        after = n.stats()
        assert got["unique"] == {"A": 100, "B": 100}
        assert delta(before, after, "paths", "prio_cpu") == 100
        flow = next(f for f in after["flows"] if f["intent"] == "desired-a")
        assert flow["packets"] - next((f["packets"] for f in before["flows"] if f["intent"] == "desired-a"), 0) == 100

        st = apply([])
        assert st["changes"].get("intent remove") == 1, st
        assert n.api("GET", "/v1/intents")[1]["intents"] == []
    finally:
        n.stop_agent()
        n.start_agent()
        controller.terminate()
        controller.wait(timeout=15)
