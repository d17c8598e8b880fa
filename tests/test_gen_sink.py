"""Generator and sink pipelines over a real veth pair, with the real binary.

    namespace "dp":   [edgeplane-dp gen]  ga <==veth==> sa  [edgeplane-dp sink]

Two edgeplane-dp processes, one worker each.  In one process with two
workers the engine gives every af_packet port qpairs = 2 (a tx queue per
worker), i.e. two packet sockets joined in a PACKET_FANOUT group; only rx
queue 0 is polled, so the flows hashed to the second socket are lost until
its ring fills and rollover starts.  One worker per process keeps qpairs = 1.

No timing thresholds: rates and latencies on this shared 2-core machine vary;
the tests check counts (received == sent, nothing lost) and that the latency
figures are consistent with each other.
"""
import json
import time
from pathlib import Path

import pytest

from lab.dp import CtlError, Dp, check_config
from lab.topology import Topology

GEN_MAC = "02:00:00:00:0a:01"
SINK_MAC = "02:00:00:00:0b:01"
RATE = 50000

# The tester's engines pause after few empty polls so that the generator and
# the sink leave CPU to each other and to the kernel's veth work.
ENGINE = {"idle_polls": 10, "max_sleep_us": 50}


def gen_config(**keys):
    worker = {"pipeline": "gen", "tx": "g", "rate_pps": RATE, "size": "imix-up", "flows": 16,
              "src": "198.18.0.1", "dst": "198.18.1.1", "dst_mac": SINK_MAC, "start": "no"}
    worker.update(keys)
    return {"engine": ENGINE, "port g": {"device": "net_af_packet0,iface=ga"},
            "worker gen0": worker}


# A deep rx ring: 512 frames (the default) overflow when the sink is
# descheduled for ~10 ms at these rates, which a loaded 2-core machine does.
SINK_CONFIG = {"engine": ENGINE, "port s": {"device": "net_af_packet0,iface=sa,framecnt=16384"},
               "worker sink0": {"pipeline": "sink", "rx": "s"}}


class GenSinkLab:
    def __init__(self, dp_binary):
        self.topo = Topology("gs")
        self.gen = self.sink = None
        self.binary = dp_binary

    def __enter__(self):
        try:
            self.topo.__enter__()
            h = self.topo.host("dp")
            self.topo.link(h, "ga", h, "sa", mac_a=GEN_MAC, mac_b=SINK_MAC)
            h.offload_off("ga")
            h.offload_off("sa")
            self.sink = Dp(h, SINK_CONFIG, name="sink", binary_path=self.binary).__enter__()
            self.gen = Dp(h, gen_config(), name="gen", binary_path=self.binary).__enter__()
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        for dp in (self.gen, self.sink):
            if dp is not None:
                dp.close()
        self.topo.close()

    def drain(self, timeout=10):
        """Wait until the sink stops receiving: frames of a stopped run can
        still sit in the af_packet rings and would land after a reset."""
        deadline = time.monotonic() + timeout
        last = -1
        while time.monotonic() < deadline:
            rx = self.sink.ctl("sink-stats")["rx_pkts"]
            if rx == last:
                return
            last = rx
            time.sleep(0.3)
        raise AssertionError("sink still receiving after the generator stopped")

    def run(self, timeout=30, **start):
        """sink-reset, gen-start with @start (count required), wait until the
        generator finished and the sink stopped receiving; (gen, sink) stats."""
        assert start.get("count"), "a bounded run"
        self.sink.ctl("sink-reset")
        self.gen.ctl("gen-start", **start)
        deadline = time.monotonic() + timeout
        while self.gen.ctl("gen-stats")["running"]:
            assert time.monotonic() < deadline, self.gen.ctl("gen-stats")
            time.sleep(0.1)
        g = self.gen.ctl("gen-stats")
        last = -1
        while time.monotonic() < deadline:
            s = self.sink.ctl("sink-stats")
            if s["rx_pkts"] >= g["sent_pkts"] or s["rx_pkts"] == last:
                break
            last = s["rx_pkts"]
            time.sleep(0.3)
        return g, self.sink.ctl("sink-stats")


@pytest.fixture(scope="module")
def lab(request, dp_binary):
    lab = GenSinkLab(dp_binary)
    request.addfinalizer(lab.close)
    return lab.__enter__()


