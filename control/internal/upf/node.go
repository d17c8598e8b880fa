package upf

import (
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/pfcp/bbf"
)

// Node procedures (TS 29.244 clause 6.2): association set-up, update and
// release, heartbeats, and what happens to sessions when a control plane
// restarts or goes silent.
//
//	event                               sessions of that control plane
//	Association Setup, same Recovery    kept (a re-association)
//	  Time Stamp
//	Association Setup or Heartbeat with --on-cp-restart purge (TS 29.244
//	  a new Recovery Time Stamp           6.2.6.2.2: the old association's
//	                                      sessions are deleted) or keep;
//	                                      kept anyway when the request
//	                                      carries PFCP Session Retention
//	                                      Information (clause 6.2.6.2.2)
//	N1 heartbeats unanswered            --on-cp-lost keep (the default:
//	                                      subscribers keep forwarding) or
//	                                      purge (and the association goes)
//	Association Release                 deleted
//
// A purge is one operation of the applier (apply.go): every session of the
// association goes, from the data plane, the redirect and the store, or
// the association stays as it was -- never half of them.

type assoc struct {
	node      string
	peer      netip.AddrPort
	recovery  time.Time // the control plane's Recovery Time Stamp
	features  []byte    // CP Function Features
	epoch     uint64    // bumped by every purge: operations planned before it are void
	missed    int
	hbPending bool
	lost      bool
	setupSent bool // an Association Setup Request of ours is in flight
}

type nodeTable struct {
	mu     sync.Mutex
	byNode map[string]*assoc
	byPeer map[netip.Addr]*assoc
}

func newNodeTable() *nodeTable {
	return &nodeTable{byNode: map[string]*assoc{}, byPeer: map[netip.Addr]*assoc{}}
}

func (n *nodeTable) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.byNode)
}

func (n *nodeTable) get(node string) *assoc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byNode[node]
}

func (n *nodeTable) byAddr(a netip.Addr) *assoc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byPeer[a]
}

func (n *nodeTable) put(a *assoc) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if old := n.byNode[a.node]; old != nil && old.peer.Addr() != a.peer.Addr() {
		delete(n.byPeer, old.peer.Addr())
	}
	n.byNode[a.node] = a
	n.byPeer[a.peer.Addr()] = a
}

func (n *nodeTable) drop(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a := n.byNode[node]; a != nil {
		delete(n.byPeer, a.peer.Addr())
		delete(n.byNode, node)
	}
}

func (n *nodeTable) all() []*assoc {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*assoc, 0, len(n.byNode))
	for _, a := range n.byNode {
		out = append(out, a)
	}
	return out
}

// epochOf is the association's epoch; ok false when there is none.
func (n *nodeTable) epochOf(node string) (uint64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a := n.byNode[node]; a != nil {
		return a.epoch, true
	}
	return 0, false
}

// Our features: UP Function Features (clause 8.2.25) FTUP (we allocate
// the redirect's F-TEIDs), FRRT (Framed-Route), MNOP (packet counts in
// usage reports); BBF UP Function Features PPPoE and IPoE (no L2TP, no
// LCP keepalive offload).
func (u *UPF) featureIEs() []*ie.IE {
	return []*ie.IE{
		ie.NewUPFunctionFeatures(0x10, 0x20, 0x10),
		bbf.NewUPFunctionFeatures(bbf.FeaturePPPoE | bbf.FeatureIPoE),
	}
}

// nodeIDIE is our Node ID, encoded once: every answer carries it, and
// go-pfcp parses the text each time it builds one (IEs are read-only
// once built: marshalling only reads them).
func (u *UPF) nodeIDIE() *ie.IE {
	u.nodeIDOnce.Do(func() { u.nodeID = ie.NewNodeIDHeuristic(u.cfg.NodeID) })
	return u.nodeID
}

// --- requests from a control plane -----------------------------------------

func findIE(ies []*ie.IE, t uint16) *ie.IE {
	for _, i := range ies {
		if i.Type == t {
			return i
		}
	}
	return nil
}

func (u *UPF) onHeartbeat(peer netip.AddrPort, seq uint32, ies []*ie.IE) {
	if rts := findIE(ies, ie.RecoveryTimeStamp); rts != nil {
		if ts, err := rts.RecoveryTimeStamp(); err == nil {
			if a := u.nodes.byAddr(peer.Addr()); a != nil {
				u.nodes.mu.Lock()
				restarted := !a.recovery.IsZero() && !ts.Equal(a.recovery)
				u.nodes.mu.Unlock()
				if restarted {
					u.cpRestarted(a, ts, false, nil)
				}
			}
		}
	}
	u.answer(peer, seq, message.NewHeartbeatResponse(seq, ie.NewRecoveryTimeStamp(u.recovery)))
}

