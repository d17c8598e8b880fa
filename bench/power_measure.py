"""Measuring a polling policy under a given load: one slice of traffic.

A slice: the DUT worker gets its policy (`poll-set`, applied between two
bursts, so the DUT keeps running), the generator sends at a fixed rate, and
while it does the DUT worker's CPU time and run-queue wait are read twice
`seconds` apart (edgeplane-dp `power`: the thread's CPU clock and
/proc/self/task/TID/schedstat); then the generator stops, the sink drains,
and loss is what the generator sent minus what the sink received, latency
the sink's histogram (generator TSC stamp to sink rx, both this machine's
TSC).  The CPU window lies inside the sending window, so idle time before
and after the traffic never counts for or against a policy.

    s = Slicer(tester, dut, "w0")
    r = s.run({"poll_policy": "sleep-rx"}, rate_pps=9000, seconds=2.0)
    r["cpu"], r["loss"], r["p99_us"]
"""
import os
import statistics
import time

from lab.dp import CtlError

# The policies measured, as poll-set fields.  `sleep` is the engine's
# default (200 empty polls, 1..100 us); dpdk-pmgmt runs with DPDK's own
# defaults (emptypoll_max 512, pause_duration 1 us: lib/power
# rte_power_pmd_mgmt.c), so it is the library as it ships.
POLICIES = {
    "busy": {"poll_policy": "busy"},
    "sleep": {"poll_policy": "sleep", "idle_polls": 200, "min_sleep_us": 1, "max_sleep_us": 100,
              "cpufreq": "off"},
    "sleep-rx": {"poll_policy": "sleep-rx", "idle_polls": 20, "min_sleep_us": 1,
                 "max_sleep_us": 1000, "cpufreq": "off"},
    "dpdk-pmgmt": {"poll_policy": "dpdk-pmgmt", "idle_polls": 512, "min_sleep_us": 1,
                   "max_sleep_us": 100, "pmgmt_mode": "pause", "cpufreq": "off"},
}
# Alternatives, measured beside the others at 10 % and 60 %: sleep with a
# threshold ten times lower and a ladder that stops at 20 us, and sleep-rx
# with the engine's default threshold (200) instead of 20.
TUNING = {
    "sleep(20,1-20us)": dict(POLICIES["sleep"], idle_polls=20, max_sleep_us=20),
    "sleep-rx(200)": dict(POLICIES["sleep-rx"], idle_polls=200),
}
# Asked for too, so the JSON shows what this machine refuses and why.
MAYBE = {
    "cpu-wait": {"poll_policy": "cpu-wait", "idle_polls": 200, "min_sleep_us": 1,
                 "max_sleep_us": 100, "cpufreq": "off"},
    "dpdk-pmgmt-monitor": {"poll_policy": "dpdk-pmgmt", "idle_polls": 512, "min_sleep_us": 1,
                           "pmgmt_mode": "monitor", "cpufreq": "off"},
    "sleep-rx+cpufreq": {"poll_policy": "sleep-rx", "idle_polls": 200, "min_sleep_us": 1,
                         "max_sleep_us": 1000, "cpufreq": "on"},
}


def probe_refusals(dut, worker, candidates=MAYBE):
    """{name: None if accepted, else the engine's refusal} for each candidate;
    the worker is left busy polling."""
    out = {}
    for name, fields in candidates.items():
        try:
            dut.ctl("poll-set", worker=worker, **fields)
            out[name] = None
        except CtlError as exc:
            out[name] = exc.error
    dut.ctl("poll-set", worker=worker, **POLICIES["busy"])
    return out


