"""What the benchmark runners make in /tmp goes when they end, also when a
round fails: bench_pfcp's bench-pfcp-* (its rounds' data planes' and
functions' folders), bench_xdp_steer's bench-xdp-steer-* (the pcap, the
agent's state, a bpffs mounted in it) and bng_feeder's bng-feeder-* were
left behind by every run.

Each runner is started with tempfile's folder pointed at the test's own
(so what it made is seen, and nothing else) and one of its steps made to
fail at its first round: the folder must be empty after the error, and no
bpffs mounted under it.
"""
import argparse
import sys
import tempfile

import pytest


class RoundFailed(Exception):
    pass


def fail(*args, **kw):
    raise RoundFailed("the round failed")


@pytest.fixture
def tmp_only(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def left(tmp):
    mounts = [line.split()[1] for line in open("/proc/self/mounts")]
    return sorted(p.name for p in tmp.iterdir()), [m for m in mounts if m.startswith(str(tmp))]


def test_bench_pfcp_removes_its_folder_when_a_round_fails(monkeypatch, tmp_only):
    from bench import bench_pfcp
    for b in ("edgeplane", "pfcp-cp-sim"):
        if not (bench_pfcp.BIN / b).exists():
            pytest.fail(f"{bench_pfcp.BIN / b} missing: run `make build`", pytrace=False)
    monkeypatch.setattr(bench_pfcp, "pfcp_round", fail)
    with pytest.raises(RoundFailed):
        bench_pfcp.run(argparse.Namespace(quick=True))
    assert left(tmp_only) == ([], [])


def test_bench_xdp_steer_unmounts_and_removes_its_folder_when_a_round_fails(monkeypatch, tmp_only):
    """The lab (two namespaces) is built, the bpffs mounted, the pcap
    written; the first replay fails."""
    from bench import bench_xdp_steer
    monkeypatch.setattr(bench_xdp_steer, "replay", fail)
    with pytest.raises(RoundFailed):
        bench_xdp_steer.veth_pps(quick=True)
    assert left(tmp_only) == ([], [])


def test_bng_feeder_removes_its_folder_when_the_data_plane_fails(monkeypatch, tmp_only):
    from bench import bng_bench, bng_feeder
    monkeypatch.setattr(sys, "argv", ["bng_feeder", "--windows", "1"])
    monkeypatch.setattr(bng_feeder, "feeder_config", lambda consumer, feeder: "")
    monkeypatch.setattr(bng_bench, "Ours", fail)
    with pytest.raises(RoundFailed):
        bng_feeder.main()
    assert left(tmp_only) == ([], [])
