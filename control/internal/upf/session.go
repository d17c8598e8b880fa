package upf

import (
	"encoding/binary"
	"net/netip"
	"reflect"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/bbf"
	"edgeplane/control/internal/pfcp/wire"
)

// Session procedures (TS 29.244 clause 6.3).  Each request is planned on
// the reader goroutine under the state lock -- parsed into the session
// model, translated, its resources reserved -- and becomes an op; ops with
// data-plane work go to the applier, ops without are committed at once.
// One op per session at a time: a request for a session with one in flight
// waits in the session's queue (a control plane does not usually send
// them, but it may, and the order must hold).

type opKind uint8

const (
	opEstablish opKind = iota
	opModify
	opDelete
	opPurge
	opDeleteQuiet // deletion asked by nobody (the CP no longer knows the session)
)

type op struct {
	kind   opKind
	seid   uint64
	peer   netip.AddrPort
	seq    uint32
	dup    *rxEntry // the request's entry in the duplicate cache (nil: looked up)
	cpSEID uint64   // header SEID of the answer
	node   string
	epoch  uint64

	prev, next         *Session
	prevPlan, nextPlan *Plan
	prevSub, nextSub   uint32
	add                *dpctl.Subscriber // the data plane gets this subscriber (added or replaced)
	addSub             dpctl.Subscriber  // where add points (the op's own: no allocation of its own)
	del                uint32            // the data plane loses this subscriber id

	readUsage bool  // counters first: reports in the answer
	usage     Usage // what they said
	usageOK   bool
	reportURR []uint32        // URRs reported in the answer
	trigger   [3]uint8        // their Usage Report Trigger octets
	reported  map[uint32]bool // removed URRs: reported from prev

	dropAssoc bool
	then      func()

	tries int
	raw   []byte // a new session's establishment IEs (its stored form)
}

// top-level IEs of an establishment and of a modification that are
// informational or handled elsewhere, and those refused.
func (p *parser) topLevel(t uint16, c *ie.IE, establishment bool) *Reject {
	switch t {
	case ie.NodeID, ie.FSEID, ie.CreatePDR, ie.CreateFAR, ie.CreateURR, ie.CreateQER, ie.CreateTrafficEndpoint,
		ie.PDNType, ie.RecoveryTimeStamp, ie.UserID, ie.APNDNN, ie.TraceInformation, ie.SNSSAI, ie.FQCSID,
		ie.PFCPSEReqFlags, ie.PFCPSMReqFlags, ie.QueryURR, ie.QueryURRReference:
		return nil
	case ie.RemovePDR, ie.RemoveFAR, ie.RemoveURR, ie.RemoveQER, ie.RemoveTrafficEndpoint,
		ie.UpdatePDR, ie.UpdateFAR, ie.UpdateURR, ie.UpdateQER, ie.UpdateTrafficEndpoint:
		if establishment {
			return reject(ie.CauseMandatoryIEIncorrect, t, "IE type %d in an establishment", t)
		}
		return nil
	}
	if bbf.Is(c, bbf.MTU) {
		return nil
	}
	if bbf.Is(c, bbf.PPPLCPConnectivity) {
		return reject(ie.CauseServiceNotSupported, t,
			"PPP LCP Connectivity: LCP keepalive offload is not offered (BBF UP Function Features)")
	}
	return p.unhandled(0, c)
}

func (u *UPF) fseidIE(seid uint64) *ie.IE {
	a := u.cfg.Listen.Addr()
	if a.IsUnspecified() {
		if n, err := netip.ParseAddr(u.cfg.NodeID); err == nil {
			a = n
		}
	}
	if a.Is6() && !a.Is4In6() {
		return ie.NewFSEID(seid, nil, a.AsSlice())
	}
	return ie.NewFSEID(seid, a.Unmap().AsSlice(), nil)
}

