// Package sci is the control plane's side of TR-459's State Control
// interface: PFCP (3GPP TS 29.244, github.com/wmnsk/go-pfcp) towards one
// or more user planes -- association, heartbeats, a default session per
// user plane for the control packet redirect, and one session per
// subscriber -- and the redirect's GTP-U endpoint (TS 29.281) that carries
// subscribers' control frames both ways (cpr.go).
//
//	CP (this)                                   UP (edgeplane upf)
//	Association Setup Request  ------------->   (or the UP's, answered)
//	Session Establishment (default): PDRs for PPPoE discovery and
//	  session control, ARP, DHCP, DHCPv6, RS/NS -> GTP-U to us; a PDR
//	  from us (F-TEID CHOOSE) -> the logical port
//	          <-------------------------------  Created PDR: its TEID
//	per subscriber: Session Establishment (Traffic Endpoints with the
//	  logical port, tags, MAC, PPPoE session id, UE addresses; PDRs for
//	  both directions, QER from the profile, URR with the interim period),
//	  Modification (a profile change), Deletion (final usage)
//	          <-------------------------------  Session Report (periodic usage)
//	Heartbeats both ways; a new Recovery Time Stamp of the UP: its
//	sessions are checked (Query URR) and re-established if gone.
//
// Every request is retransmitted every T1 up to N1 times (clause 6.4);
// answers are matched by sequence number, so thousands can be in flight.
package sci

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/bngcp"
	"edgeplane/control/internal/pfcp/bbf"
)

// UPConfig is one user plane.
type UPConfig struct {
	Name            string
	Addr            netip.AddrPort
	NetworkInstance string
	Ports           []string // the logical ports it serves
}

// Config configures the PFCP side.
type Config struct {
	NodeID     string
	Listen     netip.AddrPort // our PFCP address (8805)
	GTPU       netip.AddrPort // our GTP-U address (2152)
	UserPlanes []UPConfig
	Heartbeat  time.Duration
	T1         time.Duration
	N1         int
}

// Persist keeps small values across restarts (the default sessions).
type Persist interface {
	SetBlob(key string, v []byte) error
	GetBlob(key string) []byte
}

type upState struct {
	idx        int
	cfg        UPConfig
	associated bool
	recovery   time.Time
	features   uint8
	missed     int
	hbPending  bool
	setupBusy  bool
	defSEID    uint64 // the default session: ours
	defUPSEID  uint64 // the UP's
	defReady   bool
	down       map[string]fteid // logical port -> the UP's TEID for frames from us
}

type fteid struct {
	TEID uint32     `json:"teid"`
	Addr netip.Addr `json:"addr"`
}

type txn struct {
	b     []byte
	want  uint8 // the answer's message type (the request's plus one, TS 29.244 clause 7.3)
	peer  netip.AddrPort
	due   time.Time
	tries int
	done  func(message.Message, error)
}

// SCI is the PFCP side of the control plane.
type SCI struct {
	cfg      Config
	conn     *net.UDPConn
	recovery time.Time
	seq      atomic.Uint32
	persist  Persist

	mu      sync.Mutex
	pending map[uint32]*txn
	ups     []*upState
	byAddr  map[netip.Addr]*upState
	byPort  map[string]*upState
	tunnels map[uint64]fteid // PPPoE sessions' own redirect tunnels (frames from us)

	cpr *CPR

	// OnReport takes usage reports; OnAssociated is told when a user
	// plane's association and default session are up (after our start,
	// its restart or its loss): the sessions on it are then checked.
	OnReport     func(bngcp.UsageReport)
	OnAssociated func(up string)

	Sent, Received, Retransmits, Timeouts, Rejected, Reports atomic.Uint64
	NEstablish, NModify, NDelete, Unassociated, BadMessages  atomic.Uint64
	WrongAnswers                                             atomic.Uint64 // an answer of another type under a pending number
}

