package upf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	"golang.org/x/time/rate"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/udpio"
	"edgeplane/control/internal/pfcp/wire"
)

// UPF is a running PFCP user-plane function.
//
// Goroutines (a fixed set; none per message):
//
//	read     the UDP socket: framing, duplicates, node messages
//	decode   Decoders of them: session requests decoded and planned, a
//	         session's always on the same one (shard.go)
//	apply    takes planned changes in batches, sends them to the data
//	         plane (pipelined, up to Pipeline batches in flight)
//	complete waits for each batch's answers in order, commits or rolls
//	         back each session, writes the store, answers the requests
//	timers   retransmissions, heartbeats, association set-up, usage
//	         reports (every URRPoll)
type UPF struct {
	cfg        Config
	conn       *net.UDPConn
	uio        *udpio.Conn
	dp         *dpctl.Client
	st         *State
	prof       *Profiles
	env        *Env
	store      *Store
	dups       *dupCache
	out        *outbox
	nodes      *nodeTable
	recovery   time.Time // our Recovery Time Stamp
	c          counters
	mute       *rate.Limiter // answers to peers without an association
	cpr        *CPR
	dec        *decoders    // session requests decoded in parallel (nil: by the caller)
	inline     wire.Scratch // IEs of the requests the reader (or a test calling datagram) decodes
	nodeID     *ie.IE
	nodeIDOnce sync.Once
	est        *establishedTemplate // the usual establishment's answer, encoded once
	estOnce    sync.Once

	applyCh   chan *op
	retryCh   chan *op
	doneCh    chan *batch
	slots     chan struct{} // batches in flight
	kick      chan struct{} // resync request
	dpSeen    time.Time     // when we last read the data plane's uptime
	dpUptime  float64       // what it was
	seidBound uint64        // stored: no SEID handed out reaches it
	dpGen     uint64
	wg        sync.WaitGroup
	closeOne  sync.Once
	now       func() time.Time
}

// New opens the store, restores sessions and binds the PFCP socket; Run
// starts serving.
func New(cfg Config) (*UPF, error) {
	cfg.Defaults()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	u := &UPF{cfg: cfg, dp: dpctl.New(cfg.DPSocket, dpctl.Options{MaxInFlight: 256}),
		prof: NewProfiles(cfg.MaxProfiles), dups: newDupCache(cfg.DupRetain), out: newOutbox(cfg.T1, cfg.N1),
		nodes: newNodeTable(), mute: rate.NewLimiter(rate.Limit(cfg.UnassocRate), int(cfg.UnassocRate)+1),
		applyCh: make(chan *op, cfg.QueueLen), retryCh: make(chan *op, cfg.QueueLen),
		doneCh: make(chan *batch, cfg.Pipeline), slots: make(chan struct{}, cfg.Pipeline),
		kick: make(chan struct{}, 1), now: time.Now}
	u.env = &Env{Ports: cfg.Ports, NetworkInstances: cfg.NetworkInstances, Profiles: u.prof}
	st, err := OpenStore(cfg.StateDir, cfg.Sync)
	if err != nil {
		return nil, err
	}
	u.store = st
	if err := u.restore(); err != nil {
		st.Close()
		return nil, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("pfcp socket %s: %w", cfg.Listen, err)
	}
	// Bursts of thousands of requests (10,000 establishments at once) must
	// wait in the socket, not be dropped by the kernel.
	conn.SetReadBuffer(16 << 20)
	conn.SetWriteBuffer(4 << 20)
	u.conn = conn
	u.uio = udpio.New(conn, readBatch)
	u.cpr, err = newCPR(u)
	if err != nil {
		conn.Close()
		st.Close()
		return nil, err
	}
	return u, nil
}

// Config is the configuration in use (defaults filled in).
func (u *UPF) Config() Config { return u.cfg }

