// Package pppoe reads and writes PPPoE packets (RFC 2516): the discovery
// stage's PADI, PADO, PADR, PADS and PADT with their tags, and the session
// stage's header around a PPP frame.
//
//	 0               1               2               3
//	| VER=1 | TYPE=1|     CODE      |          SESSION_ID           |
//	|            LENGTH             |           payload ...
//
// Discovery payloads are a list of TLV tags (section 5 and appendix A):
// TAG_TYPE (2 octets), TAG_LENGTH (2), value.  A tag whose length runs past
// the payload, a payload longer than the frame, or a version/type other
// than 1/1 is an error: the packet is dropped and counted, never guessed at.
//
// Why by hand: gopacket's PPPoE layer reads the six-octet header but not
// the discovery tags, and no kept Go library serves the discovery stage.
package pppoe

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Codes (RFC 2516 section 5).
const (
	CodeSession uint8 = 0x00
	CodePADI    uint8 = 0x09
	CodePADO    uint8 = 0x07
	CodePADR    uint8 = 0x19
	CodePADS    uint8 = 0x65
	CodePADT    uint8 = 0xa7
)

// Tag types (RFC 2516 appendix A; PPP-Max-Payload RFC 4638).
const (
	TagEndOfList        uint16 = 0x0000
	TagServiceName      uint16 = 0x0101
	TagACName           uint16 = 0x0102
	TagHostUniq         uint16 = 0x0103
	TagACCookie         uint16 = 0x0104
	TagVendorSpecific   uint16 = 0x0105
	TagRelaySessionID   uint16 = 0x0110
	TagPPPMaxPayload    uint16 = 0x0120
	TagServiceNameError uint16 = 0x0201
	TagACSystemError    uint16 = 0x0202
	TagGenericError     uint16 = 0x0203
)

// HeaderLen is the PPPoE header: ver/type, code, session id, length.
const HeaderLen = 6

// MaxTagLen bounds what we keep of one tag (a discovery packet fits an
// Ethernet frame: 1494 octets of tags at most).
const MaxTagLen = 1494

// Tag is one discovery TLV.
type Tag struct {
	Type  uint16
	Value []byte
}

// Discovery is a decoded discovery packet.  Values alias the input.
type Discovery struct {
	Code    uint8
	Session uint16
	Tags    []Tag
}

// Errors.
var (
	ErrShort      = errors.New("pppoe: shorter than its header")
	ErrVersion    = errors.New("pppoe: version/type is not 1/1")
	ErrLength     = errors.New("pppoe: length runs past the frame")
	ErrTagLength  = errors.New("pppoe: tag length runs past the payload")
	ErrCode       = errors.New("pppoe: unknown discovery code")
	ErrManyTags   = errors.New("pppoe: more than 64 tags")
	ErrNotSession = errors.New("pppoe: not a session packet (code 0)")
)

// maxTags bounds the tags of one packet (a hostile PADI of 373 empty tags
// would otherwise cost an allocation each).
const maxTags = 64

// header checks the common header; it returns code, session and the
// payload (Ethernet padding after LENGTH cut off).
func header(b []byte) (code uint8, sess uint16, payload []byte, err error) {
	if len(b) < HeaderLen {
		return 0, 0, nil, ErrShort
	}
	if b[0] != 0x11 {
		return 0, 0, nil, ErrVersion
	}
	n := int(binary.BigEndian.Uint16(b[4:]))
	if n > len(b)-HeaderLen {
		return 0, 0, nil, ErrLength
	}
	return b[1], binary.BigEndian.Uint16(b[2:]), b[HeaderLen : HeaderLen+n], nil
}

// ParseDiscovery decodes a discovery packet (the Ethernet payload of an
// 0x8863 frame).
func ParseDiscovery(b []byte) (*Discovery, error) {
	code, sess, p, err := header(b)
	if err != nil {
		return nil, err
	}
	switch code {
	case CodePADI, CodePADO, CodePADR, CodePADS, CodePADT:
	default:
		return nil, ErrCode
	}
	d := &Discovery{Code: code, Session: sess}
	for len(p) > 0 {
		if len(p) < 4 {
			return nil, ErrTagLength
		}
		t := binary.BigEndian.Uint16(p)
		l := int(binary.BigEndian.Uint16(p[2:]))
		if l > len(p)-4 {
			return nil, ErrTagLength
		}
		if t == TagEndOfList {
			break
		}
		if len(d.Tags) == maxTags {
			return nil, ErrManyTags
		}
		d.Tags = append(d.Tags, Tag{Type: t, Value: p[4 : 4+l]})
		p = p[4+l:]
	}
	return d, nil
}

