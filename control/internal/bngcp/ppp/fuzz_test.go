package ppp

import (
	"bytes"
	"testing"
)

// FuzzPacket: control packets, their options, PAP and CHAP payloads and
// LCP's echo and reject helpers take any octets without a panic; a packet
// and its options encode back as they were read.
func FuzzPacket(f *testing.F) {
	f.Add(Packet{Code: 1, ID: 1, Data: AppendOptions(nil, []Option{{1, []byte{5, 0xd4}}, {5, []byte{1, 2, 3, 4}}})}.Append(nil))
	f.Add(Packet{Code: 1, ID: 2, Data: PAPRequestData("user", "secret")}.Append(nil))
	f.Add(Packet{Code: 2, ID: 3, Data: CHAPValueData(make([]byte, 16), "user")}.Append(nil))
	f.Add([]byte{9, 1, 0, 8, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePacket(b)
		if err != nil {
			return
		}
		if out := p.Append(nil); !bytes.Equal(out, b[:len(out)]) {
			t.Fatalf("packet round trip: % x -> % x", b, out)
		}
		if opts, err := ParseOptions(p.Data); err == nil {
			if out := AppendOptions(nil, opts); !bytes.Equal(out, p.Data) {
				t.Fatalf("options round trip: % x -> % x", p.Data, out)
			}
		}
		ParsePAPRequest(p.Data)
		ParseCHAPValue(p.Data)
		EchoMagic(p.Data)
		ProtocolRejected(p.Data)
	})
}
