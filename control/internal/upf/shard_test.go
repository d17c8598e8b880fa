package upf

import (
	"net/netip"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/pfcp/cpsim"
	"edgeplane/control/internal/pfcp/wire"
)

func encode(t *testing.T, m message.Message) ([]byte, wire.Header) {
	t.Helper()
	b := make([]byte, m.MarshalLen())
	if err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	h, werr := wire.ParseHeader(b)
	if werr != nil {
		t.Fatal(werr)
	}
	return b, h
}

// Every request of a session goes to one decoder: modifications and
// deletions by the SEID of their header, an establishment (SEID 0) by
// its CP F-SEID, so that two establishments of one CP F-SEID are
// handled in the order they came; different sessions spread over the
// decoders.
func TestSessionRequestsKeepTheirDecoder(t *testing.T) {
	node := ie.NewNodeIDHeuristic("198.18.0.1")
	sub := cpsim.Subscriber{CPSEID: 77, STag: 100, CTag: 7, IPv4: netip.MustParseAddr("198.18.0.7")}
	// The F-SEID last: the walk steps over the grouped IEs before it.
	body := append(append([]*ie.IE{node}, sub.Establishment()...),
		ie.NewFSEID(77, netip.MustParseAddr("198.18.0.1").AsSlice(), nil))
	for _, seq := range []uint32{1, 2, 99} {
		b, h := encode(t, message.NewSessionEstablishmentRequest(0, 0, 0, seq, 0, body...))
		if k := sessionKey(b, h); k != 77 {
			t.Fatalf("establishment seq %d: key %d, want the CP F-SEID 77", seq, k)
		}
	}
	b, h := encode(t, message.NewSessionModificationRequest(0, 0, 0x5005, 3, 0, cpsim.RateChange(5, 0, 6)...))
	if k := sessionKey(b, h); k != 0x5005 {
		t.Fatalf("modification: key %#x, want its SEID", k)
	}
	// Without an F-SEID (refused later): the sequence number.
	b, h = encode(t, message.NewSessionEstablishmentRequest(0, 0, 0, 42, 0, node))
	if k := sessionKey(b, h); k != 42 {
		t.Fatalf("establishment without F-SEID: key %d", k)
	}
	// IEs cut short: the walk stops at the end of the bytes.
	cut := append([]byte(nil), b...)
	cut = append(cut, 0, 57, 0, 200)
	if k := sessionKey(cut, h); k != 42 {
		t.Fatalf("cut IE: key %d", k)
	}
	// Consecutive sessions spread evenly over two decoders.
	var n [2]int
	for s := uint64(1); s <= 1000; s++ {
		n[mix(s)%2]++
	}
	if n[0] < 400 || n[1] < 400 {
		t.Fatalf("sessions 1..1000 on two decoders: %v", n)
	}
}
