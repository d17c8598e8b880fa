package steer

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"edgeplane/control/internal/pkt"
)

// The kernel runs the real program on each crafted frame with
// BPF_PROG_TEST_RUN; the tests assert its verdict, the bytes it leaves and
// the counters it moves. Root (or CAP_BPF + CAP_NET_ADMIN) is required.

var (
	inSrc4 = netip.MustParseAddr("198.18.10.1")
	inDst4 = netip.MustParseAddr("198.18.20.1")
	inSrc6 = netip.MustParseAddr("2001:db8:10::1")
	inDst6 = netip.MustParseAddr("2001:db8:20::1")
	alts   = []AltNode{
		{MAC: net.HardwareAddr{0x02, 0xa1, 0, 0, 0, 1}, IPv4: netip.MustParseAddr("198.18.99.1"), IPv6: netip.MustParseAddr("2001:db8:99::1")},
		{MAC: net.HardwareAddr{0x02, 0xa1, 0, 0, 0, 2}, IPv4: netip.MustParseAddr("198.18.99.2"), IPv6: netip.MustParseAddr("2001:db8:99::2")},
		{MAC: net.HardwareAddr{0x02, 0xa1, 0, 0, 0, 3}, IPv4: netip.MustParseAddr("198.18.99.3"), IPv6: netip.MustParseAddr("2001:db8:99::3")},
	}
	pduSession = layers.GTPExtensionHeader{Type: 0x85, Content: []byte{0x10, 0x09}} // UL PDU session container, QFI 9
)

func loadT(t *testing.T) *Dataplane {
	t.Helper()
	return loadWithT(t, Options{})
}

