"""`make run` keeps working: the whole-edge demo (lab/demo.py) run short,
as a user runs it, from its exit status and its summary; nothing of it is
left behind (namespaces, its bpffs mount)."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def demo_namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    prefixes = ("epdemo-", "epdemob-", "epdemou-", "epdemoc-")
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefixes)]


def test_make_run_brings_up_the_whole_edge_and_cleans_up(router_pipeline, dp_binary, tmp_path):
    before = set(demo_namespaces())
    r = subprocess.run([sys.executable, "-m", "lab.demo", "--seconds", "1", "--watch", "1",
                        "--report", str(tmp_path / "report.jsonl")],
                       cwd=ROOT, capture_output=True, text=True, timeout=240)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for line in ("node edge1 converged: acl update 2, classifier add 4, filter add 1, intent add 1, modem add 4, "
                 "route add 1, service-flow add 4, service-flow update 4, terminate add 1",
                 "router ACL: 50 of the 50 datagrams to UDP port 9 denied",
                 "OK: traffic crossed"):
        assert line in out, out[-6000:]
    # The live view and the summary come from Prometheus scraping the agent
    # and the XDP function: the prioritised flow was counted there.
    assert "prioritised: desired-iperf-udp" in out, out[-6000:]
    # The vCMTS (modems from the controller): the RPD model decoded frames
    # for every modem, decrypted the BPI+ modem's, and every modem's
    # upstream frames reached the core; the filter group's denials and the
    # unknown address were counted by reason.
    down = re.search(r"frames per modem received/sent: (CM 1 \(BPI\+\) .*)", out)
    up = re.search(r"UEPI -> vCMTS -> core, frames per modem received/sent: (.*)", out)
    assert down and up, out[-6000:]
    for counts in (down.group(1), up.group(1)):
        got = [int(x) for x in re.findall(r"(\d+)/\d+", counts)]
        assert len(got) == 4 and min(got) > 0, counts
    assert int(re.search(r"BPI\+ decrypted by the model: ([\d,]+)", out).group(1).replace(",", "")) > 0
    drops = re.search(r"edgeplane-dp cmts: rx [\d,]+ tx [\d,]+ packets; drops by reason: (.*)", out)
    assert drops and "cmts_filter_deny=" in drops.group(1) and "cmts_unknown_cpe=" in drops.group(1), out[-6000:]
    # Each Grafana dashboard's data-plane selector finds its data plane in
    # the demo's Prometheus (the vCMTS's workers run cmts-* pipelines).
    boards = re.search(r"the data planes each one's selector finds in this Prometheus: (.*)", out)
    assert boards, out[-6000:]
    for want in ("router -> router", "vBNG -> bng", "vCMTS -> cmts"):
        assert want in boards.group(1), boards.group(1)
    assert (tmp_path / "report.jsonl").read_text().count('"type":"pass"') >= 2
    assert set(demo_namespaces()) <= before
    mounts = Path("/proc/mounts").read_text()
    assert "edgeplane-demo-" not in mounts
