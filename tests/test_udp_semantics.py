"""UDP socket semantics: the same named cases (dataplane/preload/hs_semantics.c)
on the kernel and under libedgeplane-preload.so against edgeplane-dp's host
stack, in one namespace whose loopback and data plane carry the same
addresses.  Each case must pass on both (it checks what the kernel does) and
observe the same on both (return values, errno, sizes, addresses, flags).
"""
import json
import subprocess
import sys
import time

import pytest

from lab.hoststack_lab import SEM4, SEM4B, SemanticsLab, semantics_cases, suite

CASES = semantics_cases()


# The suite's traffic is hairpinned inside the data plane, so its memif
# port carries nothing: its worker blocks between doorbells (`spin_us = 0`)
# instead of yielding, as a worker on a link that wakes it (AF_XDP) does,
# and the library busy-polls before its waits by default (preload_spin.c
# does not spin while a worker polls; see the last test).
BLOCKING_WORKER = {"spin_us": 0}


@pytest.fixture(scope="module")
def lab(request, dp_binary):
    lab = SemanticsLab(binary_path=dp_binary, hoststack=BLOCKING_WORKER)
    request.addfinalizer(lab.close)
    lab.__enter__()
    return lab


@pytest.fixture(scope="module")
def runs(lab):
    kernel = suite(lab, preload=False)
    # The defaults busy-poll before each wait (preload_spin.c, up to
    # EPL_SPIN_US_DEFAULT): that must not change what any call returns, nor
    # must turning it off (EDGEPLANE_PRELOAD_SPIN_US=0: every wait sleeps).
    preload = suite(lab, preload=True)
    nospin = suite(lab, preload=True, env={"EDGEPLANE_PRELOAD_SPIN_US": "0"})
    sockets = lab.dp.ctl("hs-sockets")["count"]
    return {"kernel": kernel, "preload": preload, "preload_nospin": nospin, "sockets_left": sockets,
            "stats": lab.dp.ctl("hs-stats")}


def test_suite_lists_its_cases():
    assert len(CASES) >= 20 and len(set(CASES)) == len(CASES)


@pytest.mark.parametrize("case", CASES)
def test_same_semantics_on_kernel_and_preload(runs, case):
    k, p = runs["kernel"].get(case), runs["preload"].get(case)
    assert k is not None and p is not None, f"{case} did not run: {k} {p}"
    assert k["ok"], f"kernel: {k['why']} ({k['obs']})"
    assert p["ok"], f"preload: {p['why']} ({p['obs']})"
    assert p["obs"] == k["obs"]


@pytest.mark.parametrize("case", CASES)
def test_same_semantics_when_the_library_does_not_spin(runs, case):
    k, p = runs["kernel"].get(case), runs["preload_nospin"].get(case)
    assert p is not None, f"{case} did not run"
    assert p["ok"], f"preload, not spinning: {p['why']} ({p['obs']})"
    assert p["obs"] == k["obs"]


def test_every_socket_of_the_suite_was_freed(runs):
    # Each case ran in its own process, which exited: every socket the
    # data plane held for it must be gone (hang-up of its descriptor).
    assert runs["sockets_left"] == 0


def test_suite_traffic_was_hairpinned_inside_the_data_plane(runs):
    assert sum(w["hairpin"] for w in runs["stats"]["workers"]) > 0


# select() on a mixed set (an accelerated UDP socket and a kernel
# socketpair, both readable), in Python under the library: the first
# answer when the datagram is there, the next one at once, and the answer
# after the datagram was read.
KERNEL_POLL_SCRIPT = f"""
import json, select, socket
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("{SEM4}", 0))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.bind(("{SEM4B}", 0))
k1, k2 = socket.socketpair()
k2.send(b"x")
b.sendto(b"d", a.getsockname())
names = {{a.fileno(): "udp", k1.fileno(): "kernel"}}
p = select.poll()
for fd in names:
    p.register(fd, select.POLLIN)
def sel(t):
    if CALL == "poll":
        return sorted(names[fd] for fd, ev in p.poll(t * 1000))
    return sorted(names[s.fileno()] for s in select.select([a, k1], [], [], t)[0])
first = sel(5)
while "udp" not in first:
    first = sel(5)
again = sel(0)
a.recv(16)
after = sel(0)
print(json.dumps({{"first": first, "again": again, "after": after}}))
"""


def _kernel_poll_run(lab, us, call):
    script = f"CALL = {call!r}\n" + KERNEL_POLL_SCRIPT
    res = lab.run("s", [sys.executable, "-c", script], preload=True, timeout=60,
                  env={"EDGEPLANE_PRELOAD_KERNEL_POLL_US": us})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("call", ["select", "poll"])
def test_select_on_a_mixed_set_asks_the_kernel_every_time_by_default(lab, call):
    assert _kernel_poll_run(lab, "0", call) == {"first": ["kernel", "udp"],
                                          "again": ["kernel", "udp"], "after": ["kernel"]}


