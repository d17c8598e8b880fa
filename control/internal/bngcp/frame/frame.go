// Package frame reads and writes the access side's Ethernet header: the
// addresses, up to two VLAN tags (IEEE 802.1Q customer tag, 802.1ad service
// tag) and the EtherType, as a subscriber's control frame carries them.
//
//	| dst 6 | src 6 | [88a8|8100|9100 TCI] [8100 TCI] | EtherType | payload
//
// The tags name the subscriber's access line (one VLAN per line, or an
// S-tag per access node and a C-tag per line); the control plane keeps
// them to answer on the same line and to describe the line to the user
// plane.  Receivers disagree on the outer TPID (a veth that strips the
// outer tag and an af_packet reader that puts it back write 0x8100 where
// the wire had 0x88a8), so any of the three is accepted as a tag and a
// reply is written the way the BNG's downlink writes its frames: 0x88a8
// outside, 0x8100 inside; one tag, 0x8100.
//
// Parsing allocates nothing and never reads past the slice.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// EtherTypes the control plane handles.
const (
	TypeIPv4    uint16 = 0x0800
	TypeARP     uint16 = 0x0806
	TypeIPv6    uint16 = 0x86dd
	TypePPPoED  uint16 = 0x8863 // PPPoE discovery (RFC 2516 section 5)
	TypePPPoES  uint16 = 0x8864 // PPPoE session (RFC 2516 section 6)
	tpidCTag    uint16 = 0x8100
	tpidSTag    uint16 = 0x88a8
	tpidQinQOld uint16 = 0x9100
)

// MAC is an Ethernet address as a value (a map key).
type MAC [6]byte

// Broadcast is ff:ff:ff:ff:ff:ff.
var Broadcast = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func (m MAC) String() string { return net.HardwareAddr(m[:]).String() }

// MarshalText writes the colon form (JSON, YAML).
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads the colon form.
func (m *MAC) UnmarshalText(b []byte) error {
	v, err := ParseMAC(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// IsZero reports whether m is 00:00:00:00:00:00.
func (m MAC) IsZero() bool { return m == MAC{} }

// IsUnicast reports whether m is an individual address (I/G bit clear).
func (m MAC) IsUnicast() bool { return m[0]&1 == 0 && !m.IsZero() }

// ParseMAC reads "aa:bb:cc:dd:ee:ff".
func ParseMAC(s string) (MAC, error) {
	var m MAC
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return m, fmt.Errorf("MAC address %q: want six octets like 02:00:00:00:00:01", s)
	}
	copy(m[:], hw)
	return m, nil
}

// Line is a subscriber's access line: the tags its frames carry.  One tag
// is a C-tag (CTag set, STag 0); two are S-tag then C-tag; none is an
// untagged port.
type Line struct {
	STag uint16 `json:"s_tag,omitempty"`
	CTag uint16 `json:"c_tag,omitempty"`
}

// Tags is how many tags the line's frames carry.
func (l Line) Tags() int {
	switch {
	case l.STag != 0:
		return 2
	case l.CTag != 0:
		return 1
	}
	return 0
}

func (l Line) String() string {
	switch l.Tags() {
	case 2:
		return fmt.Sprintf("%d.%d", l.STag, l.CTag)
	case 1:
		return fmt.Sprintf("%d", l.CTag)
	}
	return "untagged"
}

// Header is a parsed access header.
type Header struct {
	Dst, Src  MAC
	Line      Line
	EtherType uint16
	Len       int // octets of header (14, 18 or 22)
}

// Errors of Parse.
var (
	ErrShort    = errors.New("frame shorter than its Ethernet header")
	ErrTooDeep  = errors.New("more than two VLAN tags")
	ErrVIDZero  = errors.New("VLAN tag with VID 0 or 4095")
	ErrTagOrder = errors.New("an 802.1ad tag inside another tag")
)

func isTPID(t uint16) bool { return t == tpidCTag || t == tpidSTag || t == tpidQinQOld }

// Parse reads the header of b; payload is what follows it.
func Parse(b []byte) (h Header, payload []byte, err error) {
	if len(b) < 14 {
		return h, nil, ErrShort
	}
	copy(h.Dst[:], b[0:6])
	copy(h.Src[:], b[6:12])
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	var vids [2]uint16
	n := 0
	for isTPID(et) {
		if n == 2 {
			return h, nil, ErrTooDeep
		}
		if n == 1 && et == tpidSTag {
			return h, nil, ErrTagOrder
		}
		if len(b) < off+8 {
			return h, nil, ErrShort
		}
		vid := binary.BigEndian.Uint16(b[off+2:]) & 0x0fff
		if vid == 0 || vid == 0x0fff {
			return h, nil, ErrVIDZero
		}
		vids[n] = vid
		n++
		off += 4
		et = binary.BigEndian.Uint16(b[off:])
	}
	switch n {
	case 2:
		h.Line = Line{STag: vids[0], CTag: vids[1]}
	case 1:
		h.Line = Line{CTag: vids[0]}
	}
	h.EtherType = et
	h.Len = off + 2
	return h, b[h.Len:], nil
}

// Append writes an access header for line onto dst and returns the
// extended slice.
func Append(dst []byte, to, from MAC, l Line, etherType uint16) []byte {
	dst = append(dst, to[:]...)
	dst = append(dst, from[:]...)
	switch l.Tags() {
	case 2:
		dst = binary.BigEndian.AppendUint16(dst, tpidSTag)
		dst = binary.BigEndian.AppendUint16(dst, l.STag)
		dst = binary.BigEndian.AppendUint16(dst, tpidCTag)
		dst = binary.BigEndian.AppendUint16(dst, l.CTag)
	case 1:
		dst = binary.BigEndian.AppendUint16(dst, tpidCTag)
		dst = binary.BigEndian.AppendUint16(dst, l.CTag)
	}
	return binary.BigEndian.AppendUint16(dst, etherType)
}

// HeaderLen is the length of the header Append writes for l.
func HeaderLen(l Line) int { return 14 + 4*l.Tags() }

// Circuit identifies one subscriber device: the logical port (TR-459) its
// frames arrive on, its line and its MAC address.
type Circuit struct {
	Port string `json:"port"`
	Line Line   `json:"line"`
	MAC  MAC    `json:"mac"`
}

func (c Circuit) String() string {
	return fmt.Sprintf("%s/%s/%s", c.Port, c.Line, c.MAC)
}
