"""The rfc2544-router bench's reading of a latency trial: which element its
p50 names (bench.bench_rfc2544_router.latency_bound) and the parts the p50
is split into (latency_parts).  Pure functions of a trial's record, fed
records shaped as Tester.trial() returns them; no lab."""
import pytest

from bench.bench_rfc2544_router import (bound_with_floor, fast_path_took, latency_bound,
                                        latency_parts, throughput_bound)


def trial(p50, wake_p50, wake_n, poll_p50, poll_n, runq=0.0, cpu=0.3, dut=True):
    d = {"wake_p50_ns": wake_p50, "wake_samples": wake_n, "poll_p50_ns": poll_p50,
         "poll_samples": poll_n, "runq_share": runq, "cpu_share": cpu, "rt_demotions": 0}
    return {"latency_ns": {"p50": p50}, "dut": d if dut else None,
            "tester": {"gen_cpu_share": 0.45, "sink_cpu_share": 0.5}}


@pytest.mark.parametrize("kind,name", [("xdp", "our XDP fast path"),
                                       ("tc", "our tc fast path"),
                                       (None, "our fast path")])
def test_latency_bound_names_the_kind_of_fast_path_that_forwarded_the_trial(kind, name):
    # Our worker saw no frame: its stamp-to-rx (stale) must not be read.
    # The kind is the one the trial's DUT ran (None: a record from before
    # trials said it).
    t = trial(40_000, 70_000, 4_800, 16_000, 500, runq=0.34)
    t["dut"].update(fast_path_forwarded=600_000, fast_path_punted=3)
    if kind:
        t["dut"]["fast_path_kind"] = kind
    got = latency_bound(t, wake_ref_ns=15_000, floor_ns=31_000)
    assert got == (f"the wire and the sink ({name} forwards inside the generator's "
                   "send: 40.0 us against the tester's floor of 31.0 us)")
    t["dut"].update(fast_path_forwarded=500, fast_path_punted=600_000)
    assert not fast_path_took(t["dut"])
    assert latency_bound(t, wake_ref_ns=15_000).startswith("shared cores")


@pytest.mark.parametrize("kind,name", [("xdp", "our XDP fast path"),
                                       ("tc", "our tc fast path")])
def test_throughput_bound_names_the_kind_of_fast_path_for_frames_lost_between_the_rings(
        kind, name):
    failed = {"rate_pps": 500_000, "lost": 40, "sink_ring_drops": 0, "softnet_drops": 0,
              "dut": {"ring_drops": 0, "rt_demotions": 0, "runq_share": 0.0,
                      "fast_path_forwarded": 999_960, "fast_path_punted": 0,
                      "fast_path_kind": kind}}
    s = {"trials": [failed], "probe": dict(failed, rate_pps=0), "tester_limited": False}
    assert throughput_bound(s).startswith(name + " (redirect between the veths")
    failed["dut"]["fast_path_forwarded"] = 0
    assert throughput_bound(s).startswith("the wire: frames lost between the rings")


def test_latency_bound_names_a_woken_worker_that_waited_for_a_cpu():
    # 150 kpps on the shared cores: woken for most bursts, 70 us to rx
    # against 15 us at the common rate, a third of the trial runnable.
    t = trial(100_000, 70_000, 4_800, 16_000, 500, runq=0.34)
    got = latency_bound(t, wake_ref_ns=15_000)
    assert got.startswith("shared cores: most frames found our worker asleep")
    assert "70.0 us against 15.0 us" in got


def test_latency_bound_names_the_wake_up_when_it_costs_what_it_costs_at_the_common_rate():
    t = trial(30_000, 17_000, 6_000, 9_000, 900, runq=0.4)
    assert latency_bound(t, wake_ref_ns=15_000).startswith("wake-up:")
    # Without a reference (the common-rate trial itself) it stays the wake-up.
    assert latency_bound(t).startswith("wake-up:")


def test_latency_bound_names_a_preempted_polling_worker_as_the_shared_cores():
    t = trial(100_000, 20_000, 100, 80_000, 900, runq=0.5)
    assert latency_bound(t, wake_ref_ns=15_000).startswith("shared cores: frames waited")


def test_latency_bound_names_the_sink_side_when_most_of_the_p50_is_after_our_rx():
    t = trial(60_000, 10_000, 5_000, 5_000, 500)
    assert latency_bound(t, wake_ref_ns=15_000).startswith("the wire and the sink")
    assert "kernel forwards" in latency_bound(trial(30_000, 0, 0, 0, 0, dut=False))


