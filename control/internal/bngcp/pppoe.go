package bngcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pppoe"
)

// PPPoE discovery (RFC 2516 section 5), the access concentrator's side:
//
//	client                         BNG
//	PADI (broadcast) ------------> admit (rate limits), service offered?
//	              <--------------- PADO: AC-Name, Service-Name, Host-Uniq,
//	                               Relay-Session-Id, AC-Cookie (no state kept)
//	PADR (unicast) -------------->  cookie valid? session id, session
//	              <--------------- PADS: session id; LCP waits (passive)
//	LCP Configure-Request ------->  ours, then the Ack (pppsess.go start)
//	PADT either way               the session ends
//
// The AC-Cookie is an HMAC of the client's port, tags and MAC and the
// current minute under a key of this process: a PADI costs an answer and
// no memory, so a flood of them (spoofed MACs included) fills nothing,
// and a PADR without a cookie we issued in the last two minutes is
// dropped.

const cookieLen = 16

func (s *Server) makeCookie(port string, l frame.Line, m frame.MAC, minute int64) []byte {
	h := hmac.New(sha256.New, s.cookie)
	h.Write([]byte(port))
	var b [20]byte
	binary.BigEndian.PutUint16(b[0:], l.STag)
	binary.BigEndian.PutUint16(b[2:], l.CTag)
	copy(b[4:10], m[:])
	binary.BigEndian.PutUint64(b[10:], uint64(minute))
	h.Write(b[:18])
	return h.Sum(nil)[:cookieLen]
}

func (s *Server) cookieOK(port string, l frame.Line, m frame.MAC, c []byte) bool {
	if len(c) != cookieLen {
		return false
	}
	now := s.now().Unix() / 60
	return hmac.Equal(c, s.makeCookie(port, l, m, now)) || hmac.Equal(c, s.makeCookie(port, l, m, now-1))
}

func (s *Server) pppoeOn() bool { return on(s.cfg.PPPoE.Enabled, true) }
func (s *Server) ipoeOn() bool  { return on(s.cfg.IPoE.Enabled, true) }

// serviceOK: the requested Service-Name is one we offer (an empty name
// asks for any service; an empty list offers any).
func (s *Server) serviceOK(name []byte) bool {
	if len(s.cfg.PPPoE.ServiceNames) == 0 || len(name) == 0 {
		return true
	}
	for _, n := range s.cfg.PPPoE.ServiceNames {
		if n == string(name) {
			return true
		}
	}
	return false
}

func (sh *shard) discovery(ev event, b []byte) {
	srv := sh.srv
	if !srv.pppoeOn() {
		srv.ctr.inc(cPPPoENoService)
		return
	}
	d, err := pppoe.ParseDiscovery(b)
	if err != nil {
		srv.ctr.inc(cPPPoEMalformed)
		return
	}
	switch d.Code {
	case pppoe.CodePADI:
		srv.ctr.inc(cPADIRx)
		sh.padi(ev, d)
	case pppoe.CodePADR:
		srv.ctr.inc(cPADRRx)
		sh.padr(ev, d)
	case pppoe.CodePADT:
		srv.ctr.inc(cPADTRx)
		sh.padt(ev, d)
	default:
		srv.ctr.inc(cPPPoEUnexpected)
	}
}

// echoTags are the client's tags an answer carries back (RFC 2516 5.2,
// 5.4: Host-Uniq; appendix A: Relay-Session-Id).
func echoTags(d *pppoe.Discovery) []pppoe.Tag {
	var out []pppoe.Tag
	if t, ok := d.Tag(pppoe.TagHostUniq); ok {
		out = append(out, t)
	}
	if t, ok := d.Tag(pppoe.TagRelaySessionID); ok {
		out = append(out, t)
	}
	return out
}

func lineIDOf(d *pppoe.Discovery) pppoe.LineID {
	for _, t := range d.Tags {
		if t.Type == pppoe.TagVendorSpecific {
			if l, ok := pppoe.ParseLineID(t.Value); ok {
				return l
			}
		}
	}
	return pppoe.LineID{}
}

