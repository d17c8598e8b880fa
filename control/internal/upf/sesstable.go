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

// cpTable is our SEID by the control plane's (its node and its F-SEID),
// the lookup that finds an establishment repeated for a session we hold.
// The control plane's SEIDs are its own choice; the ones we have seen
// (pfcp-cp-sim, pfcpsim, the BNG control planes that number sessions)
// count up, so they go in pages of 16 by SEID / 16, one page map a
// control plane: a run of establishments shares its pages, as our
// sessions do above, where one map of (node, SEID) missed the cache at
// each (and hashed the node's name).  Pages are small so that a control
// plane scattering its SEIDs costs a page a session at worst (144
// octets, within the Go map entry it replaces by a few words).
type cpTable struct {
	nodes map[string]*cpNodeTable
	hint  int // pages a node's map is sized for
}

type cpNodeTable struct {
	pages map[uint64]*cpPage
}

const cpPageBits = 4

type cpPage struct {
	seid [1 << cpPageBits]uint64
	used uint16 // bit i: seid[i] holds a session
}

func newCPTable(sessions int) cpTable {
	return cpTable{nodes: map[string]*cpNodeTable{}, hint: sessions>>cpPageBits + 1}
}

// Get is our SEID for the control plane's cp of node.
func (t *cpTable) Get(node string, cp uint64) (uint64, bool) {
	if n := t.nodes[node]; n != nil {
		if p := n.pages[cp>>cpPageBits]; p != nil {
			i := cp & (1<<cpPageBits - 1)
			return p.seid[i], p.used&(1<<i) != 0
		}
	}
	return 0, false
}

// Set makes seid the session of node's cp.
func (t *cpTable) Set(node string, cp, seid uint64) {
	n := t.nodes[node]
	if n == nil {
		n = &cpNodeTable{pages: make(map[uint64]*cpPage, t.hint)}
		t.nodes[node] = n
	}
	p := n.pages[cp>>cpPageBits]
	if p == nil {
		p = &cpPage{}
		n.pages[cp>>cpPageBits] = p
	}
	i := cp & (1<<cpPageBits - 1)
	p.seid[i] = seid
	p.used |= 1 << i
}

// Delete forgets node's cp; a page goes with its last SEID, a node's map
// with its last page.
func (t *cpTable) Delete(node string, cp uint64) {
	n := t.nodes[node]
	if n == nil {
		return
	}
	p := n.pages[cp>>cpPageBits]
	if p == nil {
		return
	}
	i := cp & (1<<cpPageBits - 1)
	p.seid[i] = 0
	if p.used &^= 1 << i; p.used == 0 {
		delete(n.pages, cp>>cpPageBits)
		if len(n.pages) == 0 {
			delete(t.nodes, node)
		}
	}
}
