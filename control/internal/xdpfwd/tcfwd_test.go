package xdpfwd

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
	progMaps
	objs tcfwdObjects
}

// loadTC is the tc object with the XDP tests' tables (progMaps.populate),
// fwd_tc_ports in the devmap's place, and the next hop's IPv4 address for
// the neigh ending.
func loadTC(t testing.TB) *tcFixture {
	t.Helper()
	f := &tcFixture{}
	o := &f.objs
	f.progMaps = loadPopulated(t, loadTcfwd, o, o.Close, func() progMaps {
		return progMaps{o.FwdCfgMap, o.FwdRoute4, o.FwdRoute6, o.FwdNexthops, o.FwdTcPorts, o.FwdCounters, nil}
	})
	if err := o.FwdTcNh4.Put(uint32(nhRouted), binary.NativeEndian.Uint32(net.IPv4(198, 18, 1, 2).To4())); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTCForwardedFrameHasTTLDecrementedChecksumUpdatedAndMACsRewritten(t *testing.T) {
	f := loadTC(t)
	for name, prog := range map[string]*ebpf.Program{"peer": f.objs.TcRouterFwdPeer, "egress": f.objs.TcRouterFwd} {
		for _, ttl := range []uint8{64, 2, 255} {
			in := ipFrame(t, frameOpt{ttl: ttl})
			checkForwarded(t, fmt.Sprintf("%s, ttl %d", name, ttl), in, f.runProg(t, prog, in), tcActRedirect, false)
		}
	}
}

func TestTCNeighEndingLeavesTheMACsToTheKernel(t *testing.T) {
	f := loadTC(t)
	for _, v6 := range []bool{false, true} {
		in := ipFrame(t, frameOpt{v6: v6, ttl: 64})
		checkForwarded(t, fmt.Sprintf("v6 %v", v6), in, f.runProg(t, f.objs.TcRouterFwdNeigh, in), tcActRedirect, true)
	}
}

func TestTCForwardedIPv6FrameHasHopLimitDecremented(t *testing.T) {
	f := loadTC(t)
	in := ipFrame(t, frameOpt{v6: true, ttl: 64})
	checkForwarded(t, "ipv6", in, f.runProg(t, f.objs.TcRouterFwdPeer, in), tcActRedirect, false)
}

// Every punt case of the XDP program's test punts here too (the one check
// chain), unchanged and counted; with no punt device the frame goes on
// into the kernel's stack (TC_ACT_OK).
func TestTCEachPuntReasonLeavesTheFrameUnchangedAndCountsItsReason(t *testing.T) {
	checkPunts(t, func(t *testing.T) (*ebpf.Program, *progMaps) {
		f := loadTC(t)
		return f.objs.TcRouterFwdPeer, &f.progMaps
	}, tcActOK)
}

// With a punt device, a frame not forwarded is redirected to it, unchanged.
func TestTCPuntGoesToThePuntDevice(t *testing.T) {
	f := loadTC(t)
	if err := f.objs.FwdTcPunt.Put(uint32(0), uint32(1)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		frame []byte
		why   string
	}{
		{"ttl 1", ipFrame(t, frameOpt{ttl: 1}), "punt_ttl"},
		{"no route", ipFrame(t, frameOpt{dst: net.IPv4(198, 18, 200, 1)}), "punt_no_route"},
		{"hop-by-hop", ipFrame(t, frameOpt{v6: true, hbh: true}), "punt_ip_header"},
	} {
		r := f.runProg(t, f.objs.TcRouterFwdPeer, c.frame)
		if r.ret != tcActRedirect || !bytes.Equal(r.out, c.frame) {
			t.Errorf("%s: verdict %d, changed %v; want TC_ACT_REDIRECT, unchanged", c.name, r.ret, !bytes.Equal(r.out, c.frame))
		}
		if len(r.moved) != 1 || r.moved[c.why] != 1 {
			t.Errorf("%s: counters moved %v, want %s 1", c.name, r.moved, c.why)
		}
	}
}
