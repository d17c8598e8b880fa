#!/usr/bin/env python3
"""Write the seed corpus of the `cmts_us` fuzz target (fuzz_cmts_us.c): UEPI
L2TPv3 payloads, each prefixed with its 2-byte length, built by the RPD model
(lab/rpd_model.py) for CM frames of the iMix sizes, whole and cut across
packets.  Run from the repository root with the project venv:
.venv/bin/python dataplane/fuzz/make_cmts_corpus.py
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from lab import rpd_model  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "cmts_us")
CM = rpd_model.CableModem(1, "02:00:00:01:00:01", sid=1, said=1,
                          keys={1: (bytes(range(16)), bytes(range(16, 32)))}, ds_kseq=1)


def ether(size):
    """A frame of `size` bytes with FCS (so size - 4 here): CPE -> network."""
    return (bytes.fromhex("02000000" "0b02" "020000020001" "0800") + bytes(size))[:size - 4]


def write_input(name, payloads):
    with open(os.path.join(OUT, name), "wb") as f:
        for p in payloads:
            f.write(struct.pack(">H", len(p)) + p)


os.makedirs(OUT, exist_ok=True)
one = CM.upstream_frame(ether(84))
imix = b"".join(CM.upstream_frame(ether(s)) for s in (84, 256, 1280, 84))
seq = [0]
write_input("one-frame", rpd_model.uepi_packets(0x2000, seq, 1, one))
write_input("imix-burst", rpd_model.uepi_packets(0x2000, seq, 1, imix, max_payload=1500))
write_input("cut-every-100", rpd_model.uepi_packets(0x2001, seq, 1, imix, max_payload=100))
write_input("cut-in-header", rpd_model.uepi_packets(0x2000, seq, 1, imix, cuts=[3, 90, 95]))
write_input("plain-frames", rpd_model.uepi_packets(
    0x2000, seq, 1, rpd_model.packet_pdu(b"", ether(64) + rpd_model.crc32_eth(ether(64)))))
print(f"5 inputs in {OUT}")
