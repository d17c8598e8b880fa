package upf

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// The session table holds what a Go map would under sets, replacements
// and deletions of SEIDs in runs (as we hand them out) and scattered (as
// a restart restores them, and as a peer names them), and its pages go
// with their last session.
func TestSessTableMatchesAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	tab := newSessTable(0)
	ref := map[uint64]*entry{}
	seid := func() uint64 {
		if r.IntN(2) == 0 {
			return 1 + uint64(r.IntN(3000)) // runs: a few pages
		}
		return r.Uint64() // scattered, the page bits too
	}
	for i := 0; i < 20000; i++ {
		k := seid()
		switch r.IntN(3) {
		case 0, 1:
			e := &entry{subID: uint32(i)}
			tab.Set(k, e)
			ref[k] = e
		case 2:
			tab.Delete(k)
			delete(ref, k)
		}
		if got := tab.Get(k); got != ref[k] {
			t.Fatalf("op %d: seid %#x -> %p, want %p", i, k, got, ref[k])
		}
	}
	if tab.Len() != len(ref) {
		t.Fatalf("%d sessions, want %d", tab.Len(), len(ref))
	}
	seen := 0
	for k, e := range tab.All() {
		if ref[k] != e {
			t.Fatalf("All: seid %#x -> %p, want %p", k, e, ref[k])
		}
		seen++
	}
	if seen != len(ref) {
		t.Fatalf("All yielded %d, want %d", seen, len(ref))
	}
	// Deleting every session as the loop gives it (as a purge does)
	// empties the table and frees every page.
	for k := range tab.All() {
		tab.Delete(k)
	}
	if tab.Len() != 0 || len(tab.pages) != 0 {
		t.Fatalf("after deleting all: %d sessions, %d pages", tab.Len(), len(tab.pages))
	}
	if tab.Get(1) != nil {
		t.Fatal("a session after deleting all")
	}
}

// The control planes' SEIDs: the same against a map of (node, SEID), two
// nodes' equal SEIDs apart, and a node's pages gone with its last SEID.
func TestCPTableMatchesAMap(t *testing.T) {
	type key struct {
		node string
		cp   uint64
	}
	r := rand.New(rand.NewPCG(3, 5))
	tab := newCPTable(0)
	ref := map[key]uint64{}
	nodes := []string{"cp-a", "cp-b"}
	for i := 0; i < 20000; i++ {
		k := key{nodes[r.IntN(2)], uint64(r.IntN(500))}
		if r.IntN(4) == 0 {
			k.cp = r.Uint64()
		}
		switch r.IntN(3) {
		case 0, 1:
			v := uint64(i + 1)
			tab.Set(k.node, k.cp, v)
			ref[k] = v
		case 2:
			tab.Delete(k.node, k.cp)
			delete(ref, k)
		}
		for _, n := range nodes {
			got, ok := tab.Get(n, k.cp)
			want, wok := ref[key{n, k.cp}]
			if got != want || ok != wok {
				t.Fatalf("op %d: %s %#x -> %d %v, want %d %v", i, n, k.cp, got, ok, want, wok)
			}
		}
	}
	for k := range ref {
		tab.Delete(k.node, k.cp)
	}
	if len(tab.nodes) != 0 {
		t.Fatalf("after deleting every SEID: %d nodes left", len(tab.nodes))
	}
}

// A generation of the duplicate cache holds what a map of (peer,
// sequence number) would, two peers' equal numbers apart, and a peer goes
// with its last entry.
func TestRxGenMatchesAMap(t *testing.T) {
	type key struct {
		peer netip.AddrPort
		seq  uint32
	}
	r := rand.New(rand.NewPCG(13, 17))
	g := newRxGen()
	ref := map[key]*rxEntry{}
	peers := []netip.AddrPort{netip.MustParseAddrPort("198.18.0.1:8805"), netip.MustParseAddrPort("198.18.0.1:8806")}
	for i := 0; i < 20000; i++ {
		k := key{peers[r.IntN(2)], uint32(r.IntN(400))}
		if r.IntN(4) == 0 {
			k.seq = r.Uint32() & 0xffffff
		}
		switch r.IntN(3) {
		case 0, 1:
			e := &rxEntry{sum: uint64(i)}
			g.set(k.peer, k.seq, e)
			ref[k] = e
		case 2:
			g.del(k.peer, k.seq)
			delete(ref, k)
		}
		for _, p := range peers {
			got, ok := g.get(p, k.seq)
			want, wok := ref[key{p, k.seq}]
			if got != want || ok != wok {
				t.Fatalf("op %d: %s %d -> %p %v, want %p %v", i, p, k.seq, got, ok, want, wok)
			}
		}
	}
	if g.n != len(ref) {
		t.Fatalf("%d entries, want %d", g.n, len(ref))
	}
	for k := range ref {
		g.del(k.peer, k.seq)
	}
	if len(g.peers) != 0 || g.n != 0 {
		t.Fatalf("after deleting every entry: %d peers, %d entries", len(g.peers), g.n)
	}
}
