package upf_test

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

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
	t      testing.TB
	dp     *dptest.BNG
	dpc    *dpctl.Client
	cfg    upf.Config
	up     *upf.UPF
	cancel context.CancelFunc
	done   chan error
	cp     *cpsim.CP
}

func newRig(t testing.TB, mod func(*upf.Config)) *rig {
	t.Helper()
	max := 16384
	if _, ok := t.(*testing.B); ok {
		max = 65536
	}
	r := &rig{t: t, dp: dptest.StartBNG(t, dptest.Options{MaxSubscribers: max})}
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

func wait(t testing.TB, ch <-chan message.Message, d time.Duration) message.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(d):
		return nil
	}
}

func marshal(t *testing.T, m message.Message) []byte {
	t.Helper()
	b := make([]byte, m.MarshalLen())
	if err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRetransmittedEstablishmentIsAnsweredFromTheCacheNotAppliedTwice(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	s := subscriber(3)
	m := r.cp.EstablishMsg(s.CPSEID, s.Establishment())
	raw := marshal(t, m)
	first := r.cp.Expect(m.Sequence())
	r.cp.WriteRaw(netip.AddrPort{}, raw)
	a := wait(t, first, 10*time.Second)
	if a == nil || cpsim.Cause(a) != ie.CauseRequestAccepted {
		t.Fatalf("first answer: %v", a)
	}
	// The control plane's retransmission (T1 expired): same octets.
	second := r.cp.Expect(m.Sequence())
	r.cp.WriteRaw(netip.AddrPort{}, raw)
	b := wait(t, second, 10*time.Second)
	if b == nil {
		t.Fatal("the retransmission got no answer")
	}
	if string(marshal(t, a)) != string(marshal(t, b)) {
		t.Fatal("the retransmission's answer differs from the first")
	}
	k := r.up.Counters()
	if k.Established != 1 || k.DupAnswered != 1 || len(r.subs()) != 1 {
		t.Fatalf("established %d, answered from cache %d, subscribers %d", k.Established, k.DupAnswered, len(r.subs()))
	}
}

func TestSequenceNumberReusedByARestartedPeerIsANewRequest(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	s := subscriber(4)
	m := r.cp.EstablishMsg(s.CPSEID, s.Establishment())
	first := r.cp.Expect(m.Sequence())
	r.cp.WriteRaw(netip.AddrPort{}, marshal(t, m))
	if a := wait(t, first, 10*time.Second); a == nil || cpsim.Cause(a) != ie.CauseRequestAccepted {
		t.Fatalf("establishment: %v", a)
	}
	// A control plane restarted from sequence 1 sends another request
	// under the same number: it is answered for itself, not with the
	// cached Session Establishment Response.
	hb := message.NewHeartbeatRequest(m.Sequence(), ie.NewRecoveryTimeStamp(time.Now()), nil)
	second := r.cp.Expect(m.Sequence())
	r.cp.WriteRaw(netip.AddrPort{}, marshal(t, hb))
	b := wait(t, second, 10*time.Second)
	if _, ok := b.(*message.HeartbeatResponse); !ok {
		t.Fatalf("a heartbeat under a reused number was answered with %T", b)
	}
	if k := r.up.Counters(); k.SeqReused != 1 || k.DupAnswered != 0 {
		t.Fatalf("sequence reused %d, answered from cache %d", k.SeqReused, k.DupAnswered)
	}
}

func TestUnknownSessionGetsContextNotFoundWithSEIDZero(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	resp, err := r.cp.Modify(r.ctx(), 0xdeadbeef, cpsim.RateChange(1000, 0, 1000))
	if err != nil {
		t.Fatal(err)
	}
	if cpsim.Cause(resp) != ie.CauseSessionContextNotFound || resp.SEID() != 0 {
		t.Fatalf("cause %d seid %#x; want %d and 0", cpsim.Cause(resp), resp.SEID(), ie.CauseSessionContextNotFound)
	}
}

func TestRequestsWithoutAnAssociationAreRefused(t *testing.T) {
	r := newRig(t, nil)
	s := subscriber(4)
	resp, err := r.cp.Establish(r.ctx(), s.CPSEID, s.Establishment())
	if err != nil {
		t.Fatal(err)
	}
	if cpsim.Cause(resp) != ie.CauseNoEstablishedPFCPAssociation || resp.SEID() != s.CPSEID {
		t.Fatalf("cause %d seid %#x", cpsim.Cause(resp), resp.SEID())
	}
}

// Hostile datagrams: each gets its cause (or is discarded and counted),
// and the session established before them is untouched.
func TestHostileMessages(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	keep := r.establish(subscriber(5))
	good := func() []byte {
		s := subscriber(6)
		return marshal(t, r.cp.EstablishMsg(s.CPSEID, s.Establishment()))
	}
	seqOf := func(b []byte) uint32 {
		if b[0]&0x01 != 0 && len(b) >= 16 { // S flag: the SEID comes first
			return uint32(b[12])<<16 | uint32(b[13])<<8 | uint32(b[14])
		}
		return uint32(b[4])<<16 | uint32(b[5])<<8 | uint32(b[6])
	}
	for _, c := range []struct {
		name    string
		octets  func() []byte
		cause   uint8 // 0: no answer expected
		offends uint16
		counter func(upf.Counters) uint64
	}{
		{"truncated_datagram", func() []byte { b := good(); return b[:len(b)-7] }, 0, 0,
			func(k upf.Counters) uint64 { return k.Malformed[3] }},
		{"header_length_too_short", func() []byte { b := good(); b[3] -= 10; return b }, 0, 0,
			func(k upf.Counters) uint64 { return k.Malformed[3] }},
		{"ie_length_runs_past_the_message", func() []byte {
			b := good()
			// The Node ID's length: the first IE after the 16-octet header.
			b[18], b[19] = 0x0f, 0xff
			return b
		}, ie.CauseInvalidLength, ie.NodeID, nil},
		{"shorter_than_a_header", func() []byte { return []byte{0x21, 50, 0} }, 0, 0,
			func(k upf.Counters) uint64 { return k.Malformed[1] }},
		{"unsupported_create_bar", func() []byte {
			s := subscriber(6)
			return marshal(t, r.cp.EstablishMsg(s.CPSEID, append(s.Establishment(), ie.NewCreateBAR(ie.NewBARID(1)))))
		}, ie.CauseServiceNotSupported, ie.CreateBAR, nil},
		{"missing_f_seid", func() []byte {
			s := subscriber(6)
			return marshal(t, message.NewSessionEstablishmentRequest(0, 0, 0, r.cp.NextSeq(), 0,
				append([]*ie.IE{ie.NewNodeIDHeuristic("cp.test")}, s.Establishment()...)...))
		}, ie.CauseMandatoryIEMissing, ie.FSEID, nil},
		{"grouped_ies_nested_too_deep", func() []byte {
			deep := ie.NewCreatePDR(ie.NewPDRID(1))
			for i := 0; i < 12; i++ {
				deep = ie.NewCreatePDR(deep)
			}
			return marshal(t, r.cp.EstablishMsg(77, []*ie.IE{deep}))
		}, ie.CauseMandatoryIEIncorrect, 0, nil},
		{"unknown_message_type", func() []byte { b := good(); b[1] = 99; return b }, 0, 0,
			func(k upf.Counters) uint64 { return k.UnknownType }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.octets()
			var before uint64
			if c.counter != nil {
				before = c.counter(r.up.Counters())
			}
			var ch <-chan message.Message
			if len(b) >= 8 {
				ch = r.cp.Expect(seqOf(b))
			}
			r.cp.WriteRaw(netip.AddrPort{}, b)
			if c.cause == 0 {
				if ch != nil {
					if m := wait(t, ch, 500*time.Millisecond); m != nil {
						t.Fatalf("answered %s", m.MessageTypeName())
					}
				} else {
					time.Sleep(300 * time.Millisecond)
				}
				if got := c.counter(r.up.Counters()); got != before+1 {
					t.Fatalf("counter %d -> %d, want one more", before, got)
				}
				return
			}
			m := wait(t, ch, 5*time.Second)
			if m == nil {
				t.Fatal("no answer")
			}
			resp, ok := m.(*message.SessionEstablishmentResponse)
			if !ok {
				t.Fatalf("answer %s", m.MessageTypeName())
			}
			if cpsim.Cause(resp) != c.cause {
				t.Fatalf("cause %d, want %d", cpsim.Cause(resp), c.cause)
			}
			if c.offends != 0 {
				if resp.OffendingIE == nil {
					t.Fatal("no Offending IE")
				}
				if o, _ := resp.OffendingIE.OffendingIE(); o != c.offends {
					t.Fatalf("offending IE %d, want %d", o, c.offends)
				}
			}
		})
	}
	subs := r.subs()
	if len(subs) != 1 {
		t.Fatalf("%d subscribers after the hostile messages, want the 1 established before", len(subs))
	}
	if resp, err := r.cp.Modify(r.ctx(), keep, cpsim.RateChange(1000, 0, 2000)); err != nil || cpsim.Cause(resp) != ie.CauseRequestAccepted {
		t.Fatalf("the earlier session no longer answers: %v %d", err, cpsim.Cause(resp))
	}
}