def check_latency(s):
    assert s["latency_samples"] == s["rx_pkts"] - s["latency_invalid_pkts"], s
    assert s["latency_invalid_pkts"] == 0, s
    assert 0 < s["latency_min_ns"] <= s["latency_p50_ns"] <= s["latency_p99_ns"] \
        <= s["latency_p999_ns"] <= s["latency_max_ns"], s
    assert s["latency_min_ns"] <= s["latency_mean_ns"] <= s["latency_max_ns"], s
    # Sanity only: a latency beyond a second means broken timestamps.
    assert s["latency_max_ns"] < 1_000_000_000, s


def check_no_loss(g, s):
    assert g["sent_pkts"] > 0
    assert s["rx_pkts"] == g["sent_pkts"], (g, s)
    assert s["rx_bytes"] == g["sent_bytes"], (g, s)
    assert s["lost_pkts"] == 0 and s["reordered_pkts"] == 0 and s["duplicate_pkts"] == 0, s


def test_imix_up_ipv4_all_received_in_order(lab):
    g, s = lab.run(count=50000)
    check_no_loss(g, s)
    check_latency(s)
    w = g["workers"][0]
    assert w["count"] == 50000 and w["alloc_failed_pkts"] == 0 and w["tx_full_pkts"] == 0, w
    # 65/18/17 % of 84/256/1280-byte frames: sizes include the FCS.
    assert g["sent_bytes"] == 500 * (65 * 84 + 18 * 256 + 17 * 1280), g
    assert s["first_rx_ns"] <= s["last_rx_ns"], s
    assert w["first_tx_ns"] <= s["first_rx_ns"], (w, s)


def test_ipv6_vlan_fixed_size_all_received(lab):
    lab.gen.ctl("gen-set", src="2001:db8::1", dst="2001:db8:1::1", size="128", vlan=100,
                flows=1000)
    try:
        g, s = lab.run(count=20000, rate_pps=40000)
        check_no_loss(g, s)
        check_latency(s)
        assert g["sent_bytes"] == 20000 * 128, g
        assert g["workers"][0]["flows"] == 1000 and g["workers"][0]["size"] == "128"
    finally:
        lab.gen.ctl("gen-set", src="198.18.0.1", dst="198.18.1.1", size="imix-up",
                    vlan="none", flows=16)


def test_gen_start_restarts_sequences_and_counters(lab):
    # An unbounded run stopped half-way, then a new run: the sink (reset in
    # between) must see every flow start again at sequence 0.
    lab.sink.ctl("sink-reset")
    started = lab.gen.ctl("gen-start", count=0, rate_pps=20000)
    assert started["running"] is True
    time.sleep(0.3)
    stopped = lab.gen.ctl("gen-stop")
    assert stopped["running"] is False and stopped["sent_pkts"] > 0, stopped
    lab.drain()
    g, s = lab.run(count=10000, rate_pps=RATE)
    assert g["sent_pkts"] == 10000
    check_no_loss(g, s)


def test_gen_set_while_running_keeps_sequences(lab):
    lab.sink.ctl("sink-reset")
    lab.gen.ctl("gen-start", count=30000, rate_pps=30000)
    time.sleep(0.2)
    changed = lab.gen.ctl("gen-set", rate_pps=60000, size="64,1518", flows=64)
    w = changed["workers"][0]
    assert (w["rate_pps"], w["size"], w["flows"]) == (60000, "64,1518", 64), w
    deadline = time.monotonic() + 30
    while lab.gen.ctl("gen-stats")["running"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.5)
    g, s = lab.gen.ctl("gen-stats"), lab.sink.ctl("sink-stats")
    lab.gen.ctl("gen-set", rate_pps=RATE, size="imix-up", flows=16)
    check_no_loss(g, s)


def test_sink_counts_foreign_traffic_separately(lab):
    # Kernel traffic on the veth (an ICMPv6 echo to all-nodes, link-local
    # only) is not the generator's: foreign, never "received".
    lab.sink.ctl("sink-reset")
    lab.topo.hosts["dp"].run(["ping", "-6", "-c", "3", "-i", "0.2", "-W", "1", "-I", "ga",
                              "ff02::1"], check=False)
    deadline = time.monotonic() + 5
    while lab.sink.ctl("sink-stats")["foreign_pkts"] < 3:
        assert time.monotonic() < deadline, lab.sink.ctl("sink-stats")
        time.sleep(0.1)
    s = lab.sink.ctl("sink-stats")
    assert s["rx_pkts"] == 0 and s["lost_pkts"] == 0, s
    sink_stage = lab.sink.stages()["sink"]
    assert sink_stage["drops"].get("sink_foreign", 0) >= s["foreign_pkts"], sink_stage