func (u *UPF) onAssociationSetup(peer netip.AddrPort, seq uint32, ies []*ie.IE) {
	fail := func(cause uint8) {
		u.answer(peer, seq, message.NewAssociationSetupResponse(seq, u.nodeIDIE(), ie.NewCause(cause),
			ie.NewRecoveryTimeStamp(u.recovery)))
	}
	nid := findIE(ies, ie.NodeID)
	rts := findIE(ies, ie.RecoveryTimeStamp)
	if nid == nil || rts == nil {
		fail(ie.CauseMandatoryIEMissing)
		return
	}
	node, rj := decodeNodeID(nid)
	if rj != nil {
		fail(rj.Cause)
		return
	}
	ts, err := rts.RecoveryTimeStamp()
	if err != nil {
		fail(ie.CauseInvalidLength)
		return
	}
	retain := findIE(ies, ie.PFCPSessionRetentionInformation) != nil
	var features []byte
	if f := findIE(ies, ie.CPFunctionFeatures); f != nil {
		features = append([]byte(nil), f.Payload...)
	}
	accept := func() {
		u.answer(peer, seq, message.NewAssociationSetupResponse(seq,
			append([]*ie.IE{u.nodeIDIE(), ie.NewCause(ie.CauseRequestAccepted), ie.NewRecoveryTimeStamp(u.recovery)},
				u.featureIEs()...)...))
	}
	a := u.nodes.get(node)
	if a == nil {
		a = &assoc{node: node, peer: peer, recovery: ts, features: features}
		u.nodes.put(a)
		u.saveAssociation(a)
		slog.Info("pfcp association set up", "node", node, "peer", peer)
		accept()
		return
	}
	u.nodes.mu.Lock()
	restarted := !ts.Equal(a.recovery)
	a.features, a.lost, a.missed = features, false, 0
	u.nodes.mu.Unlock()
	if a.peer != peer {
		u.nodes.mu.Lock()
		a.peer = peer
		u.nodes.mu.Unlock()
		u.nodes.put(a)
	}
	if !restarted {
		u.saveAssociation(a)
		accept()
		return
	}
	u.cpRestarted(a, ts, retain, accept)
}

// cpRestarted handles a control plane's new Recovery Time Stamp: purge or
// keep by policy (retention asked by the control plane wins), then then().
func (u *UPF) cpRestarted(a *assoc, ts time.Time, retain bool, then func()) {
	u.c.cpRestarts.Add(1)
	u.nodes.mu.Lock()
	a.recovery = ts
	u.nodes.mu.Unlock()
	u.saveAssociation(a)
	if u.cfg.OnCPRestart == "keep" || retain {
		slog.Info("control plane restarted; its sessions are kept", "node", a.node, "retention_requested", retain)
		if then != nil {
			then()
		}
		return
	}
	slog.Info("control plane restarted; purging its sessions", "node", a.node)
	u.purge(a.node, false, then)
}

func (u *UPF) onAssociationUpdate(peer netip.AddrPort, seq uint32, ies []*ie.IE) {
	respond := func(cause uint8) {
		u.answer(peer, seq, message.NewAssociationUpdateResponse(seq, u.nodeIDIE(), ie.NewCause(cause)))
	}
	nid := findIE(ies, ie.NodeID)
	if nid == nil {
		respond(ie.CauseMandatoryIEMissing)
		return
	}
	node, rj := decodeNodeID(nid)
	if rj != nil {
		respond(rj.Cause)
		return
	}
	a := u.nodes.get(node)
	if a == nil {
		respond(ie.CauseNoEstablishedPFCPAssociation)
		return
	}
	if f := findIE(ies, ie.CPFunctionFeatures); f != nil {
		u.nodes.mu.Lock()
		a.features = append([]byte(nil), f.Payload...)
		u.nodes.mu.Unlock()
		u.saveAssociation(a)
	}
	respond(ie.CauseRequestAccepted)
}

func (u *UPF) onAssociationRelease(peer netip.AddrPort, seq uint32, ies []*ie.IE) {
	respond := func(cause uint8) {
		u.answer(peer, seq, message.NewAssociationReleaseResponse(seq, u.nodeIDIE(), ie.NewCause(cause)))
	}
	nid := findIE(ies, ie.NodeID)
	if nid == nil {
		respond(ie.CauseMandatoryIEMissing)
		return
	}
	node, rj := decodeNodeID(nid)
	if rj != nil {
		respond(rj.Cause)
		return
	}
	if u.nodes.get(node) == nil {
		respond(ie.CauseNoEstablishedPFCPAssociation)
		return
	}
	slog.Info("pfcp association released by the control plane", "node", node)
	u.purge(node, true, func() { respond(ie.CauseRequestAccepted) })
}

