"""Polling policies on a live router: chosen per worker in the configuration,
changed at run time over the control socket, refused by name where this
machine cannot do them, and the power telemetry they report.

One router lab with the benchmark tester (gen in a, sink in b) for the
module; each test sets the policies it needs and puts busy polling back.
"""
import time
from pathlib import Path

import pytest

from bench.bench_rfc2544_router import ROUTED
from bench.bench_rfc2544_router import Tester as RfcTester
from lab.dp import CtlError, check_config
from lab.router_lab import B4, RouterLab, router_sections

SMALL = {"max_routes4": 1024, "max_routes6": 1024, "lpm4_tbl8s": 64, "lpm6_tbl8s": 256,
         "max_acl_rules": 1024}


@pytest.fixture(scope="module")
def lab(request, router_pipeline):
    lab = RouterLab(tag="pw", routes=[(ROUTED, B4)], router=SMALL,
                    engine={"poll_policy": "sleep", "idle_polls": 50})
    request.addfinalizer(lab.close)
    lab.__enter__()
    tester = RfcTester(lab).__enter__()
    request.addfinalizer(tester.close)
    lab.tester = tester
    return lab


def power(dp):
    return dp.ctl("power", worker="w0")["workers"][0]


def send(lab, pps, seconds):
    """Generator traffic through the router; (sent, received)."""
    t = lab.tester
    t.sink.ctl("sink-reset")
    t.gen.ctl("gen-start", rate_pps=pps, count=int(pps * seconds), size="64")
    deadline = time.monotonic() + seconds * 5 + 5
    while t.gen.ctl("gen-stats")["running"] and time.monotonic() < deadline:
        time.sleep(0.05)
    t._drain()
    return t.gen.ctl("gen-stats")["sent_pkts"], t.sink.ctl("sink-stats")["rx_pkts"]


def test_configured_policy_is_applied_at_start(lab):
    w = power(lab.dp)
    assert w["poll"]["poll_policy"] == "sleep" and w["poll"]["idle_polls"] == 50, w
    assert w["poll"]["mechanism"] == "timed ppoll on the message eventfd"
    assert lab.dp.workers()[0]["poll_policy"] == "sleep"


@pytest.mark.parametrize("policy", ["busy", "sleep", "sleep-rx", "dpdk-pmgmt"])
def test_policy_changed_at_run_time_forwards_every_frame(lab, policy):
    dp = lab.dp
    before = power(dp)["policy_changes"]
    r = dp.ctl("poll-set", worker="w0", poll_policy=policy, idle_polls=20)
    assert r["workers"][0]["poll"]["poll_policy"] == policy
    assert power(dp)["policy_changes"] == before + 1
    sent, received = send(lab, 2000, 0.5)
    assert sent == 1000 and received == sent, (policy, sent, received)


def test_sleep_rx_wakes_on_frames_and_samples_their_stamps(lab):
    dp = lab.dp
    dp.ctl("poll-set", worker="w0", poll_policy="sleep-rx", idle_polls=20, max_sleep_us=1000)
    dp.ctl("power-reset", worker="w0")
    before = power(dp)
    sent, received = send(lab, 1000, 1.0)
    w = power(dp)
    assert received == sent == 1000
    assert w["poll"]["mechanism"].startswith("ppoll")
    # At 1 kpps the worker waits between frames and wakes for them: the
    # frame that woke it carries the generator's stamp.
    assert w["sleeps"] - before["sleeps"] > 100, (before, w)
    assert w["wakeups_with_rx"] > 100 and w["wake_latency"]["samples"] > 100, w
    # The hosts' own frames (ARP, neighbour discovery) carry no stamp.
    assert w["stamps_invalid"] == 0 and w["stamps_missing"] < 20, w
    assert 0 < w["wake_latency"]["p50_ns"] <= w["wake_latency"]["max_ns"]
    assert w["sleep_cycles"] - before["sleep_cycles"] > 0
    assert w["cpu_ns"] > before["cpu_ns"]


def test_unsupported_policies_refused_by_name_and_nothing_changes(lab):
    dp = lab.dp
    dp.ctl("poll-set", worker="w0", poll_policy="sleep", idle_polls=30)
    cpu = dp.ctl("power")["cpu"]
    cases = [({"poll_policy": "dpdk-pmgmt", "pmgmt_mode": "monitor"},
              "UMONITOR/UMWAIT" if not cpu["dpdk_monitor"] else "gives no rx descriptor"),
             ({"poll_policy": "sleep", "idle_polls": 0}, "idle_polls = 0"),
             ({"poll_policy": "turbo"}, "expected one of busy, sleep, sleep-rx")]
    if not (cpu["waitpkg"] or cpu["monitorx"]):
        cases.append(({"poll_policy": "cpu-wait"}, "neither UMONITOR/UMWAIT"))
    for fields, words in cases:
        with pytest.raises(CtlError) as exc:
            dp.ctl("poll-set", worker="w0", **fields)
        assert words in exc.value.error, (fields, exc.value.error)
        w = power(dp)
        assert w["poll"]["poll_policy"] == "sleep" and w["poll"]["idle_polls"] == 30, w


