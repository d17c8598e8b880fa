"""tshark as an independent decoder of what the vCMTS sends toward the RPD.

Debian's tshark 4.0 decodes L2TPv3 with the DOCSIS D-MPT sub-layer, the
MPEG-TS packets and the DOCSIS frames in them, but not the PSP sub-layer:
for PSP the RPD model (lab/rpd_model.py) takes the DOCSIS frames out and
writes them as a DLT_DOCSIS (143) capture.  The checks read tshark's own
fields: frame control, EHDR and LEN, the HCS status, the BPI+ privacy EH
(key sequence, SAID), the downstream service EH (DSID, sequence numbers),
the Ethernet frame inside -- and no expert message (malformed packet, bad
checksum, continuity-counter drop) anywhere.

Captures are written per L2TPv3 session: tshark reassembles DOCSIS frames
across TS packets by PID, and every channel uses PID 0x1FFE.
"""
import shutil
import struct
import subprocess
from collections import defaultdict

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from lab import rpd_model
from lab.cmts_lab import DS_SESSION, NET_HOST_IP, NET_HOST_MAC, CmtsLab, SgProfile, depi_payloads

DMPT_OPTS = ["-o", "l2tp.cookie_size:0", "-o", "l2tp.l2_specific:DOCSIS DMPT-Specific",
             "-d", "l2tp.pw_type==0,mp2t"]


def tshark_fields(pcap, fields, opts=()):
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (scripts/setup installs it)")
    argv = ["tshark", "-r", str(pcap), *opts, "-T", "fields", "-E", "occurrence=a",
            "-E", "separator=|"]
    for f in fields:
        argv += ["-e", f]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return [dict(zip(fields, line.split("|"))) for line in res.stdout.splitlines()]


def send_ds(lab, n):
    """n frames of the iMix sizes to the CMs' first CPEs; the DEPI packets."""
    sent = []
    for f in range(n):
        c, ip, mac, dport = lab.profile.flow(f)
        size = (84, 256, 1280, 600)[f % 4]
        sent.append((c, ip, bytes(Ether(dst=mac, src=NET_HOST_MAC) /
                                  IP(src=NET_HOST_IP, dst=ip) / UDP(sport=1000 + f, dport=dport) /
                                  bytes(size - 4 - 42))))
    lab.rpd_port.drain()
    lab.net_port.send([e for _, _, e in sent], pace_us=300)
    return sent, lab.rpd_port.recv(timeout=5, idle=1.0)


def check_no_expert(rows):
    bad = [r for r in rows if r.get("_ws.expert.message") or r.get("_ws.malformed")]
    assert not bad, bad[:5]


def test_tshark_decodes_dmpt(dp_binary, tmp_path):
    """SC-QAM channels (D-MPT), BPI+ off so tshark sees the frames whole."""
    prof = SgProfile(n_cms=12, channels="mixed", bpi=False, filters=False)
    with CmtsLab(prof, tag="tsm") as lab:
        sent, got = send_ds(lab, 48)
    by_session = defaultdict(list)
    for f in got:
        by_session[struct.unpack(">I", f[34:38])[0]].append(f)
    scqam = {DS_SESSION + c for c, t, _ in prof.channels if t == "scqam"}
    # The model's count of frames per session is what tshark must find.
    dec = rpd_model.DepiDecoder()
    for p in depi_payloads(got):
        dec.feed(p)
    assert len(dec.frames) == len(sent)
    want = defaultdict(int)
    for session, _ in dec.frames:
        want[session] += 1
    assert any(s in scqam for s in want)
    for session, pkts in by_session.items():
        if session not in scqam:
            continue
        pcap = tmp_path / f"depi-{session:x}.pcap"
        rpd_model.write_pcap(pcap, pkts, linktype=1)
        rows = tshark_fields(pcap, ["l2tp.sid", "l2tp.l2_spec_sequence", "mp2t.pid",
                                    "docsis.fctype", "docsis.len", "docsis.hcs.status",
                                    "docsis.ehdr.ds_dsid", "ip.dst", "udp.length",
                                    "_ws.expert.message", "_ws.malformed"], DMPT_OPTS)
        check_no_expert(rows)
        frames = 0
        for r in rows:
            assert int(r["l2tp.sid"], 16) == session
            assert int(r["mp2t.pid"].split(",")[0], 16) == 0x1ffe
            statuses = [x for x in r["docsis.hcs.status"].split(",") if x]
            for st, dsid, dst in zip(statuses, r["docsis.ehdr.ds_dsid"].split(","),
                                     r["ip.dst"].split(",")[1:]):
                # The DSID is the CM's id; the CPE address is the CM's.
                cm = prof.cm(int(dsid))
                assert st == "1" and dst in {ip for ip, _ in cm.cpes}
            frames += len(statuses)
        assert frames == want[session], session