func (sh *shard) sendDiscovery(ev event, code uint8, sid uint16, tags []pppoe.Tag) bool {
	b := frame.Append(make([]byte, 0, 128), ev.hdr.Src, ev.port.mac, ev.hdr.Line, frame.TypePPPoED)
	b, err := pppoe.AppendDiscovery(b, code, sid, tags...)
	if err != nil {
		return false
	}
	sh.send(ev.port, b)
	return true
}

func (sh *shard) padi(ev event, d *pppoe.Discovery) {
	srv := sh.srv
	// Exactly one Service-Name (RFC 2516 5.1); session id 0.
	svc, ok := d.Tag(pppoe.TagServiceName)
	if !ok || d.Count(pppoe.TagServiceName) != 1 || d.Session != 0 {
		srv.ctr.inc(cPPPoEMalformed)
		return
	}
	if !srv.serviceOK(svc.Value) {
		srv.ctr.inc(cPPPoENoService)
		return
	}
	if !sh.admit(circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}) {
		srv.ctr.inc(cPPPoERateLimited)
		return
	}
	tags := []pppoe.Tag{
		{Type: pppoe.TagACName, Value: []byte(srv.cfg.PPPoE.ACName)},
		svc,
	}
	tags = append(tags, echoTags(d)...)
	tags = append(tags, pppoe.Tag{Type: pppoe.TagACCookie,
		Value: srv.makeCookie(ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src, srv.now().Unix()/60)})
	if sh.sendDiscovery(ev, pppoe.CodePADO, 0, tags) {
		srv.ctr.inc(cPADOTx)
	}
}

func (sh *shard) padr(ev event, d *pppoe.Discovery) {
	srv := sh.srv
	if ev.hdr.Dst != ev.port.mac || d.Session != 0 {
		srv.ctr.inc(cPPPoEMalformed)
		return
	}
	svc, ok := d.Tag(pppoe.TagServiceName)
	if !ok || d.Count(pppoe.TagServiceName) != 1 {
		srv.ctr.inc(cPPPoEMalformed)
		return
	}
	cookie, _ := d.Tag(pppoe.TagACCookie)
	if !srv.cookieOK(ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src, cookie.Value) {
		srv.ctr.inc(cPPPoEBadCookie)
		return
	}
	if !srv.serviceOK(svc.Value) {
		srv.ctr.inc(cPPPoENoService)
		tags := append([]pppoe.Tag{svc, {Type: pppoe.TagServiceNameError}}, echoTags(d)...)
		sh.sendDiscovery(ev, pppoe.CodePADS, 0, tags)
		return
	}
	ck := circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}
	hu, _ := d.Tag(pppoe.TagHostUniq)
	// A retransmitted PADR (our PADS was lost): the same session again.
	for _, s := range sh.byMAC[ck] {
		if s.ppp != nil && s.ppp.padrRetransmit(hu.Value) {
			srv.ctr.inc(cPPPoEDupPADR)
			tags := append([]pppoe.Tag{svc}, echoTags(d)...)
			if sh.sendDiscovery(ev, pppoe.CodePADS, s.ppp.sid, tags) {
				srv.ctr.inc(cPADSTx)
			}
			return
		}
	}
	// A client that comes back without a PADT (it rebooted) replaces its
	// oldest session once it has as many as it may.
	if old := sh.byMAC[ck]; len(old) >= srv.cfg.PPPoE.MaxPerMAC {
		sh.terminate(old[0], causeReplaced)
	}
	if srv.sessions.Load() >= int64(srv.cfg.Limits.MaxSessions) {
		srv.ctr.inc(cSessionLimit)
		tags := append([]pppoe.Tag{svc, {Type: pppoe.TagACSystemError, Value: []byte("session limit")}}, echoTags(d)...)
		sh.sendDiscovery(ev, pppoe.CodePADS, 0, tags)
		return
	}
	sid, ok := ev.port.sids.get()
	if !ok {
		srv.ctr.inc(cPPPoEFull)
		tags := append([]pppoe.Tag{svc, {Type: pppoe.TagACSystemError, Value: []byte("no session id")}}, echoTags(d)...)
		sh.sendDiscovery(ev, pppoe.CodePADS, 0, tags)
		return
	}
	s := sh.newSession(aaa.PPPoE, ev.port, ev.hdr)
	s.lineID = lineIDOf(d)
	s.ppp = newPPPSession(sh, s, sid, hu.Value)
	sh.ppp[pppKey{ev.port.cfg.Name, sid}] = s
	tags := append([]pppoe.Tag{svc}, echoTags(d)...)
	if sh.sendDiscovery(ev, pppoe.CodePADS, sid, tags) {
		srv.ctr.inc(cPADSTx)
	}
	s.ppp.start()
}