func TestVersionTwoGetsVersionNotSupported(t *testing.T) {
	r := newRig(t, nil)
	b := marshal(t, message.NewHeartbeatRequest(r.cp.NextSeq(), ie.NewRecoveryTimeStamp(time.Now()), nil))
	b[0] = b[0]&0x1f | 2<<5
	ch := r.cp.Expect(uint32(b[4])<<16 | uint32(b[5])<<8 | uint32(b[6]))
	r.cp.WriteRaw(netip.AddrPort{}, b)
	m := wait(t, ch, 5*time.Second)
	if m == nil || m.MessageType() != message.MsgTypeVersionNotSupportedResponse {
		t.Fatalf("answer %v", m)
	}
}

// establishAll sends n establishments without waiting, then collects the
// answers; it returns the UP SEIDs by index.
func (r *rig) establishAll(n int, offset int) []uint64 {
	r.t.Helper()
	chans := make([]<-chan message.Message, n)
	for i := 0; i < n; i++ {
		s := subscriber(offset + i)
		ch, err := r.cp.Async(r.cp.EstablishMsg(s.CPSEID, s.Establishment()))
		if err != nil {
			r.t.Fatal(err)
		}
		chans[i] = ch
	}
	seids := make([]uint64, n)
	for i, ch := range chans {
		m := wait(r.t, ch, 60*time.Second)
		if m == nil {
			r.t.Fatalf("establishment %d: no answer", i)
		}
		resp := m.(*message.SessionEstablishmentResponse)
		if c := cpsim.Cause(resp); c != ie.CauseRequestAccepted {
			r.t.Fatalf("establishment %d: cause %d", i, c)
		}
		seids[i], _ = cpsim.UPSEID(resp)
	}
	return seids
}