func loadWithT(t *testing.T, opts Options) *Dataplane {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("BPF_PROG_TEST_RUN needs root")
	}
	d, err := Load(opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// targetCPU is a CPU with a cpumap entry (the last online one).
func targetCPU(t *testing.T, d *Dataplane) uint32 {
	cpus := d.CPUs()
	if len(cpus) == 0 {
		t.Fatal("no cpumap entries")
	}
	return uint32(cpus[len(cpus)-1])
}

// reset empties the rule and mask tables and clears overload.
func reset(t *testing.T, d *Dataplane) {
	t.Helper()
	rules, err := d.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for h := range rules {
		if err := d.DeleteRule(h); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < MaxMasks; i++ {
		if err := d.SetMask(i, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.SetOverload(false, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.SetAltNodes(alts); err != nil {
		t.Fatal(err)
	}
}

func addRule(t *testing.T, d *Dataplane, k Key, f Fields, slot int, cpu uint32) uint32 {
	t.Helper()
	if err := d.SetMask(slot, f); err != nil {
		t.Fatal(err)
	}
	h := RuleHash(k, f)
	if err := d.PutRule(h, Rule{Key: k.Masked(f), Fields: f, Slot: slot, CPU: cpu, Active: true}); err != nil {
		t.Fatal(err)
	}
	return h
}

type result struct {
	ret   uint32
	out   []byte
	delta Counters
}

func sub(a, b map[string]Counter) map[string]Counter {
	out := map[string]Counter{}
	for k, v := range a {
		d := Counter{v.Packets - b[k].Packets, v.Bytes - b[k].Bytes}
		if d.Packets != 0 || d.Bytes != 0 {
			out[k] = d
		}
	}
	return out
}

func run(t *testing.T, d *Dataplane, frame []byte) result {
	t.Helper()
	before, err := d.ReadCounters()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(frame)+256)
	opts := ebpf.RunOptions{Data: frame, DataOut: out, Repeat: 1}
	ret, err := d.Program().Run(&opts)
	if err != nil {
		t.Fatalf("test run: %v", err)
	}
	after, err := d.ReadCounters()
	if err != nil {
		t.Fatal(err)
	}
	return result{ret: ret, out: out[:len(frame)], delta: Counters{
		Verdicts: sub(after.Verdicts, before.Verdicts),
		Paths:    sub(after.Paths, before.Paths),
		Drops:    sub(after.Drops, before.Drops),
	}}
}

// dump shows a frame three ways on a mismatch, as Katran's fixtures do.
func dump(t *testing.T, frame []byte) {
	t.Helper()
	t.Logf("frame base64: %s", base64.StdEncoding.EncodeToString(frame))
	t.Logf("decoded: %s", gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default).Dump())
}

var verdictName = map[uint32]string{0: "aborted", 1: "drop", 2: "pass", 3: "tx", 4: "redirect"}

// expect checks the verdict and that exactly one packet moved exactly the
// counters named: the verdict and its path or drop reason.
func expect(t *testing.T, frame []byte, r result, verdict, reason string) {
	t.Helper()
	if got := verdictName[r.ret]; got != verdict {
		dump(t, frame)
		t.Fatalf("verdict %s, want %s (paths %v, drops %v)", got, verdict, r.delta.Paths, r.delta.Drops)
	}
	one := Counter{1, uint64(len(frame))}
	if len(r.delta.Verdicts) != 1 || r.delta.Verdicts[verdict] != one {
		t.Errorf("verdict counters moved %v, want %s=%v", r.delta.Verdicts, verdict, one)
	}
	reasons := r.delta.Paths
	if verdict == "drop" {
		reasons = r.delta.Drops
		if len(r.delta.Paths) != 0 {
			t.Errorf("a drop moved path counters %v", r.delta.Paths)
		}
	} else if len(r.delta.Drops) != 0 {
		t.Errorf("a %s moved drop counters %v", verdict, r.delta.Drops)
	}
	if len(reasons) != 1 || reasons[reason] != one {
		t.Errorf("path/drop counters moved %v, want %s=%v", reasons, reason, one)
	}
}

type flowCase struct {
	name string
	spec pkt.Spec
	key  Key // what the program must extract
}

func flowCases() []flowCase {
	udp4 := func(s pkt.Spec) pkt.Spec { s.Src, s.Dst, s.SPort, s.DPort = inSrc4, inDst4, 40000, 5004; return s }
	udp6 := func(s pkt.Spec) pkt.Spec {
		s.Inner6 = true
		s.Src, s.Dst, s.SPort, s.DPort = inSrc6, inDst6, 40000, 5004
		return s
	}
	k4 := func(vni, teid uint32, proto uint8) Key {
		return Key{VNI: vni, TEID: teid, Src: inSrc4, Dst: inDst4, SrcPort: 40000, DstPort: 5004, Proto: proto}
	}
	k6 := func(vni, teid uint32, proto uint8) Key {
		return Key{VNI: vni, TEID: teid, Src: inSrc6, Dst: inDst6, SrcPort: 40000, DstPort: 5004, Proto: proto}
	}
	ext2 := []layers.GTPExtensionHeader{pduSession, {Type: 0x40, Content: []byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}}}
	return []flowCase{
		{"plain-ipv4-udp", udp4(pkt.Spec{}), k4(0, 0, 17)},
		{"plain-ipv6-tcp", udp6(pkt.Spec{TCP: true}), k6(0, 0, 6)},
		{"plain-ipv4-vlan", udp4(pkt.Spec{OuterVLANs: []uint16{100}}), k4(0, 0, 17)},
		{"plain-ipv4-qinq", udp4(pkt.Spec{OuterVLANs: []uint16{100, 200}}), k4(0, 0, 17)},
		{"vxlan-ipv4-in-ipv4", udp4(pkt.Spec{Tunnel: pkt.VXLAN, VNI: 7000}), k4(7000, 0, 17)},
		{"vxlan-ipv4-csum0", udp4(pkt.Spec{Tunnel: pkt.VXLAN, VNI: 7000, OuterCsum0: true}), k4(7000, 0, 17)},
		{"vxlan-ipv6-in-ipv4", udp6(pkt.Spec{Tunnel: pkt.VXLAN, VNI: 7001}), k6(7001, 0, 17)},
		{"vxlan-ipv4-in-ipv6", udp4(pkt.Spec{Tunnel: pkt.VXLAN, VNI: 7002, Outer6: true}), k4(7002, 0, 17)},
		{"vxlan-inner-qinq-tcp", udp4(pkt.Spec{Tunnel: pkt.VXLAN, VNI: 7003, InnerVLANs: []uint16{10, 20}, TCP: true}), k4(7003, 0, 6)},
		{"gtpu-ipv4-in-ipv4", udp4(pkt.Spec{Tunnel: pkt.GTPU, TEID: 0x8894d0d4}), k4(0, 0x8894d0d4, 17)},
		{"gtpu-ext-pdu-session", udp4(pkt.Spec{Tunnel: pkt.GTPU, TEID: 0x100, GTPExt: []layers.GTPExtensionHeader{pduSession}}), k4(0, 0x100, 17)},
		{"gtpu-ext-chain-of-two", udp4(pkt.Spec{Tunnel: pkt.GTPU, TEID: 0x101, GTPExt: ext2}), k4(0, 0x101, 17)},
		{"gtpu-ipv6-in-ipv6", udp6(pkt.Spec{Tunnel: pkt.GTPU, TEID: 0x102, Outer6: true, OuterVLANs: []uint16{5}}), k6(0, 0x102, 17)},
		{"nested-vxlan-gtpu-ipv4", udp4(pkt.Spec{Tunnel: pkt.VXLANGTP, VNI: 4450, TEID: 0x8894d0d4, GTPExt: []layers.GTPExtensionHeader{pduSession}}), k4(4450, 0x8894d0d4, 17)},
		{"nested-ipv6-inner-over-ipv4-outer", udp6(pkt.Spec{Tunnel: pkt.VXLANGTP, VNI: 4451, TEID: 0x200}), k6(4451, 0x200, 17)},
		{"nested-all-ipv6", udp6(pkt.Spec{Tunnel: pkt.VXLANGTP, VNI: 4452, TEID: 0x201, Outer6: true, Mid6: true}), k6(4452, 0x201, 17)},
		{"nested-tcp-inner", udp4(pkt.Spec{Tunnel: pkt.VXLANGTP, VNI: 4453, TEID: 0x202, TCP: true, OuterVLANs: []uint16{300}}), k4(4453, 0x202, 6)},
	}
}

// TestClassifyAndSteer runs every tunnel combination through every path.
func TestClassifyAndSteer(t *testing.T) {
	d := loadT(t)
	cpu := targetCPU(t, d)
	for _, fc := range flowCases() {
		frame, _, err := pkt.Build(fc.spec)
		if err != nil {
			t.Fatalf("%s: %v", fc.name, err)
		}
		t.Run(fc.name+"/headroom", func(t *testing.T) {
			reset(t, d)
			r := run(t, d, frame)
			expect(t, frame, r, "pass", "headroom")
			if !bytes.Equal(r.out, frame) {
				t.Error("a passed frame was modified")
			}
		})
		t.Run(fc.name+"/prio-5tuple-to-cpu", func(t *testing.T) {
			reset(t, d)
			all := FieldVNI | FieldTEID | FieldSrc | FieldDst | FieldSrcPort | FieldDstPort | FieldProto
			h := addRule(t, d, fc.key, all, 0, cpu)
			r := run(t, d, frame)
			expect(t, frame, r, "redirect", "prio_cpu")
			c, err := d.RuleCounts(h)
			if err != nil || c != (Counter{1, uint64(len(frame))}) {
				t.Errorf("rule counters %v (%v), want 1 packet of %d bytes", c, err, len(frame))
			}
		})
		t.Run(fc.name+"/prio-vni-teid-src-dport-in-slot-2", func(t *testing.T) {
			reset(t, d)
			// An unrelated rule in slot 0 must not hide this one.
			addRule(t, d, Key{VNI: 1}, FieldVNI, 0, cpu)
			addRule(t, d, fc.key, FieldVNI|FieldTEID|FieldSrc|FieldDstPort, 2, cpu)
			expect(t, frame, run(t, d, frame), "redirect", "prio_cpu")
		})
		t.Run(fc.name+"/prio-no-cpu", func(t *testing.T) {
			reset(t, d)
			addRule(t, d, fc.key, FieldSrc|FieldDst, 1, NoCPU)
			expect(t, frame, run(t, d, frame), "pass", "prio_host")
		})
		t.Run(fc.name+"/offload", func(t *testing.T) {
			reset(t, d)
			if err := d.SetOverload(true, nil); err != nil {
				t.Fatal(err)
			}
			r := run(t, d, frame)
			expect(t, frame, r, "tx", "offload")
			checkRewrite(t, frame, r.out, alts[AltIndex(fc.key, len(alts))], fc.spec)
		})
		t.Run(fc.name+"/prio-kept-while-host-overloaded", func(t *testing.T) {
			reset(t, d)
			addRule(t, d, fc.key, FieldSrc|FieldDstPort, 0, cpu)
			if err := d.SetOverload(true, nil); err != nil {
				t.Fatal(err)
			}
			expect(t, frame, run(t, d, frame), "redirect", "prio_cpu")
		})
		t.Run(fc.name+"/prio-overflow-cpu-overloaded", func(t *testing.T) {
			reset(t, d)
			addRule(t, d, fc.key, FieldSrc|FieldDstPort, 0, cpu)
			cpus := make([]bool, cpu+1)
			cpus[cpu] = true
			if err := d.SetOverload(false, cpus); err != nil {
				t.Fatal(err)
			}
			r := run(t, d, frame)
			expect(t, frame, r, "tx", "prio_overflow")
			checkRewrite(t, frame, r.out, alts[AltIndex(fc.key, len(alts))], fc.spec)
		})
	}
}

// checkRewrite asserts the offloaded frame: MACs, outer destination, valid
// checksums, and every other byte untouched.
func checkRewrite(t *testing.T, in, out []byte, alt AltNode, spec pkt.Spec) {
	t.Helper()
	if !bytes.Equal(out[0:6], alt.MAC) {
		t.Errorf("dst MAC %x, want %s", out[0:6], alt.MAC)
	}
	if !bytes.Equal(out[6:12], in[0:6]) {
		t.Errorf("src MAC %x, want the old destination %x", out[6:12], in[0:6])
	}
	dst, err := pkt.CheckOuter(out)
	if err != nil {
		dump(t, out)
		t.Fatalf("rewritten frame: %v", err)
	}
	want := alt.IPv4.AsSlice()
	if len(dst) == 16 {
		want = alt.IPv6.AsSlice()
	}
	if !bytes.Equal(dst, want) {
		t.Errorf("outer dst %x, want %x", dst, want)
	}
	// Beyond the outer L4 header nothing may change.
	_, bounds, _ := pkt.Build(spec)
	tail := 0
	for _, b := range bounds {
		if b.Name == "outer-udp" || (spec.Tunnel == pkt.None && (b.Name == "inner-udp" || b.Name == "inner-tcp")) {
			tail = b.Off + b.Len
		}
	}
	if tail == 0 || !bytes.Equal(in[tail:], out[tail:]) {
		t.Errorf("bytes after the outer L4 header changed (from %d)", tail)
	}
}

// TestTruncatedAtEveryBoundary cuts frames one byte short of the end of
// each header and expects the drop reason of that header.
func TestTruncatedAtEveryBoundary(t *testing.T) {
	d := loadT(t)
	reset(t, d)
	reasonOf := map[string]string{
		"vlan0": "trunc_vlan", "vlan1": "trunc_vlan", "inner-vlan0": "trunc_vlan", "inner-vlan1": "trunc_vlan",
		"outer-ipv4": "trunc_ipv4", "mid-ipv4": "trunc_ipv4", "inner-ipv4": "trunc_ipv4",
		"outer-ipv6": "trunc_ipv6", "mid-ipv6": "trunc_ipv6", "inner-ipv6": "trunc_ipv6",
		"outer-udp": "trunc_udp", "mid-udp": "trunc_udp", "inner-udp": "trunc_udp", "inner-tcp": "trunc_tcp",
		"vxlan": "trunc_vxlan", "inner-eth": "trunc_eth", "gtp": "trunc_gtp",
	}
	specs := map[string]pkt.Spec{
		"nested-ipv4-qinq": {Tunnel: pkt.VXLANGTP, VNI: 1, TEID: 2, OuterVLANs: []uint16{1, 2}, InnerVLANs: []uint16{3, 4},
			GTPExt: []layers.GTPExtensionHeader{pduSession}, Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2},
		"nested-ipv6-tcp": {Tunnel: pkt.VXLANGTP, VNI: 1, TEID: 2, Outer6: true, Mid6: true, Inner6: true, TCP: true,
			Src: inSrc6, Dst: inDst6, SPort: 1, DPort: 2},
	}
	for sname, spec := range specs {
		frame, bounds, err := pkt.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bounds {
			if b.Name == "eth" {
				continue // BPF_PROG_TEST_RUN refuses frames under 14 bytes
			}
			want, ok := reasonOf[b.Name]
			if !ok {
				t.Fatalf("no reason for boundary %s", b.Name)
			}
			cut := frame[:b.Off+b.Len-1]
			t.Run(sname+"/cut-in-"+b.Name, func(t *testing.T) {
				expect(t, cut, run(t, d, cut), "drop", want)
			})
		}
		// The GTP-U header complete but its extension header cut short.
		t.Run(sname+"/empty-gtp-payload", func(t *testing.T) {
			var g pkt.Boundary
			for _, b := range bounds {
				if b.Name == "gtp" {
					g = b
				}
			}
			cut := frame[:g.Off+g.Len]
			expect(t, cut, run(t, d, cut), "drop", "bad_inner")
		})
	}
}

func mutate(t *testing.T, spec pkt.Spec, boundary string, f func(hdr []byte)) []byte {
	t.Helper()
	frame, bounds, err := pkt.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bounds {
		if b.Name == boundary {
			f(frame[b.Off:])
			return frame
		}
	}
	t.Fatalf("no %s in frame", boundary)
	return nil
}

// TestMalformedAndUnsteerable covers invalid headers, unknown tunnels and
// frames the program leaves to the stack.
func TestMalformedAndUnsteerable(t *testing.T) {
	d := loadT(t)
	reset(t, d)
	// Overloaded: a steerable frame is offloaded, an unsteerable one must
	// pass untouched.
	if err := d.SetOverload(true, nil); err != nil {
		t.Fatal(err)
	}
	gtp := pkt.Spec{Tunnel: pkt.GTPU, TEID: 9, GTPExt: []layers.GTPExtensionHeader{pduSession}, Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2}
	plain := pkt.Spec{Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2}
	five := []layers.GTPExtensionHeader{pduSession, pduSession, pduSession, pduSession, pduSession}
	cases := []struct {
		name, verdict, reason string
		frame                 []byte
	}{
		{"ipv4-ihl-below-5", "drop", "bad_ipv4", mutate(t, plain, "inner-ipv4", func(h []byte) { h[0] = 0x44 })},
		{"ipv4-version-6-in-ipv4-ethertype", "drop", "bad_ipv4", mutate(t, plain, "inner-ipv4", func(h []byte) { h[0] = 0x65 })},
		{"tcp-doff-below-5", "drop", "bad_tcp", mutate(t, pkt.Spec{TCP: true, Src: inSrc4, Dst: inDst4}, "inner-tcp", func(h []byte) { h[12] = 0x40 })},
		{"gtp-ext-length-0", "drop", "bad_gtp_ext", mutate(t, gtp, "gtp", func(h []byte) { h[12] = 0 })},
		{"gtp-ext-chain-too-long", "drop", "bad_gtp_ext", pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, TEID: 9, GTPExt: five, Src: inSrc4, Dst: inDst4})},
		{"gtp-inner-version-5", "drop", "bad_inner", mutate(t, gtp, "inner-ipv4", func(h []byte) { h[0] = 0x55 })},
		{"gtp-echo-request", "tx", "offload", pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, TEID: 9, GTPType: 1})},
		{"gtp-version-2-is-plain-udp", "tx", "offload", mutate(t, gtp, "gtp", func(h []byte) { h[0] = 0x54 })},
		{"vxlan-i-flag-clear-is-plain-udp", "tx", "offload", mutate(t, pkt.Spec{Tunnel: pkt.VXLAN, VNI: 3, Src: inSrc4, Dst: inDst4}, "vxlan", func(h []byte) { h[0] = 0 })},
		{"unknown-tunnel-geneve-6081", "tx", "offload", pkt.MustBuild(pkt.Spec{Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 6081, Payload: 64})},
		{"arp", "pass", "not_steerable", arpFrame()},
		{"ipv6-multicast-dst-mac", "pass", "not_steerable", mutate(t, plain, "eth", func(h []byte) { copy(h, []byte{0x33, 0x33, 0, 0, 0, 1}) })},
		{"triple-vlan", "pass", "not_steerable", pkt.MustBuild(pkt.Spec{OuterVLANs: []uint16{1, 2, 3}, Src: inSrc4, Dst: inDst4})},
		{"outer-ipv4-fragment", "pass", "not_steerable", mutate(t, pkt.Spec{Tunnel: pkt.VXLAN, VNI: 3, Src: inSrc4, Dst: inDst4}, "outer-ipv4", func(h []byte) { h[6] = 0x20 })},
		{"inner-ipv4-fragment", "tx", "offload", mutate(t, gtp, "inner-ipv4", func(h []byte) { h[7] = 0x10 })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, c.frame, run(t, d, c.frame), c.verdict, c.reason)
		})
	}
}

