"""UDP socket semantics: the same named cases (dataplane/preload/hs_semantics.c)
on the kernel and under libedgeplane-preload.so against edgeplane-dp's host
stack, in one namespace whose loopback and data plane carry the same
addresses.  Each case must pass on both (it checks what the kernel does) and
observe the same on both (return values, errno, sizes, addresses, flags).
"""
import pytest

from lab.hoststack_lab import SemanticsLab, semantics_cases, suite

CASES = semantics_cases()


@pytest.fixture(scope="module")
def runs(request, dp_binary):
    lab = SemanticsLab(binary_path=dp_binary)
    request.addfinalizer(lab.close)
    lab.__enter__()
    kernel = suite(lab, preload=False)
    preload = suite(lab, preload=True)
    # Busy-polling before each wait (preload_spin.c) must not change what
    # any call returns: the same cases once more with a spin long enough to
    # catch every datagram of the suite before the kernel wait.
    spin = suite(lab, preload=True, env={"EDGEPLANE_PRELOAD_SPIN_US": "500"})
    sockets = lab.dp.ctl("hs-sockets")["count"]
    return {"kernel": kernel, "preload": preload, "preload_spin": spin, "sockets_left": sockets,
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
def test_same_semantics_when_the_library_spins_before_waiting(runs, case):
    k, p = runs["kernel"].get(case), runs["preload_spin"].get(case)
    assert p is not None, f"{case} did not run"
    assert p["ok"], f"preload, spinning: {p['why']} ({p['obs']})"
    assert p["obs"] == k["obs"]


def test_every_socket_of_the_suite_was_freed(runs):
    # Each case ran in its own process, which exited: every socket the
    # data plane held for it must be gone (hang-up of its descriptor).
    assert runs["sockets_left"] == 0


def test_suite_traffic_was_hairpinned_inside_the_data_plane(runs):
    assert sum(w["hairpin"] for w in runs["stats"]["workers"]) > 0
