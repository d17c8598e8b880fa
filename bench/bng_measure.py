"""Measurement windows for the vBNG benchmarks, ours and the peers' alike.

Two cores are shared with other engineers' builds and tests, so a rate over
wall-clock time says as much about the neighbours as about the code.  Each
window therefore records, besides packets and wall time, the CPU time the
polling threads actually got (/proc/PID/task/TID/schedstat): a
busy-polling thread that is runnable all the time converts CPU time into
packets, so packets per CPU-second is the rate per core it would sustain on
a core of its own.  `mpps_per_core` is that figure; `mpps_wall` is kept for
reference.  Both sides of every ratio are measured the same way, in
alternation, and the ratio is taken of medians over several windows.

Per-stage cycles come from edgeplane-dp's `stages` (TSC around each stage
call): deltas over the window divided by the packets the worker received,
so the stages add up to the pipeline's cycles per packet.
"""
import os
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def threads(pid):
    """{tid: comm} of a process."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(t)] = open(f"/proc/{pid}/task/{t}/comm").read().strip()
        except OSError:
            pass
    return out


def thread_cpu(pid, tid):
    """CPU seconds a thread has run: the scheduler's own clock
    (/proc/.../schedstat, nanoseconds of run time), or where the kernel has
    no schedstat, utime + stime from stat (clock ticks: 10 ms steps, 1 %
    of a 1 s window, and sampled at the tick)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def find_threads(pid, names):
    """tids whose comm is in names (DPDK names lcore threads rte-worker-N;
    the main lcore runs on the process's main thread).

    A name can belong to several threads: a thread nobody names inherits
    its creator's comm, so a helper thread a library starts from the main
    thread, or an EAL control thread read before its creator renamed it,
    carries the main lcore's name.  Where a name is shared the main thread
    (tid == pid) is the one meant; a shared name without it is ambiguous
    and refused.  The CPU time of the wrong thread makes a rate per core
    meaningless: one bng-uplink run recorded l3fwd's LPM peer at
    1.8e5-7.7e5 "Mpps per core" (its wall rate 21 Mpps), the CPU time of a
    thread that never forwarded."""
    by_name = {}
    for tid, comm in threads(pid).items():
        if comm in names:
            by_name.setdefault(comm, []).append(tid)
    missing = set(names) - set(by_name)
    if missing:
        raise RuntimeError(f"pid {pid}: no thread named {sorted(missing)}; "
                           f"have {sorted(threads(pid).values())}")
    out = {}
    for comm, tids in by_name.items():
        if len(tids) == 1:
            out[comm] = tids[0]
        elif pid in tids:
            out[comm] = pid
        else:
            raise RuntimeError(f"pid {pid}: threads {sorted(tids)} are all named {comm!r}")
    return out


class Window:
    """One measurement: counters(): packets so far; cpu_threads: {name: tid}."""

    def __init__(self, pid, tids, counters):
        self.pid, self.tids, self.counters = pid, tids, counters

    def run(self, seconds):
        c0 = self.counters()
        cpu0 = {n: thread_cpu(self.pid, t) for n, t in self.tids.items()}
        t0 = time.monotonic()
        time.sleep(seconds)
        c1 = self.counters()
        cpu1 = {n: thread_cpu(self.pid, t) for n, t in self.tids.items()}
        t1 = time.monotonic()
        return {"wall_s": t1 - t0, "c0": c0, "c1": c1,
                "cpu_s": {n: cpu1[n] - cpu0[n] for n in self.tids}}


def rate(pkts, seconds):
    return pkts / seconds / 1e6 if seconds > 0 else 0.0