func (u *UPF) onEstablish(peer netip.AddrPort, h wire.Header, raw []byte, ies []*ie.IE, dup *rxEntry, own bool, now time.Time) {
	var p parser
	defer func() { u.c.ignoredIEs.Add(uint64(p.ignored)) }()
	nid, fs := findIE(ies, ie.NodeID), findIE(ies, ie.FSEID)
	if nid == nil {
		u.refuse(peer, h, reject(ie.CauseMandatoryIEMissing, ie.NodeID, "no Node ID"))
		return
	}
	if fs == nil {
		u.refuse(peer, h, reject(ie.CauseMandatoryIEMissing, ie.FSEID, "no CP F-SEID"))
		return
	}
	node, rj := decodeNodeID(nid)
	if rj != nil {
		u.refuse(peer, h, rj)
		return
	}
	f, rj := decodeFSEID(fs)
	if rj != nil {
		u.refuse(peer, h, rj)
		return
	}
	epoch, ok := u.nodes.epochOf(node)
	if !ok {
		rj := reject(ie.CauseNoEstablishedPFCPAssociation, ie.NodeID, "no association with node %s", node)
		rj.cpSEID = f.SEID
		u.refuse(peer, h, rj)
		return
	}
	refuse := func(rj *Reject) {
		rj.cpSEID = f.SEID
		u.refuse(peer, h, rj)
	}
	if len(u.applyCh) >= cap(u.applyCh)-1 {
		u.c.congestion.Add(1)
		refuse(reject(ie.CausePFCPEntityInCongestion, 0, "%d changes waiting", len(u.applyCh)))
		return
	}
	s, rj := p.establishment(node, f, ies, now)
	if rj != nil {
		refuse(rj)
		return
	}

	// Translated before the state's lock (a pure function of the
	// session: the decoders translate in parallel), the SEID filled in
	// when the lock hands one out.
	plan, rj := Translate(s, u.env)
	if rj != nil {
		refuse(rj)
		return
	}
	st := u.st
	st.mu.Lock()
	// An establishment for a CP F-SEID we hold replaces that session: the
	// control plane lost our answer (or we restarted before sending it)
	// and asks again; the subscriber keeps its id and its counters.
	if old, held := st.byCP.Get(node, f.SEID); held {
		e := st.sess.Get(old)
		if e.busy {
			st.mu.Unlock()
			refuse(reject(ie.CauseRequestRejected, ie.FSEID, "CP F-SEID %#x: its session is changing", f.SEID))
			return
		}
		s.SEID = old
		o, rj := u.planChange(e, s, opModify, nil)
		if rj != nil {
			st.mu.Unlock()
			refuse(rj)
			return
		}
		o.kind = opEstablish
		o.peer, o.seq, o.cpSEID, o.node, o.epoch, o.dup = peer, h.Sequence, f.SEID, node, epoch, dup
		st.mu.Unlock()
		u.submit(o)
		return
	}
	s.SEID = st.nextSEID
	st.nextSEID++
	plan.setSEID(s.SEID)
	e := &entry{s: s}
	o, rj := u.planChange(e, s, opEstablish, plan)
	if rj != nil {
		st.mu.Unlock()
		refuse(rj)
		return
	}
	st.sess.Set(s.SEID, e)
	st.byCP.Set(node, f.SEID, s.SEID)
	o.peer, o.seq, o.cpSEID, o.node, o.epoch, o.dup = peer, h.Sequence, f.SEID, node, epoch, dup
	// The request itself is what the store keeps of a new session,
	// until the commit copies it into the log's frame: the bytes as they
	// are when they are the function's own (a decoder's slab; its fresh
	// memory a copy a session was 6 % of the function in the bench),
	// else a copy.
	o.raw = storedForm(raw, h, own)
	st.mu.Unlock()
	u.submit(o)
}

// storedForm is an establishment's IEs as the store keeps them: m's
// own bytes (capacity clipped: nothing appends into its neighbours) when
// m is the function's own copy, else a copy of them.
func storedForm(m []byte, h wire.Header, own bool) []byte {
	b := wire.Body(m, h)
	if own {
		return b[:len(b):len(b)]
	}
	return append([]byte(nil), b...)
}

