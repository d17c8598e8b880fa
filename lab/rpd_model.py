"""A model of the Remote PHY side of a vCMTS: what a Remote PHY Device and the
cable modems behind it send and receive, for tests that check edgeplane's
vCMTS data plane from outside.  Written from the CableLabs specifications,
independently of edgeplane's C code:

- DOCSIS MAC frames (MAC and Upper Layer Protocols Interface Specification,
  CM-SP-MULPIv3.1, section 6.2): FC, MAC_PARM, LEN, extended header (EHDR)
  elements, the header check sequence (HCS: the CRC-16 of ITU-T X.25 over
  the header, least significant byte first), and for a Packet PDU the
  Ethernet frame with its IEEE 802.3 CRC-32.
- EHDR elements: downstream privacy (type 4: key sequence | version,
  E | T | SAID, reserved), upstream privacy version 2 (type 7: key sequence
  | version, E | T | SID), downstream service (type 8: traffic priority,
  DSID, packet sequence number).
- Baseline Privacy Plus (Security Specification CM-SP-SECv3.1; ITU-T
  J.125): AES-128 in CBC mode over the PDU from its 13th byte (after the
  destination and source MAC) through the CRC, with residual block
  termination: a last partial block is XORed with AES(K, last full
  ciphertext block), and a PDU part shorter than one block with AES(K, IV).
  The CRC is computed over the plaintext frame before encryption.
- Remote DOCSIS (R-DEPI, CM-SP-R-DEPI; R-UEPI, CM-SP-R-UEPI): L2TPv3 data
  sessions over IP (protocol 115) with a 4-byte sub-layer header
  (V, S, H, flow id | segment count | sequence number); the Packet
  Streaming Protocol (PSP) segment table of 16-bit entries (B, E, 14-bit
  length); DOCSIS in MPEG-TS (D-MPT, PID 0x1FFE, pointer_field when a MAC
  frame starts in a TS packet, 0xFF stuff bytes); a UEPI transmission unit
  = a header segment (B: burst information, the scheduled SID), payload
  segments (the burst's bytes, cut anywhere), a trailer segment (E).

    cm = CableModem(1, "02:00:00:01:00:01", sid=1, said=1,
                    keys={1: (key, iv)}, ds_kseq=1)
    for ip_payload in uepi_packets(0x2000, seq, cm.sid,
                                   cm.upstream_frame(ether_bytes)): ...
    dec = DepiDecoder(); dec.feed(l2tp_bytes)      # DOCSIS frames come out
    cm, ether = downstream_ethernet(frame, {cm.said: cm})
"""
import struct
import zlib

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

IPPROTO_L2TP = 115
EH_BP_DOWN, EH_BP_UP2, EH_DS_SVC = 4, 7, 8
PSP_B, PSP_E, PSP_LEN = 0x8000, 0x4000, 0x3FFF
TS_LEN, DOCSIS_PID = 188, 0x1FFE
DLT_DOCSIS = 143


class ModelError(ValueError):
    """Bytes that break one of the specifications' rules."""


# ---- checksums --------------------------------------------------------------

def crc16_x25(data):
    """The HCS: CCITT polynomial x^16+x^12+x^5+1 reflected (0x8408), preset
    0xFFFF, ones' complement of the result (ITU-T X.25 frame check sequence)."""
    crc = 0xFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    return crc ^ 0xFFFF


def crc32_eth(frame):
    """The IEEE 802.3 FCS of a frame, as it is transmitted (LSB first)."""
    return struct.pack("<I", zlib.crc32(frame) & 0xFFFFFFFF)


# ---- BPI+ -------------------------------------------------------------------

def _aes_block(key, block):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def _xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


def bpi_encrypt(key, iv, data):
    """CBC with residual block termination (SECv3.1 / J.125)."""
    if len(data) < 16:
        return _xor(data, _aes_block(key, iv))
    full = len(data) - len(data) % 16
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    out = enc.update(data[:full]) + enc.finalize()
    if full != len(data):
        out += _xor(data[full:], _aes_block(key, out[full - 16:full]))
    return out


def bpi_decrypt(key, iv, data):
    if len(data) < 16:
        return _xor(data, _aes_block(key, iv))
    full = len(data) - len(data) % 16
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    out = dec.update(data[:full]) + dec.finalize()
    if full != len(data):
        out += _xor(data[full:], _aes_block(key, data[full - 16:full]))
    return out


