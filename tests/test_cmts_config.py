"""The vCMTS configuration as documented: dataplane/cmts/README.md's
example passes `edgeplane-dp --check` (with null devices for its ports), and
a broken line in it is refused with the file, the line and what is wrong."""
import re
import subprocess
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "dataplane" / "cmts" / "README.md"


def readme_config(tmp_path):
    block = re.search(r"```ini\n(.*?)```", README.read_text(), re.S).group(1)
    block = re.sub(r"net_af_packet(\d),iface=\w+", r"net_null\1", block)
    return ("[eal]\nargs = --no-huge -m 512 --no-pci\n[engine]\n"
            f"ctl_socket = {tmp_path}/ctl.sock\n" + block)


def check(dp_binary, path):
    return subprocess.run([str(dp_binary), "--check", "-c", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_readme_example_passes_check(dp_binary, tmp_path):
    conf = tmp_path / "cmts.conf"
    conf.write_text(readme_config(tmp_path))
    res = check(dp_binary, conf)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "configuration OK" in res.stdout + res.stderr


@pytest.mark.parametrize("old,new,message", [
    ("bonding_group = 1 2", "bonding_group = 1 9", "'9' is not a channel defined above"),
    ("dport=5060", "dport=99999", "dport '99999' is not a port or a range lo-hi"),
    ("rate=42.24M session=0x1002", "rate=42.24M", "a channel needs rate= and session="),
    ("rpd_port = rpd", "rpd_port = net", "rpd_port and net_port must differ"),
    ("sf = 1 1 rate=100M", "sf = 7 1 rate=100M", "7"),
], ids=["bonding_group_unknown_channel", "classifier_port_out_of_range",
        "channel_without_session", "same_port_both_sides", "sf_of_unknown_cm"])
def test_broken_line_refused_with_file_and_line(dp_binary, tmp_path, old, new, message):
    text = readme_config(tmp_path)
    assert old in text
    bad = text.replace(old, new, 1)
    line = next(i for i, l in enumerate(bad.splitlines(), 1) if new in l)
    conf = tmp_path / "bad.conf"
    conf.write_text(bad)
    res = check(dp_binary, conf)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert message in out, out
    if old.startswith(("bonding_group", "dport", "rate", "sf")):
        assert f"bad.conf:{line}:" in out, out