// New opens the PFCP and GTP-U sockets.
func New(c Config, p Persist) (*SCI, error) {
	if c.Heartbeat == 0 {
		c.Heartbeat = 10 * time.Second
	}
	if c.T1 == 0 {
		c.T1 = 3 * time.Second
	}
	if c.N1 == 0 {
		c.N1 = 3
	}
	if c.NodeID == "" {
		c.NodeID = c.Listen.Addr().String()
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(c.Listen))
	if err != nil {
		return nil, fmt.Errorf("pfcp socket %s: %w", c.Listen, err)
	}
	conn.SetReadBuffer(16 << 20)
	conn.SetWriteBuffer(16 << 20)
	s := &SCI{cfg: c, conn: conn, recovery: time.Now().Truncate(time.Second), persist: p,
		pending: map[uint32]*txn{}, tunnels: map[uint64]fteid{}, byAddr: map[netip.Addr]*upState{}, byPort: map[string]*upState{}}
	// Sequence numbers start at a random point: a user plane keeps its
	// answers for a while to answer retransmissions (TS 29.244 clause
	// 6.4), and a restarted control plane counting from 1 again would
	// send requests under the numbers of its previous process.
	s.seq.Store(randomSeq())
	for i, u := range c.UserPlanes {
		st := &upState{idx: i, cfg: u, down: map[string]fteid{}, defSEID: 1<<63 | uint64(i)}
		s.ups = append(s.ups, st)
		s.byAddr[u.Addr.Addr()] = st
		for _, p := range u.Ports {
			s.byPort[p] = st
		}
	}
	if s.cpr, err = newCPR(s, c.GTPU); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// Access is the control packet redirect (a bngcp.Access).
func (s *SCI) Access() bngcp.Access { return s.cpr }

// Close releases the sockets.
func (s *SCI) Close() {
	s.conn.Close()
	s.cpr.close()
}

// Run serves PFCP until ctx ends: the reader, the timers.
func (s *SCI) Run(ctx context.Context) {
	go s.read()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastHB time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.retransmit(now)
			if now.Sub(lastHB) >= s.cfg.Heartbeat {
				lastHB = now
				s.heartbeats()
			}
		}
	}
}

// randomSeq is a starting sequence number (24 bits, never 0).
func randomSeq() uint32 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint32(time.Now().UnixNano())
	}
	return binary.BigEndian.Uint32(b[:]) & 0xffffff
}

func (s *SCI) nextSeq() uint32 {
	for {
		if v := s.seq.Add(1) & 0xffffff; v != 0 {
			return v
		}
	}
}

func (s *SCI) write(to netip.AddrPort, m message.Message) ([]byte, error) {
	b := make([]byte, m.MarshalLen())
	if err := m.MarshalTo(b); err != nil {
		return nil, err
	}
	_, err := s.conn.WriteToUDPAddrPort(b, to)
	return b, err
}

// request sends m to the user plane and calls done with its answer (or
// an error after N1 retransmissions).
func (s *SCI) request(u *upState, m message.Message, done func(message.Message, error)) {
	seq := m.Sequence()
	b, err := s.write(u.cfg.Addr, m)
	if err != nil {
		done(nil, err)
		return
	}
	s.Sent.Add(1)
	s.mu.Lock()
	s.pending[seq] = &txn{b: b, want: m.MessageType() + 1, peer: u.cfg.Addr, due: time.Now().Add(s.cfg.T1), done: done}
	s.mu.Unlock()
}

// call is request, waiting.
func (s *SCI) call(ctx context.Context, u *upState, m message.Message) (message.Message, error) {
	ch := make(chan struct {
		m   message.Message
		err error
	}, 1)
	s.request(u, m, func(r message.Message, err error) {
		ch <- struct {
			m   message.Message
			err error
		}{r, err}
	})
	select {
	case r := <-ch:
		return r.m, r.err
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, m.Sequence())
		s.mu.Unlock()
		return nil, ctx.Err()
	}
}

var errNoAnswer = errors.New("pfcp: no answer from the user plane")

