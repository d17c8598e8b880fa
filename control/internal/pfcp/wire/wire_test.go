package wire_test

import (
	"reflect"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/pfcp/bbf"
	"edgeplane/control/internal/pfcp/wire"
)

func body(t *testing.T, ies ...*ie.IE) []byte {
	var b []byte
	for _, i := range ies {
		x, err := i.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, x...)
	}
	return b
}

// ParseIEs must decode exactly what go-pfcp's own parser does.
func TestParseIEsMatchesGoPFCP(t *testing.T) {
	b := body(t,
		ie.NewNodeIDHeuristic("198.18.0.1"),
		ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(0), ie.NewEthernetPacketFilter(ie.NewEthertype(0x8863)),
				bbf.NewLogicalPort("access")), ie.NewFARID(2)),
		bbf.NewPPPLCPConnectivity(bbf.NewMTU(1492)),
		ie.NewCreateFAR(ie.NewFARID(2), ie.NewApplyAction(2)),
		ie.New(9999, []byte{1, 2}))
	if err := wire.CheckIEs(b); err != nil {
		t.Fatal(err)
	}
	want, err := ie.ParseMultiIEs(b)
	if err != nil {
		t.Fatal(err)
	}
	got := wire.ParseIEs(b)
	if len(got) != len(want) {
		t.Fatalf("%d IEs, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("IE %d: %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestCheckIEs(t *testing.T) {
	good := body(t, ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(100)))
	for _, c := range []struct {
		name    string
		b       []byte
		problem wire.Problem
		ieType  uint16
	}{
		{"well_formed", good, wire.ProblemNone, 0},
		{"length_past_parent", append([]byte{0, 60, 0, 9}, 1, 2), wire.ProblemIELength, 60},
		{"child_past_grouped_parent", []byte{0, 1, 0, 6, 0, 56, 0, 9, 0, 1}, wire.ProblemIELength, 56},
		{"stray_octets", append(append([]byte(nil), good...), 0, 1), wire.ProblemIELength, 0},
		{"vendor_ie_without_enterprise", []byte{0x80, 0x01, 0, 1, 0}, wire.ProblemIELength, 0x8001},
	} {
		t.Run(c.name, func(t *testing.T) {
			// CheckIEs and Decode (which checks as it measures) agree.
			err := wire.CheckIEs(c.b)
			ies, derr := wire.Decode(c.b)
			if c.problem == wire.ProblemNone {
				if err != nil || derr != nil {
					t.Fatal(err, derr)
				}
				if len(ies) == 0 {
					t.Fatal("Decode: no IEs")
				}
				return
			}
			for _, err := range []*wire.Error{err, derr} {
				if err == nil || err.Problem != c.problem || err.IEType != c.ieType {
					t.Fatalf("%v, want problem %d on IE %d", err, c.problem, c.ieType)
				}
			}
			if ies != nil {
				t.Fatalf("Decode: IEs of a body it refused: %v", ies)
			}
		})
	}
}

func TestSplitBundles(t *testing.T) {
	hb := []byte{0x20, 1, 0, 4, 0, 0, 1, 0}
	fo := append([]byte(nil), hb...)
	fo[0] |= 0x04
	if m, err := wire.Split(append(append([]byte(nil), fo...), hb...)); err != nil || len(m) != 2 {
		t.Fatalf("two bundled messages: %d, %v", len(m), err)
	}
	if _, err := wire.Split(append(append([]byte(nil), hb...), hb...)); err == nil || err.Problem != wire.ProblemHeaderLength {
		t.Fatalf("a second message without FO: %v", err)
	}
	if _, err := wire.Split(fo); err == nil {
		t.Fatal("FO on the last message accepted")
	}
	v2 := append([]byte(nil), hb...)
	v2[0] = 0x40
	if _, err := wire.Split(v2); err == nil || err.Problem != wire.ProblemVersion {
		t.Fatalf("version 2: %v", err)
	}
}

// A Scratch reused from message to message decodes each as go-pfcp does:
// nothing of the previous message (a grouped IE's children where a plain
// IE now is) shows through.
func TestScratchReusedMatchesGoPFCP(t *testing.T) {
	grouped := body(t, ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(100),
		ie.NewPDI(ie.NewSourceInterface(0), bbf.NewLogicalPort("access"))),
		ie.NewCreateFAR(ie.NewFARID(2), ie.NewApplyAction(2)))
	plain := body(t, ie.NewNodeIDHeuristic("198.18.0.1"), ie.NewPDRID(7), ie.New(9999, []byte{1, 2}))
	var s wire.Scratch
	for i, b := range [][]byte{grouped, plain, grouped, plain} {
		want, err := ie.ParseMultiIEs(b)
		if err != nil {
			t.Fatal(err)
		}
		got := s.ParseIEs(b)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("message %d: %+v\nwant %+v", i, got, want)
		}
	}
}
