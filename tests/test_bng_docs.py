"""docs/bng.md's examples are real: the configuration block starts as is
(only the control-socket path is changed) in a namespace with veths `acc`
and `core`, and every control command of the shell block succeeds against
it with the effect it describes.
"""
import re
import shlex
from pathlib import Path

import pytest

from lab.bng_lab import bng_available
from lab.dp import Dp, check_config
from lab.topology import Topology

DOC = Path(__file__).resolve().parent.parent / "docs" / "bng.md"
DOC_SOCK = "/run/edgeplane/bng.sock"


def _block(tag, lang):
    text = DOC.read_text()
    m = re.search(rf"<!-- test: {tag} -->\n```{lang}\n(.*?)```", text, re.S)
    assert m, f"docs/bng.md has no '{tag}' {lang} block"
    return m.group(1)


@pytest.fixture
def doc_dut(request, dp_binary):
    ok, why = bng_available(dp_binary)
    if not ok:
        pytest.skip(why)
    topo = Topology("bd").__enter__()
    request.addfinalizer(topo.close)
    dut, peer = topo.host("dut"), topo.host("peer")
    dut.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    topo.link(peer, "a0", dut, "acc", mtu=1600)
    topo.link(peer, "c0", dut, "core")
    return dut


def test_bng_doc_config_starts_and_loads_its_subscribers(doc_dut):
    conf = _block("bng-config", "ini")
    assert DOC_SOCK in conf
    dp = Dp(doc_dut, conf.replace(f"ctl_socket = {DOC_SOCK}\n", ""), name="bngdoc")
    with dp:
        subs = dp.ctl("sub-list")
        assert subs["total"] == 3
        by_id = {s["id"]: s for s in subs["subscribers"]}
        assert by_id[1]["qinq"] == "100.200" and by_id[2]["vlan"] == 101
        assert by_id[3]["pppoe"] == 0x12
        prof = dp.ctl("profile-list")
        assert {p["name"] for p in prof["pipes"]} >= {"gold", "voice"}
        assert len(dp.ctl("acl-list")["rules"]) == 2
        dp.stop()


def test_bng_doc_control_commands_run(doc_dut):
    conf = _block("bng-config", "ini").replace(f"ctl_socket = {DOC_SOCK}\n", "")
    lines = [l for l in _block("bng-ctl", "sh").splitlines() if l.strip()]
    with Dp(doc_dut, conf, name="bngdocctl") as dp:
        out = {}
        for line in lines:
            argv = shlex.split(line)
            assert argv[:4] == ["edgeplane-dp", "ctl", "-s", DOC_SOCK], line
            res = dp.cli(*argv[4:], check=False)
            assert res.returncode == 0, f"{line}\n{res.stdout}{res.stderr}"
            out[argv[4]] = res.stdout
        # The effects: sub-get showed the added subscriber with its profile,
        # it is gone after sub-del, and the ACL rule is in.
        assert "100.207" in out["sub-get"] and "silver" in out["sub-get"]
        assert dp.ctl_response("sub-get", id=7).get("ok") is False
        assert any("dport 25" in str(r) for r in dp.ctl("acl-list")["rules"])
        assert "uplink" in out["bng-stats"]


def test_bng_doc_config_passes_check(dp_binary):
    res, _ = check_config(_block("bng-config", "ini"), binary_path=dp_binary)
    assert res.returncode == 0, res.stdout + res.stderr