func arpFrame() []byte {
	buf := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
		&layers.Ethernet{SrcMAC: pkt.PeerMAC, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: 1, SourceHwAddress: pkt.PeerMAC, SourceProtAddress: []byte{198, 18, 0, 2},
			DstHwAddress: make([]byte, 6), DstProtAddress: []byte{198, 18, 0, 1}})
	return buf.Bytes()
}

// TestInnerFragmentsShareOneRule: every fragment of an inner datagram is
// classified by addresses only, so a rule on the addresses takes them all.
func TestInnerFragmentsShareOneRule(t *testing.T) {
	d := loadT(t)
	reset(t, d)
	cpu := targetCPU(t, d)
	spec := pkt.Spec{Tunnel: pkt.GTPU, TEID: 9, Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2}
	addRule(t, d, Key{TEID: 9, Src: inSrc4, Dst: inDst4, Proto: 17}, FieldTEID|FieldSrc|FieldDst|FieldProto, 0, cpu)
	first := mutate(t, spec, "inner-ipv4", func(h []byte) { h[6] = 0x20 })             // MF, offset 0
	later := mutate(t, spec, "inner-ipv4", func(h []byte) { h[6], h[7] = 0x00, 0x10 }) // offset 128
	expect(t, first, run(t, d, first), "redirect", "prio_cpu")
	expect(t, later, run(t, d, later), "redirect", "prio_cpu")
}

