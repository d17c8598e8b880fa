"""vCMTS end to end against an independent Remote PHY side.

edgeplane-dp runs cmts-ds and cmts-us in a namespace between an RPD side
and a network side (lab/cmts_lab.py).  The RPD model (lab/rpd_model.py,
written from the DOCSIS, R-DEPI and R-UEPI specifications) turns what the
data plane sends toward the RPD back into the Ethernet frames each cable
modem would deliver -- HCS checked, BPI+ decrypted with the CM's keys, CRC
checked -- and builds the upstream UEPI traffic of every CM from plain
Ethernet frames, frames cut across UEPI packets.  The round trips must give
back exactly the frames put in, for every CM of the default service-group
profile (300 CMs) and of its SC-QAM alternative (D-MPT).
"""
import threading
import time

import pytest

from lab import rpd_model
from lab.cmts_lab import (US_SESSION, CmtsLab, SgProfile, depi_payloads, ds_frame, tek, uepi_frame,
                          us_frame)

SIZES = (84, 256, 1280)             # Intel vCMTS's iMix frame sizes (with FCS)


def decode_ds(captured, cms_by_said):
    """[(cm id, Ethernet frame)] of captured DEPI packets, via the model."""
    dec = rpd_model.DepiDecoder()
    for p in depi_payloads(captured):
        dec.feed(p)
    out = []
    for _, fr in dec.frames:
        cm, eth = rpd_model.downstream_ethernet(fr, cms_by_said)
        out.append((cm.id, eth))
    return out, dec


@pytest.fixture(scope="module", params=["ofdm", "mixed"])
def lab(request, dp_binary):
    lab = CmtsLab(SgProfile(n_cms=300, channels=request.param), tag=f"cm{request.param[0]}")
    request.addfinalizer(lab.close)
    return lab.__enter__()


def test_downstream_roundtrip_every_cm(lab):
    p = lab.profile
    sent = []
    for f in range(len(p.cms)):
        c, ip, mac, dport = p.flow(f)
        sent.append((c.id, ds_frame(ip, mac, dport, SIZES[f % 3], f)))
    lab.rpd_port.drain()
    lab.net_port.send([e for _, e in sent], pace_us=200)
    got = lab.rpd_port.recv(timeout=10, idle=1.5)
    out, dec = decode_ds(got, p.models_by_said())
    assert sorted(out) == sorted(sent)
    assert {cm for cm, _ in out} == {c.id for c in p.cms}
    st = lab.dp.ctl("cmts-stats")["downstream"]
    assert st["lookup_unmatched"] == 0
    if p.channels[2][1] == "scqam":
        assert any(ch["mpt_ts_pkts"] > 0 for ch in st["channels"])


def test_upstream_roundtrip_every_cm_frames_cut_across_packets(lab):
    p = lab.profile
    seq, frames, sent = [0], [], []
    for c in p.cms:
        ip, mac = c.cpes[c.id % 4]
        # Two frames per burst, cut every 150 bytes: most frames cross
        # UEPI packets, many inside their MAC header.
        es = [us_frame(ip, mac, SIZES[(c.id + k) % 3], 1000 * c.id + k) for k in range(2)]
        burst = b"".join(c.model().upstream_frame(e) for e in es)
        sent += es
        frames += [uepi_frame(x) for x in
                   rpd_model.uepi_packets(US_SESSION + c.id % 2, seq, c.sid, burst,
                                          max_payload=150)]
    lab.net_port.drain()
    lab.rpd_port.send(frames, pace_us=100)
    got = lab.net_port.recv(want=len(sent), timeout=10, idle=1.5)
    assert sorted(got) == sorted(sent)
    st = lab.dp.ctl("cmts-stats")["upstream"]
    assert st["hcs_fail"] == 0
    assert sum(ch["reassembly_success"] for ch in st["channels"]) > len(sent) / 2
    assert sum(ch["reassembly_fail"] for ch in st["channels"]) == 0


@pytest.fixture(scope="module")
def small(request, dp_binary):
    lab = CmtsLab(SgProfile(n_cms=40), tag="cmchg")
    request.addfinalizer(lab.close)
    return lab.__enter__()