# ---- DOCSIS MAC frames ------------------------------------------------------

def eh_bp_down(kseq, enc, said):
    return bytes([EH_BP_DOWN << 4 | 4, kseq << 4 | 1,
                  (0x80 if enc else 0) | (0x40 if kseq & 1 else 0) | said >> 8, said & 0xFF, 0])


def eh_bp_up2(kseq, enc, sid):
    return bytes([EH_BP_UP2 << 4 | 3, kseq << 4 | 1,
                  (0x80 if enc else 0) | (0x40 if kseq & 1 else 0) | sid >> 8, sid & 0xFF])


def eh_ds_service(prio, dsid=None, psn=None, scc=0):
    if dsid is None:
        return bytes([EH_DS_SVC << 4 | 1, prio << 5])
    first = prio << 5 | (scc & 1) << 4 | dsid >> 16
    if psn is None:
        return bytes([EH_DS_SVC << 4 | 3, first, dsid >> 8 & 0xFF, dsid & 0xFF])
    return bytes([EH_DS_SVC << 4 | 5, first, dsid >> 8 & 0xFF, dsid & 0xFF, psn >> 8, psn & 0xFF])


def packet_pdu(ehdr, pdu):
    """A Packet PDU MAC frame: header (EHDR, HCS) + PDU."""
    fc = 0x01 if ehdr else 0x00
    head = bytes([fc, len(ehdr)]) + struct.pack(">H", len(ehdr) + len(pdu)) + ehdr
    hcs = crc16_x25(head)
    return head + bytes([hcs & 0xFF, hcs >> 8]) + pdu


class DocsisFrame:
    """A parsed MAC frame: fc, ehdr elements {type: value bytes}, hdr_len,
    frame (all its bytes), pdu (bytes after the HCS)."""

    def __init__(self, raw):
        if len(raw) < 6:
            raise ModelError("shorter than a MAC header")
        self.fc = raw[0]
        self.fc_type, self.fc_parm, ehdr_on = raw[0] >> 6, raw[0] >> 1 & 0x1F, raw[0] & 1
        ehdr_len = raw[1] if ehdr_on else 0
        length = struct.unpack(">H", raw[2:4])[0]
        self.hdr_len = 6 + ehdr_len
        if self.fc_type == 3 and self.fc_parm in (0x02, 0x1C):
            self.hdr_len, length = 6, 0
        if length < ehdr_len or len(raw) < 6 + length or len(raw) < self.hdr_len:
            raise ModelError("LEN beyond the bytes")
        self.frame = bytes(raw[:6 + length])
        if crc16_x25(self.frame[:self.hdr_len - 2]) != (self.frame[self.hdr_len - 2] |
                                                         self.frame[self.hdr_len - 1] << 8):
            raise ModelError("HCS does not verify")
        self.ehdr = {}
        pos = 4
        while pos < 4 + ehdr_len:
            t, n = self.frame[pos] >> 4, self.frame[pos] & 0x0F
            if pos + 1 + n > 4 + ehdr_len:
                raise ModelError("EHDR element overruns the EHDR")
            self.ehdr[t] = self.frame[pos + 1:pos + 1 + n]
            pos += 1 + n
        self.pdu = self.frame[self.hdr_len:]

    def __len__(self):
        return len(self.frame)

    def privacy(self):
        """(kseq, encrypted, SAID or SID) of the privacy EH, or None."""
        for t in (EH_BP_DOWN, EH_BP_UP2):
            v = self.ehdr.get(t)
            if v is not None:
                return v[0] >> 4, bool(v[1] & 0x80), (v[1] & 0x3F) << 8 | v[2]
        return None

    def ds_service(self):
        """(priority, DSID or None, PSN or None) of the DS service EH, or None."""
        v = self.ehdr.get(EH_DS_SVC)
        if v is None:
            return None
        dsid = (v[0] & 0x0F) << 16 | v[1] << 8 | v[2] if len(v) >= 3 else None
        psn = v[3] << 8 | v[4] if len(v) == 5 else None
        return v[0] >> 5, dsid, psn


