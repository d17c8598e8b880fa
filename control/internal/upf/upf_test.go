package upf_test

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptest"
	"edgeplane/control/internal/pfcp/bbf"
	"edgeplane/control/internal/pfcp/cpsim"
	"edgeplane/control/internal/upf"
)

var lo = netip.MustParseAddr("127.0.0.1")

// rig is a UP function on a real edgeplane-dp (net_null ports) and a
// control plane talking to it over loopback.
type rig struct {
	t      *testing.T
	dp     *dptest.BNG
	dpc    *dpctl.Client
	cfg    upf.Config
	up     *upf.UPF
	cancel context.CancelFunc
	done   chan error
	cp     *cpsim.CP
}

func newRig(t *testing.T, mod func(*upf.Config)) *rig {
	t.Helper()
	r := &rig{t: t, dp: dptest.StartBNG(t, dptest.Options{MaxSubscribers: 16384})}
	r.dpc = dpctl.New(r.dp.Socket, dpctl.Options{})
	t.Cleanup(func() { r.dpc.Close() })
	r.cfg = upf.Config{Listen: netip.AddrPortFrom(lo, 0), GTPU: netip.AddrPortFrom(lo, 0),
		DPSocket: r.dp.Socket, StateDir: filepath.Join(t.TempDir(), "upf"), SubIDHi: 16384,
		HeartbeatInterval: time.Hour, T1: 300 * time.Millisecond}
	if mod != nil {
		mod(&r.cfg)
	}
	r.start()
	cp, err := cpsim.New(netip.AddrPortFrom(lo, 0), r.up.Addr(), "cp.test")
	if err != nil {
		t.Fatal(err)
	}
	r.cp = cp
	t.Cleanup(func() { cp.Close() })
	return r
}

func (r *rig) start() {
	r.t.Helper()
	u, err := upf.New(r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.up = u
	if r.cfg.Listen.Port() == 0 {
		// Later starts (restarts) keep the port the control plane knows.
		r.cfg.Listen = u.Addr()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- u.Run(ctx) }()
	r.t.Cleanup(r.stop)
}

func (r *rig) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.up.Close()
	r.cancel = nil
}

func (r *rig) ctx() context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	r.t.Cleanup(cancel)
	return c
}

func (r *rig) associate() {
	r.t.Helper()
	a, err := r.cp.Associate(r.ctx())
	if err != nil {
		r.t.Fatal(err)
	}
	if c := cpsim.Cause(a); c != ie.CauseRequestAccepted {
		r.t.Fatalf("association: cause %d", c)
	}
}

func subscriber(i int) cpsim.Subscriber {
	return cpsim.Subscriber{CPSEID: uint64(1000 + i), STag: 100 + uint16(i/4000), CTag: 1 + uint16(i%4000),
		MAC:   net.HardwareAddr{2, 0, 0, 0x10, byte(i >> 8), byte(i)},
		IPv4:  netip.AddrFrom4([4]byte{198, 18, 100 + byte(i/250), 1 + byte(i%250)}),
		IPv6:  netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(1 + i>>8), byte(i)}), 56),
		ULMBR: 20000, DLMBR: 50000}
}

func (r *rig) establish(s cpsim.Subscriber) uint64 {
	r.t.Helper()
	resp, err := r.cp.Establish(r.ctx(), s.CPSEID, s.Establishment())
	if err != nil {
		r.t.Fatal(err)
	}
	if c := cpsim.Cause(resp); c != ie.CauseRequestAccepted {
		r.t.Fatalf("establishment: cause %d (offending %v)", c, resp.OffendingIE)
	}
	seid, err := cpsim.UPSEID(resp)
	if err != nil {
		r.t.Fatal(err)
	}
	return seid
}

func (r *rig) subs() map[uint32]dpctl.SubscriberState {
	r.t.Helper()
	list, _, err := r.dpc.SubList(r.ctx(), 0, 100000)
	if err != nil {
		r.t.Fatal(err)
	}
	m := map[uint32]dpctl.SubscriberState{}
	for _, s := range list {
		m[s.ID] = s
	}
	return m
}

func TestAssociationSetupAdvertisesPPPoEAndIPoE(t *testing.T) {
	r := newRig(t, nil)
	a, err := r.cp.Associate(r.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if cpsim.Cause(a) != ie.CauseRequestAccepted || a.RecoveryTimeStamp == nil || a.UPFunctionFeatures == nil {
		t.Fatalf("association answer: %+v", a)
	}
	var flags uint8 = 0xff
	for _, i := range a.IEs {
		if bbf.Is(i, bbf.UPFunctionFeatures) {
			flags, _ = bbf.ParseUPFunctionFeatures(i)
		}
	}
	if flags != bbf.FeaturePPPoE|bbf.FeatureIPoE {
		t.Fatalf("BBF UP Function Features %#x, want PPPoE|IPoE", flags)
	}
}

func TestEstablishmentBecomesTheSubscriber(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	s := subscriber(7)
	r.establish(s)
	subs := r.subs()
	if len(subs) != 1 {
		t.Fatalf("%d subscribers in the data plane, want 1", len(subs))
	}
	for _, got := range subs {
		if got.QinQ != "100.8" || got.MAC != s.MAC.String() || len(got.IPv4) != 1 || got.IPv4[0] != "198.18.100.8" ||
			got.IPv6 != "2001:db8:107::/56" || got.Policer == nil || *got.Policer != "pfcp-u20000-0" || got.Pipe != "pfcp-d50000" {
			t.Fatalf("subscriber %+v", got)
		}
	}
}

func TestModificationChangesThePolicerAndThePipe(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	seid := r.establish(subscriber(1))
	resp, err := r.cp.Modify(r.ctx(), seid, cpsim.RateChange(5000, 0, 8000))
	if err != nil || cpsim.Cause(resp) != ie.CauseRequestAccepted {
		t.Fatalf("modification: %v cause %d", err, cpsim.Cause(resp))
	}
	for _, s := range r.subs() {
		if s.Policer == nil || *s.Policer != "pfcp-u5000-0" || s.Pipe != "pfcp-d8000" {
			t.Fatalf("after the rate change: policer %v pipe %s", s.Policer, s.Pipe)
		}
	}
	prof, err := r.dpc.ProfileList(r.ctx())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range prof.Pipes {
		if p.Name == "pfcp-d8000" && p.Rate == 8_000_000 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no 8 Mbit/s pipe profile: %+v", prof.Pipes)
	}
}

func TestDeletionRemovesTheSubscriberAndReportsUsage(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	s := subscriber(2)
	s.URR = &cpsim.URR{Period: time.Hour}
	seid := r.establish(s)
	resp, err := r.cp.Delete(r.ctx(), seid)
	if err != nil || cpsim.Cause(resp) != ie.CauseRequestAccepted {
		t.Fatalf("deletion: %v cause %d", err, cpsim.Cause(resp))
	}
	if len(resp.UsageReport) != 1 {
		t.Fatalf("%d usage reports in the deletion answer, want 1", len(resp.UsageReport))
	}
	if n := len(r.subs()); n != 0 {
		t.Fatalf("%d subscribers left", n)
	}
}