func (sh *shard) padt(ev event, d *pppoe.Discovery) {
	s := sh.ppp[pppKey{ev.port.cfg.Name, d.Session}]
	if s == nil || s.circuit.MAC != ev.hdr.Src || s.circuit.Line != ev.hdr.Line {
		sh.srv.ctr.inc(cPPPoEUnknownSess)
		return
	}
	s.ppp.padtReceived = true
	sh.terminate(s, causeUserRequest)
}

// sendPADT ends a session from our side (RFC 2516 5.5).
func (sh *shard) sendPADT(s *session, msg string) {
	ev := event{port: s.port, hdr: frame.Header{Src: s.circuit.MAC, Line: s.circuit.Line}}
	var tags []pppoe.Tag
	if msg != "" {
		tags = append(tags, pppoe.Tag{Type: pppoe.TagGenericError, Value: []byte(msg)})
	}
	if sh.sendDiscovery(ev, pppoe.CodePADT, s.ppp.sid, tags) {
		sh.srv.ctr.inc(cPADTTx)
	}
}

// pppFrame is a PPPoE session frame: to its session's PPP.
func (sh *shard) pppFrame(ev event, b []byte) {
	sid, proto, info, err := pppoe.ParseSession(b)
	if err != nil {
		sh.srv.ctr.inc(cPPPoEMalformed)
		return
	}
	s := sh.ppp[pppKey{ev.port.cfg.Name, sid}]
	if s == nil || s.circuit.MAC != ev.hdr.Src || s.circuit.Line != ev.hdr.Line {
		sh.srv.ctr.inc(cPPPoEUnknownSess)
		// A client that still believes in a session we do not know (we
		// lost it) learns so from a PADT, at the admission rate.
		if sid != 0 && sid != 0xffff && proto == 0xc021 && sh.admit(circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}) {
			sh.sendDiscovery(ev, pppoe.CodePADT, sid, nil)
			sh.srv.ctr.inc(cPADTTx)
		}
		return
	}
	s.ppp.input(ev, proto, info)
}

// sidAlloc hands out PPPoE session ids of one port (1..65534: RFC 2516
// reserves 0 and 0xffff).
type sidAlloc struct {
	mu     sync.Mutex
	used   [65536 / 64]uint64
	cursor uint32
	n      int
}

func newSIDAlloc() *sidAlloc { return &sidAlloc{cursor: 1} }

func (a *sidAlloc) get() (uint16, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n >= 65534 {
		return 0, false
	}
	for {
		c := a.cursor
		a.cursor++
		if a.cursor >= 0xffff {
			a.cursor = 1
		}
		if c == 0 || c >= 0xffff {
			continue
		}
		if a.used[c/64]&(1<<(c%64)) == 0 {
			a.used[c/64] |= 1 << (c % 64)
			a.n++
			return uint16(c), true
		}
	}
}

func (a *sidAlloc) take(c uint16) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c == 0 || c == 0xffff || a.used[c/64]&(1<<(c%64)) != 0 {
		return false
	}
	a.used[c/64] |= 1 << (c % 64)
	a.n++
	return true
}

func (a *sidAlloc) put(c uint16) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used[c/64]&(1<<(c%64)) != 0 {
		a.used[c/64] &^= 1 << (c % 64)
		a.n--
	}
}