func TestTenThousandEstablishmentsAtOnceAreBatched(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	const n = 10000
	r.establishAll(n, 0)
	if got := len(r.subs()); got != n {
		t.Fatalf("%d subscribers, want %d", got, n)
	}
	k := r.up.Counters()
	if k.Established != n {
		t.Fatalf("%d established", k.Established)
	}
	// Batched: far fewer data-plane round trips than sessions (the
	// number depends on timing; one per session would be n).
	if k.DPBatches >= n/4 {
		t.Fatalf("%d batches for %d establishments", k.DPBatches, n)
	}
	t.Logf("%d establishments in %d batches", n, k.DPBatches)
}

func TestFloodFromAnUnknownNodeLosesNoState(t *testing.T) {
	r := newRig(t, func(c *upf.Config) { c.UnassocRate = 50 })
	r.associate()
	seids := r.establishAll(20, 0)
	stranger, err := cpsim.New(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), 0), r.up.Addr(), "stranger")
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	for i := 0; i < 5000; i++ {
		s := subscriber(100 + i%50)
		stranger.WriteRaw(netip.AddrPort{}, marshal(t, stranger.EstablishMsg(s.CPSEID, s.Establishment())))
	}
	time.Sleep(time.Second)
	k := r.up.Counters()
	if k.Unassociated < 4000 || k.Muted == 0 {
		t.Fatalf("unassociated %d, muted %d", k.Unassociated, k.Muted)
	}
	if got := len(r.subs()); got != 20 {
		t.Fatalf("%d subscribers after the flood, want 20", got)
	}
	for _, seid := range seids {
		if resp, err := r.cp.Modify(r.ctx(), seid, cpsim.RateChange(1000, 0, 1000)); err != nil || cpsim.Cause(resp) != ie.CauseRequestAccepted {
			t.Fatalf("session %#x after the flood: %v %d", seid, err, cpsim.Cause(resp))
		}
	}
}

