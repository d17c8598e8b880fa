"""The engine under real traffic, on the xconnect pipeline (no router needed):
clean shutdown on signals while iperf3 runs, and adaptive polling."""
import signal
import time

import pytest

from lab.probe import udp_probe
from lab.router_lab import RouterLab
from lab.traffic import iperf3, iperf3_start

PEER_B = "198.18.0.3"  # host b in the xconnect lab


def wait_for_traffic(dp, min_pkts=1000, timeout=10):
    """Until the workers have received min_pkts more packets (the flow is up)."""
    start = sum(w["rx_pkts"] for w in dp.workers())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(w["rx_pkts"] for w in dp.workers()) - start >= min_pkts:
            return
        time.sleep(0.1)
    pytest.fail(f"no traffic through edgeplane-dp within {timeout} s")


def test_xconnect_lab_carries_iperf3_tcp(xconnect_lab):
    r = iperf3(xconnect_lab.a, PEER_B, seconds=2)
    assert r.received_bytes > 0, r
    xc = xconnect_lab.dp.stages()["xconnect"]
    assert xc["pkts_tx"] > 1000 and xc["pkts_dropped"] == 0, xc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_signal_during_iperf3_stops_cleanly(xconnect_lab, sig):
    dp = xconnect_lab.dp
    client = iperf3_start(xconnect_lab.a, PEER_B, udp=True, bitrate="100M", seconds=20)
    wait_for_traffic(dp)
    # Dp.stop checks: exit status 0, "stopped cleanly", socket removed, no core.
    rc = dp.stop(sig=sig, timeout=15)
    assert rc == 0
    out = dp.stdout_path.read_text()
    assert ("Terminated" if sig == signal.SIGTERM else "Interrupt") in out, out
    assert not dp.ctl_path.exists()
    assert not dp.running()
    client.kill()
    client.wait()


def test_shutdown_command_stops_cleanly(xconnect_lab):
    dp = xconnect_lab.dp
    assert dp.ctl("shutdown") == {"stopping": True}
    assert dp.wait(timeout=15) == 0
    out = dp.stdout_path.read_text()
    assert "shutdown requested" in out and "stopped cleanly" in out, dp.output()
    assert not dp.ctl_path.exists()


def test_idle_worker_sleeps_and_is_mostly_idle(xconnect_lab):
    dp = xconnect_lab.dp
    time.sleep(0.3)
    w0 = dp.workers()[0]
    time.sleep(1.0)
    w1 = dp.workers()[0]
    # No traffic: the worker pauses (RCU-offline sleeps) instead of spinning,
    # and the cycles it counts as busy (the hosts' own ND and router
    # solicitations) are a small part of the window.  Not compared with the
    # empty polls' cycles: a sleeping worker makes few of those either.
    assert w1["sleeps"] > w0["sleeps"], (w0, w1)
    assert w1["sleep_cycles"] > w0["sleep_cycles"]
    d_busy = w1["busy_cycles"] - w0["busy_cycles"]
    d_rest = (w1["idle_cycles"] - w0["idle_cycles"]) + (w1["sleep_cycles"] - w0["sleep_cycles"])
    assert d_busy < d_rest / 10, (d_busy, d_rest)
    assert w1["busy_pct"] < 50.0, w1


def test_sleeping_worker_still_forwards_ping(xconnect_lab):
    dp = xconnect_lab.dp
    time.sleep(0.3)
    before = dp.workers()[0]["sleeps"]
    res = xconnect_lab.ping("a", PEER_B, count=5, interval=0.3)
    assert res.returncode == 0 and " 0% packet loss" in res.stdout, res.stdout
    # It paused between the pings and woke up for every one of them.
    assert dp.workers()[0]["sleeps"] > before


def test_idle_polls_zero_never_sleeps(request, dp_binary):
    lab = RouterLab(pipeline="xconnect", tag="xz", engine={"idle_polls": 0})
    request.addfinalizer(lab.close)
    lab.__enter__()
    time.sleep(0.5)
    w = lab.dp.workers()[0]
    assert w["sleeps"] == 0 and w["polls"] > 0, w
    assert w["empty_polls"] > 0, w


def test_worker_per_port_receives_every_flow(request, dp_binary):
    lab = RouterLab(pipeline="xconnect", tag="xp", workers="per_port")
    request.addfinalizer(lab.close)
    lab.__enter__()
    # 32 flows (source ports): net_af_packet opens a queue pair per tx queue
    # (one per worker) and fans flows out over all of them, so each worker
    # must poll every rx queue of its port.  Fewer datagrams than a socket's
    # ring holds, so a queue nobody polled could not hide behind rollover.
    got = udp_probe(lab.a, lab.b, PEER_B, 5201, count=256, interval=0.001, flows=32)
    assert got == 256


def test_two_workers_polling_both_ports_share_the_flows(request, dp_binary):
    lab = RouterLab(pipeline="xconnect", tag="x2", workers=2)
    request.addfinalizer(lab.close)
    lab.__enter__()
    got = udp_probe(lab.a, lab.b, PEER_B, 5201, count=256, interval=0.001, flows=32)
    assert got == 256
    rx = [w["rx_pkts"] for w in lab.dp.workers()]
    # net_af_packet's fanout spreads the flows over both workers' queues.
    assert len(rx) == 2 and min(rx) > 0, rx