// Tag returns the first tag of type t.
func (d *Discovery) Tag(t uint16) (Tag, bool) {
	for _, x := range d.Tags {
		if x.Type == t {
			return x, true
		}
	}
	return Tag{}, false
}

// Count is how many tags of type t the packet has.
func (d *Discovery) Count(t uint16) int {
	n := 0
	for _, x := range d.Tags {
		if x.Type == t {
			n++
		}
	}
	return n
}

// AppendDiscovery writes a discovery packet onto dst.
func AppendDiscovery(dst []byte, code uint8, session uint16, tags ...Tag) ([]byte, error) {
	n := 0
	for _, t := range tags {
		if len(t.Value) > MaxTagLen {
			return dst, fmt.Errorf("pppoe: tag %#04x of %d octets", t.Type, len(t.Value))
		}
		n += 4 + len(t.Value)
	}
	if n > MaxTagLen+4 {
		return dst, fmt.Errorf("pppoe: %d octets of tags do not fit a frame", n)
	}
	dst = append(dst, 0x11, code)
	dst = binary.BigEndian.AppendUint16(dst, session)
	dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	for _, t := range tags {
		dst = binary.BigEndian.AppendUint16(dst, t.Type)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(t.Value)))
		dst = append(dst, t.Value...)
	}
	return dst, nil
}

// ParseSession decodes a session packet's header (the Ethernet payload of
// an 0x8864 frame): the session id, the PPP protocol and the PPP
// information field.
func ParseSession(b []byte) (session uint16, proto uint16, info []byte, err error) {
	code, sess, p, err := header(b)
	if err != nil {
		return 0, 0, nil, err
	}
	if code != CodeSession {
		return 0, 0, nil, ErrNotSession
	}
	if len(p) < 2 {
		return 0, 0, nil, ErrShort
	}
	// RFC 2516 section 7: protocol field compression is not used; a
	// one-octet protocol (odd first octet) is not accepted.
	return sess, binary.BigEndian.Uint16(p), p[2:], nil
}

// AppendSession writes a session header and the PPP protocol; the caller
// appends the information field and calls FixSessionLength.
func AppendSession(dst []byte, session, proto uint16) []byte {
	dst = append(dst, 0x11, CodeSession)
	dst = binary.BigEndian.AppendUint16(dst, session)
	dst = append(dst, 0, 0)
	return binary.BigEndian.AppendUint16(dst, proto)
}

// FixSessionLength sets LENGTH of the session header at b[off:] to what
// follows the header.
func FixSessionLength(b []byte, off int) {
	binary.BigEndian.PutUint16(b[off+4:], uint16(len(b)-off-HeaderLen))
}

// BBF vendor-specific tag content (TR-101 section 3.9.3, the PPPoE
// intermediate agent; RFC 4679 numbers the same sub-options for RADIUS):
// the Broadband Forum's enterprise number (3561), then TLVs with one-octet
// type and length.
const (
	VendorBBF        uint32 = 3561
	SubCircuitID     uint8  = 0x01
	SubRemoteID      uint8  = 0x02
	maxLineIDLen            = 63 // TR-101: at most 63 octets each
	vendorHeaderSize        = 4
)

// LineID is what an access node says about the line (Agent-Circuit-Id,
// Agent-Remote-Id).
type LineID struct {
	CircuitID string `json:"circuit_id,omitempty"`
	RemoteID  string `json:"remote_id,omitempty"`
}

// ParseLineID reads a BBF vendor-specific tag; ok false for another
// vendor or a malformed one.
func ParseLineID(v []byte) (LineID, bool) {
	var l LineID
	if len(v) < vendorHeaderSize || binary.BigEndian.Uint32(v) != VendorBBF {
		return l, false
	}
	p := v[vendorHeaderSize:]
	for len(p) >= 2 {
		t, n := p[0], int(p[1])
		if n > len(p)-2 || n > maxLineIDLen {
			return LineID{}, false
		}
		switch t {
		case SubCircuitID:
			l.CircuitID = string(p[2 : 2+n])
		case SubRemoteID:
			l.RemoteID = string(p[2 : 2+n])
		}
		p = p[2+n:]
	}
	return l, len(p) == 0
}

// AppendLineID writes a BBF vendor-specific tag value.
func AppendLineID(dst []byte, l LineID) []byte {
	dst = binary.BigEndian.AppendUint32(dst, VendorBBF)
	if l.CircuitID != "" {
		dst = append(dst, SubCircuitID, byte(len(l.CircuitID)))
		dst = append(dst, l.CircuitID...)
	}
	if l.RemoteID != "" {
		dst = append(dst, SubRemoteID, byte(len(l.RemoteID)))
		dst = append(dst, l.RemoteID...)
	}
	return dst
}