def test_cpufreq_refused_with_the_hosts_reason_or_applied(lab):
    dp = lab.dp
    try:
        r = dp.ctl("poll-set", worker="w0", poll_policy="sleep", cpufreq="on")
    except CtlError as exc:
        # A VM without cpufreq, or a worker not pinned to one CPU.
        assert "cpufreq = on: " in exc.error
        assert "cpufreq driver" in exc.error or "pinned to one CPU" in exc.error
        assert power(dp)["poll"]["cpufreq"] is False
        return
    assert r["workers"][0]["cpufreq"]["high_khz"] > r["workers"][0]["cpufreq"]["low_khz"]
    dp.ctl("poll-set", worker="w0", cpufreq="off")


def test_power_reports_the_energy_source_it_used(lab):
    r = lab.dp.ctl("power")
    e = r["energy"]
    assert e["source"] in ("rapl", "cpu_time")
    if e["source"] == "cpu_time":
        assert "proxy" in e["note"]
    else:
        assert e["energy_uj"] >= 0 and e["zones"]
    assert [w["name"] for w in r["workers"]] == ["w0"]
    with pytest.raises(CtlError, match="no worker named 'nope'"):
        lab.dp.ctl("power", worker="nope")
    with pytest.raises(CtlError, match="nothing to set"):
        lab.dp.ctl("poll-set", worker="w0")


# Each: (id, [engine] keys, [worker w0] keys, words of the refusal, key marked).
CONFIG_CASES = [
    ("unknown_policy_lists_policies", {}, {"poll_policy": "turbo"},
     ["key 'poll_policy'", "busy, sleep, sleep-rx, cpu-wait, dpdk-pmgmt"], "poll_policy"),
    ("worker_max_below_min", {}, {"min_sleep_us": 50, "max_sleep_us": 10},
     ["[worker w0]", "max_sleep_us is below min_sleep_us"], None),
    ("idle_polls_zero_with_a_pausing_policy", {"poll_policy": "sleep-rx"}, {"idle_polls": 0},
     ["worker w0", "idle_polls = 0"], "idle_polls"),
    ("pmgmt_mode_unknown", {}, {"poll_policy": "dpdk-pmgmt", "pmgmt_mode": "umwait"},
     ["key 'pmgmt_mode'", "pause, monitor, scale"], "pmgmt_mode"),
]


@pytest.mark.parametrize("engine,worker,words,key", [c[1:] for c in CONFIG_CASES],
                         ids=[c[0] for c in CONFIG_CASES])
def test_bad_policy_configuration_refused_with_its_line(tmp_path, router_pipeline, engine, worker,
                                                        words, key):
    sections = router_sections(engine=engine)
    sections["worker w0"].update(worker)
    res, path = check_config(sections, workdir=tmp_path)
    assert res.returncode != 0, res.stdout
    for w in words:
        assert w in res.stderr, res.stderr
    if key is not None:
        text = path.read_text().splitlines()
        line = next(i for i, t in enumerate(text, 1) if t.startswith(f"{key} ="))
        assert f"{path}:{line}:" in res.stderr, res.stderr


def test_worker_policy_overrides_the_engine_default(request, dp_binary):
    xc = RouterLab(pipeline="xconnect", tag="pwx", workers=2,
                   engine={"poll_policy": "busy", "max_sleep_us": 200})
    request.addfinalizer(xc.close)
    xc.sections = lambda: _two_policies(router_sections(pipeline="xconnect", workers=2,
                                                        engine=xc.dp_opts["engine"]))
    xc.__enter__()
    ws = {w["name"]: w["poll"] for w in xc.dp.ctl("power")["workers"]}
    assert ws["w0"]["poll_policy"] == "busy", ws
    assert ws["w1"]["poll_policy"] == "sleep-rx" and ws["w1"]["max_sleep_us"] == 200, ws


def _two_policies(sections):
    sections["worker w1"]["poll_policy"] = "sleep-rx"
    return sections


def _cpu_flags():
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# What the machine may lack, judged by --check against the host itself.
HOST_CASES = [
    ("cpu_wait", {"poll_policy": "cpu-wait"}, "poll_policy",
     lambda: bool({"waitpkg", "mwaitx"} & _cpu_flags()), "neither UMONITOR/UMWAIT"),
    ("cpufreq", {"cpufreq": "on"}, "cpufreq",
     lambda: Path("/sys/devices/system/cpu/cpu0/cpufreq").exists(), "no cpufreq driver"),
]


@pytest.mark.parametrize("worker,key,present,words", [c[1:] for c in HOST_CASES],
                         ids=[c[0] for c in HOST_CASES])
def test_what_the_host_lacks_is_refused_at_check(tmp_path, router_pipeline, worker, key, present,
                                                 words):
    sections = router_sections()
    sections["worker w0"].update(worker)
    res, path = check_config(sections, workdir=tmp_path)
    if present():
        assert res.returncode == 0, res.stderr
        return
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1)
                if t.startswith(f"{key} ="))
    assert res.returncode != 0 and f"{path}:{line}:" in res.stderr and words in res.stderr, \
        res.stderr