def frame_length(buf, pos):
    """The length of the MAC frame starting at buf[pos], from its header,
    or None when fewer than 4 bytes are there."""
    if len(buf) - pos >= 1 and buf[pos] >> 6 == 3 and (buf[pos] >> 1 & 0x1F) in (0x02, 0x1C):
        return 6
    if len(buf) - pos < 4:
        return None
    return 6 + struct.unpack(">H", buf[pos + 2:pos + 4])[0]


class CableModem:
    """A CM as the RPD side sees it: MAC, SID, SAID, TEKs by key sequence."""

    def __init__(self, id, mac, sid, said, keys=None, ds_kseq=None, bpi=True):
        self.id, self.mac, self.sid, self.said = id, mac, sid, said
        self.keys = dict(keys or {})            # kseq -> (key, iv)
        self.ds_kseq = ds_kseq
        self.bpi = bpi

    def upstream_frame(self, ether, kseq=None):
        """The MAC frame this CM sends for an Ethernet frame (without FCS):
        CRC-32 appended, BPI+ with TEK kseq (default: the downstream one)."""
        pdu = bytes(ether) + crc32_eth(bytes(ether))
        if not self.bpi:
            return packet_pdu(b"", pdu)
        kseq = self.ds_kseq if kseq is None else kseq
        key, iv = self.keys[kseq]
        pdu = pdu[:12] + bpi_encrypt(key, iv, pdu[12:])
        return packet_pdu(eh_bp_up2(kseq, True, self.sid), pdu)


def downstream_ethernet(frame, cms_by_said):
    """What the CM does with a downstream Packet PDU: verify the HCS (done by
    DocsisFrame), decrypt with the TEK the key sequence names, verify the
    CRC-32, return (cm, Ethernet frame without FCS).  cms_by_said: SAID -> CM
    (CMs without BPI are found by their frame's absence of a privacy EH
    through cms_by_said[None])."""
    f = frame if isinstance(frame, DocsisFrame) else DocsisFrame(frame)
    if f.fc_type != 0:
        raise ModelError("not a Packet PDU")
    pdu = f.pdu
    priv = f.privacy()
    if priv is not None and priv[1]:
        kseq, _, said = priv
        cm = cms_by_said.get(said)
        if cm is None or kseq not in cm.keys:
            raise ModelError(f"no TEK for SAID {said} key sequence {kseq}")
        key, iv = cm.keys[kseq]
        pdu = pdu[:12] + bpi_decrypt(key, iv, pdu[12:])
    else:
        cm = cms_by_said.get(None)
    if len(pdu) < 18 or crc32_eth(pdu[:-4]) != pdu[-4:]:
        raise ModelError("CRC-32 does not verify")
    return cm, pdu[:-4]


# ---- L2TPv3 / R-DEPI / R-UEPI -----------------------------------------------

def depi_header(session, seq, count=0, flow=0):
    return struct.pack(">IBBH", session, 0x40 | (flow & 7) << 1, count, seq & 0xFFFF)


def psp_packet(session, seq, segments):
    """segments: [(flags, bytes)]: the session, sub-layer, table, segments."""
    table = b"".join(struct.pack(">H", fl | len(b)) for fl, b in segments)
    return depi_header(session, seq, len(segments)) + table + b"".join(b for _, b in segments)


def uepi_header_segment(sid, iuc=6, minislot=0, no_burst=False):
    return struct.pack(">BBHI", 0x40 | (0x20 if no_burst else 0), iuc, sid, minislot)


def uepi_trailer_segment(good_fec=1):
    return struct.pack(">HHBBH", 0x0008, good_fec, 0, 0, 0)


def uepi_packets(session, seq, sid, burst, max_payload=1400, cuts=None):
    """One upstream burst (the MAC frames' bytes) as UEPI L2TPv3 payloads: a
    header segment, the bytes cut at `cuts` (or wherever max_payload is
    reached), a trailer segment.  seq: the first sequence number (a list of
    one int, advanced)."""
    if cuts is None:
        cuts, at = [], max_payload - 8 - 2 * 2 - 8
        while at < len(burst):
            cuts.append(at)
            at += max_payload - 8 - 2 * 2
    bounds = [0] + list(cuts) + [len(burst)]
    out = []
    for k in range(len(bounds) - 1):
        segs = []
        if k == 0:
            segs.append((PSP_B, uepi_header_segment(sid)))
        if bounds[k + 1] > bounds[k]:
            segs.append((0, burst[bounds[k]:bounds[k + 1]]))
        if k == len(bounds) - 2:
            segs.append((PSP_E, uepi_trailer_segment()))
        out.append(psp_packet(session, seq[0], segs))
        seq[0] = (seq[0] + 1) & 0xFFFF
    return out