func TestOffloadEdgeCases(t *testing.T) {
	d := loadT(t)
	v6 := pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, Outer6: true, TEID: 5, Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2})
	t.Run("no-alt-node-passes", func(t *testing.T) {
		reset(t, d)
		if err := d.SetAltNodes(nil); err != nil {
			t.Fatal(err)
		}
		if err := d.SetOverload(true, nil); err != nil {
			t.Fatal(err)
		}
		r := run(t, d, v6)
		expect(t, v6, r, "pass", "no_alt_node")
	})
	t.Run("alt-node-without-ipv6-leaves-frame-untouched", func(t *testing.T) {
		reset(t, d)
		if err := d.SetAltNodes([]AltNode{{MAC: alts[0].MAC, IPv4: alts[0].IPv4}}); err != nil {
			t.Fatal(err)
		}
		if err := d.SetOverload(true, nil); err != nil {
			t.Fatal(err)
		}
		r := run(t, d, v6)
		expect(t, v6, r, "pass", "no_alt_node")
		if !bytes.Equal(r.out, v6) {
			t.Error("frame modified although not offloaded")
		}
	})
	t.Run("cpu-without-cpumap-entry-passes", func(t *testing.T) {
		reset(t, d)
		k := Key{TEID: 5}
		addRule(t, d, k, FieldTEID, 0, MaxCPUs-1)
		expect(t, v6, run(t, d, v6), "pass", "cpu_missing")
	})
	t.Run("inactive-rule-is-not-prioritised", func(t *testing.T) {
		reset(t, d)
		if err := d.SetMask(0, FieldTEID); err != nil {
			t.Fatal(err)
		}
		k := Key{TEID: 5}
		if err := d.PutRule(RuleHash(k, FieldTEID), Rule{Key: k, Slot: 0, CPU: NoCPU}); err != nil {
			t.Fatal(err)
		}
		expect(t, v6, run(t, d, v6), "pass", "headroom")
	})
	t.Run("hash-hit-with-other-key-is-not-prioritised", func(t *testing.T) {
		reset(t, d)
		if err := d.SetMask(0, FieldTEID); err != nil {
			t.Fatal(err)
		}
		// The right hash, but a stored key naming another TEID: what a
		// 32-bit collision would look like.
		if err := d.PutRule(RuleHash(Key{TEID: 5}, FieldTEID), Rule{Key: Key{TEID: 6}, Slot: 0, CPU: NoCPU, Active: true}); err != nil {
			t.Fatal(err)
		}
		expect(t, v6, run(t, d, v6), "pass", "headroom")
	})
	t.Run("duplicate-hash-refused", func(t *testing.T) {
		reset(t, d)
		k := Key{TEID: 5}
		addRule(t, d, k, FieldTEID, 0, NoCPU)
		err := d.PutRule(RuleHash(k, FieldTEID), Rule{Key: k, Slot: 0, CPU: NoCPU, Active: true})
		if !errors.Is(err, ErrExists) {
			t.Fatalf("second insert: %v, want ErrExists", err)
		}
	})
	t.Run("alt-node-chosen-by-flow-hash", func(t *testing.T) {
		reset(t, d)
		if err := d.SetOverload(true, nil); err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for port := uint16(1); port <= 64; port++ {
			k := Key{TEID: 5, Src: inSrc4, Dst: inDst4, SrcPort: port, DstPort: 2, Proto: 17}
			f := pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, TEID: 5, Src: inSrc4, Dst: inDst4, SPort: port, DPort: 2})
			r := run(t, d, f)
			want := AltIndex(k, len(alts))
			seen[want] = true
			if !bytes.Equal(r.out[0:6], alts[want].MAC) {
				t.Fatalf("port %d: went to %x, the Go hash picks %s", port, r.out[0:6], alts[want].MAC)
			}
		}
		if len(seen) != len(alts) {
			t.Errorf("64 flows used %d of %d alternative nodes", len(seen), len(alts))
		}
	})
}

