package main

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// The IPoE client: DHCPv4 (RFC 2131: DISCOVER, OFFER, REQUEST, ACK;
// renewal at T1; RELEASE), and DHCPv6 (RFC 8415: SOLICIT, ADVERTISE,
// REQUEST, REPLY with IA_NA and IA_PD) from the link-local address of its
// MAC.  With -opt82 each DHCPv4 message carries a Relay Agent Information
// option (RFC 3046) as an access node inserting it would.

var (
	allDHCP = netip.MustParseAddr("ff02::1:2")
	zero4   = netip.IPv4Unspecified()
	bcast4  = netip.AddrFrom4([4]byte{255, 255, 255, 255})
)

func eui64(m mac) uint64 {
	return binary.BigEndian.Uint64([]byte{m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]})
}

func (lp *loop) dhcpStart(s *sess) {
	s.enter(stDiscovery)
	s.xid = rand.Uint32()
	lp.sendRetry(s, lp.dhcp4(s, layers.DHCPMsgTypeDiscover, nil))
}

func (lp *loop) opt82(s *sess) layers.DHCPOption {
	cid := []byte(circuitID(s))
	rid := []byte("emu")
	v := append([]byte{1, byte(len(cid))}, cid...)
	v = append(v, 2, byte(len(rid)))
	v = append(v, rid...)
	return layers.NewDHCPOption(layers.DHCPOpt(82), v)
}

func circuitID(s *sess) string {
	return "emu " + itoa(int(s.l.s)) + "/" + itoa(int(s.l.c)) + " " + itoa(s.i)
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

// dhcp4 builds a DHCPv4 message of type t from s (broadcast for all but a
// renewal, which is unicast to the server).
func (lp *loop) dhcp4(s *sess, t layers.DHCPMsgType, extra []layers.DHCPOption) []byte {
	d := &layers.DHCPv4{Operation: layers.DHCPOpRequest, HardwareType: layers.LinkTypeEthernet, HardwareLen: 6,
		Xid: s.xid, ClientHWAddr: net.HardwareAddr(s.mac[:]), ClientIP: net.IPv4zero, YourClientIP: net.IPv4zero,
		NextServerIP: net.IPv4zero, RelayAgentIP: net.IPv4zero}
	d.Options = append(d.Options, layers.NewDHCPOption(layers.DHCPOptMessageType, []byte{byte(t)}))
	d.Options = append(d.Options, extra...)
	d.Options = append(d.Options, layers.NewDHCPOption(layers.DHCPOptParamsRequest, []byte{1, 3, 6, 51}))
	if lp.e.cfg.opt82 {
		d.Options = append(d.Options, lp.opt82(s))
	}
	src, dst, dmac := zero4, bcast4, bcast
	if t == layers.DHCPMsgTypeRequest && s.st == stUp || t == layers.DHCPMsgTypeRelease {
		d.ClientIP = s.v4.AsSlice()
		src, dst, dmac = s.v4, s.server4, s.ac
	}
	d.Options = append(d.Options, layers.NewDHCPOption(layers.DHCPOptEnd, nil))
	buf := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, d)
	return append(ethHeader(make([]byte, 0, 400), dmac, s.mac, s.l, 0x0800), udp4(src, dst, 68, 67, buf.Bytes())...)
}

func (lp *loop) ipoeFrame(s *sess, f rxFrame) {
	p, ok := parseIP(f.payload)
	if !ok {
		return
	}
	switch {
	case p.isUDP && p.dp == lp.e.cfg.trafficPort:
		lp.trafficIn(s, p)
	case p.isUDP && p.dp == 68:
		s.ac = f.src
		lp.dhcp4In(s, p.payload)
	case p.isUDP && p.dp == 546:
		lp.dhcp6In(s, p, lp.ipoe6Frame(s))
	}
}

func (lp *loop) ipoe6Frame(s *sess) func([]byte) []byte {
	return func(payload []byte) []byte {
		return append(ethHeader(make([]byte, 0, 256), mac{0x33, 0x33, 0, 1, 0, 2}, s.mac, s.l, 0x86dd),
			udp6(linkLocal(eui64(s.mac)), allDHCP, 546, 547, 1, payload)...)
	}
}

func (lp *loop) dhcp4In(s *sess, b []byte) {
	var d layers.DHCPv4
	if d.DecodeFromBytes(b, gopacket.NilDecodeFeedback) != nil || d.Xid != s.xid {
		return
	}
	var mt layers.DHCPMsgType
	var server netip.Addr
	var lease uint32
	for _, o := range d.Options {
		switch o.Type {
		case layers.DHCPOptMessageType:
			if len(o.Data) == 1 {
				mt = layers.DHCPMsgType(o.Data[0])
			}
		case layers.DHCPOptServerID:
			server, _ = netip.AddrFromSlice(o.Data)
		case layers.DHCPOptLeaseTime:
			if len(o.Data) == 4 {
				lease = binary.BigEndian.Uint32(o.Data)
			}
		case 82:
			if lp.e.cfg.opt82 {
				s.opt82 = true
			}
		}
	}
	yi, _ := netip.AddrFromSlice(d.YourClientIP.To4())
	switch mt {
	case layers.DHCPMsgTypeOffer:
		if s.st != stDiscovery {
			return
		}
		s.server4, s.v4 = server, yi
		s.enter(stRequest)
		lp.sendRetry(s, lp.dhcp4(s, layers.DHCPMsgTypeRequest, []layers.DHCPOption{
			layers.NewDHCPOption(layers.DHCPOptRequestIP, yi.AsSlice()),
			layers.NewDHCPOption(layers.DHCPOptServerID, server.AsSlice())}))
	case layers.DHCPMsgTypeAck:
		if s.st != stRequest && s.st != stUp {
			return
		}
		s.lease = time.Duration(lease) * time.Second
		if s.st == stUp {
			s.last = nil
			lp.arm(s, s.lease/2)
			return
		}
		s.v4done = true
		s.last = nil
		if lp.e.cfg.ipv6 {
			lp.solicit6(s, linkLocal(eui64(s.mac)), lp.ipoe6Frame(s), true, true)
			return
		}
		lp.up(s)
	case layers.DHCPMsgTypeNak:
		lp.failed(s, "DHCPNAK")
	}
}

