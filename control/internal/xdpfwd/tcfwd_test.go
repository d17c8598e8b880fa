package xdpfwd

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/cilium/ebpf"
)

// The tc ingress programs (xdp/fwd/tcfwd.bpf.c) on crafted frames through
// BPF_PROG_TEST_RUN, as fwd_test.go does for the XDP program: the verdict,
// the bytes left and the counter moved. A redirect's verdict is
// TC_ACT_REDIRECT whichever of the three endings set it; the test run does
// not send. Root is required.

// The kernel's TC_ACT_* (linux/pkt_cls.h).
const (
	tcActOK       = 0
	tcActRedirect = 7
)

type tcFixture struct {
	objs  tcfwdObjects
	names []string
}

func loadTC(t *testing.T) *tcFixture {
	t.Helper()
	f := &tcFixture{}
	f.names = loadObjects(t, loadTcfwd, &f.objs, f.objs.Close)
	var c tcfwdFwdCfg
	copy(c.Mac[:], portMAC)
	c.Enabled, c.AclEmpty = 1, 1
	put := func(m *ebpf.Map, k, v any) {
		if err := m.Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	put(f.objs.FwdCfgMap, uint32(0), c)
	put(f.objs.FwdTcPorts, uint32(outPort), uint32(1)) // lo: any ifindex will do
	_, n, _ := net.ParseCIDR("198.18.100.0/24")
	put(f.objs.FwdRoute4, tcfwdFwdLpm4Key{Prefixlen: 24, Addr: binary.NativeEndian.Uint32(n.IP.To4())}, uint32(nhRouted))
	k6 := tcfwdFwdLpm6Key{Prefixlen: 48}
	copy(k6.Addr[:], net.ParseIP("2001:db8:100::"))
	put(f.objs.FwdRoute6, k6, uint32(nhRouted))
	nh := tcfwdFwdNh{Port: outPort, Mtu: 1500, Valid: 1}
	copy(nh.Eth[:6], nhMAC)
	copy(nh.Eth[6:], outMAC)
	put(f.objs.FwdNexthops, uint32(nhRouted), nh)
	put(f.objs.FwdTcNh4, uint32(nhRouted), binary.NativeEndian.Uint32(net.IPv4(198, 18, 1, 2).To4()))
	return f
}

func (f *tcFixture) run(t *testing.T, prog *ebpf.Program, frame []byte) result {
	t.Helper()
	return runCounted(t, prog, f.objs.FwdCounters, f.names, frame)
}

func TestTCForwardedFrameHasTTLDecrementedChecksumUpdatedAndMACsRewritten(t *testing.T) {
	f := loadTC(t)
	for name, prog := range map[string]*ebpf.Program{"peer": f.objs.TcRouterFwdPeer, "egress": f.objs.TcRouterFwd} {
		in := ipFrame(t, frameOpt{ttl: 64})
		r := f.run(t, prog, in)
		if r.ret != tcActRedirect {
			t.Fatalf("%s: verdict %d, want TC_ACT_REDIRECT", name, r.ret)
		}
		if !bytes.Equal(r.out[0:6], nhMAC) || !bytes.Equal(r.out[6:12], outMAC) {
			t.Errorf("%s: MACs %x %x, want %x %x", name, r.out[0:6], r.out[6:12], nhMAC, outMAC)
		}
		ip := r.out[14:34]
		if ip[8] != 63 {
			t.Errorf("%s: out TTL %d", name, ip[8])
		}
		if got, want := binary.BigEndian.Uint16(ip[10:]), ipv4HeaderSum(ip); got != want {
			t.Errorf("%s: checksum %#04x, full recompute %#04x", name, got, want)
		}
		if !bytes.Equal(r.out[12:22], in[12:22]) || r.out[23] != in[23] || !bytes.Equal(r.out[26:], in[26:]) {
			t.Errorf("%s: bytes other than MACs, TTL and checksum changed", name)
		}
		if len(r.moved) != 1 || r.moved["forwarded"] != 1 {
			t.Errorf("%s: counters moved %v, want forwarded 1", name, r.moved)
		}
	}
}

func TestTCNeighEndingLeavesTheMACsToTheKernel(t *testing.T) {
	f := loadTC(t)
	in := ipFrame(t, frameOpt{ttl: 64})
	r := f.run(t, f.objs.TcRouterFwdNeigh, in)
	if r.ret != tcActRedirect {
		t.Fatalf("verdict %d, want TC_ACT_REDIRECT", r.ret)
	}
	if !bytes.Equal(r.out[0:12], in[0:12]) || r.out[14+8] != 63 {
		t.Errorf("MACs %x (want unchanged %x), TTL %d (want 63)", r.out[0:12], in[0:12], r.out[14+8])
	}
}

func TestTCForwardedIPv6FrameHasHopLimitDecremented(t *testing.T) {
	f := loadTC(t)
	in := ipFrame(t, frameOpt{v6: true, ttl: 64})
	r := f.run(t, f.objs.TcRouterFwdPeer, in)
	if r.ret != tcActRedirect || r.out[14+7] != 63 || !bytes.Equal(r.out[0:6], nhMAC) {
		t.Fatalf("verdict %d, hop limit %d, dst MAC %x; want TC_ACT_REDIRECT, 63, %x", r.ret, r.out[14+7], r.out[0:6], nhMAC)
	}
}

// A frame not forwarded is unchanged and counts its reason; it goes on into
// the kernel's stack (TC_ACT_OK) without a punt device and is redirected to
// it with one.
func TestTCPuntLeavesTheFrameUnchangedAndGoesToThePuntDevice(t *testing.T) {
	f := loadTC(t)
	cases := []struct {
		name  string
		frame []byte
		why   string
	}{
		{"ttl 1", ipFrame(t, frameOpt{ttl: 1}), "punt_ttl"},
		{"no route", ipFrame(t, frameOpt{dst: net.IPv4(198, 18, 200, 1)}), "punt_no_route"},
		{"bad checksum", ipFrame(t, frameOpt{badCsum: true}), "punt_ip_header"},
		{"other MAC", ipFrame(t, frameOpt{dstMAC: nhMAC}), "punt_l2"},
		{"martian", ipFrame(t, frameOpt{dst: net.IPv4(127, 0, 0, 1)}), "punt_martian"},
		{"hop-by-hop", ipFrame(t, frameOpt{v6: true, hbh: true}), "punt_ip_header"},
	}
	for _, punt := range []uint32{0, 1} {
		if err := f.objs.FwdTcPunt.Put(uint32(0), punt); err != nil {
			t.Fatal(err)
		}
		want := map[uint32]uint32{0: tcActOK, 1: tcActRedirect}[punt]
		for _, c := range cases {
			r := f.run(t, f.objs.TcRouterFwdPeer, c.frame)
			if r.ret != want || !bytes.Equal(r.out, c.frame) {
				t.Errorf("%s, punt device %d: verdict %d, changed %v; want %d, unchanged", c.name, punt, r.ret, !bytes.Equal(r.out, c.frame), want)
			}
			if len(r.moved) != 1 || r.moved[c.why] != 1 {
				t.Errorf("%s: counters moved %v, want %s 1", c.name, r.moved, c.why)
			}
		}
	}
}
