"""edgeplane-dp puts a kernel interface's promiscuous flag back
(dataplane/engine/promisc.c).

The engine enables promiscuous mode on its ports; on net_af_packet and
net_af_xdp that is IFF_PROMISC on the kernel interface, which the PMDs
never clear.  Checked here on the DUT's veths (the flag as SIOCGIFFLAGS and
`ip link` show it): after a normal stop, after a start that failed once the
ports had started, after kill -9 and a restart's stop; an interface that
was promiscuous before keeps the flag in each case.
"""
import json
import signal

import pytest

from lab.dp import Dp, DpError
from lab.router_lab import RouterLab, router_sections

IFF_PROMISC = 0x100


def promisc(host, ifname):
    """IFF_PROMISC as `ip link` shows it (the flag the PMDs set, not the
    promiscuity count a packet socket's membership adds)."""
    res = host.run(["ip", "-j", "link", "show", "dev", ifname])
    return "PROMISC" in json.loads(res.stdout)[0]["flags"]


def record(dp):
    """The interfaces this edgeplane-dp set promiscuous, beside its socket."""
    return dp.ctl_path.with_name(dp.ctl_path.name + ".promisc")


def flags(lab):
    return {i: promisc(lab.dut, i) for i in ("pa", "pb")}


@pytest.fixture
def lab(router_pipeline):
    with RouterLab(tag="pm", start=False) as lab:
        yield lab


@pytest.mark.parametrize("device", ["af_packet", "af_xdp"])
def test_a_normal_stop_clears_the_flag_the_start_set(lab, device):
    assert flags(lab) == {"pa": False, "pb": False}
    with Dp(lab.dut, router_sections(device=device), name="pm-dut") as dp:
        assert flags(lab) == {"pa": True, "pb": True}
        dp.stop()
        assert flags(lab) == {"pa": False, "pb": False}
        assert not record(dp).exists()


def test_an_interface_promiscuous_before_stays_so(lab):
    lab.dut.run(["ip", "link", "set", "dev", "pa", "promisc", "on"])
    with Dp(lab.dut, router_sections(), name="pm-dut") as dp:
        assert flags(lab) == {"pa": True, "pb": True}
        dp.stop()
    assert flags(lab) == {"pa": True, "pb": False}


def test_a_start_that_fails_after_the_ports_started_clears_the_flag(lab):
    """The control socket's path is a regular file: the start fails after
    both ports started (ep_ctl_open runs last)."""
    lab.dut.run(["ip", "link", "set", "dev", "pb", "promisc", "on"])
    dp = Dp(lab.dut, router_sections(), name="pm-dut")
    try:
        taken = dp.dir / "taken"
        taken.write_text("not a socket\n")
        dp.sections["engine"]["ctl_socket"] = str(taken)
        with pytest.raises(DpError, match="exists and is not a socket"):
            dp.start()
        assert dp.returncode == 1
    finally:
        dp.close()
    assert flags(lab) == {"pa": False, "pb": True}


def test_a_restart_after_kill_9_clears_what_the_dead_process_set(lab):
    """kill -9 leaves the flag (the kernel does not clear it): the record
    beside the control socket tells the restart it was ours, not the
    operator's, and the restart's stop clears it; pb, promiscuous before
    the first start, keeps it."""
    lab.dut.run(["ip", "link", "set", "dev", "pb", "promisc", "on"])
    with Dp(lab.dut, router_sections(), name="pm-dut") as dp:
        dp.stop(sig=signal.SIGKILL, check=False)
        assert flags(lab) == {"pa": True, "pb": True}
        assert [line.split()[0] for line in record(dp).read_text().splitlines()] == ["pa"]
        dp.start()
        assert flags(lab) == {"pa": True, "pb": True}
        dp.stop()
        assert not record(dp).exists()
    assert flags(lab) == {"pa": False, "pb": True}