func (s *SCI) retransmit(now time.Time) {
	var expired []*txn
	s.mu.Lock()
	for seq, t := range s.pending {
		if now.Before(t.due) {
			continue
		}
		if t.tries >= s.cfg.N1 {
			delete(s.pending, seq)
			expired = append(expired, t)
			continue
		}
		t.tries++
		t.due = now.Add(s.cfg.T1)
		s.conn.WriteToUDPAddrPort(t.b, t.peer)
		s.Retransmits.Add(1)
	}
	s.mu.Unlock()
	for _, t := range expired {
		s.Timeouts.Add(1)
		t.done(nil, errNoAnswer)
	}
}

func (s *SCI) read() {
	buf := make([]byte, 65536)
	for {
		n, peer, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		m, err := message.Parse(buf[:n])
		if err != nil {
			s.BadMessages.Add(1)
			continue
		}
		s.Received.Add(1)
		s.handle(m, peer)
	}
}

func (s *SCI) handle(m message.Message, peer netip.AddrPort) {
	switch r := m.(type) {
	case *message.HeartbeatRequest:
		s.write(peer, message.NewHeartbeatResponse(r.Sequence(), ie.NewRecoveryTimeStamp(s.recovery)))
		if u := s.upOf(peer); u != nil && r.RecoveryTimeStamp != nil {
			if ts, err := r.RecoveryTimeStamp.RecoveryTimeStamp(); err == nil {
				s.sawRecovery(u, ts)
			}
		}
		return
	case *message.AssociationSetupRequest:
		s.onAssociationRequest(r, peer)
		return
	case *message.SessionReportRequest:
		s.onReport(r, peer)
		return
	case *message.AssociationReleaseRequest:
		u := s.upOf(peer)
		s.write(peer, message.NewAssociationReleaseResponse(r.Sequence(), ie.NewNodeIDHeuristic(s.cfg.NodeID),
			ie.NewCause(ie.CauseRequestAccepted)))
		if u != nil {
			s.mu.Lock()
			u.associated, u.defReady = false, false
			s.mu.Unlock()
			slog.Warn("user plane released the association", "up", u.cfg.Name)
		}
		return
	case *message.VersionNotSupportedResponse:
	}
	s.mu.Lock()
	t := s.pending[m.Sequence()]
	switch {
	case t == nil || t.peer.Addr() != peer.Addr():
		t = nil
	case m.MessageType() != t.want:
		// Not the answer to our request (a peer answering from a
		// duplicate cache of an older process of ours): the request
		// stays pending and is retransmitted.
		s.WrongAnswers.Add(1)
		t = nil
	default:
		delete(s.pending, m.Sequence())
	}
	s.mu.Unlock()
	if t != nil {
		t.done(m, nil)
	}
}

func (s *SCI) upOf(peer netip.AddrPort) *upState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byAddr[peer.Addr()]
}

// --- association and heartbeats -------------------------------------------

func (s *SCI) heartbeats() {
	s.mu.Lock()
	ups := append([]*upState(nil), s.ups...)
	s.mu.Unlock()
	for _, u := range ups {
		s.mu.Lock()
		assoc, busy, pending := u.associated, u.setupBusy, u.hbPending
		if assoc && pending {
			u.missed++
			if u.missed > s.cfg.N1 {
				// Lost: its sessions may keep forwarding (the UP's
				// policy); we associate again when it answers.
				slog.Warn("user plane lost (heartbeats unanswered)", "up", u.cfg.Name)
				u.associated, u.defReady = false, false
				assoc = false
			}
		}
		s.mu.Unlock()
		if !assoc {
			if !busy {
				s.associate(u)
			}
			continue
		}
		s.mu.Lock()
		u.hbPending = true
		s.mu.Unlock()
		s.request(u, message.NewHeartbeatRequest(s.nextSeq(), ie.NewRecoveryTimeStamp(s.recovery), nil),
			func(m message.Message, err error) {
				r, ok := m.(*message.HeartbeatResponse)
				if err != nil || !ok {
					return
				}
				s.mu.Lock()
				u.hbPending, u.missed = false, 0
				s.mu.Unlock()
				if r.RecoveryTimeStamp != nil {
					if ts, err := r.RecoveryTimeStamp.RecoveryTimeStamp(); err == nil {
						s.sawRecovery(u, ts)
					}
				}
			})
	}
}