// establishment builds a new session from an establishment's IEs (also
// how a stored one is read back: the same code, the same result).
func (p *parser) establishment(node string, f fseid, ies []*ie.IE, now time.Time) (*Session, *Reject) {
	// The rule maps are made by rules(), sized by the Create IEs; a kind
	// of rule the request does not create stays a nil map (read as
	// empty; modifications work on a clone, whose maps all exist).
	var s *Session
	s, p.room = newSessionBlock(countCreates(ies))
	s.Created = now
	s.CPSEID, s.CPAddr, s.CPNode = f.SEID, f.Addr, node
	for _, c := range ies {
		if rj := p.topLevel(c.Type, c, true); rj != nil {
			return nil, rj
		}
		switch {
		case c.Type == ie.PDNType:
			v, rj := u8(c)
			if rj != nil {
				return nil, rj
			}
			s.PDNType = v & 0x07
			if s.PDNType == 4 || s.PDNType == 0 || s.PDNType > 5 {
				return nil, reject(ie.CauseServiceNotSupported, c.Type, "PDN type %d: IPv4, IPv6, IPv4v6 or Ethernet", s.PDNType)
			}
		case bbf.Is(c, bbf.MTU):
			m, err := bbf.ParseMTU(c)
			if err != nil {
				return nil, badIE(c, err)
			}
			if m < 576 {
				return nil, reject(ie.CauseMandatoryIEIncorrect, c.Type, "MTU %d below 576", m)
			}
			s.MTU = m
		}
	}
	if findIE(ies, ie.CreatePDR) == nil {
		return nil, reject(ie.CauseMandatoryIEMissing, ie.CreatePDR, "no Create PDR")
	}
	if findIE(ies, ie.CreateFAR) == nil {
		return nil, reject(ie.CauseMandatoryIEMissing, ie.CreateFAR, "no Create FAR")
	}
	if rj := p.rules(s, ies, now); rj != nil {
		return nil, rj
	}
	return s, nil
}

// planChange translates next (unless plan is its translation already),
// reserves what it needs beyond what e holds, and builds the op; the
// caller holds the state lock.  On a refusal nothing is reserved.
func (u *UPF) planChange(e *entry, next *Session, kind opKind, plan *Plan) (*op, *Reject) {
	st := u.st
	if plan == nil {
		var rj *Reject
		if plan, rj = Translate(next, u.env); rj != nil {
			return nil, rj
		}
	}
	var prevPlan *Plan
	if e.live {
		prevPlan = e.plan
	}
	st.chooseTEIDs(plan, e.s.Chosen)
	if rj := st.reserve(next.SEID, plan, prevPlan); rj != nil {
		return nil, rj
	}
	o := &op{kind: kind, seid: next.SEID, next: next, nextPlan: plan, prevPlan: prevPlan}
	if e.live {
		o.prev, o.prevSub = e.s, e.subID
	}
	unreserve := func() { st.release(next.SEID, plan, prevPlan) }
	if plan.Sub != nil {
		if rj := u.prof.Admit(plan.Sub); rj != nil {
			unreserve()
			return nil, rj
		}
		o.nextSub = o.prevSub
		if o.nextSub == 0 {
			id, ok := st.allocID()
			if !ok {
				unreserve()
				return nil, reject(ie.CauseNoResourcesAvailable, ie.CreatePDR, "all %d subscriber ids are in use", st.maxID)
			}
			o.nextSub = id
		}
		sub := plan.Sub.Subscriber(o.nextSub)
		if o.prevSub == 0 || prevPlan == nil || prevPlan.Sub == nil ||
			!reflect.DeepEqual(prevPlan.Sub.Subscriber(o.prevSub), sub) {
			o.addSub = sub
			o.add = &o.addSub
		}
	} else if o.prevSub != 0 {
		o.del = o.prevSub
	}
	e.busy = true
	return o, nil
}

// submit hands an op to the applier, or commits it at once when the data
// plane has nothing to do for it.
func (u *UPF) submit(o *op) {
	if o.add == nil && o.del == 0 && !o.readUsage {
		u.finish([]*op{o})
		return
	}
	u.applyCh <- o
}

func (u *UPF) entryFor(peer netip.AddrPort, h wire.Header, raw []byte) *entry {
	u.st.mu.Lock()
	e := u.st.sess.Get(h.SEID)
	if e == nil {
		u.st.mu.Unlock()
		u.refuse(peer, h, reject(ie.CauseSessionContextNotFound, 0, "no session %#x", h.SEID))
		return nil
	}
	if e.busy {
		e.queue = append(e.queue, queued{peer: peer, msg: append([]byte(nil), raw...)})
		u.st.mu.Unlock()
		return nil
	}
	return e // locked
}

