"""Shared fixtures of the integration tests: real binaries in namespaces.

Session checks: running as root (namespaces, veths), build/dp/edgeplane-dp
built (otherwise every test fails with "run `make build`"), and at the end
no namespace this session created is left.  Labs are context managers from
lab/ wrapped in fixtures, so a failing test still tears everything down.
"""
import os
import shutil
import subprocess

import pytest

from lab import topology
from lab.dp import binary
from lab.router_lab import RouterLab, router_available
from lab.traffic import Iperf3Server


@pytest.fixture(scope="session", autouse=True)
def _session_checks():
    if os.geteuid() != 0:
        pytest.skip("integration tests need root (network namespaces, veth, DPDK)")
    yield
    # Every namespace a Topology created in this process must be gone.
    left = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
               .stdout.split())
    mine = sorted(topology.created_namespaces & left)
    assert not mine, f"namespaces left behind by this test session: {mine}"


@pytest.fixture(scope="session", autouse=True)
def dp_binary(tmp_path_factory):
    """The edgeplane-dp under test ($EDGEPLANE_DP, else build/dp/edgeplane-dp),
    copied once per session: a rebuild of the shared build directory while
    the suite runs (others work in the same checkout) cannot swap or
    half-write the binary under a running test."""
    path = binary()
    if not path.exists():
        pytest.fail(f"{path} does not exist: run `make build` first", pytrace=False)
    snap = tmp_path_factory.mktemp("bin") / "edgeplane-dp"
    shutil.copy2(path, snap)
    # The router's fast path objects, XDP and tc, where the binary looks
    # for them (../xdp/fwd.o, ../xdp/tcfwd.o from its directory;
    # router/xdp_fast.h, router/xdp_fast_tc.c).
    for obj in ("fwd.o", "tcfwd.o"):
        prog = path.parent.parent / "xdp" / obj
        if prog.exists():
            (snap.parent.parent / "xdp").mkdir(exist_ok=True)
            shutil.copy2(prog, snap.parent.parent / "xdp" / obj)
    old = os.environ.get("EDGEPLANE_DP")
    os.environ["EDGEPLANE_DP"] = str(snap)
    yield snap
    if old is None:
        os.environ.pop("EDGEPLANE_DP", None)
    else:
        os.environ["EDGEPLANE_DP"] = old


@pytest.fixture(scope="session")
def router_pipeline(dp_binary):
    """Skip (with the reason) when edgeplane-dp has no router pipeline."""
    ok, why = router_available(dp_binary)
    if not ok:
        pytest.skip(why)
    return True


def _lab(request, **kw):
    lab = RouterLab(**kw)
    request.addfinalizer(lab.close)
    return lab.__enter__()


@pytest.fixture(scope="module")
def router_lab(request, router_pipeline):
    """The standard router lab with an iperf3 server in b, shared by a
    module's read-only tests (tests that change tables restore them)."""
    lab = _lab(request, tag="rt")
    lab.iperf3_server = Iperf3Server(lab.b)
    return lab


@pytest.fixture
def fresh_router_lab(request, router_pipeline):
    """A router lab of its own, for tests that change tables or stop the DUT."""
    lab = _lab(request, tag="rf")
    lab.iperf3_server = Iperf3Server(lab.b)
    return lab


@pytest.fixture
def xconnect_lab(request, dp_binary):
    """Hosts a (198.18.0.2) and b (198.18.0.3) on one subnet, patched through
    edgeplane-dp's xconnect pipeline: engine tests that need no router."""
    lab = _lab(request, pipeline="xconnect", tag="xc")
    lab.iperf3_server = Iperf3Server(lab.b)
    return lab


@pytest.fixture(scope="module")
def shared_xconnect_lab(request, dp_binary):
    """The xconnect lab shared by a module's tests that do not stop it."""
    return _lab(request, pipeline="xconnect", tag="xs")