@pytest.mark.parametrize("call", ["select", "poll"])
def test_kernel_poll_interval_defers_kernel_descriptors_while_datagrams_wait(lab, call):
    # EDGEPLANE_PRELOAD_KERNEL_POLL_US (10 s here, so the second call is
    # always inside it): a call that finds a datagram waiting answers from
    # the ring alone when the kernel was asked less than that long ago; a
    # call that finds none asks the kernel, so nothing is lost.
    assert _kernel_poll_run(lab, "10000000", call) == {"first": ["kernel", "udp"], "again": ["udp"],
                                                 "after": ["kernel"]}


# A blocking receive that spins (EDGEPLANE_PRELOAD_SPIN_US) looks at its
# ring before it drains the descriptor: after a first datagram that woke
# the reader, rx_signalled is still set, so the data plane delivers the
# second to the spinning reader without a wake byte (no send(2), no
# wake-up); a reader that sleeps drains and clears first and costs a
# byte again.  The second datagram is sent once the reader spins (20 ms of
# CPU time since its first receive returned, of the 1 s it may spin, the
# longest EDGEPLANE_PRELOAD_SPIN_US allowed) or sleeps in ppoll(): a
# condition, not a sleep.
SPIN_SCRIPT = f"""
import json, os, socket, sys, threading, time
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("{SEM4}", 0))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.bind(("{SEM4B}", 0))
got = {{}}
def reader():
    got["tid"] = threading.get_native_id()
    got["first"] = a.recv(16).decode()
    got["second"] = a.recv(16).decode()
def task(name):
    return open(f"/proc/self/task/{{got['tid']}}/{{name}}").read()
def cpu_ticks():
    f = task("stat").rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
PPOLL = {{"x86_64": 271, "aarch64": 73}}[os.uname().machine]
t = threading.Thread(target=reader)
t.start()
deadline = time.monotonic() + 60
while "tid" not in got and time.monotonic() < deadline:
    time.sleep(0.01)
b.sendto(b"1", a.getsockname())
while "first" not in got and time.monotonic() < deadline:
    time.sleep(0.01)
t0 = cpu_ticks()
while time.monotonic() < deadline:
    if SPIN and cpu_ticks() - t0 >= 2:
        break
    if not SPIN and task("syscall").split()[0] == str(PPOLL):
        break
    time.sleep(0.01)
b.sendto(b"2", a.getsockname())
t.join()
print(json.dumps({{"data": got["first"] + got["second"], "port": a.getsockname()[1]}}), flush=True)
sys.stdin.readline()
"""


def _spin_run(lab, spin_us, spins):
    """SPIN_SCRIPT under the library with EDGEPLANE_PRELOAD_SPIN_US=spin_us;
    spins: whether the reader is expected to spin.  The wake-ups the
    socket cost."""
    # EDGEPLANE_PRELOAD_SPIN_LOST_US=0: a spin that loses its CPU to other
    # tenants keeps spinning (by default it backs off, and the reader
    # would sleep: right, but not what this test looks at).
    env = {"EDGEPLANE_PRELOAD_SPIN_US": spin_us, "EDGEPLANE_PRELOAD_SPIN_LOST_US": "0"}
    p = lab.popen("s", [sys.executable, "-c", f"SPIN = {spins}\n" + SPIN_SCRIPT],
                  preload=True, env=env, stdin=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        assert line, p.stderr.read()
        out = json.loads(line)
        socks = [s for s in lab.dp.ctl("hs-sockets")["sockets"]
                 if s["local"] and s["local"]["port"] == out["port"]]
        assert out["data"] == "12" and len(socks) == 1
        assert socks[0]["counters"]["rx_dgrams"] == 2
        return socks[0]["counters"]["wakeups"]
    finally:
        p.stdin.close()
        p.wait(timeout=30)



@pytest.mark.parametrize("spin_us,wakeups", [("0", 2), ("1000000", 1)])
def test_a_spinning_reader_is_delivered_to_without_a_wake_byte(lab, spin_us, wakeups):
    assert not any(w["polls"] for w in lab.dp.ctl("hs-stats")["workers"])
    assert _spin_run(lab, spin_us, spins=spin_us != "0") == wakeups


# A worker that keeps its CPU between packets (memif, the default
# `spin_us`: it yields instead of blocking) says so in its worker page,
# and the library then does not spin at all, whatever the environment
# asks: the reader sleeps at once, and the second datagram costs a byte.
@pytest.fixture(scope="module")
def polling_lab(request, dp_binary):
    lab = SemanticsLab(tag="semp", binary_path=dp_binary)
    request.addfinalizer(lab.close)
    lab.__enter__()
    return lab


def test_the_library_does_not_spin_while_a_worker_polls(polling_lab):
    deadline = time.monotonic() + 30
    while not all(w["polls"] for w in polling_lab.dp.ctl("hs-stats")["workers"]):
        assert time.monotonic() < deadline, "the worker never said it polls"
        time.sleep(0.05)
    assert _spin_run(polling_lab, "1000000", spins=False) == 2