// sawRecovery: a user plane's Recovery Time Stamp.  A new one means it
// restarted without its state: associate again, and have every session
// on it checked.
func (s *SCI) sawRecovery(u *upState, ts time.Time) {
	s.mu.Lock()
	changed := u.associated && !u.recovery.IsZero() && !ts.Equal(u.recovery)
	if changed {
		u.associated, u.defReady = false, false
	}
	s.mu.Unlock()
	if changed {
		slog.Warn("user plane restarted", "up", u.cfg.Name)
		s.associate(u)
	}
}

// Associate starts association set-up with every user plane now (Run
// does it too, every heartbeat interval, until they answer).
func (s *SCI) Associate() {
	for _, u := range s.ups {
		s.associate(u)
	}
}

func (s *SCI) assocIEs() []*ie.IE {
	// Session Retention Information (TS 29.244 6.2.6.2.2): a user plane
	// that sees our new Recovery Time Stamp keeps our sessions -- a
	// restarted control plane brings them back from its store.
	return []*ie.IE{ie.NewNodeIDHeuristic(s.cfg.NodeID), ie.NewRecoveryTimeStamp(s.recovery),
		ie.NewCPFunctionFeatures(0), ie.NewPFCPSessionRetentionInformation(nil)}
}

func (s *SCI) associate(u *upState) {
	s.mu.Lock()
	if u.setupBusy {
		s.mu.Unlock()
		return
	}
	u.setupBusy = true
	s.mu.Unlock()
	m := message.NewAssociationSetupRequest(s.nextSeq(), s.assocIEs()...)
	s.request(u, m, func(m message.Message, err error) {
		r, ok := m.(*message.AssociationSetupResponse)
		if err != nil || !ok || cause(r.Cause) != ie.CauseRequestAccepted {
			s.mu.Lock()
			u.setupBusy = false
			s.mu.Unlock()
			if ok {
				slog.Warn("association refused", "up", u.cfg.Name, "cause", cause(r.Cause))
			}
			return
		}
		var ts time.Time
		if r.RecoveryTimeStamp != nil {
			ts, _ = r.RecoveryTimeStamp.RecoveryTimeStamp()
		}
		feats := bbfFeatures(r.IEs)
		s.associated(u, ts, feats)
	})
}

func (s *SCI) onAssociationRequest(r *message.AssociationSetupRequest, peer netip.AddrPort) {
	u := s.upOf(peer)
	if u == nil {
		s.write(peer, message.NewAssociationSetupResponse(r.Sequence(), ie.NewNodeIDHeuristic(s.cfg.NodeID),
			ie.NewCause(ie.CauseRequestRejected), ie.NewRecoveryTimeStamp(s.recovery)))
		s.Unassociated.Add(1)
		return
	}
	s.write(peer, message.NewAssociationSetupResponse(r.Sequence(), ie.NewNodeIDHeuristic(s.cfg.NodeID),
		ie.NewCause(ie.CauseRequestAccepted), ie.NewRecoveryTimeStamp(s.recovery), ie.NewCPFunctionFeatures(0)))
	var ts time.Time
	if r.RecoveryTimeStamp != nil {
		ts, _ = r.RecoveryTimeStamp.RecoveryTimeStamp()
	}
	feats := bbfFeatures(r.IEs)
	s.mu.Lock()
	restarted := !u.recovery.IsZero() && !ts.Equal(u.recovery)
	already := u.associated && !restarted
	s.mu.Unlock()
	if !already {
		s.associated(u, ts, feats)
	}
}

// associated: the association is up; the default session follows.
func (s *SCI) associated(u *upState, ts time.Time, feats uint8) {
	s.mu.Lock()
	u.associated, u.recovery, u.features, u.missed, u.hbPending = true, ts, feats, 0, false
	s.mu.Unlock()
	slog.Info("associated", "up", u.cfg.Name, "bbf_features", fmt.Sprintf("%#02x", feats))
	s.defaultSession(u, func() {
		s.mu.Lock()
		u.setupBusy = false
		ready := u.defReady
		s.mu.Unlock()
		if ready && s.OnAssociated != nil {
			s.OnAssociated(u.cfg.Name)
		}
	})
}