func (u *UPF) onModify(peer netip.AddrPort, h wire.Header, raw []byte, ies []*ie.IE, now time.Time) {
	var p parser
	defer func() { u.c.ignoredIEs.Add(uint64(p.ignored)) }()
	e := u.entryFor(peer, h, raw)
	if e == nil {
		return
	}
	st := u.st
	cur := e.s
	unlockRefuse := func(rj *Reject) {
		st.mu.Unlock()
		u.refuse(peer, h, rj)
	}
	if _, ok := u.nodes.epochOf(cur.CPNode); !ok {
		unlockRefuse(reject(ie.CauseNoEstablishedPFCPAssociation, 0, "no association with node %s", cur.CPNode))
		return
	}
	next := cur.clone()
	for _, c := range ies {
		if rj := p.topLevel(c.Type, c, false); rj != nil {
			unlockRefuse(rj)
			return
		}
	}
	if fs := findIE(ies, ie.FSEID); fs != nil {
		f, rj := decodeFSEID(fs)
		if rj != nil {
			unlockRefuse(rj)
			return
		}
		next.CPSEID, next.CPAddr = f.SEID, f.Addr
	}
	if rj := p.rules(next, ies, now); rj != nil {
		unlockRefuse(rj)
		return
	}
	// Usage reports in the answer: URRs removed (their last report,
	// clause 5.2.2.3.1), URRs queried (Query URR), all of them (QAURR).
	var report []uint32
	trig := [3]uint8{}
	for id := range cur.URRs.All() {
		if _, kept := next.URRs.Lookup(id); !kept {
			report = append(report, id)
			trig[1] |= 0x08 // TERMR: the URR is removed
		}
	}
	reported := map[uint32]bool{}
	for _, id := range report {
		reported[id] = true
	}
	query := func(id uint32) *Reject {
		if _, ok := next.URRs.Lookup(id); !ok {
			return ruleReject(ie.CauseRuleCreationModificationFailure, RuleURR, id, ie.QueryURR, "Query URR %d: no such URR", id)
		}
		if !reported[id] {
			report = append(report, id)
			reported[id] = true
		}
		trig[0] |= 0x80 // IMMER: immediate report
		return nil
	}
	for _, c := range ies {
		switch c.Type {
		case ie.QueryURR:
			id, rj := idOf(c, ie.URRID)
			if rj == nil {
				rj = query(id)
			}
			if rj != nil {
				unlockRefuse(rj)
				return
			}
		case ie.PFCPSMReqFlags:
			if len(c.Payload) > 0 && c.Payload[0]&0x04 != 0 { // QAURR
				for id := range next.URRs.All() {
					if rj := query(id); rj != nil {
						unlockRefuse(rj)
						return
					}
				}
			}
		}
	}
	o, rj := u.planChange(e, next, opModify, nil)
	if rj != nil {
		unlockRefuse(rj)
		return
	}
	o.peer, o.seq, o.cpSEID, o.node = peer, h.Sequence, next.CPSEID, next.CPNode
	o.epoch, _ = u.nodes.epochOf(next.CPNode)
	o.reportURR, o.trigger, o.reported = report, trig, reported
	// Counters are read for the reports, and when a URR is created on a
	// subscriber that already counts: its measurement starts from now.
	newURR := false
	for id := range next.URRs.All() {
		if _, had := cur.URRs.Lookup(id); !had {
			newURR = true
		}
	}
	o.readUsage = e.subID != 0 && (len(report) > 0 || newURR)
	st.mu.Unlock()
	u.submit(o)
}

func (u *UPF) onDelete(peer netip.AddrPort, h wire.Header, raw []byte) {
	e := u.entryFor(peer, h, raw)
	if e == nil {
		return
	}
	o := u.planDelete(e, opDelete)
	o.peer, o.seq = peer, h.Sequence
	u.st.mu.Unlock()
	u.submit(o)
}

// planDelete builds the deletion of e (state lock held): the subscriber
// goes, every URR is reported (TERMR).
func (u *UPF) planDelete(e *entry, kind opKind) *op {
	s := e.s
	o := &op{kind: kind, seid: s.SEID, prev: s, prevPlan: e.plan, prevSub: e.subID, del: e.subID,
		cpSEID: s.CPSEID, node: s.CPNode}
	o.epoch, _ = u.nodes.epochOf(s.CPNode)
	for id := range s.URRs.All() {
		o.reportURR = append(o.reportURR, id)
	}
	o.trigger[1] = 0x08 // TERMR
	o.readUsage = len(o.reportURR) > 0 && e.subID != 0
	e.busy = true
	return o
}

// purge deletes every session of a control plane (association release,
// restart, loss); then runs when it is done.
func (u *UPF) purge(node string, dropAssoc bool, then func()) {
	u.nodes.mu.Lock()
	if a := u.nodes.byNode[node]; a != nil {
		a.epoch++ // void the ops planned for the old association
	}
	u.nodes.mu.Unlock()
	u.applyCh <- &op{kind: opPurge, node: node, dropAssoc: dropAssoc, then: then}
}

