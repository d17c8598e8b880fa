package upf

import "net/netip"

// rxGen is one generation of the duplicate cache (txn.go): its entries by
// peer, then by sequence number in pages of 16.
//
// Why not one Go map of (peer, sequence number): a control plane numbers
// its requests one after the other, so a run of establishments falls
// into one page here -- its insertion and the next ones touch the same
// lines -- where a map of tens of thousands of entries missed the cache
// at every new request (the duplicate cache's map was 7 % of the
// function's profile in the bench, the largest of its map looks after
// the session tables went to pages).  Pages are small so that a peer
// scattering its numbers costs at most a 144-octet page a request, and a
// generation is dropped whole at its rotation, pages and all.
type rxGen struct {
	peers map[netip.AddrPort]*rxPeer
	n     int
}

type rxPeer struct {
	pages map[uint32]*rxPage
}

const rxPageBits = 4

type rxPage struct {
	e [1 << rxPageBits]*rxEntry
	n int
}

// newRxGen is an empty generation.  Its peers' page maps grow as they
// fill (a map of pages has a sixteenth of the entries to rehash; sizing
// each for the last generation would cost every new peer that much, a
// flood of peers included).
func newRxGen() rxGen {
	return rxGen{peers: map[netip.AddrPort]*rxPeer{}}
}

func (g *rxGen) get(peer netip.AddrPort, seq uint32) (*rxEntry, bool) {
	if p := g.peers[peer]; p != nil {
		if pg := p.pages[seq>>rxPageBits]; pg != nil {
			e := pg.e[seq&(1<<rxPageBits-1)]
			return e, e != nil
		}
	}
	return nil, false
}

// set stores e (not nil) for peer's seq.
func (g *rxGen) set(peer netip.AddrPort, seq uint32, e *rxEntry) {
	p := g.peers[peer]
	if p == nil {
		p = &rxPeer{pages: map[uint32]*rxPage{}}
		g.peers[peer] = p
	}
	pg := p.pages[seq>>rxPageBits]
	if pg == nil {
		pg = &rxPage{}
		p.pages[seq>>rxPageBits] = pg
	}
	s := &pg.e[seq&(1<<rxPageBits-1)]
	if *s == nil {
		pg.n++
		g.n++
	}
	*s = e
}

func (g *rxGen) del(peer netip.AddrPort, seq uint32) {
	p := g.peers[peer]
	if p == nil {
		return
	}
	pg := p.pages[seq>>rxPageBits]
	if pg == nil {
		return
	}
	s := &pg.e[seq&(1<<rxPageBits-1)]
	if *s == nil {
		return
	}
	*s = nil
	g.n--
	if pg.n--; pg.n == 0 {
		delete(p.pages, seq>>rxPageBits)
		if len(p.pages) == 0 {
			delete(g.peers, peer)
		}
	}
}