def test_tshark_decodes_psp_frames_as_docsis(dp_binary, tmp_path):
    """OFDM channels (PSP) with BPI+: the model's DOCSIS frames as
    DLT_DOCSIS, once as sent (encrypted) and once decrypted, so tshark can
    read the Ethernet frame too."""
    prof = SgProfile(n_cms=16, channels="ofdm")
    with CmtsLab(prof, tag="tsp") as lab:
        sent, got = send_ds(lab, 64)
    dec = rpd_model.DepiDecoder()
    for p in depi_payloads(got):
        dec.feed(p)
    frames = [fr for _, fr in dec.frames]
    assert len(frames) == len(sent)
    models = prof.models_by_said()
    plain = []
    for fr in frames:
        # Wireshark does not dissect what the E bit says is encrypted: the
        # decrypted copy clears it (and so gets its own HCS).
        _, eth = rpd_model.downstream_ethernet(fr, models)
        kseq, _, said = fr.privacy()
        ds = fr.ehdr[rpd_model.EH_DS_SVC]
        plain.append(rpd_model.packet_pdu(
            rpd_model.eh_bp_down(kseq, False, said) +
            bytes([rpd_model.EH_DS_SVC << 4 | len(ds)]) + ds, eth + rpd_model.crc32_eth(eth)))
    enc_pcap, plain_pcap = tmp_path / "docsis-enc.pcap", tmp_path / "docsis.pcap"
    rpd_model.write_pcap(enc_pcap, [fr.frame for fr in frames])
    rpd_model.write_pcap(plain_pcap, plain)
    rows = tshark_fields(enc_pcap, ["docsis.fctype", "docsis.ehdrlen", "docsis.len",
                                    "docsis.hcs.status", "docsis.ehdr.keyseq",
                                    "docsis.ehdr.said", "docsis.bpi_en",
                                    "docsis.ehdr.ds_dsid", "docsis.ehdr.ds_pkt_seq_num",
                                    "frame.len"])
    psn = {}
    for r in rows:
        assert r["docsis.fctype"] == "0x00"
        assert r["docsis.hcs.status"] == "1"
        assert r["docsis.ehdrlen"] == "11"                  # BP_DOWN 5 + DS service 6
        assert int(r["docsis.len"]) == int(r["frame.len"]) - 6
        assert r["docsis.ehdr.keyseq"] == "1" and r["docsis.bpi_en"] == "1"
        said, dsid = int(r["docsis.ehdr.said"]), int(r["docsis.ehdr.ds_dsid"])
        assert said == dsid
        # Packet sequence numbers of a bonded CM count up from 0.
        n = int(r["docsis.ehdr.ds_pkt_seq_num"])
        assert n == psn.get(dsid, 0)
        psn[dsid] = n + 1
    rows = tshark_fields(plain_pcap, ["docsis.ehdr.said", "eth.dst", "ip.dst", "udp.dstport",
                                      "_ws.expert.message", "_ws.malformed"])
    check_no_expert(rows)
    want = {(c.said, ip) for c, ip, _ in sent}
    assert {(int(r["docsis.ehdr.said"]), r["ip.dst"]) for r in rows} == want
