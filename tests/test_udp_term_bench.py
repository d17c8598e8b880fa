"""The udp-term benchmark's method (bench/bench_udp_term.py): the search for
the zero-loss rate and the confirming run, driven by a model of a link
with a known capacity instead of iperf3 (no namespaces, no timing), and
the per-round ratios.  The benchmark itself is `make bench BENCH=udp-term`."""
import pytest

from bench.bench_udp_term import LOSS_MAX, confirm, per_round, timehist_hops, zero_loss_search

GBIT = 1e9


class Link:
    """A receiver that takes `capacity` bit/s and loses the rest; a sender
    that offers `rate` (0: as fast as it goes, `sender_max`)."""

    def __init__(self, capacity, sender_max):
        self.capacity, self.sender_max = capacity, sender_max
        self.rates = []

    def __call__(self, rate):
        self.rates.append(rate)
        sent = self.sender_max if rate == 0 else min(rate, self.sender_max)
        received = min(sent, self.capacity)
        return {"sent_bps": sent, "received_bps": received,
                "loss_pct": 100.0 * (sent - received) / sent}


def test_search_takes_minus_b_0_when_it_loses_nothing():
    link = Link(capacity=5 * GBIT, sender_max=2 * GBIT)
    rate, best, trail = zero_loss_search(link)
    assert rate == 0 and link.rates == [0]
    assert best["received_bps"] == 2 * GBIT and len(trail) == 1


def test_search_brackets_and_bisects_to_the_zero_loss_rate():
    # A first guess far too high halves to a lower bound (0.75), then the
    # bisection climbs to within 2 % under the capacity.
    link = Link(capacity=1.3 * GBIT, sender_max=4 * GBIT)
    rate, best, trail = zero_loss_search(link, max_probes=16, tol=0.02, start=3 * GBIT)
    assert link.rates[:4] == [0, 3 * GBIT, 1.5 * GBIT, 0.75 * GBIT]
    assert 0.98 * 1.3 * GBIT <= rate <= 1.3 * GBIT
    assert best["loss_pct"] <= LOSS_MAX
    assert best["offered_bps"] == rate
    assert [r["offered_bps"] for r in trail] == link.rates


def test_search_climbs_above_the_previous_rounds_answer():
    # Last round's answer (0.5) is below this round's capacity (1.5): the
    # search must go up from it, not stay there.
    link = Link(capacity=1.5 * GBIT, sender_max=4 * GBIT)
    rate, _best, _trail = zero_loss_search(link, max_probes=10, start=0.5 * GBIT)
    assert link.rates[1] == 0.5 * GBIT
    assert rate > 1.2 * GBIT


def test_search_halves_a_lossy_guess_until_one_passes():
    # The previous round's answer is far above this round's capacity.
    link = Link(capacity=0.3 * GBIT, sender_max=4 * GBIT)
    rate, best, _trail = zero_loss_search(link, max_probes=10, start=2 * GBIT)
    assert link.rates[1:3] == [2 * GBIT, 1 * GBIT]
    assert 0 < rate <= 0.3 * GBIT and best is not None


def test_search_spends_no_more_than_its_probe_budget_once_bracketed():
    link = Link(capacity=1.3 * GBIT, sender_max=4 * GBIT)
    rate, best, trail = zero_loss_search(link, max_probes=4)
    assert len(trail) == 4 and len(link.rates) == 4
    assert rate == 1.3 * GBIT and best["offered_bps"] == rate


def test_search_stops_halving_and_returns_an_untried_lower_rate():
    link = Link(capacity=0.001 * GBIT, sender_max=4 * GBIT)
    rate, best, trail = zero_loss_search(link, max_probes=4, start=3 * GBIT, max_halvings=3)
    assert best is None
    assert link.rates == [0, 3 * GBIT, 1.5 * GBIT, 0.75 * GBIT, 0.375 * GBIT]
    assert rate == 0.1875 * GBIT and len(trail) == 5


