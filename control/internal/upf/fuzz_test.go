package upf

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/pfcp/bbf"
	"edgeplane/control/internal/pfcp/cpsim"
)

// FuzzMessage feeds datagrams to the message handler of a function with
// an association (no data plane: every change that reaches the applier is
// refused and rolled back).  Nothing may panic, every request is answered
// or counted, and the state stays consistent: no reservation without its
// session, no session left busy.
func FuzzMessage(f *testing.F) {
	peer := netip.MustParseAddrPort("127.0.0.1:8805")
	cp := netip.MustParseAddr("127.0.0.1")
	enc := func(m message.Message) []byte {
		b := make([]byte, m.MarshalLen())
		if err := m.MarshalTo(b); err != nil {
			f.Fatal(err)
		}
		return b
	}
	node := ie.NewNodeIDHeuristic("fuzz.cp")
	est := func(seid uint64, body []*ie.IE) []byte {
		return enc(message.NewSessionEstablishmentRequest(0, 0, 0, uint32(seid), 0,
			append([]*ie.IE{node, ie.NewFSEID(seid, cp.AsSlice(), nil)}, body...)...))
	}
	sub := cpsim.Subscriber{STag: 100, CTag: 200, MAC: []byte{2, 0, 0, 0, 0, 1}, IPv4: netip.MustParseAddr("198.18.100.2"),
		IPv6: netip.MustParsePrefix("2001:db8:100::/56"), ULMBR: 1000, DLMBR: 2000, URR: &cpsim.URR{Period: time.Minute},
		PPPoE: 7, Redirect: true, CPAddr: cp, CPTEID: 9}
	std := sub
	std.StandardOnly, std.PPPoE, std.Redirect = true, 0, false
	f.Add(est(1, sub.Establishment()))
	f.Add(est(2, std.Establishment()))
	f.Add(est(3, cpsim.DefaultSession("access", cp, 77)))
	f.Add(est(4, append(sub.Establishment(), bbf.NewPPPLCPConnectivity(bbf.NewMTU(1492)))))
	f.Add(enc(message.NewSessionModificationRequest(0, 0, 1, 10, 0, cpsim.RateChange(5, 0, 6)...)))
	f.Add(enc(message.NewSessionDeletionRequest(0, 0, 1, 11, 0)))
	f.Add(enc(message.NewHeartbeatRequest(12, ie.NewRecoveryTimeStamp(time.Unix(1e9, 0)), nil)))
	f.Add(enc(message.NewAssociationUpdateRequest(13, node)))
	f.Add(enc(message.NewAssociationReleaseRequest(14, node)))
	long := est(5, sub.Establishment())
	f.Add(long[:len(long)/2])

	dir := f.TempDir()
	u, err := New(Config{Listen: netip.AddrPortFrom(cp, 0), GTPU: netip.AddrPortFrom(cp, 0),
		DPSocket: filepath.Join(dir, "no-data-plane.sock"), StateDir: dir, SubIDHi: 1024})
	if err != nil {
		f.Fatal(err)
	}
	defer u.Close()
	associate := enc(message.NewAssociationSetupRequest(1, node, ie.NewRecoveryTimeStamp(time.Unix(1e9, 0))))
	u.datagram(associate, peer)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte) {
		u.datagram(b, peer)
		for {
			var o *op
			select {
			case o = <-u.applyCh:
			case o = <-u.retryCh:
			default:
			}
			if o == nil {
				break
			}
			if o.kind == opPurge {
				u.runPurge(ctx, o)
			} else {
				u.rollback(o, reject(ie.CauseSystemFailure, 0, "no data plane in the fuzz test"))
			}
		}
		if u.nodes.get("fuzz.cp") == nil {
			u.datagram(associate, peer) // released by the input: set up again
		}
		st := u.st
		st.mu.Lock()
		defer st.mu.Unlock()
		for seid, e := range st.sess.All() {
			if e.busy {
				t.Fatalf("session %#x left busy", seid)
			}
		}
		st.keys.owners(func(seid uint64) {
			if st.sess.Get(seid) == nil {
				t.Fatalf("an access key held by gone session %#x", seid)
			}
		})
		st.addrs.all(func(a netip.Prefix, seid uint64) {
			if st.sess.Get(seid) == nil {
				t.Fatalf("address %s held by gone session %#x", a, seid)
			}
		})
		for te, seid := range st.teids {
			if st.sess.Get(seid) == nil {
				t.Fatalf("TEID %#x held by gone session %#x", te, seid)
			}
		}
	})
}