def test_sink_refuses_unexpected_fields(lab):
    with pytest.raises(CtlError) as exc:
        lab.sink.ctl("sink-reset", flows=3)
    assert "unexpected field 'flows'" in exc.value.error


def test_sink_reset_returns_the_trial_and_zeroes(lab):
    g, s = lab.run(count=5000)
    check_no_loss(g, s)
    old = lab.sink.ctl("sink-reset")
    assert old["reset"] is True and old["rx_pkts"] == 5000, old
    now = lab.sink.ctl("sink-stats")
    assert now["rx_pkts"] == 0 and now["latency_samples"] == 0 and now["first_rx_ns"] is None


def test_cli_prints_the_json_fields_benchmarks_use(lab):
    out = json.loads(lab.sink.cli("sink-stats").stdout)
    for key in ("rx_pkts", "rx_bytes", "lost_pkts", "reordered_pkts", "duplicate_pkts",
                "foreign_pkts", "latency_p50_ns", "latency_p99_ns", "latency_p999_ns",
                "latency_min_ns", "latency_max_ns", "latency_mean_ns", "first_rx_ns",
                "last_rx_ns", "tsc_hz", "workers"):
        assert key in out, (key, out)
    g = json.loads(lab.gen.cli("gen-stats", "worker=gen0").stdout)
    for key in ("sent_pkts", "sent_bytes", "running", "tsc_hz"):
        assert key in g, (key, g)
    for key in ("worker", "tx_port", "rate_pps", "size", "flows", "count", "sent_pkts",
                "alloc_failed_pkts", "tx_full_pkts", "measured_pps", "elapsed_ns",
                "start_ns", "first_tx_ns", "last_tx_ns"):
        assert key in g["workers"][0], (key, g)


@pytest.mark.parametrize("cmd,fields,needle", [
    ("gen-start", {"size": 60}, "below 64"),
    ("gen-set", {"flows": 0}, "flows"),
    ("gen-set", {"rate_pps": -5}, "rate_pps"),
    ("gen-set", {"start": "yes"}, "configuration key"),
    ("gen-set", {"colour": "blue"}, "unknown generator parameter"),
    ("gen-set", {"dst": "2001:db8::1"}, "same address family"),
    ("gen-stats", {"worker": "nope"}, "no gen worker named 'nope'"),
    ("gen-stats", {"worker": 3}, "must be a string"),
    ("sink-stats", {}, "no sink worker"),
    ("gen-stop", {"rate_pps": 5}, "unexpected field 'rate_pps'"),
    ("gen-stats", {"verbose": 1}, "unexpected field 'verbose'"),
], ids=["size-too-small", "zero-flows", "negative-rate", "start-not-settable", "unknown-key",
        "mixed-families", "unknown-worker", "worker-not-string", "sink-on-gen-process",
        "stop-takes-only-worker", "stats-takes-only-worker"])
def test_bad_requests_are_refused_and_change_nothing(lab, cmd, fields, needle):
    before = lab.gen.ctl("gen-stats")["workers"][0]
    with pytest.raises(CtlError) as exc:
        lab.gen.ctl(cmd, **fields)
    assert needle in exc.value.error, exc.value.error
    after = lab.gen.ctl("gen-stats")["workers"][0]
    assert {k: before[k] for k in ("rate_pps", "size", "flows", "count")} == \
        {k: after[k] for k in ("rate_pps", "size", "flows", "count")}


# A whole tester in one process and one worker: the gen worker with
# `rx = s` sends on ta and counts what comes back on tb (the RFC 2544
# bench's tester, so that it takes one core of a 2-core host, not two).
TESTER_A, TESTER_B = "02:00:00:00:0a:02", "02:00:00:00:0b:02"


def one_worker_tester_config():
    cfg = gen_config(dst_mac=TESTER_B, rx="s")
    cfg["engine"] = dict(ENGINE, poll_policy="sleep")
    cfg["port g"] = {"device": "net_af_packet0,iface=ta"}
    cfg["port s"] = {"device": "net_af_packet1,iface=tb,framecnt=16384"}
    return cfg