func TestRestartOfTheFunctionKeepsSessionsAndItsRecoveryTimeStamp(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	seids := r.establishAll(50, 0)
	hb, err := r.cp.Heartbeat(r.ctx())
	if err != nil {
		t.Fatal(err)
	}
	ts0, _ := hb.RecoveryTimeStamp.RecoveryTimeStamp()
	before := r.subs()
	// A subscriber in our id range no session knows: left by a crash
	// between a data-plane change and its commit.
	if err := r.dpc.SubAdd(r.ctx(), dpctl.Subscriber{ID: 9000, VLAN: 999, MAC: "02:00:00:00:99:99", IPv4: []string{"198.18.199.1"}}); err != nil {
		t.Fatal(err)
	}
	r.stop()
	r.up.Close()
	r.start()
	hb, err = r.cp.Heartbeat(r.ctx())
	if err != nil {
		t.Fatal(err)
	}
	ts1, _ := hb.RecoveryTimeStamp.RecoveryTimeStamp()
	if !ts1.Equal(ts0) {
		t.Fatalf("Recovery Time Stamp %v after the restart, was %v", ts1, ts0)
	}
	after := r.subs()
	if len(after) != len(before) {
		t.Fatalf("%d subscribers after the restart, %d before (the orphan must be gone)", len(after), len(before))
	}
	for id, s := range before {
		if after[id].QinQ != s.QinQ || after[id].MAC != s.MAC {
			t.Fatalf("subscriber %d changed: %+v -> %+v", id, s, after[id])
		}
	}
	if r.up.Counters().Orphans != 1 {
		t.Fatalf("orphans removed: %d", r.up.Counters().Orphans)
	}
	for _, seid := range seids[:5] {
		if resp, err := r.cp.Modify(r.ctx(), seid, cpsim.RateChange(3000, 0, 3000)); err != nil || cpsim.Cause(resp) != ie.CauseRequestAccepted {
			t.Fatalf("restored session %#x: %v cause %d", seid, err, cpsim.Cause(resp))
		}
	}
}

func TestDataPlaneRestartGetsEverySessionBack(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	r.establishAll(200, 0)
	want := r.subs()
	r.dp.Restart()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, _, err := r.dpc.SubList(r.ctx(), 0, 1000)
		if err == nil && len(got) == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers 20 s after the data plane's restart, want %d", len(got), len(want))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for id, s := range r.subs() {
		if want[id].QinQ != s.QinQ || want[id].Pipe != s.Pipe {
			t.Fatalf("subscriber %d replayed as %+v, was %+v", id, s, want[id])
		}
	}
	if k := r.up.Counters(); k.DPRestarts != 1 {
		t.Fatalf("data-plane restarts seen: %d", k.DPRestarts)
	}
}

func TestControlPlaneRestartPurgesItsSessionsByDefault(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	r.establishAll(30, 0)
	r.cp.Restart()
	r.associate()
	if n := len(r.subs()); n != 0 {
		t.Fatalf("%d subscribers after the control plane's restart (policy purge)", n)
	}
	if k := r.up.Counters(); k.CPRestarts != 1 || k.Purged != 30 {
		t.Fatalf("cp restarts %d, purged %d", k.CPRestarts, k.Purged)
	}
}

func TestControlPlaneRestartKeepsSessionsWhenAsked(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy string
		extra  []*ie.IE
	}{
		{"policy_keep", "keep", nil},
		{"session_retention_information", "purge", []*ie.IE{ie.NewPFCPSessionRetentionInformation(ie.NewCPPFCPEntityIPAddress(net.ParseIP("127.0.0.1"), nil))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, func(cf *upf.Config) { cf.OnCPRestart = c.policy })
			r.associate()
			r.establishAll(10, 0)
			r.cp.Restart()
			if a, err := r.cp.Associate(r.ctx(), c.extra...); err != nil || cpsim.Cause(a) != ie.CauseRequestAccepted {
				t.Fatalf("re-association: %v", err)
			}
			if n := len(r.subs()); n != 10 {
				t.Fatalf("%d subscribers after the restart, want the 10 kept", n)
			}
		})
	}
}

func TestSilentControlPlane(t *testing.T) {
	for _, c := range []struct {
		policy string
		left   int
	}{{"keep", 5}, {"purge", 0}} {
		t.Run(c.policy, func(t *testing.T) {
			r := newRig(t, func(cf *upf.Config) {
				cf.OnCPLost = c.policy
				cf.HeartbeatInterval = 200 * time.Millisecond
				cf.T1, cf.N1 = 100*time.Millisecond, 2
			})
			r.associate()
			r.establishAll(5, 0)
			r.cp.AnswerHeartbeats.Store(false)
			deadline := time.Now().Add(10 * time.Second)
			for r.up.Counters().CPLost == 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if r.up.Counters().CPLost != 1 {
				t.Fatal("the silent control plane was not noticed")
			}
			time.Sleep(300 * time.Millisecond)
			if n := len(r.subs()); n != c.left {
				t.Fatalf("%d subscribers, want %d", n, c.left)
			}
		})
	}
}

