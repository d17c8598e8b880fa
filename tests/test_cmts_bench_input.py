"""Where the vCMTS benchmark's generator leaves its frames.

`make bench BENCH=cmts` holds every generated packet back until newer ones
filling twice the generator core's L2 were written, so the worker finds it
in the shared L3 as a NIC's DMA would leave it (docs/cmts.md, "Where the
input waits").  These tests check the hold that follows from an L2 size,
and that the size is read from sysfs as the kernel writes it.
"""
import pytest

from bench import bench_cmts


def test_cmts_bench_hold_keeps_2048_on_a_1_mib_l2():
    assert bench_cmts.gen_hold_pkts(1 << 20) == 2048


def test_cmts_bench_hold_covers_twice_a_2_mib_l2():
    hold = bench_cmts.gen_hold_pkts(2 << 20)
    per_pkt = bench_cmts.mean_size(bench_cmts.DS_MIX) + bench_cmts.MBUF_OVERHEAD
    assert hold * per_pkt >= 2 * (2 << 20) > (hold - 1) * per_pkt


def test_cmts_bench_hold_is_capped_at_what_cmts_gen_accepts():
    assert bench_cmts.gen_hold_pkts(64 << 20) == bench_cmts.HOLD_MAX == 4096


def test_cmts_bench_hold_without_an_l2_size_is_the_minimum(monkeypatch):
    monkeypatch.setattr(bench_cmts, "l2_bytes", lambda cpu=1: None)
    assert bench_cmts.gen_hold_pkts() == 2048


@pytest.mark.parametrize("text,expected", [("2048K", 2 << 20), ("1M", 1 << 20), ("524288", 524288)])
def test_cmts_bench_reads_the_l2_size_from_sysfs(tmp_path, monkeypatch, text, expected):
    cache = tmp_path / "cpu1" / "cache"
    for idx, (level, size) in enumerate([("1", "48K"), ("1", "64K"), ("2", text), ("3", "32M")]):
        d = cache / f"index{idx}"
        d.mkdir(parents=True)
        (d / "level").write_text(level + "\n")
        (d / "size").write_text(size + "\n")
    real_path = bench_cmts.Path
    monkeypatch.setattr(bench_cmts, "Path",
                        lambda p: real_path(str(p).replace("/sys/devices/system/cpu", str(tmp_path))))
    assert bench_cmts.l2_bytes(1) == expected