def prioritise(dp, nice=-10):
    """Renice every thread of a running edgeplane-dp (the tester's gen and
    sink): the load a DUT is asked to carry is then offered whatever the
    DUT's policy takes from the shared cores.  The DUT keeps nice 0."""
    pid = dp.proc.pid
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.setpriority(os.PRIO_PROCESS, int(tid), nice)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Slicer:
    """Slices of traffic through one DUT worker, with a tester (gen + sink)."""

    def __init__(self, tester, dut, worker, size="64", settle=0.25):
        self.t = tester
        self.dut = dut
        self.worker = worker
        self.size = size
        self.settle = settle

    def set_policy(self, fields):
        self.dut.ctl("poll-set", worker=self.worker, **fields)

    def _power(self):
        r = self.dut.ctl("power", worker=self.worker)
        w = r["workers"][0]
        return {"now_ns": r["now_ns"], "cpu_ns": w["cpu_ns"], "runq_ns": w["runq_wait_ns"],
                "energy_uj": r["energy"].get("energy_uj"), "sleeps": w["sleeps"],
                "wake": w["wake_latency"], "poll": w["poll_latency"],
                "wakeups_with_rx": w["wakeups_with_rx"]}

    def _drain(self, timeout=2.0, quiet=0.15):
        last, since = -1, time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            n = self.t.sink.ctl("sink-stats")["rx_pkts"]
            if n != last:
                last, since = n, time.monotonic()
            elif time.monotonic() - since > quiet:
                return
            time.sleep(0.03)

    def run(self, fields, rate_pps, seconds):
        """One slice at `rate_pps` under policy `fields`; a dict of figures."""
        self.set_policy(fields)
        self.t.sink.ctl("sink-reset")
        self.dut.ctl("power-reset", worker=self.worker)
        self.t.gen.ctl("gen-start", rate_pps=int(rate_pps), count=0, size=self.size)
        time.sleep(self.settle)
        a = self._power()
        time.sleep(seconds)
        b = self._power()
        self.t.gen.ctl("gen-stop")
        self._drain()
        s = self.t.sink.ctl("sink-stats")
        g = self.t.gen.ctl("gen-stats")["workers"][0]
        span = max(1, b["now_ns"] - a["now_ns"])
        sent, rx = g["sent_pkts"], s["rx_pkts"]
        out = {
            "rate_pps": int(rate_pps),
            "offered_pps": round(g["measured_pps"] or 0.0, 1),
            "offered_ok": (g["tx_full_pkts"] == 0 and g["alloc_failed_pkts"] == 0
                           and (g["measured_pps"] or 0) >= 0.97 * rate_pps),
            "cpu": (b["cpu_ns"] - a["cpu_ns"]) / span,
            "runq_wait": (b["runq_ns"] - a["runq_ns"]) / span,
            # Runnable time (on a CPU or queued for one): what the worker
            # would use with a core of its own -- exact for busy polling,
            # an overestimate for a policy that sleeps (its wake-ups queue).
            "demand": (b["cpu_ns"] - a["cpu_ns"] + b["runq_ns"] - a["runq_ns"]) / span,
            "sent": sent, "received": rx, "lost": max(0, sent - rx),
            "loss": max(0, sent - rx) / sent if sent else 0.0,
            "p50_us": s["latency_p50_ns"] / 1e3, "p99_us": s["latency_p99_ns"] / 1e3,
            "wakeups_per_s": (b["sleeps"] - a["sleeps"]) * 1e9 / span,
            "wake_p50_us": b["wake"]["p50_ns"] / 1e3 if b["wake"]["samples"] else None,
            "wake_p99_us": b["wake"]["p99_ns"] / 1e3 if b["wake"]["samples"] else None,
            "wake_samples": b["wake"]["samples"],
            "poll_p50_us": b["poll"]["p50_ns"] / 1e3 if b["poll"]["samples"] else None,
        }
        if a["energy_uj"] is not None and b["energy_uj"] is not None:
            out["watts"] = (b["energy_uj"] - a["energy_uj"]) / (span / 1e3)
        return out


def pair_saving(busy, other, key="cpu"):
    """1 - other/busy for one interleaved pair, None when busy is 0."""
    return 1.0 - other[key] / busy[key] if busy.get(key) else None