def test_latency_parts_splits_ours_at_our_rx_and_the_kernels_at_the_floor():
    floor = {"50000": {"p50_ns": 18_000}, "96000": {"p50_ns": 26_000},
             "150000": {"p50_ns": 35_000}}
    ours = latency_parts(100_000, trial(100_000, 70_000, 4_800, 16_000, 200), floor, 153_000)
    assert ours["tester_floor_ns"] == 35_000 and ours["tester_floor_rate_pps"] == 150_000
    assert ours["above_floor_ns"] == 65_000
    assert ours["stamp_to_our_rx_ns"] == 70_000 and ours["stamp_to_our_rx_after"] == "a wake-up"
    assert ours["our_rx_to_sink_ns"] == 30_000
    assert ours["bursts_after_wake_up"] == 0.96
    linux = latency_parts(31_000, trial(31_000, 0, 0, 0, 0, dut=False), floor, 96_000)
    assert linux == {"p50_ns": 31_000, "tester_floor_ns": 26_000,
                     "tester_floor_rate_pps": 96_000, "above_floor_ns": 5_000}
    assert latency_parts(None, None, floor, 0) is None


def test_latency_bound_with_the_floor_names_the_wake_up_when_after_our_rx_is_the_testers_own():
    # The Xeon host at 376 kpps: 36 us to our rx after a wake-up, 40 us
    # after it, against a tester floor of 30 us: 10 us of the part after
    # our rx is ours, 36 before it.
    t = trial(76_208, 36_135, 11_019, 29_242, 437, runq=0.356)
    assert latency_bound(t, wake_ref_ns=21_513).startswith("the wire and the sink")
    got = latency_bound(t, wake_ref_ns=21_513, floor_ns=30_424)
    assert got.startswith("wake-up: our worker was asleep")
    assert "after our rx 40.1 us against the tester's floor of 30.4 us" in got


def test_latency_bound_with_the_floor_names_the_sink_side_when_after_our_rx_exceeds_it():
    t = trial(100_000, 20_000, 5_000, 8_000, 500, runq=0.2)
    got = latency_bound(t, wake_ref_ns=15_000, floor_ns=30_000)
    assert got.startswith("the wire and the sink: after our rx 80.0 us against the tester's "
                          "floor of 30.0 us")


def test_bound_with_floor_rereads_a_search_result_at_the_nearest_floor_rate():
    floor = {"50000": {"p50_ns": 22_104}, "376051": {"p50_ns": 30_424},
             "263569": {"p50_ns": 28_061}}
    t = trial(76_208, 36_135, 11_019, 29_242, 437, runq=0.356)
    r = {"throughput_pps": 376_051, "latency_p50_ns": 76_208, "wake_ref_ns": 21_513,
         "latency_trial": {"dut": t["dut"], "tester": t["tester"]},
         "bound_by": {"throughput": "x", "latency": latency_bound(t, 21_513)}}
    bound_with_floor(r, floor)
    assert r["bound_by"]["latency"].startswith("wake-up:")
    assert "floor of 30.4 us" in r["bound_by"]["latency"]
    assert r["bound_by"]["throughput"] == "x"


def test_latency_parts_marks_our_stamp_to_rx_not_applicable_when_the_fast_path_forwarded():
    # The worker's stamp-to-rx (70 us after a wake-up) is of the 3 frames
    # it was punted, not of the 600 000 the program forwarded.
    floor = {"150000": {"p50_ns": 35_000}}
    t = trial(40_000, 70_000, 4_800, 16_000, 200)
    t["dut"].update(fast_path_forwarded=600_000, fast_path_punted=3)
    ours = latency_parts(40_000, t, floor, 153_000)
    assert ours["p50_ns"] == 40_000 and ours["above_floor_ns"] == 5_000
    assert ours["stamp_to_our_rx_ns"] is None and ours["our_rx_to_sink_ns"] is None
    assert ours["not_applicable"] == {"stamp_to_our_rx_ns": "fast path forwarded",
                                      "our_rx_to_sink_ns": "fast path forwarded"}
    assert ours["fast_path_share"] == 1.0 and "bursts_after_wake_up" not in ours
    t["dut"].update(fast_path_forwarded=500, fast_path_punted=600_000)
    assert latency_parts(40_000, t, floor, 153_000)["stamp_to_our_rx_ns"] == 70_000
