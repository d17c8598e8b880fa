package nd

import "testing"

// FuzzND: neighbour solicitations, router solicitations and ARP.
func FuzzND(f *testing.F) {
	f.Add(make([]byte, 28))
	f.Add([]byte{0, 0, 0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseNS(b)
		CheckRS(b)
		ParseARP(b)
	})
}