// bbfFeatures reads BBF UP Function Features from an association's IEs.
func bbfFeatures(ies []*ie.IE) uint8 {
	for _, i := range ies {
		if bbf.Is(i, bbf.UPFunctionFeatures) {
			if f, err := bbf.ParseUPFunctionFeatures(i); err == nil {
				return f
			}
		}
	}
	return 0
}

func cause(i *ie.IE) uint8 {
	if i == nil {
		return 0
	}
	v, _ := i.Cause()
	return v
}

// --- the default session: the control packet redirect's rules --------------

type defRecord struct {
	UPSEID uint64           `json:"up_seid"`
	Down   map[string]fteid `json:"down"`
}

// upTEID is our TEID for frames from a user plane's logical port: fixed
// by configuration order, so it survives our restarts.
func upTEID(upIdx, portIdx int) uint32 { return 0x00100000 | uint32(upIdx)<<8 | uint32(portIdx) }

// defaultSession replaces a user plane's default session (the previous
// one, of a previous run, is deleted first).
func (s *SCI) defaultSession(u *upState, done func()) {
	key := "default/" + u.cfg.Name
	var old defRecord
	if s.persist != nil {
		if b := s.persist.GetBlob(key); b != nil {
			json.Unmarshal(b, &old)
		}
	}
	establish := func() {
		m := message.NewSessionEstablishmentRequest(0, 0, 0, s.nextSeq(), 0, s.defaultIEs(u)...)
		s.request(u, m, func(m message.Message, err error) {
			defer done()
			r, ok := m.(*message.SessionEstablishmentResponse)
			if err != nil || !ok || cause(r.Cause) != ie.CauseRequestAccepted {
				c := uint8(0)
				if ok {
					c = cause(r.Cause)
				}
				slog.Error("default session refused", "up", u.cfg.Name, "err", err, "cause", c, "offending", offending(r))
				s.mu.Lock()
				u.associated = false
				s.mu.Unlock()
				return
			}
			rec := defRecord{Down: map[string]fteid{}}
			if r.UPFSEID != nil {
				if f, err := r.UPFSEID.FSEID(); err == nil {
					rec.UPSEID = f.SEID
				}
			}
			for _, c := range r.CreatedPDR {
				id, err1 := c.PDRID()
				f, err2 := c.FTEID()
				if err1 != nil || err2 != nil {
					continue
				}
				port := s.portOfDownPDR(u, id)
				if a, ok := netip.AddrFromSlice(f.IPv4Address); ok && port != "" {
					rec.Down[port] = fteid{TEID: f.TEID, Addr: a.Unmap()}
				}
			}
			s.mu.Lock()
			u.defUPSEID, u.down, u.defReady = rec.UPSEID, rec.Down, len(rec.Down) == len(u.cfg.Ports)
			s.mu.Unlock()
			if s.persist != nil {
				b, _ := json.Marshal(rec)
				s.persist.SetBlob(key, b)
			}
			slog.Info("default session up", "up", u.cfg.Name, "tunnels", len(rec.Down))
		})
	}
	if old.UPSEID == 0 {
		establish()
		return
	}
	m := message.NewSessionDeletionRequest(0, 0, old.UPSEID, s.nextSeq(), 0)
	s.request(u, m, func(message.Message, error) { establish() })
}

func offending(r *message.SessionEstablishmentResponse) uint16 {
	if r == nil || r.OffendingIE == nil {
		return 0
	}
	v, _ := r.OffendingIE.OffendingIE()
	return v
}

