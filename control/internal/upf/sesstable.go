package upf

import "iter"

// sessTable is the sessions by our SEID: pages of 256 entries, the pages
// by SEID / 256 in a Go map.
//
// Why not one Go map of every session: we hand SEIDs out one after the
// other (State.nextSEID), so the sessions a batch of establishments
// creates are neighbours here -- eight to a cache line of a page, the
// page map small enough (256 pages at 64K sessions) to stay in the cache
// -- where a map of 64K entries puts each one in a group of its own that
// the establishment's insertion and its commit's lookup both miss (the
// sessions map's first looks were about a third of the large maps' 10 %
// of the function's profile).  A page goes when its last session does;
// the SEIDs a peer names in a header are only looked up.
type sessTable struct {
	pages map[uint64]*sessPage
	n     int
}

const sessPageBits = 8

type sessPage struct {
	e [1 << sessPageBits]*entry
	n int // entries not nil
}

func newSessTable(sessions int) sessTable {
	return sessTable{pages: make(map[uint64]*sessPage, sessions>>sessPageBits+1)}
}

// Get is the session of seid, nil if there is none.
func (t *sessTable) Get(seid uint64) *entry {
	if p := t.pages[seid>>sessPageBits]; p != nil {
		return p.e[seid&(1<<sessPageBits-1)]
	}
	return nil
}

// Set makes e the session of seid (e not nil).
func (t *sessTable) Set(seid uint64, e *entry) {
	p := t.pages[seid>>sessPageBits]
	if p == nil {
		p = &sessPage{}
		t.pages[seid>>sessPageBits] = p
	}
	s := &p.e[seid&(1<<sessPageBits-1)]
	if *s == nil {
		p.n++
		t.n++
	}
	*s = e
}

// Delete removes the session of seid, if there is one.
func (t *sessTable) Delete(seid uint64) {
	p := t.pages[seid>>sessPageBits]
	if p == nil {
		return
	}
	s := &p.e[seid&(1<<sessPageBits-1)]
	if *s == nil {
		return
	}
	*s = nil
	t.n--
	if p.n--; p.n == 0 {
		delete(t.pages, seid>>sessPageBits)
	}
}

// Len is how many sessions there are.
func (t *sessTable) Len() int { return t.n }

// All yields every (SEID, session), in no particular order; the loop may
// delete the session it is given (as a map's range may).
func (t *sessTable) All() iter.Seq2[uint64, *entry] {
	return func(yield func(uint64, *entry) bool) {
		for k, p := range t.pages {
			for i, e := range &p.e {
				if e != nil && !yield(k<<sessPageBits|uint64(i), e) {
					return
				}
			}
		}
	}
}
