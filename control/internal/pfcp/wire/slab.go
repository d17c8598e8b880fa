package wire

import (
	"encoding/binary"

	"github.com/wmnsk/go-pfcp/ie"
)

// ParseIEs decodes a message body that CheckIEs accepted into go-pfcp IE
// values, all of them (grouped ones' children too) in one slice: two
// allocations a message where ie.ParseMultiIEs makes one per IE and per
// child list (an establishment has about sixty).  The IEs point into b,
// as go-pfcp's do; ChildIEs are filled for grouped types as go-pfcp fills
// them, so go-pfcp's accessors work on the result.
func ParseIEs(b []byte) []*ie.IE {
	var s Scratch
	return s.ParseIEs(b)
}

// Scratch is room for decoded IEs that one goroutine reuses from message
// to message: the IEs of one message were the largest allocation of a
// session establishment by bytes (~4 KiB of the ~60 IE values and their
// pointers), and every byte allocated brings the next collection closer.
type Scratch struct {
	slab []ie.IE
	ptrs []*ie.IE
}

// ParseIEs is ParseIEs into s: the result (and every IE in it) is valid
// until the next call; the IEs still point into b.
func (s *Scratch) ParseIEs(b []byte) []*ie.IE {
	n := countIEs(b)
	if n > len(s.slab) {
		s.slab = make([]ie.IE, n)
		s.ptrs = make([]*ie.IE, n)
		for i := range s.slab {
			s.ptrs[i] = &s.slab[i]
		}
	}
	next := 0
	top, _ := fill(b, s.ptrs[:n], &next)
	return top
}

func header(b []byte) (t, l, ent uint16, body []byte) {
	t = binary.BigEndian.Uint16(b)
	l = binary.BigEndian.Uint16(b[2:])
	body = b[4 : 4+int(l)]
	if t&0x8000 != 0 {
		ent = binary.BigEndian.Uint16(body)
		body = body[2:]
	}
	return
}

func countIEs(b []byte) int {
	n := 0
	for len(b) >= 4 {
		t, l, ent, body := header(b)
		n++
		if hasKids(t, ent) {
			n += countIEs(body)
		}
		b = b[4+int(l):]
	}
	return n
}

// fill decodes the IEs of b into slab entries from *next on; the list of
// this level is a sub-slice of ptrs (consecutive for one level, the
// children placed after their parent's siblings).
func fill(b []byte, ptrs []*ie.IE, next *int) ([]*ie.IE, int) {
	start := *next
	// This level's IEs take consecutive slots.
	k := 0
	for rest := b; len(rest) >= 4; k++ {
		_, l, _, _ := header(rest)
		rest = rest[4+int(l):]
	}
	*next += k
	level := ptrs[start : start+k]
	for i := 0; len(b) >= 4; i++ {
		t, l, ent, body := header(b)
		e := level[i]
		e.Type, e.Length, e.EnterpriseID, e.Payload, e.ChildIEs = t, l, ent, body, nil
		if hasKids(t, ent) {
			e.ChildIEs, _ = fill(body, ptrs, next)
		}
		b = b[4+int(l):]
	}
	return level, k
}

// hasKids: the IEs whose children go-pfcp decodes into ChildIEs (3GPP
// grouped types; vendors' grouped IEs are decoded on demand, bbf.Children).
func hasKids(t, ent uint16) bool { return t&0x8000 == 0 && grouped[t] }
