"""A/B alternation: ours and its peers measured in turn, in rounds.

The machine's two cores are shared with other people's builds and tests,
so a figure measured once says as much about the neighbours as about the
code.  Every benchmark with a peer therefore measures the subjects of a
comparison one after the other, round after round, and reports medians
over rounds and the ratio of figures measured back to back; the per-round
values stay in the JSON, so a reader sees the spread.

    rounds = alternate([ours, peer], rounds=5, warmup_s=1.0, window_s=2.0)
    rounds[ours]                       # [one dict per round]
    medians(rounds[ours])              # {key: median over rounds}, nested too
    ratio(rounds[ours], rounds[peer], "mpps_per_core")   # (median, per round)

A subject is anything with a `label` and `measure()` (or
`measure(window_s)`); one that keeps running between its turns (a data
plane or a DPDK example, started once because start-up is expensive) also
has pause() and resume() -- SIGSTOP and SIGCONT, so a stopped process holds
its memory and takes no CPU while the other one is measured.  The order of
the subjects rotates by round, so no subject always runs first (after the
same neighbour).
"""
import signal
import statistics
import time


class Subject:
    """One side of a comparison.  Subclasses define measure(); processes
    that run between turns define pause() and resume()."""

    label = ""

    def pause(self):
        pass

    def resume(self):
        pass

    def measure(self, window_s=None):
        raise NotImplementedError

    def describe(self, r):
        """One round's result, short, for the progress log."""
        return describe(r)


class Process(Subject):
    """A subject that is a running process: self.proc (a Popen or a
    lab.dp.Dp) is paused and resumed around its turns."""

    proc = None

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)


class DpProcess(Process):
    """A Process that is an edgeplane-dp (self.dp, a lab.dp.Dp): started on
    entry, then _ready() (the subclass's checks and lookups, returning
    self); stopped on exit, and also when _ready() raises, since a
    context manager's __exit__ is not called when its __enter__ raises
    (an A/B that failed there left a worker spinning on the bench CPU)."""

    dp = None

    def __enter__(self):
        self.dp.start()
        try:
            return self._ready()
        except BaseException:
            self.dp.close()
            raise

    def __exit__(self, *exc):
        self.dp.close()

    def _ready(self):
        return self


class Call(Subject):
    """A subject whose every round is a call: fn() -> dict (a run of a
    tool, a search over rates)."""

    def __init__(self, label, fn, describe_fn=None):
        self.label, self.fn, self.describe_fn = label, fn, describe_fn

    def measure(self, window_s=None):
        return self.fn()

    def describe(self, r):
        return self.describe_fn(r) if self.describe_fn else describe(r)


def describe(r):
    """The headline of a result dict: Mpps per core where there is one."""
    if isinstance(r, dict):
        if isinstance(r.get("mpps_per_core"), (int, float)):
            return f"{r['mpps_per_core']:.3f} Mpps/core"
        inner = [f"{k} {v['mpps_per_core']:.3f}" for k, v in r.items()
                 if isinstance(v, dict) and isinstance(v.get("mpps_per_core"), (int, float))]
        if inner:
            return ", ".join(inner) + " Mpps/core"
        for k, v in r.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return f"{k} {v:.4g}"
    return str(r)[:60]


class Rounds(dict):
    """{label: [one result per round]}, indexable by the subject too."""

    def __getitem__(self, key):
        return super().__getitem__(getattr(key, "label", key))


def alternate(subjects, rounds, warmup_s=0.0, window_s=None, log=print, rotate=True, first=0):
    """`rounds` rounds; in each, every subject alone in turn: resume, warm
    up, measure, pause.  The starting subject moves by one each round
    (from index `first`) unless rotate is False.  Subjects are resumed
    when it returns or fails (their owners stop them)."""
    subjects = [s for s in subjects if s is not None]
    labels = [s.label for s in subjects]
    if len(set(labels)) != len(labels):
        raise ValueError(f"subjects need distinct labels: {labels}")
    res = Rounds({s.label: [] for s in subjects})
    for s in subjects:
        s.pause()
    try:
        for i in range(rounds):
            k = (first + i) % len(subjects) if rotate else 0
            for s in subjects[k:] + subjects[:k]:
                s.resume()
                if warmup_s:
                    time.sleep(warmup_s)
                res[s].append(s.measure(window_s) if window_s is not None else s.measure())
                s.pause()
            if log:
                log(f"  round {i + 1}/{rounds}: " + "; ".join(
                    f"{s.label} {s.describe(res[s][-1])}" for s in subjects))
    finally:
        for s in subjects:
            s.resume()
    return res


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def medians(results, keys=None):
    """{key: median over rounds} of the numbers in a list of result dicts,
    nested dicts by key too (stages); other values are left out."""
    if not results:
        return {}
    out = {}
    for k in keys or results[0]:
        vals = [r.get(k) for r in results if isinstance(r, dict)]
        if all(isinstance(v, dict) for v in vals):
            out[k] = medians(vals)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            out[k] = median(vals)
    return out


def per_round(a, b, key, key_b=None):
    """[a[i][key] / b[i][key_b]] over the rounds (both measured back to
    back), a round whose divisor is 0 left out.  key may be a function."""
    fa = key if callable(key) else (lambda r: r[key])
    kb = key_b or key
    fb = kb if callable(kb) else (lambda r: r[kb])
    return [fa(x) / fb(y) for x, y in zip(a, b) if fb(y)]


def ratio(a, b, key, key_b=None):
    """(median of the per-round ratios, the per-round ratios rounded)."""
    rs = per_round(a, b, key, key_b)
    return median(rs), [round(x, 4) for x in rs]


# Processes of each side in a goal's comparison (bench_router,
# bench_bng_uplink), alternated together and pooled by pooled_ratio.
GOAL_PROCS = 2


def pooled_ratio(procs_a, procs_b, key, key_b=None):
    """ratio() with several processes a side (each a list of per-round
    results from the same alternation): per round, the mean of each side's
    processes, then their quotient.  Where a process lands in memory (its
    pages, its libraries' addresses) moves its figure by a few percent for
    its whole life (two copies of one build: 2-4 %), which no number of
    rounds of one process averages out; processes of each side do
    (Mytkowicz et al., "Producing Wrong Data Without Doing Anything
    Obviously Wrong!", ASPLOS 2009: measure over several setups)."""
    fa = key if callable(key) else (lambda r: r[key])
    kb = key_b or key
    fb = kb if callable(kb) else (lambda r: r[kb])
    n = min(len(p) for p in list(procs_a) + list(procs_b))
    rs = []
    for i in range(n):
        b = statistics.fmean(fb(p[i]) for p in procs_b)
        if b:
            rs.append(statistics.fmean(fa(p[i]) for p in procs_a) / b)
    return median(rs), [round(x, 4) for x in rs]