func TestPeriodicUsageReports(t *testing.T) {
	r := newRig(t, func(c *upf.Config) { c.URRPoll = 100 * time.Millisecond })
	r.associate()
	s := subscriber(9)
	s.URR = &cpsim.URR{Period: time.Second}
	r.establish(s)
	deadline := time.Now().Add(5 * time.Second)
	for len(r.cp.Reports()) < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	reps := r.cp.Reports()
	if len(reps) < 2 {
		t.Fatalf("%d periodic reports in 5 s", len(reps))
	}
	for i, rep := range reps[:2] {
		if len(rep.UsageReport) != 1 || rep.SEID() != s.CPSEID {
			t.Fatalf("report %d: %d usage reports, seid %#x", i, len(rep.UsageReport), rep.SEID())
		}
		kids := rep.UsageReport[0].ChildIEs
		var seq uint32
		var perio bool
		for _, k := range kids {
			switch k.Type {
			case ie.URSEQN:
				seq, _ = k.URSEQN()
			case ie.UsageReportTrigger:
				perio = k.HasPERIO()
			}
		}
		if seq != uint32(i+1) || !perio {
			t.Fatalf("report %d: UR-SEQN %d PERIO %v", i, seq, perio)
		}
	}
}

// TestReportAnsweredContextNotFoundDeletesTheSession: a control plane
// that answers a usage report with "Session context not found" no longer
// has the session (TS 29.244 clause 7.5.9): the function deletes it too,
// counted apart from the deletions a control plane asked for.
func TestReportAnsweredContextNotFoundDeletesTheSession(t *testing.T) {
	r := newRig(t, func(c *upf.Config) { c.URRPoll = 100 * time.Millisecond })
	r.associate()
	r.cp.ReportCause.Store(uint32(ie.CauseSessionContextNotFound))
	s := subscriber(12)
	s.URR = &cpsim.URR{Period: time.Second}
	r.establish(s)
	deadline := time.Now().Add(10 * time.Second)
	for r.up.Counters().UnknownToCP == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	k := r.up.Counters()
	if k.UnknownToCP != 1 || k.Deleted != 0 || k.Sessions != 0 {
		t.Fatalf("unknown to the CP %d, deleted %d, sessions left %d; want 1, 0, 0", k.UnknownToCP, k.Deleted, k.Sessions)
	}
	if subs := r.subs(); len(subs) != 0 {
		t.Fatalf("%d subscribers left in the data plane", len(subs))
	}
}

// BenchmarkEstablishments: b.N establishments pipelined (window 4096)
// through the function into the real data plane.
func BenchmarkEstablishments(b *testing.B) {
	r := newRig(b, func(c *upf.Config) { c.SubIDHi = 65536 })
	r.associate()
	b.ResetTimer()
	r.establishAll(b.N, 0)
}

func TestEstablishmentForAHeldCPFSEIDReplacesTheSession(t *testing.T) {
	r := newRig(t, nil)
	r.associate()
	s := subscriber(11)
	seid := r.establish(s)
	// The control plane moves the session to a new F-SEID ...
	resp, err := r.cp.Modify(r.ctx(), seid, []*ie.IE{ie.NewFSEID(7777, net.ParseIP("127.0.0.1"), nil)})
	if err != nil || cpsim.Cause(resp) != ie.CauseRequestAccepted {
		t.Fatalf("F-SEID change: %v %d", err, cpsim.Cause(resp))
	}
	// ... and, having lost our answer, establishes it again there: the
	// same session, replaced, not a second one (the key would clash).
	s.CPSEID, s.DLMBR = 7777, 30000
	if again := r.establish(s); again != seid {
		t.Fatalf("re-establishment got SEID %#x, the session is %#x", again, seid)
	}
	subs := r.subs()
	if len(subs) != 1 {
		t.Fatalf("%d subscribers", len(subs))
	}
	for _, x := range subs {
		if x.Pipe != "pfcp-d30000" {
			t.Fatalf("pipe %s after the replacing establishment", x.Pipe)
		}
	}
}
