// Package wire checks PFCP framing strictly before any decoder sees the
// bytes: the message header of 3GPP TS 29.244 clause 7.2.2 (version,
// flags, length, bundled messages of clause 7.2.1A) and the type-length
// structure of every information element, grouped ones recursively
// (clause 8.1.1).
//
// Why our own walk: go-pfcp (v0.0.24) decodes leniently -- an IE whose
// length runs past the end of its parent is kept with an empty payload, a
// header length that disagrees with the datagram is ignored -- which is
// right for a tolerant tool and wrong for a network function that must
// answer "Invalid Length" with the offending IE (clause 7.6) and must not
// act on half an IE.  After Check, the bytes are safe to hand to go-pfcp.
package wire

import (
	"encoding/binary"
	"fmt"
)

// Header is the fixed part of a PFCP message header.
type Header struct {
	Version  uint8
	FO, MP   bool
	HasSEID  bool
	Type     uint8
	Length   uint16 // octets after the first four
	SEID     uint64
	Sequence uint32 // 24 bits
	Priority uint8
	HdrLen   int // 8 or 16
}

// Problem says what is wrong with a message, in the terms of TS 29.244
// clause 7.6 (error handling).
type Problem int

const (
	// ProblemNone: nothing wrong.
	ProblemNone Problem = iota
	// ProblemShort: the datagram cannot hold a header; nothing can be
	// answered (no sequence number): discard.
	ProblemShort
	// ProblemVersion: the version is not 1: Version Not Supported Response.
	ProblemVersion
	// ProblemHeaderLength: the header's length disagrees with the
	// datagram: discard (7.6: a message that cannot be decoded).
	ProblemHeaderLength
	// ProblemIELength: an IE's length runs past its parent or is shorter
	// than its fixed part: answer "Invalid Length" naming the IE.
	ProblemIELength
	// ProblemNesting: grouped IEs nested deeper than MaxDepth.
	ProblemNesting
)

// Error describes a framing error; IEType is the offending IE's type for
// ProblemIELength.
type Error struct {
	Problem Problem
	IEType  uint16
	Offset  int
	Msg     string
}

func (e *Error) Error() string { return e.Msg }

// MaxDepth bounds nesting of grouped IEs (the deepest the standard uses is
// 4: Create FAR / Forwarding Parameters / ...; a hostile message nesting
// thousands deep costs a recursion each).
const MaxDepth = 8

// ParseHeader decodes and checks the header at the start of b.  It does
// not look at what follows the header's length (see Split).
func ParseHeader(b []byte) (Header, *Error) {
	var h Header
	if len(b) < 8 {
		return h, &Error{Problem: ProblemShort, Msg: fmt.Sprintf("%d octets: shorter than a PFCP header", len(b))}
	}
	h.Version = b[0] >> 5
	h.FO = b[0]&0x04 != 0
	h.MP = b[0]&0x02 != 0
	h.HasSEID = b[0]&0x01 != 0
	h.Type = b[1]
	h.Length = binary.BigEndian.Uint16(b[2:4])
	off := 4
	if h.HasSEID {
		if len(b) < 16 {
			return h, &Error{Problem: ProblemShort, Msg: "SEID flag set in a header shorter than 16 octets"}
		}
		h.SEID = binary.BigEndian.Uint64(b[4:12])
		off = 12
	}
	h.Sequence = uint32(b[off])<<16 | uint32(b[off+1])<<8 | uint32(b[off+2])
	h.Priority = b[off+3] >> 4
	h.HdrLen = off + 4
	if h.Version != 1 {
		return h, &Error{Problem: ProblemVersion, Msg: fmt.Sprintf("PFCP version %d", h.Version)}
	}
	if int(h.Length)+4 < h.HdrLen {
		return h, &Error{Problem: ProblemHeaderLength, Msg: fmt.Sprintf("length %d is shorter than the header", h.Length)}
	}
	return h, nil
}

