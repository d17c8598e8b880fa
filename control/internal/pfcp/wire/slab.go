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
// them, so go-pfcp's accessors work on the result.  (Nil for a body
// CheckIEs refuses.)
func ParseIEs(b []byte) []*ie.IE {
	var s Scratch
	return s.ParseIEs(b)
}

// Scratch is room for decoded IEs that one goroutine reuses from message
// to message: the IEs of one message were the largest allocation of a
// session establishment by bytes (~4 KiB of the ~60 IE values and their
// pointers), and every byte allocated brings the next collection closer.
type Scratch struct {
	slab  []ie.IE
	ptrs  []*ie.IE
	shape shape
}

// ParseIEs is ParseIEs into s: the result (and every IE in it) is valid
// until the next call; the IEs still point into b.
func (s *Scratch) ParseIEs(b []byte) []*ie.IE {
	ies, _ := s.Decode(b)
	return ies
}

// Decode is CheckIEs and ParseIEs in two walks over b (the check's also
// measures what the decoder needs; the decoder's fills it), where they
// were four.  On a framing error it returns the error and no IEs.
func (s *Scratch) Decode(b []byte) ([]*ie.IE, *Error) {
	s.shape.n, s.shape.levels = 0, s.shape.levels[:0]
	if err := checkIEs(b, 0, 0, &s.shape, true); err != nil {
		return nil, err
	}
	n := s.shape.n
	if n > len(s.slab) {
		s.slab = make([]ie.IE, n)
		s.ptrs = make([]*ie.IE, n)
		for i := range s.slab {
			s.ptrs[i] = &s.slab[i]
		}
	}
	f := filler{ptrs: s.ptrs[:n], levels: s.shape.levels}
	return f.fill(b), nil
}

// Decode is Scratch.Decode with room of its own.
func Decode(b []byte) ([]*ie.IE, *Error) {
	var s Scratch
	return s.Decode(b)
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

// filler places decoded IEs: each level's in consecutive slots of ptrs
// (its IEs counted by the check: levels, in the order fill meets them),
// children after their parent's siblings.
type filler struct {
	ptrs   []*ie.IE
	next   int
	levels []uint16
	level  int
}

func (f *filler) fill(b []byte) []*ie.IE {
	k := int(f.levels[f.level])
	f.level++
	level := f.ptrs[f.next : f.next+k]
	f.next += k
	for i := 0; len(b) >= 4; i++ {
		t, l, ent, body := header(b)
		e := level[i]
		e.Type, e.Length, e.EnterpriseID, e.Payload, e.ChildIEs = t, l, ent, body, nil
		if hasKids(t, ent) {
			e.ChildIEs = f.fill(body)
		}
		b = b[4+int(l):]
	}
	return level
}

// hasKids: the IEs whose children go-pfcp decodes into ChildIEs (3GPP
// grouped types; vendors' grouped IEs are decoded on demand, bbf.Children).
func hasKids(t, ent uint16) bool { return t&0x8000 == 0 && grouped[t] }