// Addr is the PFCP socket's address.
func (u *UPF) Addr() netip.AddrPort { return u.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Run serves until ctx ends.
func (u *UPF) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The data plane first: replay or reconcile before any request.
	u.resync(ctx)
	u.dec = newDecoders(u.cfg.Decoders)
	u.wg.Add(4 + len(u.dec.ch))
	for _, ch := range u.dec.ch {
		go func() { defer u.wg.Done(); u.runDecoder(ctx, ch) }()
	}
	go func() { defer u.wg.Done(); u.applier(ctx) }()
	go func() { defer u.wg.Done(); u.completer(ctx) }()
	go func() { defer u.wg.Done(); u.timers(ctx) }()
	go func() { defer u.wg.Done(); u.cpr.run(ctx) }()
	for _, a := range u.nodes.all() {
		u.associate(a.peer, a.node)
	}
	for _, p := range u.cfg.Associate {
		if u.nodes.byAddr(p.Addr()) == nil {
			u.associate(p, "")
		}
	}
	err := u.reader(ctx)
	cancel()
	u.conn.Close()
	u.wg.Wait()
	return err
}

// Close releases the socket, the data-plane client and the store.
func (u *UPF) Close() {
	u.closeOne.Do(func() {
		u.conn.Close()
		u.cpr.close()
		u.dp.Close()
		u.store.Close()
	})
}

// readBatch is how many datagrams (or coalesced buffers of datagrams:
// UDP GRO) one recvmmsg takes.  At 10,000 requests a second one system
// call per message each way was 14 % of the function's time; with the
// offloads a burst of a peer's requests is one trip through the kernel
// (package udpio).
const readBatch = 64

func (u *UPF) reader(ctx context.Context) error {
	go func() { <-ctx.Done(); u.conn.SetReadDeadline(time.Now()) }()
	for {
		// One reading of the clock for the datagrams of one recvmmsg
		// (their arrival, as far as the function's timers care): two a
		// request, for the duplicate cache and the session's model, were
		// 3 % of an establishment.
		var at time.Time
		err := u.uio.Read(func(b []byte, peer netip.AddrPort, trunc bool) {
			if trunc {
				u.c.malformed[wire.ProblemHeaderLength].Add(1)
				return
			}
			if at.IsZero() {
				at = u.now()
			}
			u.datagramAt(b, peer, at)
		})
		u.dec.flush(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
		}
	}
}

// datagram handles every message of one datagram (clause 7.2.1A
// bundles), received now.
func (u *UPF) datagram(b []byte, peer netip.AddrPort) { u.datagramAt(b, peer, u.now()) }

// datagramAt is datagram for a datagram received at at.
func (u *UPF) datagramAt(b []byte, peer netip.AddrPort, at time.Time) {
	// Nearly every datagram is one message: no list of one to allocate.
	if h, werr := wire.ParseHeader(b); werr == nil && !h.FO && int(h.Length)+4 == len(b) {
		u.message(b, peer, at)
		return
	}
	msgs, werr := wire.Split(b)
	for _, m := range msgs {
		u.message(m, peer, at)
	}
	if werr == nil {
		return
	}
	u.c.malformed[werr.Problem].Add(1)
	if werr.Problem == wire.ProblemVersion {
		// Clause 7.6.2: answer with our version.
		rest := b
		for _, m := range msgs {
			rest = rest[len(m):]
		}
		if h, _ := wire.ParseHeader(rest); h.HdrLen > 0 {
			u.send(peer, message.NewVersionNotSupportedResponse(h.Sequence))
		}
	}
}

func isRequest(t uint8) bool {
	switch t {
	case message.MsgTypeHeartbeatRequest, message.MsgTypePFDManagementRequest,
		message.MsgTypeAssociationSetupRequest, message.MsgTypeAssociationUpdateRequest,
		message.MsgTypeAssociationReleaseRequest, message.MsgTypeNodeReportRequest,
		message.MsgTypeSessionSetDeletionRequest, message.MsgTypeSessionEstablishmentRequest,
		message.MsgTypeSessionModificationRequest, message.MsgTypeSessionDeletionRequest,
		message.MsgTypeSessionReportRequest:
		return true
	}
	return false
}

