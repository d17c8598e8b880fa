"""bench/bng_feeder.py measures the ring-fed downlink benchmark's feeder with
the benchmark's own configuration: these tests check that it changes only
the consumer, and that the replay feeder changes only the feeder."""
import struct

import pytest

from bench import bng_bench, bng_feeder
from bench.bng_inputs import Inputs


def test_bng_feeder_xconnect_consumer_replaces_only_the_downlink_worker():
    downlink = bng_feeder.feeder_config("downlink")
    xconnect = bng_feeder.feeder_config("xconnect")
    assert bng_feeder.DOWNLINK_CONSUMER in downlink
    assert bng_feeder.XCONNECT_CONSUMER in xconnect
    assert "pipeline = bng-downlink" not in xconnect and "[bng]" not in xconnect
    # The feeder's own sections are the benchmark's, byte for byte.
    feeder = downlink[:downlink.index("[worker down]")]
    assert xconnect.startswith(feeder)
    assert "pipeline = xconnect\nrx = feed\npairs = feed:core" in feeder


def test_replay_feeder_replaces_only_the_feeder_worker_and_learns_every_pcap_frame():
    pcap = Inputs().downlink_pcap("504", ring=True)
    old = bng_feeder.feeder_config("downlink")
    new = bng_feeder.feeder_config("downlink", feeder="replay")
    section = "\n".join(bng_bench.feeder_section("replay", pcap))
    assert "pipeline = replay\nrx = feed\ntx = core\n" in section
    assert f"frames = {bng_bench.pcap_frames(pcap)}" in section
    # Everything but the feeder's section is the benchmark's, byte for byte.
    assert new.replace(section, "") == old.replace(
        "\n".join(bng_bench.feeder_section("pcap", pcap)), "")


def test_pcap_frames_counts_records_and_refuses_what_is_not_a_whole_pcap(tmp_path):
    head = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
    rec = struct.pack("<IIII", 0, 0, 60, 60) + bytes(60)
    good = tmp_path / "three.pcap"
    good.write_bytes(head + rec * 3)
    assert bng_bench.pcap_frames(good) == 3
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(head + rec * 2 + rec[:30])
    with pytest.raises(ValueError, match="truncated"):
        bng_bench.pcap_frames(cut)
    other = tmp_path / "not.pcap"
    other.write_bytes(b"\0" * 40)
    with pytest.raises(ValueError, match="not a pcap"):
        bng_bench.pcap_frames(other)
    with pytest.raises(ValueError, match="pcap or replay"):
        bng_bench.feeder_section("nic", good)
