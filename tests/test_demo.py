"""`make run` keeps working: the whole-edge demo (lab/demo.py) run short,
as a user runs it, from its exit status and its summary; nothing of it is
left behind (namespaces, its bpffs mount)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def demo_namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(("epdemo-", "epdemob-", "epdemou-"))]


def test_make_run_brings_up_the_whole_edge_and_cleans_up(router_pipeline, dp_binary, tmp_path):
    before = set(demo_namespaces())
    r = subprocess.run([sys.executable, "-m", "lab.demo", "--seconds", "1", "--watch", "1",
                        "--report", str(tmp_path / "report.jsonl")],
                       cwd=ROOT, capture_output=True, text=True, timeout=240)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for line in ("node edge1 converged: acl update 2, intent add 1, route add 1, terminate add 1",
                 "router ACL: 50 of the 50 datagrams to UDP port 9 denied",
                 "OK: traffic crossed"):
        assert line in out, out[-6000:]
    # The live view and the summary come from Prometheus scraping the agent
    # and the XDP function: the prioritised flow was counted there.
    assert "prioritised: desired-iperf-udp" in out, out[-6000:]
    assert (tmp_path / "report.jsonl").read_text().count('"type":"pass"') >= 2
    assert set(demo_namespaces()) <= before
    mounts = Path("/proc/mounts").read_text()
    assert "edgeplane-demo-" not in mounts
