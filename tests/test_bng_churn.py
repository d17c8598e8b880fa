"""Subscribers added and removed while traffic flows.

Subscriber A runs iperf3 UDP both ways at a modest rate while B is deleted
and re-added, and batches of synthetic subscribers are added with
sub-add-bulk and deleted one by one, many times over.  A must lose
nothing (the receivers' iperf3 counts, `lost_packets == 0`); B's traffic
while it does not exist is dropped and counted as bng_unknown_subscriber;
once re-added B works again.  This exercises the RCU paths of the
subscriber hash, the record array, both LPMs and the HQoS pipe messages
while A's packets read them.
"""
import time

import pytest

from lab.bng_lab import (CORE4, Subscriber, bng_available, open_lab, sub_counters)
from lab.traffic import Iperf3Server, iperf3_finish, iperf3_start

CYCLES = 25
BULK = 100


def _synthetic(base, n):
    """sub-add objects for n subscribers nobody sends for (QinQ 300/x)."""
    out = []
    for i in range(n):
        sid = base + i
        out.append({"id": sid, "qinq": f"300.{1 + i}", "mac": f"02:00:00:20:{i >> 8:02x}:{i & 0xff:02x}",
                    "ipv4": f"198.19.{(i >> 8) & 0xff}.{i & 0xff}",
                    "ipv6": f"2001:db8:{0x2000 + i:x}::/56", "pipe": "fast", "subport": 0})
    return out


@pytest.fixture
def lab(request, dp_binary):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    return open_lab(request, [Subscriber("a", id=10, qinq=(100, 210)),
                              Subscriber("b", id=11, qinq=(100, 211))], tag="bc",
                    bng_extra={"max_subscribers": 1024}, subports={0: "rate=1G pipes=256"})


def _ping_ok(host, dst, count=3):
    r = host.run(["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "1", dst], check=False)
    return r.returncode == 0 and f" {count} received" in r.stdout


def test_bng_churn_other_subscribers_lose_nothing(lab):
    a, b = lab.sub("a"), lab.sub("b")
    Iperf3Server(lab.core, port=5201)
    Iperf3Server(lab.core, port=5202)
    assert _ping_ok(b.host, CORE4), "B does not work before the churn"
    # A: 2 Mbit/s each way for the whole churn (about 200 datagrams/s each).
    seconds = 12
    up = iperf3_start(a.host, CORE4, udp=True, bitrate="2M", seconds=seconds, length=1200,
                      port=5201)
    down = iperf3_start(a.host, CORE4, udp=True, bitrate="2M", seconds=seconds, length=1200,
                        port=5202, extra=["-R"])
    time.sleep(1.0)
    # B keeps sending (20 pings/s) through all of it.
    pinger = b.host.popen(["ping", "-n", "-i", "0.05", "-W", "1", "-w", str(seconds - 2),
                           CORE4])
    unknown0 = lab.dp.drops().get("bng_unknown_subscriber", 0)
    b_fields = b.fields()
    deleted_for = 0.0
    t_end = time.monotonic() + seconds - 3
    cycles = 0
    while cycles < CYCLES or time.monotonic() < t_end:
        if time.monotonic() > t_end + 5:
            break
        lab.dp.ctl("sub-del", id=b.id)
        t0 = time.monotonic()
        lab.dp.ctl("sub-add-bulk", subscribers=_synthetic(500, BULK))
        for sid in range(500, 500 + BULK, 5):
            lab.dp.ctl("sub-del", id=sid)
        time.sleep(0.1)                       # B's pings meet a BNG without B
        deleted_for += time.monotonic() - t0
        lab.dp.ctl("sub-add", **b_fields)
        for sid in range(500, 500 + BULK):
            if sid % 5:
                lab.dp.ctl("sub-del", id=sid)
        cycles += 1
    r_up = iperf3_finish(up, timeout=seconds + 30)
    r_down = iperf3_finish(down, timeout=seconds + 30)
    pinger.wait(timeout=seconds + 10)
    unknown = lab.dp.drops().get("bng_unknown_subscriber", 0) - unknown0

    assert cycles >= CYCLES
    # A lost nothing, in either direction.
    assert r_up.packets > 1000 and r_up.lost_packets == 0, r_up
    assert r_down.packets > 1000 and r_down.lost_packets == 0, r_down
    # B's packets while it was deleted were dropped as unknown (at 20/s,
    # about deleted_for * 20 of them; at least a third, pings are bursty
    # against 100 ms windows).
    assert unknown >= max(1, deleted_for * 20 / 3), (unknown, deleted_for)
    # Re-added, B works again, and the synthetic subscribers are all gone.
    assert _ping_ok(b.host, CORE4), "B does not work after it was re-added"
    assert sub_counters(lab.dp, b.id)[0] > 0
    listed = lab.dp.ctl("sub-list", limit=1000)
    ids = {s["id"] for s in listed["subscribers"]}
    assert ids == {a.id, b.id}, sorted(ids)


def test_bng_sub_del_then_add_restores_downlink(lab):
    """Downlink to a deleted subscriber is dropped (no owner of the address);
    re-added it is delivered again."""
    b = lab.sub("b")
    fields = b.fields()
    no_sub0 = lab.dp.drops().get("bng_no_subscriber", 0)
    lab.dp.ctl("sub-del", id=b.id)
    r = lab.core.run(["ping", "-n", "-c", "3", "-i", "0.2", "-W", "1", b.ipv4], check=False)
    assert r.returncode != 0
    assert lab.dp.drops().get("bng_no_subscriber", 0) - no_sub0 >= 3
    lab.dp.ctl("sub-add", **fields)
    assert _ping_ok(lab.core, b.ipv4)