func isResponse(t uint8) bool {
	switch t {
	case message.MsgTypeHeartbeatResponse, message.MsgTypePFDManagementResponse,
		message.MsgTypeAssociationSetupResponse, message.MsgTypeAssociationUpdateResponse,
		message.MsgTypeAssociationReleaseResponse, message.MsgTypeVersionNotSupportedResponse,
		message.MsgTypeNodeReportResponse, message.MsgTypeSessionSetDeletionResponse,
		message.MsgTypeSessionEstablishmentResponse, message.MsgTypeSessionModificationResponse,
		message.MsgTypeSessionDeletionResponse, message.MsgTypeSessionReportResponse:
		return true
	}
	return false
}

func isSessionMsg(t uint8) bool { return t >= 50 && t <= 57 }

// message handles one message, received at at.  A decoder panic (go-pfcp on input its
// author did not foresee) is caught here: the request is answered "System
// failure" when possible and counted; the function goes on.
func (u *UPF) message(m []byte, peer netip.AddrPort, at time.Time) {
	h, werr := wire.ParseHeader(m)
	if werr != nil {
		u.c.malformed[werr.Problem].Add(1)
		return
	}
	u.c.rx[h.Type].Add(1)
	if isResponse(h.Type) {
		u.onResponse(h, m, peer)
		return
	}
	if !isRequest(h.Type) {
		u.c.unknownType.Add(1) // clause 7.6: discarded
		return
	}
	if isSessionMsg(h.Type) != h.HasSEID {
		u.c.malformed[wire.ProblemHeaderLength].Add(1)
		return
	}
	verdict, cached, dup := u.dups.BeginEntry(peer, h.Sequence, requestSum(m), at)
	switch verdict {
	case dupReused:
		u.c.seqReused.Add(1)
	case dupInFlight:
		u.c.dupInFlight.Add(1)
		return
	case dupAnswered:
		u.c.dupAnswered.Add(1)
		u.write(peer, cached)
		return
	}
	u.handoff(m, h, peer, dup, at)
}

// process handles a request that waited for its session (it is in the
// duplicate cache already, unanswered).
func (u *UPF) process(m []byte, peer netip.AddrPort) {
	h, werr := wire.ParseHeader(m)
	if werr != nil {
		return
	}
	u.decode(m, h, peer, nil, nil, true, u.now()) // m is the waiting request's own copy
}

// decode decodes and handles one request that passed framing and the
// duplicate cache.  sc is the calling goroutine's room for the IEs (nil:
// allocated): nothing keeps an IE past the handling of its message.  dup
// is its entry in the duplicate cache (nil: looked up when answered).
// own says m is the function's own copy, never written again (a
// decoder's slab, a waiting request's copy), rather than the receive
// buffer the next recvmmsg overwrites: what keeps the bytes past the
// message's handling (a new session's stored form) may then alias them
// instead of copying.  at is when it arrived.
func (u *UPF) decode(m []byte, h wire.Header, peer netip.AddrPort, sc *wire.Scratch, dup *rxEntry, own bool, at time.Time) {
	defer func() {
		if r := recover(); r != nil {
			u.c.panics.Add(1)
			slog.Error("pfcp: decoder panic", "type", h.Type, "peer", peer, "panic", fmt.Sprint(r))
			u.refuse(peer, h, reject(ie.CauseSystemFailure, 0, "internal error"))
		}
	}()
	if sc == nil {
		sc = new(wire.Scratch)
	}
	ies, werr := sc.Decode(wire.Body(m, h))
	if werr != nil {
		u.c.malformed[werr.Problem].Add(1)
		cause := uint8(ie.CauseInvalidLength)
		if werr.Problem == wire.ProblemNesting {
			cause = ie.CauseMandatoryIEIncorrect
		}
		u.refuse(peer, h, reject(cause, werr.IEType, "%s", werr.Msg))
		return
	}
	u.dispatch(peer, h, m, ies, dup, own, at)
}

