"""The BNG control plane on an untagged access line, with real clients.

edgeplane bng-cp in direct mode (lab.bngcp_lab.DirectLab: the control
plane reads the access link itself, no user plane), so what is checked is
the control plane's handling of a line without S- or C-tags: ISC
dhclient's DHCPv4 on an untagged link, and the emulator's IPoE and PPPoE
subscribers untagged beside QinQ ones on the same port.  Through the user
plane an untagged IPoE subscriber is refused (the data plane's BNG keys
IPoE subscribers by their tags; control/internal/bngcp/sci's tests check
the refusal and its cause).
"""
import pytest

from lab.bngcp_lab import DirectLab
from lab.dp import wait_for


@pytest.fixture(scope="module")
def lab(request):
    lab = DirectLab(tag="bcdir", users=16, cp={"ipoe": {"lease": "60s"}})
    request.addfinalizer(lab.close)
    lab.__enter__()
    return lab


def sessions(lab, **match):
    return [s for s in lab.bngcp.sessions() if all(s.get(k) == v for k, v in match.items())]


def test_untagged_ipoe_dhclient_gets_a_lease(lab):
    """ISC dhclient on an untagged link: discover, offer, request, ack;
    the session's line has no tags, its address is the lease's."""
    lab.host("d1")
    c = lab.dhcp_client("d1", "dhclient", 4)
    assert wait_for(lambda: "BOUND" in c.events(), timeout=30), c.output()
    env = c.env("BOUND")
    assert env["new_ip_address"].startswith("198.18.100.") and env["new_routers"] == "198.18.100.1", env
    s = sessions(lab, type="ipoe", ipv4=env["new_ip_address"])
    assert len(s) == 1 and not s[0].get("line") and s[0]["state"] == "up", s


def test_untagged_and_qinq_subscribers_share_a_port(lab):
    """Emulated subscribers: 8 untagged IPoE, 4 untagged PPPoE (PAP,
    IPCP) and 4 QinQ PPPoE on the same access port all come up, each
    session on its own line."""
    lab.host("e1")
    ipoe = lab.emulator("ipoe", 8, "e1", encap="untagged", mac_base="02:ee:30:00:00:00", timeout="30s")
    assert ipoe.setup["up"] == 8, ipoe.setup
    lab.host("e2")
    ppp = lab.emulator("pppoe", 4, "e2", encap="untagged", auth="pap", user="user%d",
                       mac_base="02:ee:31:00:00:00", timeout="30s")
    assert ppp.setup["up"] == 4, ppp.setup
    lab.host("e3")
    qinq = lab.emulator("pppoe", 4, "e3", encap="qinq", svlan=120, auth="pap", user="user%d",
                        mac_base="02:ee:32:00:00:00", timeout="30s")
    assert qinq.setup["up"] == 4, qinq.setup
    up = sessions(lab, state="up")
    untagged = [s for s in up if not s.get("line")]
    assert sum(1 for s in untagged if s["type"] == "ipoe") >= 8, up
    assert sum(1 for s in untagged if s["type"] == "pppoe") == 4, up
    assert sum(1 for s in up if (s.get("line") or {}).get("s_tag") == 120) == 4, up


def test_the_lab_removes_its_folder_after_a_run_and_after_a_failed_start(monkeypatch, tmp_path):
    """DirectLab's folder (the control plane's config, state, logs and
    socket: edgeplane-bcdir-* were left in /tmp by every run) goes with the
    lab, and with a lab whose start failed, its namespaces too."""
    import tempfile

    from pyroute2 import netns

    from lab.bngcp_lab import BngCp
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with DirectLab(tag="bcrm", users=1) as lab:
        assert lab.workdir.parent == tmp_path and (lab.workdir / "subscribers.txt").exists()
    assert list(tmp_path.iterdir()) == []

    def refuse(self, **kw):
        raise RuntimeError("bng-cp refused to start")
    monkeypatch.setattr(BngCp, "start", refuse)
    lab = DirectLab(tag="bcrm", users=1)
    with pytest.raises(RuntimeError, match="refused"):
        lab.__enter__()
    assert list(tmp_path.iterdir()) == []
    assert [n for n in netns.listnetns() if n.startswith(lab.topo.prefix)] == []
