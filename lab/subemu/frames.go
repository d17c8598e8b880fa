package main

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Frame formats, written from the RFCs (the emulator shares no code with
// the control plane it tests): Ethernet with IEEE 802.1Q / 802.1ad tags,
// PPPoE (RFC 2516), PPP control packets (RFC 1661), PAP (RFC 1334), CHAP
// (RFC 1994), IPCP (RFC 1332, 1877), IPv6CP (RFC 5072); IP, UDP, DHCP and
// ICMPv6 through gopacket.

type mac [6]byte

var bcast = mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// line is a subscriber's tags: outer (0x88a8) and inner (0x8100) VIDs;
// one tag: inner only.
type line struct{ s, c uint16 }

func ethHeader(b []byte, dst, src mac, l line, et uint16) []byte {
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	if l.s != 0 {
		b = binary.BigEndian.AppendUint16(b, 0x88a8)
		b = binary.BigEndian.AppendUint16(b, l.s)
	}
	if l.c != 0 {
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, l.c)
	}
	return binary.BigEndian.AppendUint16(b, et)
}

// rxFrame is a received frame's header.
type rxFrame struct {
	dst, src mac
	l        line
	et       uint16
	payload  []byte
}

var errShort = errors.New("short frame")

func parseEth(b []byte) (rxFrame, error) {
	var f rxFrame
	if len(b) < 14 {
		return f, errShort
	}
	copy(f.dst[:], b)
	copy(f.src[:], b[6:])
	off := 12
	var vids []uint16
	for {
		et := binary.BigEndian.Uint16(b[off:])
		if et != 0x8100 && et != 0x88a8 && et != 0x9100 {
			f.et = et
			break
		}
		if len(b) < off+8 || len(vids) == 2 {
			return f, errShort
		}
		vids = append(vids, binary.BigEndian.Uint16(b[off+2:])&0xfff)
		off += 4
	}
	switch len(vids) {
	case 2:
		f.l = line{vids[0], vids[1]}
	case 1:
		f.l = line{0, vids[0]}
	}
	f.payload = b[off+2:]
	return f, nil
}

// PPPoE (RFC 2516).
const (
	etDisc   = 0x8863
	etSess   = 0x8864
	codePADI = 0x09
	codePADO = 0x07
	codePADR = 0x19
	codePADS = 0x65
	codePADT = 0xa7

	tagServiceName = 0x0101
	tagACName      = 0x0102
	tagHostUniq    = 0x0103
	tagACCookie    = 0x0104
	tagRelaySessID = 0x0110
	tagErrors      = 0x0200 // 0x0201-0x0203: errors
)

type tlv struct {
	t uint16
	v []byte
}

func pppoeDisc(b []byte, code uint8, sid uint16, tags []tlv) []byte {
	n := 0
	for _, t := range tags {
		n += 4 + len(t.v)
	}
	b = append(b, 0x11, code)
	b = binary.BigEndian.AppendUint16(b, sid)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	for _, t := range tags {
		b = binary.BigEndian.AppendUint16(b, t.t)
		b = binary.BigEndian.AppendUint16(b, uint16(len(t.v)))
		b = append(b, t.v...)
	}
	return b
}

func parseDisc(p []byte) (code uint8, sid uint16, tags []tlv, err error) {
	if len(p) < 6 || p[0] != 0x11 {
		return 0, 0, nil, errShort
	}
	n := int(binary.BigEndian.Uint16(p[4:]))
	if n > len(p)-6 {
		return 0, 0, nil, errShort
	}
	code, sid = p[1], binary.BigEndian.Uint16(p[2:])
	q := p[6 : 6+n]
	for len(q) >= 4 {
		t, l := binary.BigEndian.Uint16(q), int(binary.BigEndian.Uint16(q[2:]))
		if l > len(q)-4 {
			return 0, 0, nil, errShort
		}
		if t == 0 {
			break
		}
		tags = append(tags, tlv{t, q[4 : 4+l]})
		q = q[4+l:]
	}
	return code, sid, tags, nil
}

// pppFrame appends a PPPoE session header, protocol and info; the
// length is set from what follows.
func pppFrame(b []byte, sid, proto uint16, info []byte) []byte {
	off := len(b)
	b = append(b, 0x11, 0)
	b = binary.BigEndian.AppendUint16(b, sid)
	b = binary.BigEndian.AppendUint16(b, uint16(2+len(info)))
	b = binary.BigEndian.AppendUint16(b, proto)
	b = append(b, info...)
	_ = off
	return b
}

// PPP protocols and codes (RFC 1661 and the ones cited above).
const (
	pIPv4   = 0x0021
	pIPv6   = 0x0057
	pLCP    = 0xc021
	pPAP    = 0xc023
	pCHAP   = 0xc223
	pIPCP   = 0x8021
	pIPv6CP = 0x8057

	cConfReq  = 1
	cConfAck  = 2
	cConfNak  = 3
	cConfRej  = 4
	cTermReq  = 5
	cTermAck  = 6
	cCodeRej  = 7
	cProtoRej = 8
	cEchoReq  = 9
	cEchoRep  = 10
)

