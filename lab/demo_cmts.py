"""The vCMTS of `make run` (lab/demo.py): a small service group whose cable
modems, service flows, classifiers and filter rules come from the
controller, and traffic both ways through it against the Remote PHY model.

    netns "net" (core host)                edgeplane-dp (cmts-ds, cmts-us)      netns "rpd" (RPD model)
    DS: Ethernet to the CPEs  --net-->  filters, classifiers, SF shaping,  --rpd-->  DEPI decoded: DOCSIS
                                        BPI+ (AES-128 CBC), DOCSIS+DEPI              HCS, BPI+, CRC-32,
    US: Ethernet from the CPEs <--net-- SID lookup, BPI+ decrypt, CRC      <--rpd--  counted per modem;
                                        check, UEPI reassembly                       UEPI built per modem

edgeplane-dp starts with channels, bonding groups and ports only (its
configuration file); every modem comes from the one POST /v1/apply of the
demo, reconciled by the node agent through --cmts-socket.  Both sides are
raw packet sockets (lab/cmts_lab.py): the namespaces carry no addresses,
so the kernel never answers the L2TPv3 or CPE traffic itself.
"""
import socket
import threading
import time

from . import rpd_model
from .cmts_lab import (NET_HOST_MAC, RPD_PORT_MAC, US_SESSION, CmSpec, CmtsLab, SgProfile, cmts_sections,
                       depi_payloads, ds_frame, uepi_frame, us_frame)
from .dp import Dp

SG = "sg0"
N_MODEMS = 4
BPI_MODEMS = (1,)                   # BPI+ (AES-128 CBC) on modem 1; the others in the clear
FILTER_GROUP = 1
DENIED_DPORT = 137                  # NetBIOS: the filter group denies 137-139, as operators do
CLASSIFIED_DPORT = 5060             # SIP: a classifier puts it on service flow 1 (priority 5)
UNKNOWN_CPE = "198.19.255.1"        # no modem has it: the vCMTS drops it (cmts_unknown_cpe)
SIZES = (84, 256, 1280)             # Intel vCMTS's iMix frame sizes (with FCS)
PACKET_OUTGOING = 4                 # sll_pkttype of a frame this socket's host sent


def modems():
    return [CmSpec(i, bg=(i - 1) % 2, fgs=(FILTER_GROUP,), bpi=i in BPI_MODEMS) for i in range(1, N_MODEMS + 1)]


def cmts_config(cms):
    """The cmts section of the demo's desired state: one service group."""
    out = []
    for c in cms:
        m = {"id": c.id, "mac": c.mac, "cpe": [f"{ip}@{mac}" for ip, mac in c.cpes], "bondingGroup": c.bg,
             "filterGroups": list(c.fgs), "sids": [c.sid],
             "serviceFlows": [{"sf": 0, "rate": 100_000_000, "prio": 1},
                              {"sf": 1, "rate": 10_000_000, "prio": 5}],
             "classifiers": [{"cls": 0, "sf": 1, "prio": 64, "proto": "udp", "dport": str(CLASSIFIED_DPORT)}]}
        if c.bpi:
            key, iv = c.keys[c.ds_kseq]
            m["privacy"] = {"said": c.said, "kseq": c.ds_kseq, "key": key.hex(), "iv": iv.hex()}
        out.append(m)
    return {"serviceGroups": [{"name": SG, "modems": out, "filters": [
        {"group": FILTER_GROUP, "order": 10, "action": "deny", "proto": "udp", "dport": "137-139"}]}]}


class DemoCmtsLab(CmtsLab):
    """The vCMTS lab with no modem in edgeplane-dp's configuration file:
    the controller gives them all."""

    def __init__(self, tag):
        self.cms = modems()
        prof = SgProfile(n_cms=N_MODEMS, filters=False, classifiers=False)
        prof.cms = self.cms
        super().__init__(prof, tag=tag)

    def start_dp(self, **override):
        self.dp = Dp(self.dut, None, name=f"{self.tag}-dut", start_timeout=60)
        sections = cmts_sections(self.profile, self.dp.dir)
        del sections[f"cmts {SG}"]["cm_file"]
        self.dp.sections = sections
        return self.dp.start()


class Collector:
    """Every frame arriving (not sent) on a raw port, in a thread, until stop()."""

    def __init__(self, port):
        self.port, self.frames = port, []
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run, daemon=True)
        self._th.start()

    def _run(self):
        s = self.port.s
        s.settimeout(0.1)
        while not self._stop.is_set():
            try:
                f, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                return
            if addr[2] != PACKET_OUTGOING:
                self.frames.append(f)

    def stop(self):
        self._stop.set()
        self._th.join()
        return self.frames