func (u *UPF) dispatch(peer netip.AddrPort, h wire.Header, raw []byte, ies []*ie.IE, dup *rxEntry, own bool, at time.Time) {
	switch h.Type {
	case message.MsgTypeHeartbeatRequest:
		u.onHeartbeat(peer, h.Sequence, ies)
		return
	case message.MsgTypeAssociationSetupRequest:
		u.onAssociationSetup(peer, h.Sequence, ies)
		return
	}
	// Everything else needs an association with the sender (clause 6.2.6.1).
	if u.nodes.byAddr(peer.Addr()) == nil {
		u.c.unassociated.Add(1)
		if !u.mute.Allow() {
			// A flood from an unknown node: counted, not answered beyond
			// the rate limit (no amplification, no cost per message).
			u.c.unassocMuted.Add(1)
			u.dups.Forget(peer, h.Sequence)
			return
		}
		rj := reject(ie.CauseNoEstablishedPFCPAssociation, 0, "no association with %s", peer.Addr())
		if fs := findIE(ies, ie.FSEID); fs != nil && h.Type == message.MsgTypeSessionEstablishmentRequest {
			if f, bad := decodeFSEID(fs); bad == nil {
				rj.cpSEID = f.SEID
			}
		}
		u.refuse(peer, h, rj)
		return
	}
	switch h.Type {
	case message.MsgTypeAssociationUpdateRequest:
		u.onAssociationUpdate(peer, h.Sequence, ies)
	case message.MsgTypeAssociationReleaseRequest:
		u.onAssociationRelease(peer, h.Sequence, ies)
	case message.MsgTypeSessionEstablishmentRequest:
		u.onEstablish(peer, h, raw, ies, dup, own, at)
	case message.MsgTypeSessionModificationRequest:
		u.onModify(peer, h, raw, ies, at)
	case message.MsgTypeSessionDeletionRequest:
		u.onDelete(peer, h, raw)
	default:
		// PFD management, node reports, session set deletion, a session
		// report from the peer: not offered by this function.
		u.refuse(peer, h, reject(ie.CauseServiceNotSupported, 0, "message type %d is not supported", h.Type))
	}
}

// --- answers -----------------------------------------------------------------

func (u *UPF) write(peer netip.AddrPort, b []byte) {
	if len(b) > 1 {
		u.c.tx[b[1]].Add(1)
	}
	u.conn.WriteToUDPAddrPort(b, peer)
}

// writeAll sends many datagrams with as few trips through the kernel as
// it allows (sendmmsg; answers of one size to one peer as one UDP GSO
// buffer).
func (u *UPF) writeAll(out []udpio.Datagram) {
	for _, o := range out {
		if len(o.B) > 1 {
			u.c.tx[o.B[1]].Add(1)
		}
	}
	u.uio.Write(out)
}

func (u *UPF) marshal(m message.Message) []byte {
	b := make([]byte, m.MarshalLen())
	if err := m.MarshalTo(b); err != nil {
		slog.Error("pfcp: marshal", "type", m.MessageType(), "err", err)
		return nil
	}
	return b
}

func (u *UPF) send(peer netip.AddrPort, m message.Message) {
	if b := u.marshal(m); b != nil {
		u.write(peer, b)
	}
}

// answer sends the response to request seq and keeps it for duplicates.
func (u *UPF) answer(peer netip.AddrPort, seq uint32, m message.Message) {
	if b := u.answerBytes(peer, seq, m); b != nil {
		u.write(peer, b)
	}
}

// answerBytes encodes a response and keeps it for duplicates; the caller
// sends it.
func (u *UPF) answerBytes(peer netip.AddrPort, seq uint32, m message.Message) []byte {
	b := u.marshal(m)
	if b == nil {
		u.dups.Forget(peer, seq)
		return nil
	}
	if c := causeOf(m); c != 0 {
		u.c.causes[c].Add(1)
	}
	u.dups.Answer(peer, seq, b)
	return b
}

func causeOf(m message.Message) uint8 {
	var c *ie.IE
	switch r := m.(type) {
	case *message.SessionEstablishmentResponse:
		c = r.Cause
	case *message.SessionModificationResponse:
		c = r.Cause
	case *message.SessionDeletionResponse:
		c = r.Cause
	case *message.AssociationSetupResponse:
		c = r.Cause
	case *message.AssociationUpdateResponse:
		c = r.Cause
	case *message.AssociationReleaseResponse:
		c = r.Cause
	case *message.Generic:
		for _, i := range r.IEs {
			if i.Type == ie.Cause {
				c = i
			}
		}
	}
	if c == nil {
		return 0
	}
	v, _ := c.Cause()
	return v
}

