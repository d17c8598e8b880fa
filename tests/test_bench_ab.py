"""bench/ab.py's ratios over rounds: one process a side (ratio) and
several (pooled_ratio), where each side's processes are averaged per round
before the quotient, so one process's lasting offset (its place in memory)
counts once among them instead of deciding the figure."""
import pytest

from bench import ab


def rounds(*values, key="mpps_per_core"):
    return [{key: v} for v in values]


def test_ratio_is_the_median_of_the_rounds_quotients():
    med, per = ab.ratio(rounds(10, 20, 30), rounds(10, 10, 10), "mpps_per_core")
    assert med == 2.0 and per == [1.0, 2.0, 3.0]


def test_pooled_ratio_averages_each_sides_processes_per_round():
    # Ours: two processes, one 4 % slower for its whole life; the peer's two level.
    ours = [rounds(10.0, 10.0, 10.0), rounds(9.6, 9.6, 9.6)]
    peer = [rounds(10.0, 10.0, 10.0), rounds(10.0, 10.0, 10.0)]
    med, per = ab.pooled_ratio(ours, peer, "mpps_per_core")
    assert med == pytest.approx(0.98) and per == [0.98, 0.98, 0.98]
    # One process a side gives ratio()'s figure.
    assert ab.pooled_ratio(ours[:1], peer[:1], "mpps_per_core") == \
        ab.ratio(ours[0], peer[0], "mpps_per_core")


def test_pooled_ratio_keys_may_differ_and_be_functions():
    ours = [[{"up": {"mpps_per_core": 7.0}}], [{"up": {"mpps_per_core": 9.0}}]]
    peer = [rounds(10.0), rounds(10.0)]
    med, per = ab.pooled_ratio(ours, peer, lambda r: r["up"]["mpps_per_core"], "mpps_per_core")
    assert med == pytest.approx(0.8) and per == [0.8]


def test_pooled_ratio_uses_the_rounds_every_process_has_and_skips_a_zero_divisor():
    ours = [rounds(5.0, 5.0, 5.0), rounds(5.0, 5.0)]
    peer = [rounds(0.0, 10.0, 10.0), rounds(0.0, 10.0)]
    med, per = ab.pooled_ratio(ours, peer, "mpps_per_core")
    assert per == [0.5] and med == 0.5