// TestNamesMatchGenerated: the counter names read from BTF line up with the
// constants bpf2go generated from the same enums.
func TestNamesMatchGenerated(t *testing.T) {
	d := loadT(t)
	paths := map[string]steerSteerPath{
		"prio_cpu": steerSteerPathPATH_PRIO_CPU, "prio_host": steerSteerPathPATH_PRIO_HOST,
		"prio_overflow": steerSteerPathPATH_PRIO_OVERFLOW, "headroom": steerSteerPathPATH_HEADROOM,
		"offload": steerSteerPathPATH_OFFLOAD, "no_alt_node": steerSteerPathPATH_NO_ALT_NODE,
		"cpu_missing": steerSteerPathPATH_CPU_MISSING, "not_steerable": steerSteerPathPATH_NOT_STEERABLE,
	}
	if len(d.Names.Paths) != int(steerSteerPathPATH_MAX) || len(paths) != int(steerSteerPathPATH_MAX) {
		t.Fatalf("%d path names, PATH_MAX is %d", len(d.Names.Paths), steerSteerPathPATH_MAX)
	}
	for i, n := range d.Names.Paths {
		if v, ok := paths[n]; !ok || int(v) != i {
			t.Errorf("path %d is %q in BTF", i, n)
		}
	}
	if len(d.Names.Drops) != int(steerSteerDropDROP_MAX) {
		t.Errorf("%d drop names, DROP_MAX is %d", len(d.Names.Drops), steerSteerDropDROP_MAX)
	}
	if d.Names.Drops[steerSteerDropDROP_BAD_GTP_EXT] != "bad_gtp_ext" {
		t.Errorf("drop names out of order: %v", d.Names.Drops)
	}
	if want := []string{"aborted", "drop", "pass", "tx", "redirect"}; !equal(d.Names.Verdicts, want) {
		t.Errorf("verdicts %v, want %v", d.Names.Verdicts, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestConstantsMatchObject: the Go mirrors of steer.h's limits.
func TestConstantsMatchObject(t *testing.T) {
	spec, err := loadSteer()
	if err != nil {
		t.Fatal(err)
	}
	if n := spec.Maps["cpu_map"].MaxEntries; n != MaxCPUs {
		t.Errorf("cpu_map has %d entries, MaxCPUs is %d", n, MaxCPUs)
	}
	if n := spec.Maps["mask_map"].MaxEntries; n != MaxMasks {
		t.Errorf("mask_map has %d entries, MaxMasks is %d", n, MaxMasks)
	}
	if n := spec.Maps["alt_map"].MaxEntries; n != MaxAlt {
		t.Errorf("alt_map has %d entries, MaxAlt is %d", n, MaxAlt)
	}
}

// TestTwoWaySets: two rules whose index hashes share a set both match (the second
// one from the set's second slot); a third is refused with ErrSetFull.
func TestTwoWaySets(t *testing.T) {
	d := loadT(t)
	reset(t, d)
	cpu := targetCPU(t, d)
	var keys []Key
	want := uint32(0)
	for p := uint32(1); len(keys) < 3; p++ {
		k := Key{TEID: p}
		ih := IndexHash(k.Masked(FieldTEID)) // the set the program looks in
		if len(keys) == 0 {
			want = d.set(ih)
		}
		if d.set(ih) == want {
			keys = append(keys, k)
		}
	}
	if err := d.SetMask(0, FieldTEID); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[:2] {
		if err := d.PutRule(RuleHash(k, FieldTEID), Rule{Key: k, Slot: 0, CPU: cpu, Active: true}); err != nil {
			t.Fatal(err)
		}
	}
	err := d.PutRule(RuleHash(keys[2], FieldTEID), Rule{Key: keys[2], Slot: 0, CPU: cpu, Active: true})
	if !errors.Is(err, ErrSetFull) {
		t.Fatalf("third rule in a full set: %v", err)
	}
	for _, k := range keys[:2] {
		f := pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, TEID: k.TEID, Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2})
		expect(t, f, run(t, d, f), "redirect", "prio_cpu")
	}
	// Deleting the first frees its slot; the second still matches.
	if err := d.DeleteRule(RuleHash(keys[0], FieldTEID)); err != nil {
		t.Fatal(err)
	}
	f := pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, TEID: keys[1].TEID, Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2})
	expect(t, f, run(t, d, f), "redirect", "prio_cpu")
	if err := d.PutRule(RuleHash(keys[2], FieldTEID), Rule{Key: keys[2], Slot: 0, CPU: cpu, Active: true}); err != nil {
		t.Fatalf("after a delete the set has room: %v", err)
	}
	if rules, _ := d.Rules(); len(rules) != 2 {
		t.Errorf("%d rules listed, want 2", len(rules))
	}
}

