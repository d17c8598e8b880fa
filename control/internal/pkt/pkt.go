// Package pkt builds the crafted frames the steering tests and benchmark
// feed to BPF_PROG_TEST_RUN: every tunnel combination the program parses,
// with the offset of each header recorded so a test can cut the frame at
// any boundary.
package pkt

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Tunnel is the encapsulation between the outer and the innermost headers.
type Tunnel int

const (
	None     Tunnel = iota
	VXLAN           // outer/UDP 4789/VXLAN/Ethernet/inner
	GTPU            // outer/UDP 2152/GTP-U/inner
	VXLANGTP        // the steering paper's MAC/IP/UDP/VXLAN/MAC/IP/UDP/GTP/IP/L4
)

// Spec describes one frame.
type Spec struct {
	Tunnel     Tunnel
	Outer6     bool     // outer IP is IPv6
	Mid6       bool     // VXLANGTP: the IP between VXLAN and GTP-U is IPv6
	Inner6     bool     // innermost IP is IPv6
	OuterVLANs []uint16 // 802.1Q tags (two: 802.1ad S-tag then C-tag)
	InnerVLANs []uint16 // tags on the Ethernet inside VXLAN
	VNI        uint32
	TEID       uint32
	GTPExt     []layers.GTPExtensionHeader
	GTPType    uint8 // 0 means 255 (G-PDU)
	TCP        bool  // innermost L4 is TCP (else UDP)
	Src, Dst   netip.Addr
	SPort      uint16
	DPort      uint16
	Payload    int
	OuterCsum0 bool // outer UDP checksum 0 (IPv4 only), as VXLAN senders do
}

// Boundary is where a header starts and how long it is.
type Boundary struct {
	Name string // "outer-ipv4", "vxlan", "gtp", "inner-udp", ...
	Off  int
	Len  int
}

// Fixed addresses of the outer and middle headers (RFC 2544/3849 ranges).
var (
	NodeMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	PeerMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
	OuterSrc4 = netip.MustParseAddr("198.18.0.2")
	OuterDst4 = netip.MustParseAddr("198.18.0.1")
	OuterSrc6 = netip.MustParseAddr("2001:db8::2")
	OuterDst6 = netip.MustParseAddr("2001:db8::1")
	MidSrc4   = netip.MustParseAddr("198.19.1.2")
	MidDst4   = netip.MustParseAddr("198.19.1.1")
	MidSrc6   = netip.MustParseAddr("2001:db8:1::2")
	MidDst6   = netip.MustParseAddr("2001:db8:1::1")
)

type builder struct {
	ls     []gopacket.SerializableLayer
	bounds []Boundary
	off    int
}

func (b *builder) add(name string, n int, l gopacket.SerializableLayer) {
	b.ls = append(b.ls, l)
	b.bounds = append(b.bounds, Boundary{name, b.off, n})
	b.off += n
}

func ethType(v6 bool) layers.EthernetType {
	if v6 {
		return layers.EthernetTypeIPv6
	}
	return layers.EthernetTypeIPv4
}

func (b *builder) eth(prefix string, src, dst net.HardwareAddr, vlans []uint16, v6 bool) {
	e := &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: ethType(v6)}
	if len(vlans) > 0 {
		e.EthernetType = layers.EthernetTypeDot1Q
		if len(vlans) > 1 {
			e.EthernetType = layers.EthernetTypeQinQ
		}
	}
	b.add(prefix+"eth", 14, e)
	for i, id := range vlans {
		t := ethType(v6)
		if i+1 < len(vlans) {
			t = layers.EthernetTypeDot1Q
		}
		b.add(fmt.Sprintf("%svlan%d", prefix, i), 4, &layers.Dot1Q{VLANIdentifier: id, Type: t})
	}
}

// ip adds an IP header and returns it as the checksum network layer.
func (b *builder) ip(name string, v6 bool, src, dst netip.Addr, proto layers.IPProtocol) gopacket.NetworkLayer {
	if v6 {
		h := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto,
			SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		b.add(name+"-ipv6", 40, h)
		return h
	}
	h := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto,
		SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	b.add(name+"-ipv4", 20, h)
	return h
}