type ctl struct {
	code, id uint8
	data     []byte
}

func (c ctl) bytes() []byte {
	b := []byte{c.code, c.id, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(4+len(c.data)))
	return append(b, c.data...)
}

func parseCtl(b []byte) (ctl, bool) {
	if len(b) < 4 {
		return ctl{}, false
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n < 4 || n > len(b) {
		return ctl{}, false
	}
	return ctl{b[0], b[1], b[4:n]}, true
}

type opt struct {
	t uint8
	v []byte
}

func opts(b []byte) ([]opt, bool) {
	var out []opt
	for len(b) > 0 {
		if len(b) < 2 || b[1] < 2 || int(b[1]) > len(b) {
			return nil, false
		}
		out = append(out, opt{b[0], b[2:b[1]]})
		b = b[b[1]:]
	}
	return out, true
}

func optBytes(os []opt) []byte {
	var b []byte
	for _, o := range os {
		b = append(b, o.t, byte(2+len(o.v)))
		b = append(b, o.v...)
	}
	return b
}

// --- IP through gopacket ----------------------------------------------------

var serOpts = gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}

func udp4(src, dst netip.Addr, sp, dp uint16, payload []byte) []byte {
	buf := gopacket.NewSerializeBuffer()
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	u := &layers.UDP{SrcPort: layers.UDPPort(sp), DstPort: layers.UDPPort(dp)}
	u.SetNetworkLayerForChecksum(ip)
	gopacket.SerializeLayers(buf, serOpts, ip, u, gopacket.Payload(payload))
	return buf.Bytes()
}

func udp6(src, dst netip.Addr, sp, dp uint16, hop uint8, payload []byte) []byte {
	buf := gopacket.NewSerializeBuffer()
	ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	u := &layers.UDP{SrcPort: layers.UDPPort(sp), DstPort: layers.UDPPort(dp)}
	u.SetNetworkLayerForChecksum(ip)
	gopacket.SerializeLayers(buf, serOpts, ip, u, gopacket.Payload(payload))
	return buf.Bytes()
}

// rs6 is a router solicitation (RFC 4861 4.1) from src.
func rs6(src netip.Addr) []byte {
	buf := gopacket.NewSerializeBuffer()
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: src.AsSlice(),
		DstIP: net.ParseIP("ff02::2")}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeRouterSolicitation, 0)}
	ic.SetNetworkLayerForChecksum(ip)
	gopacket.SerializeLayers(buf, serOpts, ip, ic, gopacket.Payload([]byte{0, 0, 0, 0}))
	return buf.Bytes()
}

// parsed IP packet: UDP or ICMPv6.
type ipPkt struct {
	src, dst netip.Addr
	sp, dp   uint16
	icmpType uint8
	payload  []byte
	isUDP    bool
	isICMP   bool
}

func parseIP(b []byte) (ipPkt, bool) {
	var p ipPkt
	if len(b) < 20 {
		return p, false
	}
	var next layers.IPProtocol
	var body []byte
	switch b[0] >> 4 {
	case 4:
		var ip layers.IPv4
		if ip.DecodeFromBytes(b, gopacket.NilDecodeFeedback) != nil {
			return p, false
		}
		p.src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		p.dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
		next, body = ip.Protocol, ip.Payload
	case 6:
		var ip layers.IPv6
		if ip.DecodeFromBytes(b, gopacket.NilDecodeFeedback) != nil {
			return p, false
		}
		p.src, _ = netip.AddrFromSlice(ip.SrcIP)
		p.dst, _ = netip.AddrFromSlice(ip.DstIP)
		next, body = ip.NextHeader, ip.Payload
	default:
		return p, false
	}
	switch next {
	case layers.IPProtocolUDP:
		if len(body) < 8 {
			return p, false
		}
		p.isUDP = true
		p.sp, p.dp = binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:])
		n := int(binary.BigEndian.Uint16(body[4:]))
		if n < 8 || n > len(body) {
			return p, false
		}
		p.payload = body[8:n]
	case layers.IPProtocolICMPv6:
		if len(body) < 4 {
			return p, false
		}
		p.isICMP = true
		p.icmpType = body[0]
		p.payload = body[4:]
	}
	return p, true
}

// raPrefix reads the first Prefix Information option of an RA body (after
// type/code/checksum): prefix, length, A flag.
func raPrefix(body []byte) (netip.Prefix, bool, bool) {
	if len(body) < 12 {
		return netip.Prefix{}, false, false
	}
	o := body[12:]
	for len(o) >= 8 {
		n := int(o[1]) * 8
		if n == 0 || n > len(o) {
			break
		}
		if o[0] == 3 && n == 32 {
			a := netip.AddrFrom16([16]byte(o[16:32]))
			return netip.PrefixFrom(a, int(o[2])), o[3]&0x40 != 0, true
		}
		o = o[n:]
	}
	return netip.Prefix{}, false, false
}

func linkLocal(id uint64) netip.Addr {
	var a [16]byte
	a[0], a[1] = 0xfe, 0x80
	binary.BigEndian.PutUint64(a[8:], id)
	return netip.AddrFrom16(a)
}
