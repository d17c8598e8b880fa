"""The vBNG downlink benchmark's loop-fed peer (bench/bng_peers.QosSched,
loop=True): DPDK's qos_sched with one net_ring port as its rx and its tx
port, filled by edgeplane-ring-fill (dataplane/gen/ring_fill.c) with the
pcap's frames.

- The command line differs from the pcap-fed peer's only where the loop
  needs it: one net_ring port for both directions, the runtime files a
  secondary process attaches to (no --in-memory).
- Filled, the loop carries the frames round and round: the scheduler sends
  many times the filled count in a second, and the rx thread takes back
  what was sent (a loop that lost its frames would stop); the prefix's
  hugepage files are gone after stop.
"""
import time
from pathlib import Path

import pytest

from bench.bng_inputs import Inputs
from bench.bng_peers import (LOOP_FRAMES, LOOP_FILL_BIN, QOS_SCHED_BIN, QOS_SCHED_PORT_RATE, QosSched,
                             write_qos_profile)

N = 64


def _cmds(tmp_path):
    pcap = tmp_path / "in.pcap"
    return (QosSched(tmp_path, "p", pcap, tmp_path / "q.cfg").cmd,
            QosSched(tmp_path, "l", pcap, tmp_path / "q.cfg", loop=True).cmd)


def test_loop_peer_uses_one_net_ring_port_both_ways_and_shared_runtime_files(tmp_path):
    pcap_cmd, loop_cmd = _cmds(tmp_path)
    assert "--in-memory" in pcap_cmd and "--in-memory" not in loop_cmd
    assert [a for a in loop_cmd if a.startswith("--vdev")] == ["--vdev=net_ring0"]
    assert loop_cmd[loop_cmd.index("--pfc") + 1] == "0,0,0,1"
    assert pcap_cmd[pcap_cmd.index("--pfc") + 1] == "0,1,0,1"
    # The application's own arguments otherwise the same.
    tail = lambda c: [a for a in c[c.index("--"):] if a not in ("0,0,0,1", "0,1,0,1")]  # noqa: E731
    assert tail(pcap_cmd) == tail(loop_cmd)


def test_filled_loop_carries_the_frames_round_without_losing_any(tmp_path):
    if not QOS_SCHED_BIN.exists() or not LOOP_FILL_BIN.exists():
        pytest.fail("run `make build` and `make peers` first", pytrace=False)
    inputs = Inputs(n_subs=N)
    inputs.dir = tmp_path
    prof = write_qos_profile(tmp_path / "q.cfg", pipes=N, pipe_rate_Bps=12_500_000,
                             port_rate_Bps=QOS_SCHED_PORT_RATE)
    qs = QosSched(tmp_path, "looptest", inputs.downlink_pcap("504"), prof, loop=True)
    with qs:
        # QosSched fills LOOP_FRAMES at start; the loop is measured after.
        time.sleep(1.0)
        a = qs.tel.port_stats(0)
        time.sleep(1.0)
        b = qs.tel.port_stats(0)
        prefix = qs.prefix
    sent = b["opackets"] - a["opackets"]
    taken = b["ipackets"] - a["ipackets"]
    assert sent > 5 * LOOP_FRAMES
    # What left came back, less what is in flight at either reading.
    assert abs(sent - taken) <= 16384
    assert b["ierrors"] == 0 and b["oerrors"] == 0
    assert not list(Path("/dev/hugepages").glob(f"{prefix}map_*"))
