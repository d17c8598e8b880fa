package sci_test

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"edgeplane/control/internal/bngcp"
	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/sci"
	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptest"
	"edgeplane/control/internal/upf"
)

// The State Control interface against the real user plane: edgeplane upf
// (in this process) on a real edgeplane-dp (net_null ports), the control
// plane's PFCP side associating with it over loopback.  What a session's
// access line becomes in the data plane -- two tags (QinQ), one (a VLAN),
// none -- is read back from the data plane itself.

var lo = netip.MustParseAddr("127.0.0.1")

type rig struct {
	dpc *dpctl.Client
	s   *sci.SCI
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, dptest.Options{MaxSubscribers: 64})
}

// newRigOn: the rig on a data plane with these options (ports).
func newRigOn(t *testing.T, o dptest.Options) *rig {
	t.Helper()
	dp := dptest.StartBNG(t, o)
	dpc := dpctl.New(dp.Socket, dpctl.Options{})
	t.Cleanup(func() { dpc.Close() })
	u, err := upf.New(upf.Config{Listen: netip.AddrPortFrom(lo, 0), GTPU: netip.AddrPortFrom(lo, 0),
		DPSocket: dp.Socket, StateDir: filepath.Join(t.TempDir(), "upf"), SubIDHi: 64, Ports: []string{"access"},
		HeartbeatInterval: time.Hour, T1: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	upDone := make(chan error, 1)
	go func() { upDone <- u.Run(ctx) }()
	s, err := sci.New(sci.Config{Listen: netip.AddrPortFrom(lo, 0), GTPU: netip.AddrPortFrom(lo, 0),
		Heartbeat: time.Hour, T1: 300 * time.Millisecond, N1: 5,
		UserPlanes: []sci.UPConfig{{Name: "up1", Addr: u.Addr(), Ports: []string{"access"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go s.Run(ctx)
	t.Cleanup(func() {
		cancel()
		<-upDone
		s.Close()
		u.Close()
	})
	s.Associate()
	deadline := time.Now().Add(20 * time.Second)
	for !s.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("no association and default session with the user plane")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &rig{dpc: dpc, s: s}
}

func spec(id uint64, line frame.Line, pppoe uint16) *bngcp.SessionSpec {
	return &bngcp.SessionSpec{ID: id, UserPlane: "up1", PPPoE: pppoe,
		Circuit: frame.Circuit{Port: "access", Line: line, MAC: frame.MAC{2, 0, 0, 0, 0, byte(id)}},
		IPv4:    netip.AddrFrom4([4]byte{198, 18, 104, byte(id)}),
		IPv6:    netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0x01, byte(id)}), 56),
		Profile: &bngcp.Profile{Name: "p10", UpMBR: 10_000_000, DownMBR: 10_000_000}}
}

func (r *rig) tryEstablish(t *testing.T, sp *bngcp.SessionSpec) (uint64, error) {
	t.Helper()
	type res struct {
		seid uint64
		err  error
	}
	ch := make(chan res, 1)
	r.s.Establish(sp, func(seid uint64, err error) { ch <- res{seid, err} })
	select {
	case x := <-ch:
		return x.seid, x.err
	case <-time.After(20 * time.Second):
		t.Fatalf("establishment of %v: no answer", sp.Circuit)
	}
	return 0, nil
}

func (r *rig) establish(t *testing.T, sp *bngcp.SessionSpec) uint64 {
	t.Helper()
	seid, err := r.tryEstablish(t, sp)
	if err != nil {
		t.Fatalf("establishment of %v: %v", sp.Circuit, err)
	}
	return seid
}

// subscriber finds the data plane's subscriber with mac.
func (r *rig) subscriber(t *testing.T, mac frame.MAC) (dpctl.SubscriberState, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, _, err := r.dpc.SubList(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if strings.EqualFold(s.MAC, mac.String()) {
			return s, true
		}
	}
	return dpctl.SubscriberState{}, false
}

// The S-tag and C-tag of a line reach the data plane as the line's tags:
// both (QinQ), the C-tag alone (one 802.1Q tag), none (untagged).
func TestLineTagsBecomeTheSubscribersTags(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name  string
		line  frame.Line
		pppoe uint16
		qinq  string
		vlan  uint16
	}{
		{"qinq", frame.Line{STag: 100, CTag: 7}, 0, "100.7", 0},
		{"qinq-pppoe", frame.Line{STag: 4094, CTag: 4093}, 0x0101, "4094.4093", 0},
		{"vlan", frame.Line{CTag: 300}, 0, "", 300},
		{"untagged-pppoe", frame.Line{}, 0x0202, "", 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := spec(uint64(10+i), c.line, c.pppoe)
			r.establish(t, sp)
			got, ok := r.subscriber(t, sp.Circuit.MAC)
			if !ok {
				t.Fatalf("no subscriber with MAC %s in the data plane", sp.Circuit.MAC)
			}
			if got.QinQ != c.qinq || got.VLAN != c.vlan || got.PPPoE != c.pppoe {
				t.Fatalf("line %+v, PPPoE %#x: data plane has qinq %q vlan %d pppoe %#x, want %q %d %#x",
					c.line, c.pppoe, got.QinQ, got.VLAN, got.PPPoE, c.qinq, c.vlan, c.pppoe)
			}
			if len(got.IPv4) != 1 || got.IPv4[0] != sp.IPv4.String() {
				t.Fatalf("IPv4 %v, want %s", got.IPv4, sp.IPv4)
			}
		})
	}
}

// An untagged IPoE line is keyed by the client's MAC: the user plane
// installs the subscriber with its MAC and no tags, and the data plane
// carries its traffic both ways -- its frames (source MAC, its address)
// to the core, the core's to its MAC, untagged.  Another MAC with the
// same address is not the subscriber.
func TestUntaggedIPoEIsKeyedByTheClientsMAC(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: veths and packet sockets carry the traffic")
	}
	acc, core := newWire(t, "sia"), newWire(t, "sic")
	r := newRigOn(t, dptest.Options{MaxSubscribers: 64, AccessDevice: acc.device(0), CoreDevice: core.device(1)})
	sp := spec(30, frame.Line{}, 0)
	r.establish(t, sp)
	got, ok := r.subscriber(t, sp.Circuit.MAC)
	if !ok {
		t.Fatalf("no subscriber with MAC %s in the data plane", sp.Circuit.MAC)
	}
	if got.QinQ != "" || got.VLAN != 0 || got.PPPoE != 0 || len(got.IPv4) != 1 || got.IPv4[0] != sp.IPv4.String() {
		t.Fatalf("data plane subscriber %+v, want untagged IPoE with %s", got, sp.IPv4)
	}
	accessMAC, _ := frame.ParseMAC("02:00:00:00:01:01")
	coreMAC, _ := frame.ParseMAC("02:00:00:00:02:01")
	nextHop, _ := frame.ParseMAC("02:00:00:00:02:02")
	far := netip.MustParseAddr("198.51.100.7")

	up := exchange(t, acc, core, udpFrame(t, accessMAC, sp.Circuit.MAC, sp.IPv4, far, []byte("untagged-up")), []byte("untagged-up"))
	if !bytes.Equal(up[:6], nextHop[:]) {
		t.Fatalf("uplink frame to %x, want the next hop %s", up[:6], nextHop)
	}
	if src, dst := ipv4Of(up); src != sp.IPv4 || dst != far {
		t.Fatalf("uplink frame %x: IPv4 %s -> %s, want %s -> %s", up, src, dst, sp.IPv4, far)
	}
	down := exchange(t, core, acc, udpFrame(t, coreMAC, nextHop, far, sp.IPv4, []byte("untagged-down")), []byte("untagged-down"))
	if !bytes.Equal(down[:6], sp.Circuit.MAC[:]) || !bytes.Equal(down[6:12], accessMAC[:]) {
		t.Fatalf("downlink frame %x -> %x, want %s -> %s", down[6:12], down[:6], accessMAC, sp.Circuit.MAC)
	}
	if src, dst := ipv4Of(down); src != far || dst != sp.IPv4 {
		t.Fatalf("downlink frame %x: not an untagged IPv4 frame %s -> %s", down, far, sp.IPv4)
	}

	// Another device on the segment using the subscriber's address: no key.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before, err := r.drops(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := frame.MAC{2, 0, 0, 0, 0, 0x99}
	f := udpFrame(t, accessMAC, other, sp.IPv4, far, []byte("untagged-other"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := unix.Write(acc.fd, f); err != nil {
			t.Fatal(err)
		}
		now, err := r.drops(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now["bng_unknown_subscriber"] > before["bng_unknown_subscriber"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a frame from another MAC was not dropped as bng_unknown_subscriber: %v", now)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Check (the restart resynchronisation's question) says yes for a session
// the user plane has and no once it is deleted; the deletion takes the
// subscriber out of the data plane.
func TestCheckFollowsTheUserPlanesSessions(t *testing.T) {
	r := newRig(t)
	sp := spec(40, frame.Line{STag: 200, CTag: 10}, 0)
	seid := r.establish(t, sp)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if ok, err := r.s.Check(ctx, sp, seid); err != nil || !ok {
		t.Fatalf("check of an established session: %v, %v", ok, err)
	}
	done := make(chan error, 1)
	r.s.Delete(sp, seid, func(_ aaa.Usage, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ok, err := r.s.Check(ctx, sp, seid); err != nil || ok {
		t.Fatalf("check of a deleted session: %v, %v", ok, err)
	}
	if _, ok := r.subscriber(t, sp.Circuit.MAC); ok {
		t.Fatal("the deleted session's subscriber is still in the data plane")
	}
}