// TestResizedPrioMapStillHits: with prio_map resized at load
// (Options.PrioSlots), the program indexes it with the loader's set mask
// (prio_set_mask, a load-time constant), so a rule the agent placed for the
// small map is found; with the built-in mask it would be looked for beyond
// the map's end.
func TestResizedPrioMapStillHits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("BPF_PROG_TEST_RUN needs root")
	}
	d, err := Load(Options{PrioSlots: 64})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer d.Close()
	reset(t, d)
	cpu := targetCPU(t, d)
	found := 0
	for p := uint16(1); p <= 16; p++ {
		k := Key{TEID: 9, Src: inSrc4, Dst: inDst4, SrcPort: p, DstPort: 2, Proto: 17}
		f := FieldTEID | FieldSrcPort
		if d.set(IndexHash(k.Masked(f))) >= 64 {
			t.Fatalf("set %d beyond a 64-slot map", d.set(IndexHash(k.Masked(f))))
		}
		if err := d.SetMask(0, f); err != nil {
			t.Fatal(err)
		}
		err := d.PutRule(RuleHash(k, f), Rule{Key: k.Masked(f), Fields: f, CPU: cpu, Active: true})
		if errors.Is(err, ErrSetFull) {
			continue // 16 rules in 32 sets: a full set is possible, not a failure
		}
		if err != nil {
			t.Fatal(err)
		}
		frame := pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, TEID: 9, Src: inSrc4, Dst: inDst4, SPort: p, DPort: 2})
		expect(t, frame, run(t, d, frame), "redirect", "prio_cpu")
		found++
	}
	if found < 8 {
		t.Errorf("only %d of 16 rules placed in a 64-slot map", found)
	}
}

// TestUnusedMaskSlotIsSkipped: a slot whose bit is clear in
// node_state.masks_active is not consulted even if mask_map still holds a
// mask and prio_map a matching rule (the state between the two writes of
// SetMask clearing a slot).
func TestUnusedMaskSlotIsSkipped(t *testing.T) {
	d := loadT(t)
	reset(t, d)
	cpu := targetCPU(t, d)
	k := Key{TEID: 5}
	addRule(t, d, k, FieldTEID, 1, cpu)
	frame := pkt.MustBuild(pkt.Spec{Tunnel: pkt.GTPU, TEID: 5, Src: inSrc4, Dst: inDst4, SPort: 1, DPort: 2})
	expect(t, frame, run(t, d, frame), "redirect", "prio_cpu")
	d.mu.Lock()
	ns, err := d.nodeState()
	if err == nil {
		ns.MasksActive &^= 1 << 1
		err = d.objs.NodeMap.Update(uint32(0), &ns, ebpf.UpdateAny)
	}
	d.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	expect(t, frame, run(t, d, frame), "pass", "headroom")
}
