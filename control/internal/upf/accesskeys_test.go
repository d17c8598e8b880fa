package upf

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The access-key table against a Go map of dpKey under random claims and
// deletions: keys that differ in any field (port, tags, PPPoE session,
// MAC, a MAC's absence, a MAC text not in canonical form, upper case
// included) are different keys; a claim takes a free key and reports the
// owner of a held one.
func TestAccessKeyTableMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tab, ref := newAccessKeyTable(4), map[dpKey]uint64{}
	var universe []dpKey
	for i := range 400 {
		mac := fmt.Sprintf("02:00:00:00:%02x:%02x", i>>8, i&0xff)
		universe = append(universe,
			dpKey{Port: "access", STag: 100, CTag: uint16(i)},
			dpKey{Port: "access2", STag: 100, CTag: uint16(i)},
			dpKey{Port: "access", STag: 100, CTag: uint16(i), PPPoE: 1, MAC: mac},
			dpKey{Port: "access", PPPoE: uint16(i), MAC: mac},
			dpKey{Port: "access", MAC: mac},
			dpKey{Port: "access", MAC: fmt.Sprintf("02:00:00:00:%02X:%02X", i>>8, i&0xff)},
			dpKey{Port: "access", MAC: fmt.Sprintf("02-00-00-00-%02x-%02x", i>>8, i&0xff)})
	}
	for step := range 100000 {
		k := universe[rng.IntN(len(universe))]
		switch rng.IntN(3) {
		case 0, 1:
			seid := uint64(rng.IntN(50) + 1)
			o, added := tab.claim(k, seid)
			want, held := ref[k]
			if !held {
				ref[k], want = seid, seid
			}
			if o != want || added == held {
				t.Fatalf("step %d: claim(%+v, %d) = %d %v, the map %d held %v", step, k, seid, o, added, want, held)
			}
		case 2:
			tab.del(k)
			delete(ref, k)
		}
		want, wantOK := ref[k]
		if got, ok := tab.get(k); got != want || ok != wantOK {
			t.Fatalf("step %d: get(%+v) = %d %v, the map %d %v", step, k, got, ok, want, wantOK)
		}
		if tab.len() != len(ref) {
			t.Fatalf("step %d: %d held, the map %d", step, tab.len(), len(ref))
		}
	}
	// A key never seen: absent, and looking does not number its port.
	if _, ok := tab.get(dpKey{Port: "elsewhere"}); ok || len(tab.ports) != 2 {
		t.Fatalf("an unknown port: found %v, ports %v", ok, tab.ports)
	}
}

func TestMACBits(t *testing.T) {
	for s, want := range map[string]uint64{"02:00:5e:10:00:01": 0x02005e100001, "ff:ff:ff:ff:ff:ff": 0xffffffffffff} {
		if v, ok := macBits(s); !ok || v != want {
			t.Errorf("%s: %#x %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "02:00:5E:10:00:01", "02-00-5e-10-00-01", "02:00:5e:10:00:0", "02:00:5e:10:00:011", "0g:00:5e:10:00:01"} {
		if _, ok := macBits(s); ok {
			t.Errorf("%q read as a MAC", s)
		}
	}
}