func (lp *loop) renew(s *sess) {
	s.xid = rand.Uint32()
	lp.sendRetry(s, lp.dhcp4(s, layers.DHCPMsgTypeRequest, nil))
}

func (lp *loop) release(s *sess) {
	if s.v4done {
		lp.send(lp.dhcp4(s, layers.DHCPMsgTypeRelease, []layers.DHCPOption{
			layers.NewDHCPOption(layers.DHCPOptServerID, s.server4.AsSlice())}))
	}
}

// --- DHCPv6 (RFC 8415), shared by IPoE and PPP ---------------------------

const (
	d6Solicit   = 1
	d6Advertise = 2
	d6Request   = 3
	d6Reply     = 7
	o6ClientID  = 1
	o6ServerID  = 2
	o6IANA      = 3
	o6IAAddr    = 5
	o6ORO       = 6
	o6Elapsed   = 8
	o6Status    = 13
	o6DNS       = 23
	o6IAPD      = 25
	o6IAPrefix  = 26
)

func opt6(b []byte, code uint16, v []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, code)
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}

func (s *sess) duid() []byte { return append([]byte{0, 3, 0, 1}, s.mac[:]...) }

func ia(iaid uint32) []byte {
	v := binary.BigEndian.AppendUint32(nil, iaid)
	return append(v, make([]byte, 8)...) // T1, T2: 0 (the server's choice)
}

// dhcp6Msg builds a client message.
func (s *sess) dhcp6Msg(t uint8, na, pd bool) []byte {
	b := append([]byte{t}, s.xid6[:]...)
	b = opt6(b, o6ClientID, s.duid())
	if s.server6 != nil {
		b = opt6(b, o6ServerID, s.server6)
	}
	b = opt6(b, o6Elapsed, []byte{0, 0})
	b = opt6(b, o6ORO, []byte{0, o6DNS})
	if na {
		b = opt6(b, o6IANA, ia(uint32(s.i)))
	}
	if pd {
		b = opt6(b, o6IAPD, ia(uint32(s.i)))
	}
	return b
}

// solicit6 starts DHCPv6 for s; frame wraps a DHCPv6 payload for the link.
func (lp *loop) solicit6(s *sess, _ netip.Addr, frame func([]byte) []byte, na, pd bool) {
	s.xid6 = [3]byte{byte(rand.Uint32()), byte(rand.Uint32()), byte(rand.Uint32())}
	s.server6 = nil
	s.enter(stNetwork)
	lp.sendRetry(s, frame(s.dhcp6Msg(d6Solicit, na, pd)))
}

func (lp *loop) dhcp6In(s *sess, p ipPkt, frame func([]byte) []byte) {
	b := p.payload
	if len(b) < 4 || b[1] != s.xid6[0] || b[2] != s.xid6[1] || b[3] != s.xid6[2] || s.st != stNetwork {
		return
	}
	t := b[0]
	var server []byte
	var na netip.Addr
	var pd netip.Prefix
	hasNA, hasPD := false, false
	o := b[4:]
	for len(o) >= 4 {
		c, n := binary.BigEndian.Uint16(o), int(binary.BigEndian.Uint16(o[2:]))
		if n > len(o)-4 {
			return
		}
		v := o[4 : 4+n]
		switch c {
		case o6ServerID:
			server = append([]byte(nil), v...)
		case o6IANA:
			hasNA = true
			if a, ok := sub6(v[min(12, len(v)):], o6IAAddr); ok && len(a) >= 16 {
				na = netip.AddrFrom16([16]byte(a[:16]))
			}
		case o6IAPD:
			hasPD = true
			if a, ok := sub6(v[min(12, len(v)):], o6IAPrefix); ok && len(a) >= 25 {
				pd = netip.PrefixFrom(netip.AddrFrom16([16]byte(a[9:25])), int(a[8]))
			}
		}
		o = o[4+n:]
	}
	switch t {
	case d6Advertise:
		if s.server6 != nil {
			return
		}
		s.server6 = server
		lp.sendRetry(s, frame(s.dhcp6Msg(d6Request, hasNA, hasPD)))
	case d6Reply:
		if s.server6 == nil {
			return
		}
		s.na, s.pd = na, pd
		s.v6done = true
		if hasNA && !na.IsValid() || hasPD && !pd.IsValid() {
			lp.failed(s, "DHCPv6 reply without the bindings asked for")
			return
		}
		lp.up(s)
	}
}

// sub6 finds the first option of code inside an IA's options.
func sub6(o []byte, code uint16) ([]byte, bool) {
	for len(o) >= 4 {
		c, n := binary.BigEndian.Uint16(o), int(binary.BigEndian.Uint16(o[2:]))
		if n > len(o)-4 {
			return nil, false
		}
		if c == code {
			return o[4 : 4+n], true
		}
		o = o[4+n:]
	}
	return nil, false
}
