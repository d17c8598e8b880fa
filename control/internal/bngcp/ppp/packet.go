// Package ppp is the PPP side of a PPPoE session on the BNG: the
// Link Control Protocol with its option negotiation automaton (RFC 1661),
// PAP (RFC 1334) and CHAP with MD5 (RFC 1994), and the network control
// protocols IPCP with DNS addresses (RFC 1332, RFC 1877) and IPv6CP
// (RFC 5072).
//
// Why our own: no kept Go library implements PPP's control protocols (the
// Go PPP code in public projects is embedded in applications, unpackaged
// and unmaintained), and a BNG needs the server side of each, driven by
// events rather than by a goroutine per session.  The automaton is written
// from RFC 1661 section 4's state table, one function per event, so a
// reader can check it against the table.
//
// Everything here is a pure function of the packets and timer events it is
// given: a session calls Input, Timeout and the Up/Open/Close events and
// gets back packets to send and layer events; it never touches a socket or
// a clock itself (tests drive it with no network).
package ppp

import (
	"encoding/binary"
	"errors"
)

// PPP protocol numbers (RFC 1661; assigned numbers registry).
const (
	ProtoIPv4   uint16 = 0x0021
	ProtoIPv6   uint16 = 0x0057
	ProtoLCP    uint16 = 0xc021
	ProtoPAP    uint16 = 0xc023
	ProtoCHAP   uint16 = 0xc223
	ProtoEAP    uint16 = 0xc227
	ProtoIPCP   uint16 = 0x8021
	ProtoIPv6CP uint16 = 0x8057
)

// Control packet codes (RFC 1661 section 5; LCP uses all, NCPs 1-7).
const (
	ConfReq   uint8 = 1
	ConfAck   uint8 = 2
	ConfNak   uint8 = 3
	ConfRej   uint8 = 4
	TermReq   uint8 = 5
	TermAck   uint8 = 6
	CodeRej   uint8 = 7
	ProtoRej  uint8 = 8
	EchoReq   uint8 = 9
	EchoReply uint8 = 10
	DiscReq   uint8 = 11
)

// Packet is a control packet: code, identifier, data (RFC 1661 section 5).
// Data aliases the input.
type Packet struct {
	Code uint8
	ID   uint8
	Data []byte
}

// Errors of the decoders.
var (
	ErrShort        = errors.New("ppp: shorter than a control packet header")
	ErrLength       = errors.New("ppp: length field outside the packet")
	ErrOptionLength = errors.New("ppp: option length outside the packet")
)

// ParsePacket decodes a control packet; octets after Length (padding)
// are ignored, as RFC 1661 section 5 asks.
func ParsePacket(b []byte) (Packet, error) {
	if len(b) < 4 {
		return Packet{}, ErrShort
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n < 4 || n > len(b) {
		return Packet{}, ErrLength
	}
	return Packet{Code: b[0], ID: b[1], Data: b[4:n]}, nil
}

// Append writes the packet onto dst.
func (p Packet) Append(dst []byte) []byte {
	dst = append(dst, p.Code, p.ID)
	dst = binary.BigEndian.AppendUint16(dst, uint16(4+len(p.Data)))
	return append(dst, p.Data...)
}

// Option is one configuration option (RFC 1661 section 6): type, value.
type Option struct {
	Type  uint8
	Value []byte
}

// maxOptions bounds the options of one Configure packet.
const maxOptions = 32

// ParseOptions decodes the options of a Configure packet.
func ParseOptions(b []byte) ([]Option, error) {
	var out []Option
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, ErrOptionLength
		}
		n := int(b[1])
		if n < 2 || n > len(b) {
			return nil, ErrOptionLength
		}
		if len(out) == maxOptions {
			return nil, ErrOptionLength
		}
		out = append(out, Option{Type: b[0], Value: b[2:n]})
		b = b[n:]
	}
	return out, nil
}

// AppendOptions writes options onto dst.
func AppendOptions(dst []byte, opts []Option) []byte {
	for _, o := range opts {
		dst = append(dst, o.Type, byte(2+len(o.Value)))
		dst = append(dst, o.Value...)
	}
	return dst
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// nakOrReject: the Configure-Nak to send, or, once negotiation is not
// converging (RFC 1661 4.6 Max-Failure), a Configure-Reject of the
// options that would have been naked, as the peer sent them.
func nakOrReject(nak, req []Option, notConverging bool) (uint8, []Option) {
	if !notConverging {
		return ConfNak, nak
	}
	rej := make([]Option, 0, len(nak))
	for _, n := range nak {
		for _, o := range req {
			if o.Type == n.Type {
				rej = append(rej, o)
				break
			}
		}
	}
	return ConfRej, rej
}
