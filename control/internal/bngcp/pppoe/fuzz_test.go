package pppoe

import (
	"bytes"
	"testing"
)

// FuzzDiscovery: any octets are a discovery packet or an error; a packet
// that decodes encodes back to the same tags (RFC 2516 section 5).
func FuzzDiscovery(f *testing.F) {
	padi, _ := AppendDiscovery(nil, CodePADI, 0, Tag{Type: TagServiceName}, Tag{Type: TagHostUniq, Value: []byte{1, 2, 3, 4}})
	f.Add(padi)
	f.Add([]byte{0x11, 0x19, 0, 0, 0, 4, 0x01, 0x01, 0, 0})
	f.Add([]byte{0x11, 0xa7, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDiscovery(b)
		if err != nil {
			return
		}
		out, err := AppendDiscovery(nil, d.Code, d.Session, d.Tags...)
		if err != nil {
			return // too many or too long tags to send: not a decoder fault
		}
		d2, err := ParseDiscovery(out)
		if err != nil || d2.Code != d.Code || d2.Session != d.Session || len(d2.Tags) != len(d.Tags) {
			t.Fatalf("round trip: %v %+v -> %+v", err, d, d2)
		}
		for i := range d.Tags {
			if d.Tags[i].Type != d2.Tags[i].Type || !bytes.Equal(d.Tags[i].Value, d2.Tags[i].Value) {
				t.Fatalf("tag %d: %+v -> %+v", i, d.Tags[i], d2.Tags[i])
			}
		}
		ParseLineID(b)
		ParseSession(b)
	})
}
