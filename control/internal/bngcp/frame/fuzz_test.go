package frame

import "testing"

// FuzzParse: the access header and the IPv4/IPv6/UDP/ICMPv6 decoders the
// control plane reads every punted frame with.
func FuzzParse(f *testing.F) {
	f.Add(Append(nil, Broadcast, MAC{2, 0, 0, 0, 0, 1}, Line{STag: 100, CTag: 200}, TypePPPoED))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x81, 0, 0, 7, 0x08, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := Parse(b)
		if err != nil {
			return
		}
		if h.Len != HeaderLen(h.Line) || len(p) != len(b)-h.Len {
			t.Fatalf("header %+v, payload %d of %d", h, len(p), len(b))
		}
		ParseUDP4(p)
		ParseUDP6(p)
		ParseICMPv6(p)
	})
}