// Default session layout, per logical port k (rule ids from k*8):
//
//	PDR k*8+1..5  Access -> CP: Ethertype 0x8863 (PPPoE discovery),
//	              0x8864 (PPP control: the data plane punts only control),
//	              0x0806 (ARP), SDF DHCP, SDF DHCPv6, SDF ICMPv6 RS/NS
//	FAR k*2+1     forward to the CP function: GTP-U TEID upTEID(up, k)
//	PDR k*8+7     CP -> Access: local F-TEID CHOOSE, Outer Header Removal
//	              GTP-U, on the logical port (frames arrive tagged)
//	FAR k*2+2     forward to Access
func (s *SCI) defaultIEs(u *upState) []*ie.IE {
	ies := []*ie.IE{ie.NewNodeIDHeuristic(s.cfg.NodeID), ie.NewFSEID(u.defSEID, s.cfg.Listen.Addr().AsSlice(), nil)}
	gtp := s.cpr.addr()
	for k, port := range u.cfg.Ports {
		toCP, toAcc := uint32(k*2+1), uint32(k*2+2)
		base := uint16(k * 8)
		ies = append(ies,
			ie.NewCreateFAR(ie.NewFARID(toCP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceCPFunction),
				ie.NewOuterHeaderCreation(0x0100, upTEID(u.idx, k), gtp.String(), "", 0, 0, 0))),
			ie.NewCreateFAR(ie.NewFARID(toAcc), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceAccess))))
		pdr := func(id uint16, prec uint32, match ...*ie.IE) *ie.IE {
			pdi := append([]*ie.IE{ie.NewSourceInterface(ie.SrcInterfaceAccess), bbf.NewLogicalPort(port)}, match...)
			return ie.NewCreatePDR(ie.NewPDRID(id), ie.NewPrecedence(prec), ie.NewPDI(pdi...), ie.NewFARID(toCP))
		}
		eth := func(t uint16) *ie.IE { return ie.NewEthernetPacketFilter(ie.NewEthertype(t)) }
		sdf := func(fd string) *ie.IE { return ie.NewSDFFilter(fd, "", "", "", 0) }
		ies = append(ies,
			pdr(base+1, 100, eth(0x8863)),
			pdr(base+2, 100, eth(0x8864)),
			pdr(base+3, 100, eth(0x0806)),
			pdr(base+4, 200, sdf("permit out 17 from any 67 to any 68")),
			pdr(base+5, 200, sdf("permit out 17 from any 547 to any 546")),
			pdr(base+6, 200, sdf("permit out 58 from any to any 133,135")),
			ie.NewCreatePDR(ie.NewPDRID(base+7), ie.NewPrecedence(100),
				ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCPFunction), bbf.NewLogicalPort(port),
					ie.NewFTEID(0x05, 0, nil, nil, 0)),
				ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(toAcc)))
	}
	return ies
}

func (u *upState) portIndex(port string) int {
	for i, p := range u.cfg.Ports {
		if p == port {
			return i
		}
	}
	return 0
}

func (s *SCI) portOfDownPDR(u *upState, id uint16) string {
	k := int(id) / 8
	if int(id)%8 != 7 || k >= len(u.cfg.Ports) {
		return ""
	}
	return u.cfg.Ports[k]
}

// Ready reports whether every user plane has its default session.
func (s *SCI) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.ups {
		if !u.defReady {
			return false
		}
	}
	return true
}

// Stats are the PFCP side's counters.
func (s *SCI) Stats() map[string]uint64 {
	out := map[string]uint64{
		"sent": s.Sent.Load(), "received": s.Received.Load(), "retransmits": s.Retransmits.Load(),
		"timeouts": s.Timeouts.Load(), "rejected": s.Rejected.Load(), "reports": s.Reports.Load(),
		"establish": s.NEstablish.Load(), "modify": s.NModify.Load(), "delete": s.NDelete.Load(),
		"unassociated_peer": s.Unassociated.Load(), "bad_messages": s.BadMessages.Load(),
		"wrong_answers": s.WrongAnswers.Load(),
	}
	s.mu.Lock()
	n := 0
	for _, u := range s.ups {
		if u.associated && u.defReady {
			n++
		}
	}
	out["user_planes_ready"] = uint64(n)
	out["pending"] = uint64(len(s.pending))
	s.mu.Unlock()
	for k, v := range s.cpr.stats() {
		out["cpr_"+k] = v
	}
	return out
}
