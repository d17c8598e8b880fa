"""bench/bng_feeder.py measures the ring-fed downlink benchmark's feeder with
the benchmark's own configuration: these tests check that it changes only
the consumer."""
from bench import bng_feeder


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
