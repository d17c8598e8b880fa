"""The socket-semantics suite (dataplane/preload/hs_semantics.c) under the
ASAN/UBSAN build of libedgeplane-preload.so, against edgeplane-dp's host
stack: every case must pass and observe what the kernel does, with the
sanitizers watching the library (out-of-bounds, use-after-free, undefined
behaviour abort the program, which fails every case it had not printed).
The data plane's unit tests run the same way in `make test-asan`; this
brings the library, which only runs inside other programs, under the same
checks.  The build is `make test-asan`'s (build/dp-asan).
"""
import pytest

from lab.hoststack_lab import SemanticsLab, semantics_cases, suite
from lab.preload_asan import asan_env

CASES = semantics_cases()


@pytest.fixture(scope="module")
def runs(request, dp_binary):
    env = asan_env()
    # a worker that blocks between doorbells, so the library spins by
    # default (as in test_udp_semantics.py)
    lab = SemanticsLab(tag="sema", binary_path=dp_binary, hoststack={"spin_us": 0})
    request.addfinalizer(lab.close)
    lab.__enter__()
    kernel = suite(lab, preload=False)
    status = {"asan": {}, "asan_nospin": {}}
    asan = suite(lab, preload=True, env=env, status=status["asan"])
    # The defaults busy-poll before each wait (preload_spin.c's paths);
    # once more with that turned off, every wait sleeping.
    nospin = suite(lab, preload=True, env={**env, "EDGEPLANE_PRELOAD_SPIN_US": "0"},
                   status=status["asan_nospin"])
    return {"kernel": kernel, "asan": asan, "asan_nospin": nospin, "status": status,
            "sockets_left": lab.dp.ctl("hs-sockets")["count"]}


@pytest.mark.parametrize("run", ["asan", "asan_nospin"])
@pytest.mark.parametrize("case", CASES)
def test_same_semantics_under_asan_and_ubsan(runs, case, run):
    k, p = runs["kernel"].get(case), runs[run].get(case)
    assert k is not None and k["ok"], f"kernel: {k}"
    assert p is not None, f"{case} did not run under the sanitizers (aborted before it?)"
    assert p["ok"], f"preload under ASAN/UBSAN: {p['why']} ({p['obs']})"
    assert p["obs"] == k["obs"]


@pytest.mark.parametrize("run", ["asan", "asan_nospin"])
def test_suite_exits_cleanly_with_leak_checks(runs, run):
    # LeakSanitizer reports at the suite's exit (exit status 86 on a leak
    # or a sanitizer error the cases did not see).
    st = runs["status"][run]
    assert st["exit"] == 0, f"exit {st['exit']}: {st['stderr']}"


def test_every_socket_was_freed_under_asan(runs):
    assert runs["sockets_left"] == 0
