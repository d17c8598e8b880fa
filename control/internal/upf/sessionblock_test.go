package upf

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/pfcp/cpsim"
	"edgeplane/control/internal/pfcp/wire"
)

// A new session built in its block (parser.establishment) is the session
// built rule by rule in arrays of their own, for each block shape and past
// them (the default session's many PDRs); and the block's arrays never
// reach each other: a clone's new rules, an update's, leave the original
// as it was.
func TestSessionBlockEqualsSeparateArrays(t *testing.T) {
	base := cpsim.Subscriber{STag: 100, CTag: 200, MAC: mac("02:00:00:00:10:01"),
		IPv4: netip.MustParseAddr("198.18.100.2"), IPv6: netip.MustParsePrefix("2001:db8:100::/56"),
		ULMBR: 20000, ULGBR: 10000, DLMBR: 100000}
	redirect := base
	redirect.PPPoE, redirect.LogicalPort = 0x12, "access"
	redirect.Redirect, redirect.CPAddr, redirect.CPTEID = true, netip.MustParseAddr("198.18.0.9"), 0x77
	metered := redirect
	metered.URR = &cpsim.URR{Period: time.Minute}
	cp := netip.MustParseAddr("198.18.0.9")
	now := time.Unix(1e9, 0)
	for _, c := range []struct {
		name string
		ies  []*ie.IE
	}{
		{"data_block", base.Establishment()},
		{"full_block", redirect.Establishment()},
		{"full_block_with_urr", metered.Establishment()},
		{"past_the_blocks", cpsim.DefaultSession("access", cp, 0x99)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			for _, i := range append([]*ie.IE{ie.NewNodeIDHeuristic("cp.test"), ie.NewFSEID(7, cp.AsSlice(), nil)}, c.ies...) {
				b, err := i.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				body = append(body, b...)
			}
			ies, werr := wire.Decode(body)
			if werr != nil {
				t.Fatal(werr)
			}
			var p parser
			got, rj := p.establishment("cp.test", fseid{SEID: 7, Addr: cp}, ies, now)
			if rj != nil {
				t.Fatal(rj)
			}
			want := newSession(0, now)
			want.CPSEID, want.CPAddr, want.CPNode, want.PDNType = 7, cp, "cp.test", got.PDNType
			var q parser
			if rj := q.rules(want, ies, now); rj != nil {
				t.Fatal(rj)
			}
			gj, _ := got.MarshalJSON()
			wj, _ := want.MarshalJSON()
			if !bytes.Equal(gj, wj) {
				t.Fatalf("in its block:\n%s\nrule by rule:\n%s", gj, wj)
			}
			// A clone gains a rule of every kind and changes one: the
			// original (in its block) keeps its own.
			n := got.clone()
			n.PDRs.Put(900, &PDR{ID: 900})
			n.FARs.Put(900, &FAR{ID: 900})
			n.QERs.Put(900, &QER{ID: 900})
			n.URRs.Put(900, &URR{ID: 900})
			n.TEs.Put(200, &TE{ID: 200})
			for id := range got.PDRs.All() {
				n.PDRs.Put(id, &PDR{ID: id, Precedence: 12345})
				break
			}
			if gj2, _ := got.MarshalJSON(); !bytes.Equal(gj2, gj) {
				t.Fatalf("a clone's changes reached the original:\n%s\nwas\n%s", gj2, gj)
			}
			// Appending to the original's own sets (as an update of a
			// live session never does, but a later rule would) must not
			// write into the next kind's room in the block.
			pdrs, fars := got.PDRs.Len(), got.FARs.Len()
			got.PDRs.Put(901, &PDR{ID: 901})
			if got.FARs.Len() != fars || got.PDRs.Len() != pdrs+1 {
				t.Fatalf("PDRs %d FARs %d after one more PDR (were %d, %d)", got.PDRs.Len(), got.FARs.Len(), pdrs, fars)
			}
			for id, r := range got.FARs.All() {
				if r == nil || r.ID != id {
					t.Fatalf("FAR %d overwritten: %+v", id, r)
				}
			}
		})
	}
}