def test_one_process_tester_sends_and_counts_its_own_frames(lab, dp_binary):
    h = lab.topo.hosts["dp"]
    lab.topo.link(h, "ta", h, "tb", mac_a=TESTER_A, mac_b=TESTER_B)
    h.offload_off("ta")
    h.offload_off("tb")
    with Dp(h, one_worker_tester_config(), name="tester", binary_path=dp_binary) as t:
        t.ctl("sink-reset")
        t.ctl("gen-start", count=20000)
        deadline = time.monotonic() + 30
        while t.ctl("gen-stats")["running"]:
            assert time.monotonic() < deadline, t.ctl("gen-stats")
            time.sleep(0.1)
        g = t.ctl("gen-stats")
        deadline = time.monotonic() + 10
        while t.ctl("sink-stats")["rx_pkts"] < g["sent_pkts"] and time.monotonic() < deadline:
            time.sleep(0.1)
        s = t.ctl("sink-stats", worker="gen0")
        check_no_loss(g, s)
        check_latency(s)
        assert [w["worker"] for w in s["workers"]] == ["gen0"], s
        # The frames went through the worker's own "sink" stage, after gen_tx.
        st = t.stages()
        # The kernel may send a frame of its own on the veth (IPv6 router
        # solicitation, MLD) between the two reads: the stage counts it as
        # foreign in its own drops, read with pkts_in.
        foreign = st["sink"]["drops"].get("sink_foreign", 0)
        assert st["sink"]["pkts_in"] - foreign == s["rx_pkts"], (st["sink"], s)
        assert st["gen_tx"]["pkts_tx"] == g["sent_pkts"], st["gen_tx"]
        # Its pause ends on a returning frame (ppoll on the rx socket).
        w = t.ctl("power")["workers"][0]
        assert "rx queues' sockets" in w["poll"]["mechanism"], w["poll"]
        assert t.stop(timeout=15) == 0


def test_gen_worker_with_rx_on_a_port_without_a_socket_passes_check(dp_binary):
    # net_ring has no socket: the wait falls back to the timer; still valid.
    cfg = gen_config(rx="r")
    cfg["port r"] = {"device": "net_ring0"}
    res, _ = check_config(cfg, binary_path=dp_binary)
    assert res.returncode == 0, res.stderr


def test_gen_and_sink_stop_cleanly(lab):
    # Last test on the shared lab: exit status 0, "stopped cleanly", socket
    # removed, no core (and, on a sanitizer build, no report at teardown).
    lab.gen.ctl("gen-start", count=0, rate_pps=10000)   # stop while sending
    time.sleep(0.2)
    assert lab.gen.stop(timeout=15) == 0
    assert lab.sink.stop(timeout=15) == 0


@pytest.mark.parametrize("keys,needle", [
    ({"dst_mac": None}, "dst_mac: required"),
    ({"tx": None}, "missing 'tx = <port>'"),
    ({"tx": "nowhere"}, "no [port nowhere]"),
    ({"size": "imix-sideways"}, "size"),
    ({"flow": "4"}, "flow"),
], ids=["no-dst-mac", "no-tx", "unknown-tx-port", "bad-size", "misspelt-key"])
def test_bad_generator_config_fails_check(dp_binary, keys, needle):
    cfg = gen_config()
    worker = dict(cfg["worker gen0"])
    for k, v in keys.items():
        if v is None:
            worker.pop(k)
        else:
            worker[k] = v
    cfg["worker gen0"] = worker
    res, path = check_config(cfg, binary_path=dp_binary)
    assert res.returncode != 0, res.stdout
    assert needle in res.stderr, res.stderr
    assert str(path) in res.stderr, res.stderr   # errors name the file (and line)


def test_good_config_passes_check(dp_binary):
    res, _ = check_config(gen_config(), binary_path=dp_binary)
    assert res.returncode == 0, res.stderr
    res, _ = check_config(SINK_CONFIG, binary_path=dp_binary)
    assert res.returncode == 0, res.stderr


def test_readme_configuration_example_passes_check(dp_binary):
    readme = Path(__file__).resolve().parent.parent / "dataplane" / "gen" / "README.md"
    blocks = [b.split("```", 1)[0] for b in readme.read_text().split("```ini\n")[1:]]
    assert len(blocks) >= 2   # the generator and sink, the tester in one worker
    for block in blocks:
        res, _ = check_config(block, binary_path=dp_binary)
        assert res.returncode == 0, (block, res.stderr)