class DepiDecoder:
    """Turns DEPI L2TPv3 payloads (PSP or D-MPT) back into DOCSIS MAC frames,
    per session, in order.  Checks sequence numbers (gaps raise), PSP
    segment tables, TS headers, pointer fields and continuity counters."""

    def __init__(self):
        self.seq = {}           # session -> next expected sequence number
        self.psp_part = {}      # session -> bytes of a frame cut by PSP
        self.mpt = {}           # session -> [stream bytes, synced, next cc]
        self.frames = []        # (session, DocsisFrame)
        self.psp_segments = []  # segments per PSP DEPI packet

    def feed(self, l2tp):
        if len(l2tp) < 8:
            raise ModelError("shorter than the L2TPv3 session and sub-layer")
        session, flags, count, seq = struct.unpack(">IBBH", l2tp[:8])
        if flags & 0x40:
            want = self.seq.get(session)
            if want is not None and want != seq:
                raise ModelError(f"session {session:#x}: sequence {seq}, expected {want}")
            self.seq[session] = (seq + 1) & 0xFFFF
        body = l2tp[8:]
        if body[:1] == b"\x47" and count == 0 and len(body) % TS_LEN == 0:
            self._mpt(session, body)
        else:
            self._psp(session, count, body)

    def _psp(self, session, count, body):
        if count == 0 or 2 * count > len(body):
            raise ModelError("PSP segment table")
        table = struct.unpack(f">{count}H", body[:2 * count])
        data = body[2 * count:]
        if sum(e & PSP_LEN for e in table) != len(data):
            raise ModelError("PSP segment lengths do not add up")
        self.psp_segments.append(count)
        pos = 0
        for e in table:
            seg = data[pos:pos + (e & PSP_LEN)]
            pos += e & PSP_LEN
            if e & PSP_B:
                self.psp_part[session] = b""
            if session not in self.psp_part:
                raise ModelError("PSP continuation without a beginning")
            self.psp_part[session] += seg
            if e & PSP_E:
                self.frames.append((session, DocsisFrame(self.psp_part.pop(session))))

    def _mpt(self, session, body):
        st = self.mpt.setdefault(session, [b"", False, None])
        for k in range(0, len(body), TS_LEN):
            ts = body[k:k + TS_LEN]
            pid = (ts[1] & 0x1F) << 8 | ts[2]
            if ts[0] != 0x47 or pid != DOCSIS_PID or ts[3] >> 4 != 1:
                raise ModelError("not a DOCSIS MPEG-TS packet")
            cc = ts[3] & 0x0F
            if st[2] is not None and cc != st[2]:
                raise ModelError(f"continuity counter {cc}, expected {st[2]}")
            st[2] = (cc + 1) & 0x0F
            if ts[1] & 0x40:                    # PUSI: a pointer_field
                ptr = ts[4]
                if ptr > 182:
                    raise ModelError("pointer_field past the packet")
                if st[1]:
                    st[0] += ts[5:5 + ptr]
                    self._mpt_frames(session, st, ptr_check=True)
                else:
                    st[0], st[1] = b"", True
                st[0] += ts[5 + ptr:]
            elif st[1]:
                st[0] += ts[4:]
            self._mpt_frames(session, st)

    def _mpt_frames(self, session, st, ptr_check=False):
        buf, pos = st[0], 0
        while pos < len(buf):
            if buf[pos] == 0xFF:                # stuff byte
                pos += 1
                continue
            n = frame_length(buf, pos)
            if n is None or pos + n > len(buf):
                break
            self.frames.append((session, DocsisFrame(buf[pos:pos + n])))
            pos += n
        if ptr_check and pos != len(buf):
            # At a pointer, what came before must have been whole frames
            # (and stuffing): the pointer marks where the next one starts.
            raise ModelError("pointer_field does not mark a frame start")
        st[0] = buf[pos:]


# ---- captures ---------------------------------------------------------------

def write_pcap(path, frames, linktype=DLT_DOCSIS):
    """A classic pcap file of raw frames (default DLT_DOCSIS, 143)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(fr), len(fr)))
            f.write(bytes(fr))
