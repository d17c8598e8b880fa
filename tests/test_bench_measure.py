"""The benchmarks' thread lookup (bench/bng_measure.py) on a real process
whose threads share its name, as any thread nobody names shares its
creator's."""
import subprocess
import sys

import pytest

from bench.bng_measure import find_threads, threads

SHARED_NAME_CHILD = """
import threading, time
for _ in range(3):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture
def child_with_unnamed_threads():
    p = subprocess.Popen([sys.executable, "-c", SHARED_NAME_CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        yield p.pid
    finally:
        p.kill()
        p.wait()


def test_find_threads_takes_the_main_thread_when_its_name_is_shared(child_with_unnamed_threads):
    pid = child_with_unnamed_threads
    comm = open(f"/proc/{pid}/comm").read().strip()
    shared = [t for t, c in threads(pid).items() if c == comm]
    assert len(shared) >= 4          # the main thread and three unnamed ones
    assert find_threads(pid, [comm]) == {comm: pid}


def test_find_threads_refuses_a_name_no_thread_has(child_with_unnamed_threads):
    with pytest.raises(RuntimeError, match="no thread named"):
        find_threads(child_with_unnamed_threads, ["rte-worker-9"])


def test_find_threads_refuses_a_shared_name_without_the_main_thread(child_with_unnamed_threads, monkeypatch):
    pid = child_with_unnamed_threads
    fake = {pid: "main", pid + 1: "rte-worker-1", pid + 2: "rte-worker-1"}
    monkeypatch.setattr("bench.bng_measure.threads", lambda _pid: fake)
    with pytest.raises(RuntimeError, match="all named 'rte-worker-1'"):
        find_threads(pid, ["rte-worker-1"])