@pytest.mark.parametrize("capacity,steps", [(3 * GBIT, 1), (1.9 * GBIT, 2)])
def test_confirm_steps_down_once_when_the_long_run_loses(capacity, steps):
    link = Link(capacity=capacity, sender_max=4 * GBIT)
    best, runs = confirm(link, 2 * GBIT)
    assert len(runs) == steps
    assert best["loss_pct"] <= LOSS_MAX and not best["loss_over_limit"]
    assert best["offered_bps"] == (2 * GBIT if steps == 1 else 1.8 * GBIT)


def test_confirm_flags_a_round_that_never_met_the_loss_limit():
    link = Link(capacity=1 * GBIT, sender_max=4 * GBIT)
    best, runs = confirm(link, 0)
    assert len(runs) == 2 and runs[1]["offered_bps"] == pytest.approx(3.6 * GBIT)
    assert best["loss_over_limit"]
    assert best["loss_pct"] == min(r["loss_pct"] for r in runs)


def test_per_round_ratios_pair_the_rounds_and_skip_a_zero_divisor():
    ours = [{"x": 4.0}, {"x": 3.0}, {"x": 5.0}]
    kernel = [{"x": 2.0}, {"x": 0.0}, {"x": 1.0}]
    assert per_round(ours, kernel, lambda t: t["x"]) == [2.0, 5.0]


# `perf sched timehist -w` lines as perf 6.x prints them: a wake-up names
# the waker and the wakee; a switch-out line gives wait, scheduling delay
# and run time in ms.  One round trip of ours: client (sockperf 300) kicks
# worker a (dp pid 100), which sends the frame that wakes worker b (dp pid
# 200), which wakes the server (sockperf 301); worker a wakes the client
# with the answer; another tenant (cc1) wakes worker b once.
TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
 --------------- ------ ------------------------------  ---------  ---------  ---------
   100.000000 [0000]  sockperf[300]                                           awakened: rte-worker-0[101/100]
   100.000010 [0000]  sockperf[300]                       0.050      0.004      0.006
   100.000030 [0000]  rte-worker-0[101/100]                                  awakened: rte-worker-0[201/200]
   100.000040 [0000]  rte-worker-0[101/100]               0.100      0.003      0.030
   100.000060 [0001]  rte-worker-0[201/200]                                  awakened: sockperf[301]
   100.000070 [0001]  rte-worker-0[201/200]               0.100      0.020      0.025
   100.000090 [0001]  sockperf[301]                        0.100      0.012      0.007
   100.000092 [0001]  cc1[400]                                                awakened: rte-worker-0[201/200]
   100.000093 [0001]  rte-worker-0[201/200]               0.010      0.001      0.002
   100.000095 [0000]  rte-worker-0[101/100]                                  awakened: sockperf[300]
   100.000120 [0000]  sockperf[300]                        0.080      0.900      0.005
"""


def test_timehist_hops_names_the_threads_and_times_each_hop():
    out = timehist_hops(TIMEHIST, {"100": "a", "200": "b"})
    hops = out["hops"]
    assert hops == {} or set(hops) <= {"client -> worker a", "worker a -> worker b",
                                       "worker b -> server"}
    # fewer than 10 wake-ups per hop are not reported: repeat the trip
    many = "\n".join([TIMEHIST] + [l for _ in range(12) for l in TIMEHIST.splitlines()[3:]])
    out = timehist_hops(many, {"100": "a", "200": "b"})
    assert out["hops"]["worker a -> worker b"]["p50"] == 20.0
    assert out["hops"]["worker b -> server"]["p50"] == 12.0
    assert out["hops"]["client -> worker a"]["p50"] == 3.0
    assert out["hops"]["worker a -> client"]["p50"] == 900.0
    # a wake-up by another tenant's thread is no hop of the round trip
    assert not any(k.startswith("cc1") or k.startswith("other") for k in out["hops"])
    assert out["threads"]["worker b"]["switches"] == 13 * 2
    assert out["threads"]["client"]["p99"] == 900.0
    assert out["threads"]["worker b"]["run_p50"] == 25.0