// Split cuts a datagram into its messages (clause 7.2.1A: messages with
// the FO flag are followed by another one).  Every message's length must
// end inside the datagram, and the last one exactly at its end.
func Split(b []byte) ([][]byte, *Error) {
	var msgs [][]byte
	for len(b) > 0 {
		h, err := ParseHeader(b)
		if err != nil {
			return msgs, err
		}
		n := int(h.Length) + 4
		if n > len(b) {
			return msgs, &Error{Problem: ProblemHeaderLength,
				Msg: fmt.Sprintf("header length %d runs %d octets past the datagram", h.Length, n-len(b))}
		}
		if !h.FO && n != len(b) {
			return msgs, &Error{Problem: ProblemHeaderLength,
				Msg: fmt.Sprintf("%d octets after a message without the FO flag", len(b)-n)}
		}
		msgs = append(msgs, b[:n])
		b = b[n:]
		if h.FO && len(b) == 0 {
			return msgs, &Error{Problem: ProblemHeaderLength, Msg: "FO flag set on the last message"}
		}
	}
	return msgs, nil
}

// IsGrouped reports whether an IE of this type and enterprise holds IEs.
func IsGrouped(t, enterprise uint16) bool {
	if t&0x8000 != 0 {
		// The Broadband Forum's two grouped IEs (TR-459 6.6): PPP LCP
		// Connectivity and L2TP Tunnel.  Other vendors' IEs are opaque.
		return enterprise == 3561 && (t == 32780 || t == 32781)
	}
	// go-pfcp's answer, from the table filled with it at start
	// (grouped.go), without the call through its hook.
	return grouped[t]
}

// CheckIEs walks the IEs in b (a message body or a grouped IE's content):
// every length must fit inside its parent, vendor IEs must hold their
// Enterprise ID, and grouped IEs must be well formed down to MaxDepth.
func CheckIEs(b []byte) *Error { return checkIEs(b, 0, 0, nil, false) }

// shape is what the checking walk learns for the decoding walk (slab.go):
// how many IE values the decoder makes and how many IEs each level it
// decodes holds, in the order the decoder meets them (depth first, a
// level before its children) -- so that decoding is one more walk, not
// three (counting the whole, then each level's siblings before filling
// them).
type shape struct {
	n      int
	levels []uint16 // a level of 65,535 octets holds at most 16,383 IEs
}

// checkIEs checks b; when sh is not nil it records b's shape too, for a
// level the decoder decodes (decoded: the message body, or the children
// of a 3GPP grouped IE inside one).
func checkIEs(b []byte, base, depth int, sh *shape, decoded bool) *Error {
	if depth > MaxDepth {
		return &Error{Problem: ProblemNesting, Offset: base, Msg: fmt.Sprintf("grouped IEs nested deeper than %d", MaxDepth)}
	}
	record := sh != nil && decoded
	slot := 0
	if record {
		slot = len(sh.levels)
		sh.levels = append(sh.levels, 0)
	}
	off, k := 0, 0
	for off < len(b) {
		if len(b)-off < 4 {
			return &Error{Problem: ProblemIELength, Offset: base + off,
				Msg: fmt.Sprintf("%d stray octets where an IE header (4) should be", len(b)-off)}
		}
		t := binary.BigEndian.Uint16(b[off:])
		l := int(binary.BigEndian.Uint16(b[off+2:]))
		if l > len(b)-off-4 {
			return &Error{Problem: ProblemIELength, IEType: t, Offset: base + off,
				Msg: fmt.Sprintf("IE type %d: length %d runs past its parent (%d octets left)", t, l, len(b)-off-4)}
		}
		body := b[off+4 : off+4+l]
		var ent uint16
		if t&0x8000 != 0 {
			if l < 2 {
				return &Error{Problem: ProblemIELength, IEType: t, Offset: base + off,
					Msg: fmt.Sprintf("vendor IE type %d: length %d cannot hold the Enterprise ID", t, l)}
			}
			ent = binary.BigEndian.Uint16(body)
			body = body[2:]
		}
		if IsGrouped(t, ent) {
			if err := checkIEs(body, base+off+4, depth+1, sh, record && hasKids(t, ent)); err != nil {
				return err
			}
		}
		off += 4 + l
		k++
	}
	if record {
		sh.levels[slot] = uint16(k)
		sh.n += k
	}
	return nil
}

// Body returns a message's IEs (the octets after its header).
func Body(msg []byte, h Header) []byte { return msg[h.HdrLen:] }