def run_traffic(lab, seconds, pps):
    """Downstream frames at `pps` to the modems' CPEs round robin (1 in 10
    to the classified port, 1 in 20 to the denied port, 1 in 50 to an
    address no modem has), and every tenth tick one upstream frame per
    modem as UEPI from the RPD model; what arrived on either side
    collected meanwhile.  Returns the counts the summary shows."""
    cms = lab.cms
    rx_rpd, rx_net = Collector(lab.rpd_port), Collector(lab.net_port)
    sent = {"ds": {c.id: 0 for c in cms}, "ds_classified": 0, "ds_denied": 0, "ds_unknown": 0,
            "us": {c.id: 0 for c in cms}}
    models = {c.id: c.model() for c in cms}
    seq = {US_SESSION + u: [0] for u in range(2)}
    t0, f = time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        c = cms[f % len(cms)]
        ip, mac = c.cpes[f // len(cms) % 4]
        if f % 50 == 7:
            lab.net_port.send([ds_frame(UNKNOWN_CPE, mac, 5000, 84, f)])
            sent["ds_unknown"] += 1
        elif f % 20 == 3:
            lab.net_port.send([ds_frame(ip, mac, DENIED_DPORT, 84, f)])
            sent["ds_denied"] += 1
        else:
            classified = f % 10 == 0
            lab.net_port.send([ds_frame(ip, mac, CLASSIFIED_DPORT if classified else 5000, SIZES[f % 3], f)])
            sent["ds"][c.id] += 1
            sent["ds_classified"] += classified
        if f % 10 == 0:
            for c in cms:
                ip, mac = c.cpes[0]
                session = US_SESSION + c.id % 2
                burst = models[c.id].upstream_frame(us_frame(ip, mac, SIZES[c.id % 3], f))
                lab.rpd_port.send([uepi_frame(x) for x in rpd_model.uepi_packets(session, seq[session], c.sid,
                                                                                 burst)])
                sent["us"][c.id] += 1
        f += 1
        time.sleep(max(0.0, t0 + f / pps - time.monotonic()))
    time.sleep(1.0)  # what is still in the data plane's queues
    depi = [x for x in rx_rpd.stop() if x[6:12] == bytes.fromhex(RPD_PORT_MAC.replace(":", ""))]
    upstream = rx_net.stop()
    return {"sent": sent, **decode_downstream(cms, depi), "us_rx": us_per_modem(cms, upstream)}


def decode_downstream(cms, frames):
    """What the RPD model made of the DEPI packets: Ethernet frames per
    modem (BPI+ decrypted with the modem's TEK, CRC-32 verified), frames
    on the classified flow's priority, and what would not decode."""
    by_said = {c.said: c.model() for c in cms if c.bpi}
    by_said[None] = next(c.model() for c in cms if not c.bpi)
    by_cpe_mac = {bytes.fromhex(mac.replace(":", "")): c.id for c in cms for _, mac in c.cpes}
    dec = rpd_model.DepiDecoder()
    errors = 0
    for p in depi_payloads(frames):
        try:
            dec.feed(p)
        except rpd_model.ModelError:
            # A sequence gap or a broken packet: count it, resynchronise
            # the session on the next packet.
            errors += 1
            session = int.from_bytes(p[:4], "big")
            for table in (dec.seq, dec.psp_part, dec.mpt):
                table.pop(session, None)
    per_modem = {c.id: 0 for c in cms}
    decrypted = prio5 = 0
    for _, fr in dec.frames:
        try:
            _, eth = rpd_model.downstream_ethernet(fr, by_said)
        except rpd_model.ModelError:
            errors += 1
            continue
        cm = by_cpe_mac.get(eth[:6])
        if cm is not None:
            per_modem[cm] += 1
        priv = fr.privacy()
        decrypted += priv is not None and priv[1]
        svc = fr.ds_service()
        prio5 += svc is not None and svc[0] == 5
    return {"depi_packets": len(frames), "docsis_frames": len(dec.frames), "ds_rx": per_modem,
            "bpi_decrypted": decrypted, "classified": prio5, "decode_errors": errors}


def us_per_modem(cms, frames):
    by_mac = {bytes.fromhex(c.cpes[0][1].replace(":", "")): c.id for c in cms}
    out = {c.id: 0 for c in cms}
    for f in frames:
        cm = by_mac.get(f[6:12])
        if cm is not None and f[:6] == bytes.fromhex(NET_HOST_MAC.replace(":", "")):
            out[cm] += 1
    return out


def summary_lines(res, cms):
    """The summary's vCMTS lines (the RPD model's view) and whether every
    modem got its traffic both ways."""
    s = res["sent"]
    per = ", ".join(f"CM {c.id}{' (BPI+)' if c.bpi else ''} {res['ds_rx'][c.id]}/{s['ds'][c.id]}" for c in cms)
    lines = [f"vCMTS   downstream core -> vCMTS -> DEPI -> RPD model: {res['depi_packets']:,} DEPI packets, "
             f"{res['docsis_frames']:,} DOCSIS frames decoded (HCS, CRC-32 checked; {res['decode_errors']} "
             "would not decode)",
             f"        frames per modem received/sent: {per}",
             f"        BPI+ decrypted by the model: {res['bpi_decrypted']:,}; on the classified flow "
             f"(UDP {CLASSIFIED_DPORT}, priority 5): {res['classified']:,} of {s['ds_classified']:,}; "
             f"{s['ds_denied']} to UDP {DENIED_DPORT} (filter group {FILTER_GROUP} denies) and {s['ds_unknown']} "
             "to an address no modem has were sent",
             "vCMTS   upstream RPD model -> UEPI -> vCMTS -> core, frames per modem received/sent: "
             + ", ".join(f"CM {c.id} {res['us_rx'][c.id]}/{s['us'][c.id]}" for c in cms)]
    ok = (all(res["ds_rx"][c.id] > 0 and res["us_rx"][c.id] > 0 for c in cms)
          and res["bpi_decrypted"] > 0 and res["decode_errors"] == 0)
    return lines, ok