func (b *builder) udp(name string, sport, dport uint16, nl gopacket.NetworkLayer) {
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	u.SetNetworkLayerForChecksum(nl)
	b.add(name+"-udp", 8, u)
}

// Build serialises a Spec with lengths and checksums filled in.
func Build(s Spec) ([]byte, []Boundary, error) {
	b := &builder{}
	outer6 := s.Outer6
	if s.Tunnel == None {
		outer6 = s.Inner6
	}
	b.eth("", PeerMAC, NodeMAC, s.OuterVLANs, outer6)
	osrc, odst := OuterSrc4, OuterDst4
	if outer6 {
		osrc, odst = OuterSrc6, OuterDst6
	}
	var zeroCsum *layers.UDP
	if s.Tunnel != None {
		nl := b.ip("outer", outer6, osrc, odst, layers.IPProtocolUDP)
		dport := uint16(4789)
		if s.Tunnel == GTPU {
			dport = 2152
		}
		b.udp("outer", 49152, dport, nl)
		if s.OuterCsum0 && !outer6 {
			zeroCsum = b.ls[len(b.ls)-1].(*layers.UDP)
		}
	}
	if s.Tunnel == VXLAN || s.Tunnel == VXLANGTP {
		b.add("vxlan", 8, &layers.VXLAN{ValidIDFlag: true, VNI: s.VNI})
		next6 := s.Inner6
		if s.Tunnel == VXLANGTP {
			next6 = s.Mid6
		}
		b.eth("inner-", net.HardwareAddr{0x02, 0, 0, 0, 1, 2}, net.HardwareAddr{0x02, 0, 0, 0, 1, 1}, s.InnerVLANs, next6)
	}
	if s.Tunnel == VXLANGTP {
		msrc, mdst := MidSrc4, MidDst4
		if s.Mid6 {
			msrc, mdst = MidSrc6, MidDst6
		}
		nl := b.ip("mid", s.Mid6, msrc, mdst, layers.IPProtocolUDP)
		b.udp("mid", 2152, 2152, nl)
	}
	if s.Tunnel == GTPU || s.Tunnel == VXLANGTP {
		typ := s.GTPType
		if typ == 0 {
			typ = 255
		}
		g := &layers.GTPv1U{Version: 1, ProtocolType: 1, MessageType: typ, TEID: s.TEID,
			GTPExtensionHeaders: s.GTPExt}
		n := 8
		if len(s.GTPExt) > 0 {
			n += 4
			for _, e := range s.GTPExt {
				n += len(e.Content) + 2
			}
		}
		b.add("gtp", n, g)
		if typ != 255 {
			return b.finish(s, zeroCsum)
		}
	}
	proto := layers.IPProtocolUDP
	if s.TCP {
		proto = layers.IPProtocolTCP
	}
	nl := b.ip("inner", s.Inner6, s.Src, s.Dst, proto)
	if s.TCP {
		t := &layers.TCP{SrcPort: layers.TCPPort(s.SPort), DstPort: layers.TCPPort(s.DPort), Seq: 1, ACK: true, Window: 1024, DataOffset: 5}
		t.SetNetworkLayerForChecksum(nl)
		b.add("inner-tcp", 20, t)
	} else {
		b.udp("inner", s.SPort, s.DPort, nl)
	}
	return b.finish(s, zeroCsum)
}

func (b *builder) finish(s Spec, zeroCsum *layers.UDP) ([]byte, []Boundary, error) {
	payload := make([]byte, s.Payload)
	for i := range payload {
		payload[i] = byte(i)
	}
	b.ls = append(b.ls, gopacket.Payload(payload))
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, b.ls...)
	if err != nil {
		return nil, nil, err
	}
	out := append([]byte(nil), buf.Bytes()...)
	if zeroCsum != nil {
		for _, bd := range b.bounds {
			if bd.Name == "outer-udp" {
				binary.BigEndian.PutUint16(out[bd.Off+6:], 0)
			}
		}
	}
	return out, b.bounds, nil
}

// MustBuild is Build for specs known to be valid.
func MustBuild(s Spec) []byte {
	b, _, err := Build(s)
	if err != nil {
		panic(err)
	}
	return b
}