// --- our requests ------------------------------------------------------------

// heartbeats sends a Heartbeat Request to every associated control plane
// that has none in flight; N1 unanswered retransmissions make it lost.
func (u *UPF) heartbeats(now time.Time) {
	for _, a := range u.nodes.all() {
		u.nodes.mu.Lock()
		if a.hbPending {
			u.nodes.mu.Unlock()
			continue
		}
		a.hbPending = true
		peer := a.peer
		u.nodes.mu.Unlock()
		seq := u.out.Next()
		a := a
		u.request(peer, message.NewHeartbeatRequest(seq, ie.NewRecoveryTimeStamp(u.recovery), nil), seq, func(resp []byte, ok bool) {
			u.nodes.mu.Lock()
			a.hbPending = false
			u.nodes.mu.Unlock()
			if !ok {
				u.c.hbMissed.Add(1)
				u.cpSilent(a)
				return
			}
			u.nodes.mu.Lock()
			wasLost := a.lost
			a.missed, a.lost = 0, false
			known := a.recovery
			u.nodes.mu.Unlock()
			if wasLost {
				slog.Info("control plane answers heartbeats again", "node", a.node)
			}
			if m, err := message.Parse(resp); err == nil {
				if hb, ok := m.(*message.HeartbeatResponse); ok && hb.RecoveryTimeStamp != nil {
					if ts, err := hb.RecoveryTimeStamp.RecoveryTimeStamp(); err == nil && !known.IsZero() && !ts.Equal(known) {
						u.cpRestarted(a, ts, false, nil)
					}
				}
			}
		})
		u.c.hbSent.Add(1)
	}
}

// cpSilent: a heartbeat went unanswered N1 times (TS 29.244 clause 6.2.2).
func (u *UPF) cpSilent(a *assoc) {
	u.nodes.mu.Lock()
	already := a.lost
	a.lost = true
	u.nodes.mu.Unlock()
	if already {
		return
	}
	u.c.cpLost.Add(1)
	if u.cfg.OnCPLost == "purge" {
		slog.Warn("control plane lost (heartbeats unanswered); purging its sessions", "node", a.node)
		u.purge(a.node, true, nil)
		return
	}
	slog.Warn("control plane lost (heartbeats unanswered); its sessions keep forwarding", "node", a.node)
}

// associate sends an Association Setup Request to a control plane: the
// configured ones at start and while they have no association, and every
// stored association after a restart (re-association; the Recovery Time
// Stamp is unchanged, so the control plane keeps the sessions).
func (u *UPF) associate(peer netip.AddrPort, node string) {
	if node != "" {
		if a := u.nodes.get(node); a != nil {
			u.nodes.mu.Lock()
			if a.setupSent {
				u.nodes.mu.Unlock()
				return
			}
			a.setupSent = true
			u.nodes.mu.Unlock()
		}
	}
	seq := u.out.Next()
	req := message.NewAssociationSetupRequest(seq, append([]*ie.IE{u.nodeIDIE(), ie.NewRecoveryTimeStamp(u.recovery)},
		u.featureIEs()...)...)
	u.request(peer, req, seq, func(resp []byte, ok bool) {
		if node != "" {
			if a := u.nodes.get(node); a != nil {
				u.nodes.mu.Lock()
				a.setupSent = false
				u.nodes.mu.Unlock()
			}
		}
		if !ok {
			return
		}
		m, err := message.Parse(resp)
		if err != nil {
			return
		}
		r, isResp := m.(*message.AssociationSetupResponse)
		if !isResp || r.Cause == nil || r.NodeID == nil || r.RecoveryTimeStamp == nil {
			return
		}
		if c, err := r.Cause.Cause(); err != nil || c != ie.CauseRequestAccepted {
			slog.Warn("association set-up refused", "peer", peer, "cause", c)
			return
		}
		cpNode, rj := decodeNodeID(r.NodeID)
		ts, err := r.RecoveryTimeStamp.RecoveryTimeStamp()
		if rj != nil || err != nil {
			return
		}
		a := u.nodes.get(cpNode)
		if a == nil {
			a = &assoc{node: cpNode, peer: peer, recovery: ts}
			u.nodes.put(a)
			u.saveAssociation(a)
			slog.Info("pfcp association set up (ours)", "node", cpNode, "peer", peer)
			return
		}
		u.nodes.mu.Lock()
		a.lost, a.missed = false, 0
		restarted := !ts.Equal(a.recovery)
		u.nodes.mu.Unlock()
		slog.Info("pfcp re-association", "node", cpNode, "peer", peer, "cp_restarted", restarted)
		if restarted {
			u.cpRestarted(a, ts, false, nil)
		}
	})
}
