"""Benchmark reports render from JSON alone (bench/report.py), no benchmark run.

The fixture tests/data/bench-router-small.json is a router result in the
shape bench/common.py writes (host, comparisons, ratio_rounds, cases).  The
tests render it the way a person would re-render a result (`python -m
bench.report FILE --out DIR`), then check what a reader relies on: the
tables name ours, the peer and the ratio per case; the stage cycles are
there per case; both plots are real PNG images; the index links the report;
a key nobody taught the renderer (as a new pipeline stage or a recorded ACL
classify method would be) shows up without code changes.
"""
import copy
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from bench import common, report

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).with_name("data") / "bench-router-small.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) from a PNG's IHDR chunk."""
    data = Path(path).read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def result():
    return json.loads(FIXTURE.read_text())


def write(tmp_path, r, name="router.json"):
    path = tmp_path / name
    path.write_text(json.dumps(r))
    return path


def test_report_cli_renders_markdown_plots_and_index(tmp_path):
    out = tmp_path / "reports"
    res = subprocess.run([sys.executable, "-m", "bench.report", str(FIXTURE), "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    md = (out / "router.md").read_text()
    # Ours against the peer per case, with the ratio's key.
    assert ("| 64/acl1000/routes100000 | Mpps/core | 15.730 | dpdk-l3fwd | 36.200 | "
            "0.434 (vs_dpdk-l3fwd) |") in md
    assert "| 64/acl1000/routes1000 | Mpps/core | 15.600 | dpdk-l3fwd-acl | 16.100 |" in md
    # A ratio no comparison names still has its row.
    assert "0.450 (vs_dpdk-l3fwd_routes1000)" in md
    # Per-stage cycles per case, and the host the figures come from.
    assert "| case | cycles/pkt | rx | parse | neigh | acl | route | rewrite | tx |" in md
    assert "| 64/acl1000/routes100000 | 165.3 | 34.9 | 21.7 | 0.8 | 54.9 | 19.6 | 11.4 | 19.1 |" in md
    assert "AMD EPYC 7B13; 2 CPUs; avx2; kernel 6.18.44; DPDK 22.11.11" in md
    assert "| flags.avx512f | no |" in md
    assert "| vs_dpdk-l3fwd | 0.433, 0.434, 0.436 |" in md
    for png in ("router-vs-peer.png", "router-stages.png"):
        assert f"]({png})" in md
        w, h = png_size(out / png)
        assert w > 300 and h > 100, (png, w, h)
    index = (out / "index.md").read_text()
    assert "[router](router.md)" in index
    assert "vs_dpdk-l3fwd 0.434" in index


def test_report_renders_keys_it_was_never_taught(tmp_path, result):
    r = copy.deepcopy(result)
    r["config"]["acl_classify_method"] = "avx2"
    r["metrics"]["acl_classify_method"] = "avx2"
    r["peers"]["dpdk-l3fwd-acl"]["acl_classify_method"] = "avx512x16"
    r["ratios"]["vs_dpdk-l3fwd-acl_avx512"] = 1.234
    r["cases"]["64/acl1000/routes100000"]["stages"]["police"] = 7.5
    r["per_round_cpu"] = {"ours": [1.0, 1.1]}
    md = report.render(write(tmp_path, r)).read_text()
    assert "| acl_classify_method | avx2 |" in md                    # metrics and config
    assert "| dpdk-l3fwd-acl.acl_classify_method | avx512x16 |" in md
    assert "1.234 (vs_dpdk-l3fwd-acl_avx512)" in md
    assert "| police |" in md.split("## Cycles per packet")[1].split("\n")[2]
    assert "| per_round_cpu.ours | 1.000, 1.100 |" in md
    text = report.table(r)
    assert "acl_classify_method" in text and "police" in text


def test_report_shows_a_peers_stages_beside_ours(tmp_path, result):
    """A result's peer_stages (bench_router's stage-timed l3fwd-acl) get a
    row of their own, named for the peer, its stages in the columns of
    ours where the names are the same."""
    r = copy.deepcopy(result)
    r["peer_stages"] = {"dpdk-l3fwd-acl": {
        "input": "64/acl1000/routes1000", "cycles_per_pkt": 92.0,
        "stages": {"rx": 18.9, "prep": 4.6, "acl": 48.0, "send": 20.5}}}
    md = report.render(write(tmp_path, r)).read_text()
    table = md.split("## Cycles per packet")[1]
    head = table.split("\n")[2]
    assert head.startswith("| case | cycles/pkt | rx | parse |") and "| prep |" in head, head
    row = next(line for line in table.splitlines() if line.startswith("| dpdk-l3fwd-acl (peer) |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    cols = [c.strip() for c in head.strip("|").split("|")]
    got = dict(zip(cols, cells))
    assert got["cycles/pkt"] == "92.0" and got["rx"] == "18.9" and got["acl"] == "48.0"
    assert got["prep"] == "4.6" and got["send"] == "20.5" and got["parse"] == "-"
    assert "dpdk-l3fwd-acl (peer)" in report.table(r)


def test_report_table_is_aligned(result):
    text = report.table(result)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("case ") and "ratio" in line)
    rule = lines[head + 1]
    assert set(rule.replace(" ", "")) == {"-"}
    # Every row of the comparison table puts its columns where the header does.
    ratio_col = lines[head].index("ratio")
    for row in lines[head + 2:head + 5]:
        assert row[ratio_col - 2:ratio_col] == "  ", row
    assert "0.434 (vs_dpdk-l3fwd)" in text
    assert "{" not in text, "raw dicts in the terminal table"


def test_report_without_peer_or_stages(tmp_path):
    """A result with neither comparisons nor stages (a control-path bench)
    still renders its metrics; no empty plots are written."""
    r = {"name": "tiny", "config": {"quick": True}, "metrics": {"sessions_per_s": 1234.5},
         "peers": {}, "ratios": {}}
    md = report.render(write(tmp_path, r, "tiny.json")).read_text()
    assert "| sessions_per_s | 1234.5 |" in md
    assert "--quick" in md
    assert not list(tmp_path.glob("tiny-*.png"))


def test_host_record_matches_proc_cpuinfo(tmp_path):
    """common.write_result records the CPU model and flags /proc/cpuinfo
    shows (what decides rte_acl's classify method)."""
    path = common.write_result({"name": "hosttest", "config": {}, "metrics": {}},
                               out=tmp_path)
    h = json.loads(path.read_text())["host"]
    info = common.cpuinfo()
    assert h["cpu_model"] == info["model"] != "unknown"
    assert h["flags"]["avx2"] == ("avx2" in info["flags"])
    assert h["flags"]["avx512f"] == ("avx512f" in info["flags"])
    assert h["cpus"] >= 1 and h["kernel"]


def test_a_part_not_applicable_prints_its_reason_instead_of_a_dash():
    parts = {"latency_p50_parts_64": {"edgeplane": {
        "p50_ns": 40_000, "stamp_to_our_rx_ns": None, "our_rx_to_sink_ns": None,
        "not_applicable": {"stamp_to_our_rx_ns": "fast path forwarded",
                           "our_rx_to_sink_ns": "fast path forwarded"}},
        "linux-forwarding": {"p50_ns": 31_000, "tester_floor_ns": None}}}
    rows = dict(report.key_values(parts))
    assert rows["latency_p50_parts_64.edgeplane.stamp_to_our_rx_ns"] == "n/a: fast path forwarded"
    assert rows["latency_p50_parts_64.edgeplane.our_rx_to_sink_ns"] == "n/a: fast path forwarded"
    assert rows["latency_p50_parts_64.edgeplane.p50_ns"] == 40_000
    # A None no reason names stays a dash, and the reasons have no row.
    assert rows["latency_p50_parts_64.linux-forwarding.tester_floor_ns"] is None
    assert not any("not_applicable" in k for k in rows)
    assert "n/a: fast path forwarded" in report.table({"name": "rfc2544-router", "metrics": parts})
