package upf

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// The address table against a Go map under random sets, changes of owner
// and deletions (backward shifts across the table's end, growth from a
// heap table to a mapped one): after every operation both hold the same
// prefixes with the same owners.
func TestAddrTableMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab, ref := newAddrTable(4), map[netip.Prefix]uint64{}
	// A small universe, so that sets hit held prefixes and deletions
	// make holes in long runs.
	universe := make([]netip.Prefix, 0, 3000)
	for i := range 1000 {
		universe = append(universe,
			netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 32),
			netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 8), byte(i)}), 56),
			// the same octets as the IPv4 one, as IPv4-mapped IPv6: another key
			netip.PrefixFrom(netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: 198, 13: 18, 14: byte(i >> 8), 15: byte(i)}), 128))
	}
	check := func(step int) {
		if tab.len() != len(ref) {
			t.Fatalf("step %d: %d held, the map %d", step, tab.len(), len(ref))
		}
		seen := 0
		tab.all(func(p netip.Prefix, o uint64) {
			seen++
			if ref[p] != o {
				t.Fatalf("step %d: %s owned by %d, the map says %d", step, p, o, ref[p])
			}
		})
		if seen != len(ref) {
			t.Fatalf("step %d: walked %d, the map %d", step, seen, len(ref))
		}
	}
	for step := range 200000 {
		p := universe[rng.IntN(len(universe))]
		switch rng.IntN(3) {
		case 0, 1:
			seid := uint64(rng.IntN(50) + 1)
			tab.set(p, seid)
			ref[p] = seid
		case 2:
			tab.del(p)
			delete(ref, p)
		}
		want, wantOK := ref[p]
		if got, ok := tab.get(p); got != want || ok != wantOK {
			t.Fatalf("step %d: get(%s) = %d %v, the map %d %v", step, p, got, ok, want, wantOK)
		}
		if step%20000 == 0 {
			check(step)
		}
	}
	check(-1)
	// Grown past addrMmapMin slots: the table moves to mapped memory.
	for i := range 40000 {
		universe = append(universe, netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)}), 32))
	}
	for _, p := range universe {
		tab.set(p, 7)
	}
	if tab.mmap == nil {
		t.Fatalf("%d slots not mapped", len(tab.slots))
	}
	for _, p := range universe {
		tab.del(p)
	}
	if tab.len() != 0 {
		t.Fatalf("%d left after deleting everything", tab.len())
	}
	for i := range tab.slots {
		if tab.slots[i].meta != 0 {
			t.Fatalf("slot %d still used after deleting everything", i)
		}
	}
}

// A prefix's length and family are part of its key, as netip.Prefix
// compares them.
func TestAddrTableKeysByLengthAndFamily(t *testing.T) {
	tab := newAddrTable(8)
	a := netip.MustParsePrefix("2001:db8:100::/56")
	b := netip.MustParsePrefix("2001:db8:100::/64")
	c := netip.MustParsePrefix("198.18.0.1/32")
	d := netip.MustParsePrefix("::ffff:198.18.0.1/128")
	for i, p := range []netip.Prefix{a, b, c, d} {
		tab.set(p, uint64(i+1))
	}
	for i, p := range []netip.Prefix{a, b, c, d} {
		if o, ok := tab.get(p); !ok || o != uint64(i+1) {
			t.Errorf("%s: owner %d %v, want %d", p, o, ok, i+1)
		}
	}
	var got []netip.Prefix
	tab.all(func(p netip.Prefix, _ uint64) { got = append(got, p) })
	for _, p := range got {
		if p != a && p != b && p != c && p != d {
			t.Errorf("walked %s, not one of those set", p)
		}
	}
}