// refuse answers a request with a cause, in the response type of the
// request, with the Offending IE and Failed Rule ID when known.  A session
// response carries the control plane's SEID when we know the session, 0
// when we do not (clause 7.2.2.4.2).
func (u *UPF) refuse(peer netip.AddrPort, h wire.Header, rj *Reject) {
	seq := h.Sequence
	extra := []*ie.IE{ie.NewCause(rj.Cause)}
	if rj.IE != 0 {
		extra = append(extra, ie.NewOffendingIE(rj.IE))
	}
	if rj.HasRule {
		extra = append(extra, ie.NewFailedRuleID(rj.RuleType, rj.RuleID))
	}
	var seid uint64
	if isSessionMsg(h.Type) {
		seid = u.cpSEIDOf(h.SEID)
	}
	var m message.Message
	switch h.Type {
	case message.MsgTypeHeartbeatRequest:
		m = message.NewHeartbeatResponse(seq, ie.NewRecoveryTimeStamp(u.recovery))
	case message.MsgTypeAssociationSetupRequest:
		m = message.NewAssociationSetupResponse(seq, u.nodeIDIE(), ie.NewCause(rj.Cause), ie.NewRecoveryTimeStamp(u.recovery))
	case message.MsgTypeAssociationUpdateRequest:
		m = message.NewAssociationUpdateResponse(seq, u.nodeIDIE(), ie.NewCause(rj.Cause))
	case message.MsgTypeAssociationReleaseRequest:
		m = message.NewAssociationReleaseResponse(seq, u.nodeIDIE(), ie.NewCause(rj.Cause))
	case message.MsgTypePFDManagementRequest:
		m = message.NewPFDManagementResponse(seq, ie.NewCause(rj.Cause), offending(rj))
	case message.MsgTypeNodeReportRequest:
		m = message.NewNodeReportResponse(seq, u.nodeIDIE(), ie.NewCause(rj.Cause), offending(rj))
	case message.MsgTypeSessionSetDeletionRequest:
		m = message.NewSessionSetDeletionResponse(seq, u.nodeIDIE(), ie.NewCause(rj.Cause), offending(rj))
	case message.MsgTypeSessionEstablishmentRequest:
		if h.SEID == 0 {
			seid = rj.cpSEID
		}
		m = message.NewSessionEstablishmentResponse(0, 0, seid, seq, 0, append([]*ie.IE{u.nodeIDIE()}, extra...)...)
	case message.MsgTypeSessionModificationRequest:
		m = message.NewSessionModificationResponse(0, 0, seid, seq, 0, extra...)
	case message.MsgTypeSessionDeletionRequest:
		m = message.NewSessionDeletionResponse(0, 0, seid, seq, 0, extra...)
	case message.MsgTypeSessionReportRequest:
		m = message.NewSessionReportResponse(0, 0, seid, seq, 0, extra...)
	default:
		u.dups.Forget(peer, seq)
		return
	}
	u.answer(peer, seq, m)
}

func offending(rj *Reject) *ie.IE {
	if rj.IE == 0 {
		return nil
	}
	return ie.NewOffendingIE(rj.IE)
}

// cpSEIDOf is the control plane's SEID of our session seid (0: unknown).
func (u *UPF) cpSEIDOf(seid uint64) uint64 {
	u.st.mu.Lock()
	defer u.st.mu.Unlock()
	if e := u.st.sess.Get(seid); e != nil && e.s != nil {
		return e.s.CPSEID
	}
	return 0
}

// request sends one of our requests and retransmits it until its answer
// (done(resp, true)) or N1 retransmissions (done(nil, false)).
func (u *UPF) request(peer netip.AddrPort, m message.Message, seq uint32, done func([]byte, bool)) {
	if m == nil {
		return
	}
	b := u.marshal(m)
	if b == nil {
		return
	}
	u.out.Add(peer, seq, b, u.now(), done)
	u.write(peer, b)
}

func (u *UPF) onResponse(h wire.Header, m []byte, peer netip.AddrPort) {
	r, ok := u.out.Match(peer, h.Sequence, h.Type)
	if !ok {
		u.c.lateResponses.Add(1)
		return
	}
	if r.done != nil {
		r.done(append([]byte(nil), m...), true)
	}
}