// causeAccepted is the Cause of every accepted request's answer, built
// once (IEs are only read once built).
var causeAccepted = ie.NewCause(ie.CauseRequestAccepted)

// sessionResponse builds the answer of a successful op.
func (u *UPF) sessionResponse(o *op) message.Message {
	ok := causeAccepted
	switch o.kind {
	case opEstablish:
		ies := []*ie.IE{u.nodeIDIE(), ok, u.fseidIE(o.seid)}
		ies = append(ies, u.created(o.nextPlan)...)
		return message.NewSessionEstablishmentResponse(0, 0, o.cpSEID, o.seq, 0, ies...)
	case opModify:
		ies := append([]*ie.IE{ok}, u.created(o.nextPlan)...)
		ies = append(ies, u.usageReports(o, ie.UsageReportWithinSessionModificationResponse)...)
		return message.NewSessionModificationResponse(0, 0, o.cpSEID, o.seq, 0, ies...)
	case opDelete:
		ies := append([]*ie.IE{ok}, u.usageReports(o, ie.UsageReportWithinSessionDeletionResponse)...)
		return message.NewSessionDeletionResponse(0, 0, o.cpSEID, o.seq, 0, ies...)
	}
	return nil
}

// establishedTemplate is the encoded Session Establishment Response of
// an establishment that created no F-TEID (every session without a
// CHOOSE: all but the redirect's): header, our Node ID, Cause "Request
// accepted", our F-SEID.  Only the header's SEID and sequence number and
// the F-SEID's SEID differ from one answer to the next; copying the
// template and writing those is what answering costs, where go-pfcp's
// message, its IEs and their encoding were six allocations and a walk of
// the message's fields.  TestEstablishedAnswerBytes checks it against
// go-pfcp's encoding.
type establishedTemplate struct {
	b       []byte
	seidOff int // the F-SEID's SEID in b
}

// establishedBytes encodes the answer of an accepted establishment that
// created no F-TEID; nil for any other answer (sessionResponse's work).
func (u *UPF) establishedBytes(o *op) []byte {
	if o.kind != opEstablish || o.nextPlan == nil || createsTEID(o.nextPlan) {
		return nil
	}
	u.estOnce.Do(func() {
		m := message.NewSessionEstablishmentResponse(0, 0, 0, 0, 0, u.nodeIDIE(), causeAccepted, u.fseidIE(0))
		b := u.marshal(m)
		// The F-SEID is the last IE: its SEID follows the IE's type,
		// length and flags octet.
		f := u.fseidIE(0)
		if b == nil || len(b) < f.MarshalLen() {
			return
		}
		u.est = &establishedTemplate{b: b, seidOff: len(b) - f.MarshalLen() + 5}
	})
	t := u.est
	if t == nil {
		return nil
	}
	b := append([]byte(nil), t.b...)
	binary.BigEndian.PutUint64(b[4:], o.cpSEID) // the header's SEID: the CP's
	b[12], b[13], b[14] = byte(o.seq>>16), byte(o.seq>>8), byte(o.seq)
	binary.BigEndian.PutUint64(b[t.seidOff:], o.seid)
	return b
}

// createsTEID says whether a plan's answer lists F-TEIDs we chose.
func createsTEID(p *Plan) bool {
	for _, d := range p.CPRDown {
		if d.choose {
			return true
		}
	}
	return false
}

// created lists the F-TEIDs we chose: Created PDR for a PDI's CHOOSE,
// Created Traffic Endpoint for an endpoint's.
func (u *UPF) created(p *Plan) []*ie.IE {
	var out []*ie.IE
	gtpu := u.cpr.localAddr()
	seenTE := map[uint8]bool{}
	for _, d := range p.CPRDown {
		if !d.choose {
			continue
		}
		f := ie.NewFTEID(0x01, d.TEID, gtpu.AsSlice(), nil, 0)
		if d.fromTE {
			if !seenTE[d.te] {
				seenTE[d.te] = true
				out = append(out, ie.NewCreatedTrafficEndpoint(ie.NewTrafficEndpointID(d.te), f))
			}
			continue
		}
		out = append(out, ie.NewCreatedPDR(ie.NewPDRID(d.PDR), f))
	}
	return out
}
