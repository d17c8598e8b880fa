package frame

import (
	"errors"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// UDP is a decoded UDP datagram over IPv4 or IPv6.
type UDP struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	HopLimit         uint8
	Payload          []byte
}

// ICMPv6 is a decoded ICMPv6 message.
type ICMPv6 struct {
	Src, Dst netip.Addr
	HopLimit uint8
	Type     uint8
	Code     uint8
	Body     []byte // after type, code, checksum
}

// Errors of the IP decoders.
var (
	ErrNotUDP    = errors.New("not UDP")
	ErrNotICMPv6 = errors.New("not ICMPv6")
	ErrFragment  = errors.New("IP fragment")
	ErrChecksum  = errors.New("bad checksum")
)

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// Checksums: the IPv4 header's is checked; UDP's and ICMPv6's are not.  A
// frame captured on the host that sent it (a packet socket on a veth, or
// a data plane's af_packet port) can carry a partial checksum the NIC
// was to finish (checksum offload), and the wire's FCS has covered the
// rest.

// ParseUDP4 decodes an IPv4 packet carrying UDP (no fragments, header
// checksum checked).
func ParseUDP4(b []byte) (UDP, error) {
	var ip layers.IPv4
	if err := ip.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil {
		return UDP{}, err
	}
	if ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
		return UDP{}, ErrFragment
	}
	if ip.Protocol != layers.IPProtocolUDP {
		return UDP{}, ErrNotUDP
	}
	if csum(b[:int(ip.IHL)*4], 0) != 0xffff {
		return UDP{}, ErrChecksum
	}
	var u layers.UDP
	if err := u.DecodeFromBytes(ip.Payload, gopacket.NilDecodeFeedback); err != nil {
		return UDP{}, err
	}
	if int(u.Length) < 8 || int(u.Length) > len(ip.Payload) {
		return UDP{}, errors.New("UDP length outside the packet")
	}
	src, dst := addrOf(ip.SrcIP), addrOf(ip.DstIP)
	return UDP{Src: src, Dst: dst, SrcPort: uint16(u.SrcPort), DstPort: uint16(u.DstPort),
		HopLimit: ip.TTL, Payload: ip.Payload[8:u.Length]}, nil
}

// ParseIPv6 decodes an IPv6 header with no extension headers (what
// DHCPv6 and neighbour discovery use): next header, addresses, payload.
func ParseIPv6(b []byte) (layers.IPv6, error) {
	var ip layers.IPv6
	err := ip.DecodeFromBytes(b, gopacket.NilDecodeFeedback)
	return ip, err
}

// ParseUDP6 decodes an IPv6 packet carrying UDP directly.
func ParseUDP6(b []byte) (UDP, error) {
	ip, err := ParseIPv6(b)
	if err != nil {
		return UDP{}, err
	}
	if ip.NextHeader != layers.IPProtocolUDP {
		return UDP{}, ErrNotUDP
	}
	var u layers.UDP
	if err := u.DecodeFromBytes(ip.Payload, gopacket.NilDecodeFeedback); err != nil {
		return UDP{}, err
	}
	if int(u.Length) < 8 || int(u.Length) > len(ip.Payload) {
		return UDP{}, errors.New("UDP length outside the packet")
	}
	src, dst := addrOf(ip.SrcIP), addrOf(ip.DstIP)
	return UDP{Src: src, Dst: dst, SrcPort: uint16(u.SrcPort), DstPort: uint16(u.DstPort),
		HopLimit: ip.HopLimit, Payload: ip.Payload[8:u.Length]}, nil
}

// ParseICMPv6 decodes an IPv6 packet carrying ICMPv6 directly.
func ParseICMPv6(b []byte) (ICMPv6, error) {
	ip, err := ParseIPv6(b)
	if err != nil {
		return ICMPv6{}, err
	}
	if ip.NextHeader != layers.IPProtocolICMPv6 {
		return ICMPv6{}, ErrNotICMPv6
	}
	p := ip.Payload
	if len(p) < 4 {
		return ICMPv6{}, ErrNotICMPv6
	}
	src, dst := addrOf(ip.SrcIP), addrOf(ip.DstIP)
	return ICMPv6{Src: src, Dst: dst, HopLimit: ip.HopLimit, Type: p[0], Code: p[1], Body: p[4:]}, nil
}

// csum is the ones' complement sum of b folded to 16 bits, started at s.
func csum(b []byte, s uint32) uint16 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

var serializeOpts = gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}

// AppendUDP appends an IPv4 or IPv6 packet carrying a UDP datagram
// (checksums computed) to dst.
func AppendUDP(dst []byte, src, to netip.Addr, sport, dport uint16, hop uint8, payload []byte) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	var nl gopacket.SerializableLayer
	if src.Is4() {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: hop, Protocol: layers.IPProtocolUDP,
			SrcIP: src.AsSlice(), DstIP: to.AsSlice()}
		u.SetNetworkLayerForChecksum(ip)
		nl = ip
	} else {
		ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: layers.IPProtocolUDP,
			SrcIP: src.AsSlice(), DstIP: to.AsSlice()}
		u.SetNetworkLayerForChecksum(ip)
		nl = ip
	}
	if err := gopacket.SerializeLayers(buf, serializeOpts, nl, u, gopacket.Payload(payload)); err != nil {
		return dst, err
	}
	return append(dst, buf.Bytes()...), nil
}

// AppendICMPv6 appends an IPv6 packet carrying an ICMPv6 message of
// type/code with body (after the checksum) to dst.
func AppendICMPv6(dst []byte, src, to netip.Addr, hop uint8, typ, code uint8, body []byte) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: layers.IPProtocolICMPv6,
		SrcIP: src.AsSlice(), DstIP: to.AsSlice()}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		return dst, err
	}
	if err := gopacket.SerializeLayers(buf, serializeOpts, ip, ic, gopacket.Payload(body)); err != nil {
		return dst, err
	}
	return append(dst, buf.Bytes()...), nil
}
