package steer

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"edgeplane/control/internal/pkt"
)

// TestFastParseMatchesGeneralParse runs the same frames through the program
// with its fast parse of the common tunnel stacks and through the program
// with the general parse only (Options.GeneralParseOnly): the verdict, the
// frame it leaves and every counter must be the same. The frames are every
// tunnel combination of flowCases (most take the fast parse, the rest fall
// back), every truncation of the nested VXLAN+GTP-U frames (IPv4 and IPv6
// throughout), and those frames
// with each header byte inverted in turn, so that every test the fast parse
// makes is seen to fail and fall back where the general parse decides
// otherwise. The host is overloaded and every flow case has a rule: a hit
// is redirected, a miss offloaded to the node its key's hash picks.
func TestFastParseMatchesGeneralParse(t *testing.T) {
	fast := loadT(t)
	general := loadWithT(t, Options{GeneralParseOnly: true})
	cpu := targetCPU(t, fast)
	all := FieldVNI | FieldTEID | FieldSrc | FieldDst | FieldSrcPort | FieldDstPort | FieldProto
	for _, d := range []*Dataplane{fast, general} {
		reset(t, d)
		added := map[Key]bool{}
		for _, fc := range flowCases() {
			if !added[fc.key] { // two cases differ only outside the key
				addRule(t, d, fc.key, all, 0, cpu)
				added[fc.key] = true
			}
		}
		if err := d.SetOverload(true, nil); err != nil {
			t.Fatal(err)
		}
	}

	type namedFrame struct {
		name  string
		frame []byte
	}
	var frames []namedFrame
	for _, fc := range flowCases() {
		frames = append(frames, namedFrame{fc.name, pkt.MustBuild(fc.spec)})
	}
	for _, spec := range []pkt.Spec{
		{Tunnel: pkt.VXLANGTP, VNI: 4450, TEID: 0x8894d0d4, GTPExt: []layers.GTPExtensionHeader{pduSession},
			Src: inSrc4, Dst: inDst4, SPort: 40000, DPort: 5004},
		{Tunnel: pkt.VXLANGTP, VNI: 4453, TEID: 0x202, TCP: true, Src: inSrc4, Dst: inDst4, SPort: 40000, DPort: 5004},
		{Tunnel: pkt.VXLANGTP, VNI: 4452, TEID: 0x201, Outer6: true, Mid6: true, Inner6: true,
			GTPExt: []layers.GTPExtensionHeader{pduSession}, Src: inSrc6, Dst: inDst6, SPort: 40000, DPort: 5004},
	} {
		frame, bounds, err := pkt.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		hdrEnd := 0
		for _, b := range bounds {
			hdrEnd = max(hdrEnd, b.Off+b.Len)
		}
		for n := 14; n < len(frame); n++ {
			frames = append(frames, namedFrame{fmt.Sprintf("nested-tcp=%v-ipv6=%v-cut-%d", spec.TCP, spec.Outer6, n), frame[:n]})
		}
		for i := 0; i < hdrEnd; i++ {
			f := bytes.Clone(frame)
			f[i] ^= 0xff
			frames = append(frames, namedFrame{fmt.Sprintf("nested-tcp=%v-ipv6=%v-byte-%d-inverted", spec.TCP, spec.Outer6, i), f})
		}
	}
	for _, f := range frames {
		rf, rg := run(t, fast, f.frame), run(t, general, f.frame)
		if rf.ret != rg.ret || !bytes.Equal(rf.out, rg.out) || fmt.Sprint(rf.delta) != fmt.Sprint(rg.delta) {
			dump(t, f.frame)
			t.Errorf("%s: fast parse: verdict %s, counters %v; general parse: verdict %s, counters %v; frames out equal: %v",
				f.name, verdictName[rf.ret], rf.delta, verdictName[rg.ret], rg.delta, bytes.Equal(rf.out, rg.out))
		}
	}
}