def _stream(lab, targets, seconds, pace_us, stop):
    """Send DS frames round robin to targets [(cm id, ip, mac)] until stop."""
    sent, f = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not stop.is_set():
        cm, ip, mac = targets[f % len(targets)]
        e = ds_frame(ip, mac, 5000, SIZES[f % 3], f)
        lab.net_port.send([e])
        sent.append((cm, e))
        f += 1
        time.sleep(pace_us / 1e6)
    return sent


def test_changes_during_traffic_lose_nothing_for_the_others(small):
    """CMs added, deleted and replaced, SFs, classifiers, filter rules and a
    key changed while traffic runs: every frame to a CM that was not the
    one deleted arrives, exactly."""
    lab, p = small, small.profile
    models = p.models_by_said()
    targets = [(c.id, *c.cpes[0]) for c in p.cms if c.id != 13]
    result = {}
    stop = threading.Event()
    lab.rpd_port.drain()
    th = threading.Thread(target=lambda: result.setdefault(
        "sent", _stream(lab, targets, 3.0, 500, stop)))
    th.start()
    try:
        time.sleep(0.3)
        ctl = lab.dp.ctl
        ctl("cm-del", id=13)
        ctl("cm-add", **dict(kv.split("=", 1) for kv in p.cm(13).line().split()))
        ctl("sf-set", cm=5, sf=2, rate="100M", burst=100000, prio=5)
        ctl("cls-set", cm=6, cls=3, sf=2, proto=17, dport=5000)
        ctl("filter-add", rule="3 99 permit proto=6 dport=22")
        key, iv = tek(7, 2)
        ctl("cm-key", id=7, kseq=2, key=key.hex(), iv=iv.hex())
        models[7].keys[2] = (key, iv)
        ctl("cm-key-activate", id=7, kseq=2)
        cm20 = dict(kv.split("=", 1) for kv in p.cm(20).line().split())
        cm20["fg"] = "2"
        ctl("cm-add", **cm20)
    finally:
        th.join()
    sent = result["sent"]
    got = lab.rpd_port.recv(timeout=5, idle=1.5)
    out, _ = decode_ds(got, models)
    assert sorted(out) == sorted(sent)
    assert lab.dp.ctl("cm-get", id=6)["cm"]["classifier_matched"] > 0


def test_key_rolled_mid_traffic_without_loss(small):
    """CM 9's TEK is rolled twice while frames flow both ways: downstream
    frames carry the key sequences in turn and all decrypt; upstream frames
    under the old and the new key are all accepted."""
    lab, p = small, small.profile
    c = p.cm(9)
    ip, mac = c.cpes[0]
    models = p.models_by_said()
    stop = threading.Event()
    result = {}
    lab.rpd_port.drain()
    lab.net_port.drain()
    th = threading.Thread(target=lambda: result.setdefault(
        "sent", _stream(lab, [(9, ip, mac)], 2.5, 400, stop)))
    th.start()
    us_sent, seq = [], [0]
    try:
        for kseq in (2, 3):
            time.sleep(0.4)
            key, iv = tek(9, kseq)
            lab.dp.ctl("cm-key", id=9, kseq=kseq, key=key.hex(), iv=iv.hex())
            models[9].keys[kseq] = (key, iv)
            # The CM learns the new key and uses it upstream at once; the
            # CMTS accepts both while the downstream still uses the old one.
            model = models[9]
            for k in (kseq - 1, kseq):
                e = us_frame(ip, mac, 256, 100 * kseq + k)
                us_sent.append(e)
                lab.rpd_port.send([uepi_frame(x) for x in rpd_model.uepi_packets(
                    US_SESSION, seq, c.sid, model.upstream_frame(e, kseq=k))])
            time.sleep(0.2)
            lab.dp.ctl("cm-key-activate", id=9, kseq=kseq)
    finally:
        th.join()
    out, dec = decode_ds(lab.rpd_port.recv(timeout=5, idle=1.5), models)
    assert sorted(out) == sorted(result["sent"])
    kseqs = {fr.privacy()[0] for _, fr in dec.frames}
    assert kseqs == {1, 2, 3}
    got = lab.net_port.recv(want=len(us_sent), timeout=5, idle=1.0,
                            keep=lambda f: f[6:12] == bytes.fromhex(mac.replace(":", "")))
    assert sorted(got) == sorted(us_sent)
