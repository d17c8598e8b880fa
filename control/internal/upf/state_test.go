package upf

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"testing"
	"time"
)

// The store's hand-written record header must be what encoding/json
// writes: records written before and after read back the same.
func TestRawMetaJSON(t *testing.T) {
	cases := map[string]rawMeta{
		"plain":           {SEID: 0x1234, SubID: 17, Created: 1795000000},
		"no subscriber":   {SEID: 1, Created: 1795000000},
		"negative time":   {SEID: 1 << 63, SubID: 1<<32 - 1, Created: -5},
		"chosen TEIDs":    {SEID: 9, SubID: 2, Chosen: map[string]uint32{"P1": 7}, Created: 1},
		"with usage URRs": {SEID: 9, SubID: 2, Created: 1, URRs: []*URR{{ID: 3}}},
	}
	for name, m := range cases {
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.appendJSON([]byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "x"+string(want) {
			t.Errorf("%s: wrote %s, encoding/json %s", name, got[1:], want)
		}
	}
}

// A request is handled once: a copy while it is handled is dropped, a
// copy after its answer gets that answer, in either generation of the
// cache; other bytes under its number, or a forgotten one, are new.
func TestDuplicateCache(t *testing.T) {
	c := newDupCache(30 * time.Second)
	peer := netip.MustParseAddrPort("198.18.0.1:8805")
	t0 := time.Unix(1795000000, 0)
	sum7, sum8 := requestSum([]byte("request 7")), requestSum([]byte("request 8"))
	if v, _ := c.Begin(peer, 7, sum7, t0); v != dupNew {
		t.Fatalf("first copy: %v", v)
	}
	if v, _ := c.Begin(peer, 7, sum7, t0); v != dupInFlight {
		t.Fatalf("copy while handled: %v", v)
	}
	c.Answer(peer, 7, []byte("answer"))
	if v, b := c.Begin(peer, 7, sum7, t0); v != dupAnswered || string(b) != "answer" {
		t.Fatalf("copy after the answer: %v %q", v, b)
	}
	// Rotated once: the entry is in the old generation and still answers.
	if v, b := c.Begin(peer, 7, sum7, t0.Add(16*time.Second)); v != dupAnswered || string(b) != "answer" {
		t.Fatalf("after one rotation: %v %q", v, b)
	}
	// Begun, rotated, then answered: the answer lands where the entry is.
	c.Begin(peer, 8, sum8, t0.Add(16*time.Second))
	c.rotate(t0.Add(32 * time.Second))
	c.Answer(peer, 8, []byte("late"))
	if v, b := c.Begin(peer, 8, sum8, t0.Add(33*time.Second)); v != dupAnswered || string(b) != "late" {
		t.Fatalf("answered in the old generation: %v %q", v, b)
	}
	// The same number with other bytes (a restarted peer) is new.
	if v, _ := c.Begin(peer, 8, sum7, t0.Add(33*time.Second)); v != dupReused {
		t.Fatalf("a reused number: %v", v)
	}
	c.Forget(peer, 8)
	if v, _ := c.Begin(peer, 8, sum8, t0.Add(34*time.Second)); v != dupNew {
		t.Fatalf("forgotten: %v", v)
	}
	// Two rotations later an entry is gone.
	if v, _ := c.Begin(peer, 7, sum7, t0.Add(80*time.Second)); v != dupNew {
		t.Fatalf("expired: %v", v)
	}
}

// reserve claims a plan's key, addresses and tunnels for one session, and
// refuses (claiming nothing) what another holds; release gives back only
// what the kept plan does not hold.
func TestReserveAndRelease(t *testing.T) {
	st := NewState(1, 100, 1)
	key := AccessKey{Port: "access", STag: 100, CTag: 200, MAC: "02:00:00:00:00:01"}
	a4 := netip.MustParsePrefix("198.18.100.10/32")
	a6 := netip.MustParsePrefix("2001:db8:100::/56")
	p1 := &Plan{Sub: &SubPlan{Key: key, Addrs: []netip.Prefix{a4, a6}}, CPRDown: []CPRDown{{TEID: 5}}}
	if rj := st.reserve(1, p1, nil); rj != nil {
		t.Fatal(rj)
	}
	other := &Plan{Sub: &SubPlan{Key: AccessKey{Port: "access", STag: 100, CTag: 201}, Addrs: []netip.Prefix{a6}}}
	if rj := st.reserve(2, other, nil); rj == nil {
		t.Fatal("an address of session 1 was given to session 2")
	}
	if _, ok := st.keys.get(other.Sub.Key.dp()); ok {
		t.Fatal("a refused reservation claimed its key")
	}
	// Session 1 moves to a new IPv6 prefix and drops its tunnel.
	b6 := netip.MustParsePrefix("2001:db8:200::/56")
	p2 := &Plan{Sub: &SubPlan{Key: key, Addrs: []netip.Prefix{a4, b6}}}
	if rj := st.reserve(1, p2, p1); rj != nil {
		t.Fatal(rj)
	}
	st.release(1, p1, p2)
	if o4, _ := st.addrs.get(a4); o4 != 1 {
		t.Fatalf("kept address lost: %v", o4)
	}
	if o, _ := st.keys.get(key.dp()); o != 1 {
		t.Fatalf("kept key lost: %v", o)
	}
	if o6, _ := st.addrs.get(b6); o6 != 1 {
		t.Fatalf("kept prefix lost: %v", o6)
	}
	if _, ok := st.addrs.get(a6); ok {
		t.Fatal("the old prefix is still held")
	}
	if _, ok := st.teids[5]; ok {
		t.Fatal("the old tunnel is still held")
	}
	if rj := st.reserve(2, other, nil); rj != nil {
		t.Fatalf("the released prefix: %v", rj)
	}
	st.release(1, p2, nil)
	if st.keys.len() != 1 || st.addrs.len() != 1 {
		t.Fatalf("after release: keys %d addrs %d", st.keys.len(), st.addrs.len())
	}
}

// Untagged IPoE subscribers share a port and tags (none): their MACs tell
// them apart, so two MACs are two keys and one MAC twice is a conflict.
func TestUntaggedIPoEKeysDifferByMAC(t *testing.T) {
	st := NewState(1, 100, 1)
	sub := func(mac, addr string) *Plan {
		return &Plan{Sub: &SubPlan{Key: AccessKey{Port: "access", MAC: mac},
			Addrs: []netip.Prefix{netip.MustParsePrefix(addr)}}}
	}
	if rj := st.reserve(1, sub("02:00:00:00:00:01", "198.18.100.10/32"), nil); rj != nil {
		t.Fatal(rj)
	}
	if rj := st.reserve(2, sub("02:00:00:00:00:02", "198.18.100.11/32"), nil); rj != nil {
		t.Fatalf("a second MAC on the untagged port: %v", rj)
	}
	if rj := st.reserve(3, sub("02:00:00:00:00:01", "198.18.100.12/32"), nil); rj == nil {
		t.Fatal("session 1's MAC was given to session 3")
	}
}

// TestEstablishedAnswerBytes: the answer of an establishment written
// from its template is go-pfcp's encoding of the same message, for an
// IPv4 and an IPv6 function, a name as Node ID, and numbers at their
// widest; an establishment that chose F-TEIDs is left to go-pfcp.
func TestEstablishedAnswerBytes(t *testing.T) {
	for _, c := range []struct{ listen, node string }{
		{"192.0.2.1:8805", ""}, {"[2001:db8::1]:8805", ""}, {"192.0.2.1:8805", "upf-1.example.net"},
	} {
		u := &UPF{cfg: Config{Listen: netip.MustParseAddrPort(c.listen), NodeID: c.node}}
		u.cfg.Defaults()
		u.cpr = &CPR{u: u}
		for _, x := range []struct {
			seq        uint32
			seid, cpID uint64
		}{{1, 1, 1}, {0xffffff, 0xffffffffffffffff, 0x0123456789abcdef}, {0x800000, 0x8000000000000000, 0}} {
			o := &op{kind: opEstablish, seq: x.seq, seid: x.seid, cpSEID: x.cpID, nextPlan: &Plan{Sub: &SubPlan{}}}
			got := u.establishedBytes(o)
			want := u.marshal(u.sessionResponse(o))
			if !bytes.Equal(got, want) {
				t.Errorf("%s %q %+v:\n got %x\nwant %x", c.listen, c.node, x, got, want)
			}
		}
		o := &op{kind: opEstablish, seq: 1, seid: 1, nextPlan: &Plan{CPRDown: []CPRDown{{choose: true, TEID: 5}}}}
		if b := u.establishedBytes(o); b != nil {
			t.Errorf("%s: an answer with Created PDRs from the template", c.listen)
		}
	}
}
