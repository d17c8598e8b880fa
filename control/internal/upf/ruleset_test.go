package upf

import (
	"slices"
	"testing"
)

// A rule set finds, replaces and removes rules by id, yields them in the
// order they were made, and a clone's changes (a modification's session)
// never reach the set it was cloned from.
func TestRuleSetAsASessionsRules(t *testing.T) {
	s := newRuleSet[uint16, PDR](2)
	for _, id := range []uint16{7, 3, 9} {
		s.Put(id, &PDR{ID: id, Precedence: uint32(id)})
	}
	if s.Len() != 3 || s.Get(3).Precedence != 3 || s.Get(4) != nil || s.Has(4) {
		t.Fatalf("after three puts: %d rules, 3 -> %+v", s.Len(), s.Get(3))
	}
	if r, ok := s.Lookup(9); !ok || r.ID != 9 {
		t.Fatalf("lookup 9: %+v %v", r, ok)
	}
	ids := func(x *ruleSet[uint16, PDR]) (out []uint16) {
		for id, r := range x.All() {
			if r.ID != id {
				t.Fatalf("rule %d under id %d", r.ID, id)
			}
			out = append(out, id)
		}
		return
	}
	if got := ids(&s); !slices.Equal(got, []uint16{7, 3, 9}) {
		t.Fatalf("order %v", got)
	}
	c := s.clone(nil)
	c.Delete(7)
	c.Put(3, &PDR{ID: 3, Precedence: 30})
	c.Put(11, &PDR{ID: 11})
	if got := ids(&c); !slices.Equal(got, []uint16{3, 9, 11}) || c.Get(3).Precedence != 30 {
		t.Fatalf("the clone: %v", got)
	}
	if got := ids(&s); !slices.Equal(got, []uint16{7, 3, 9}) || s.Get(3).Precedence != 3 {
		t.Fatalf("the original after the clone's changes: %v, 3 -> %+v", got, s.Get(3))
	}
	s.Delete(42) // not there: nothing happens
	s.Delete(3)
	if got := ids(&s); !slices.Equal(got, []uint16{7, 9}) {
		t.Fatalf("after deleting 3: %v", got)
	}
	// URRs are copied by a session's clone: their measurement moves on
	// in the copy only.
	sess := newSession(1, storeT0)
	sess.URRs.Put(5, &URR{ID: 5, Seq: 1})
	n := sess.clone()
	n.URRs.Get(5).Seq = 2
	if sess.URRs.Get(5).Seq != 1 {
		t.Fatal("a clone's URR change reached the original")
	}
}
