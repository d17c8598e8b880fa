"""lab/dp.py, the one handle on edgeplane-dp: the configuration edits its
memory policy relies on, and a real data plane in the root namespace the
way the benchmarks run it (no namespace, logs kept, paused and resumed)."""
import signal

import pytest

from lab.dp import (CtlError, Dp, DpError, config_get, config_set, is_memory_error,
                    memory_choice, wait_for)

TEXT = """[eal]
args = --no-telemetry
[engine]
burst = 32   # a comment
[port a]
device = net_null0,no-rx=1
"""


def test_config_set_replaces_adds_and_prepends():
    t = config_set(TEXT, "engine", "burst", 64)
    assert config_get(t, "engine", "burst") == "64" and t.count("burst") == 1
    t = config_set(t, "engine", "memory", "no-huge")
    assert config_get(t, "engine", "memory") == "no-huge"
    assert config_get(t, "port a", "device") == "net_null0,no-rx=1"
    t = config_set("[port a]\ndevice = net_null0\n", "engine", "ctl_socket", "/x.sock")
    assert t.startswith("[engine]\nctl_socket = /x.sock\n")
    assert config_get(TEXT, "engine", "memory") is None
    assert config_get(TEXT, "port a", "burst") is None


@pytest.mark.parametrize("text,choice", [
    (TEXT, "auto"),
    (config_set(TEXT, "engine", "memory", "hugepages"), "hugepages"),
    (config_set(TEXT, "eal", "args", "--no-huge -m 512"), "eal"),
    (config_set(TEXT, "eal", "args", "--socket-mem 256"), "eal"),
    (config_set(TEXT, "eal", "args", "--lcores=0@0,1@1"), "auto"),
])
def test_memory_choice(text, choice):
    assert memory_choice(text) == choice


@pytest.mark.parametrize("line,memory", [
    ("EAL: Cannot get hugepage information.", True),
    ("LPM memory allocation failed", True),
    ("edgeplane-dp: mbuf pool 'w0': Cannot allocate memory", True),
    ("RING: Cannot reserve memory, err=-12", True),
    ("edgeplane-dp: dp.conf:3: key 'burst': expected 1..512", False),
])
def test_is_memory_error(line, memory):
    assert is_memory_error(line) is memory


def test_dp_in_root_namespace_keeps_its_logs(tmp_path):
    text = TEXT + "[port b]\ndevice = net_null1,no-rx=1\n" \
        "[worker w0]\npipeline = xconnect\nrx = a, b\npairs = a:b\n"
    with Dp(None, text, name="root", workdir=tmp_path, memory_fallback=True) as dp:
        assert dp.ctl("version")["edgeplane_dp"]
        assert dp.memory == "auto"
        dp.pause()
        assert wait_for(lambda: _state(dp.pid) == "T", timeout=2)
        dp.resume()
        assert dp.workers()[0]["name"] == "w0"
        with pytest.raises(CtlError, match="unknown command") as exc:
            dp.ctl("no-such-command")
        assert isinstance(exc.value, DpError)      # one error class
        dp.send_signal(signal.SIGSTOP)
        dp.stop()                                  # wakes a paused process too
    out = (tmp_path / "root" / "stdout").read_text()
    assert "stopped cleanly" in out
    assert config_get((tmp_path / "root" / "dp.conf").read_text(), "engine",
                      "ctl_socket") == str(tmp_path / "root" / "ctl.sock")


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]
