package bngcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pool"
)

// Why a session ended: a text (PADT Generic-Error, LCP Terminate-Request,
// the API) and the RADIUS Acct-Terminate-Cause (RFC 2866 5.10).
const (
	causeUserRequest = iota + 1
	causeLCPClosed
	causeKeepalive
	causeLeaseExpired
	causeSessionTimeout
	causeAdminReset
	causeDisconnectRequest
	causeAuthFailed
	causeSetupTimeout
	causeUPFailed
	causeNoNCP
	causeReplaced
	causeShutdown
	causeDeclined
	causeUPLost
	causeNoAddress
)

var causes = map[int]struct {
	text   string
	radius int
}{
	causeUserRequest:       {"user request", aaa.CauseUserRequest},
	causeLCPClosed:         {"peer closed LCP", aaa.CauseUserRequest},
	causeKeepalive:         {"keepalive expired", aaa.CauseLostCarrier},
	causeLeaseExpired:      {"lease expired", aaa.CauseLostCarrier},
	causeSessionTimeout:    {"session timeout", aaa.CauseSessionTimeout},
	causeAdminReset:        {"administratively cleared", aaa.CauseAdminReset},
	causeDisconnectRequest: {"disconnect request", aaa.CauseAdminReset},
	causeAuthFailed:        {"authentication failed", aaa.CauseUserError},
	causeSetupTimeout:      {"set-up timed out", aaa.CauseUserError},
	causeUPFailed:          {"user plane refused the session", aaa.CauseNASError},
	causeNoNCP:             {"no network protocol", aaa.CauseUserError},
	causeReplaced:          {"replaced by a new session", aaa.CauseLostCarrier},
	causeShutdown:          {"control plane stopping", aaa.CauseNASReboot},
	causeDeclined:          {"address declined", aaa.CauseUserError},
	causeUPLost:            {"user plane lost the session", aaa.CauseLostService},
	causeNoAddress:         {"no address available", aaa.CauseNASError},
}

func causeText(c int) string { return causes[c].text }

func (sh *shard) newSession(kind aaa.Service, port *portState, h frame.Header) *session {
	srv := sh.srv
	s := &session{id: srv.newID(), kind: kind, port: port,
		circuit: frame.Circuit{Port: port.cfg.Name, Line: h.Line, MAC: h.Src}, created: srv.now()}
	srv.sessions.Add(1)
	srv.indexAdd(s.id, sh)
	sh.all[s.id] = s
	ck := circuitKey{port.cfg.Name, h.Line, h.Src}
	sh.byMAC[ck] = append(sh.byMAC[ck], s)
	srv.metrics.createdSession(kind)
	return s
}

// authenticate asks AAA about s; a slow authenticator runs off the loop.
func (sh *shard) authenticate(s *session, req *aaa.Request) {
	srv := sh.srv
	req.Circuit = s.circuit
	req.LineID = s.lineID
	req.AcctSessionID = s.acctID()
	req.NASPortID = s.nasPortID()
	s.user = req.User
	s.state = stAuthorizing
	if !srv.auth.Slow() {
		sh.authorized(s, srv.auth.Authenticate(context.Background(), req))
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := srv.auth.Authenticate(ctx, req)
		cancel()
		sh.post(func() {
			if !s.dead && s.state == stAuthorizing {
				sh.authorized(s, res)
			}
		})
	}()
}

// authorized applies AAA's answer: the profile, the addresses, then the
// service's next step.
func (sh *shard) authorized(s *session, res aaa.Result) {
	srv := sh.srv
	ok := res.Accept
	if ok {
		srv.ctr.inc(cAuthAccept)
	} else if len(res.Reason) > 7 && res.Reason[:7] == "radius:" {
		srv.ctr.inc(cAuthError)
	} else {
		srv.ctr.inc(cAuthReject)
	}
	cause := causeAuthFailed
	if ok {
		s.res = res
		name := res.Profile
		if name == "" {
			name = srv.cfg.AAA.DefaultProfile
		}
		if name != "" {
			if s.profile = srv.profiles[name]; s.profile == nil {
				slog.Warn("unknown profile from AAA", "session", s.acctID(), "profile", name)
				ok = false
			}
		}
	}
	if ok {
		if err := sh.allocate(s, res); err != nil {
			slog.Warn("no address", "session", s.acctID(), "err", err)
			srv.ctr.inc(cPoolExhausted)
			ok, cause = false, causeNoAddress
		}
	}
	if ok {
		s.interim = res.Interim
		if s.interim == 0 {
			s.interim = srv.cfg.AAA.Interim
		}
		if res.SessionTimeout > 0 {
			s.endAt = srv.now().Add(res.SessionTimeout)
			sh.arm(s, tSessionEnd, res.SessionTimeout)
		}
		s.state = stSetup
	}
	switch {
	case s.ppp != nil:
		s.ppp.authResult(ok)
		if ok {
			sh.activate(s)
		}
	case s.ipoe != nil:
		if !ok {
			sh.terminate(s, cause)
			return
		}
		sh.ipoeAuthorized(s)
	}
}

// allocate takes the session's addresses: what AAA named (an address, a
// pool), else the default pools.
func (sh *shard) allocate(s *session, res aaa.Result) error {
	srv := sh.srv
	want4 := true
	want6 := (s.kind == aaa.PPPoE && on(srv.cfg.PPPoE.IPv6, true)) || (s.kind == aaa.IPoE && on(srv.cfg.IPoE.DHCPv6, true))
	if want4 {
		p, err := sh.srv.pool4For(res)
		if err != nil {
			return err
		}
		if p != nil {
			if res.IPv4.IsValid() {
				err = p.Reserve(res.IPv4)
				s.v4 = res.IPv4
			} else {
				s.v4, err = p.Allocate()
			}
			if err != nil {
				return err
			}
			s.pool4 = p
		}
	}
	if want6 {
		p, err := sh.srv.pool6For(res)
		if err != nil {
			sh.release(s)
			return err
		}
		if p != nil {
			if res.IPv6Block.IsValid() {
				err = p.Reserve(res.IPv6Block)
				s.v6block = res.IPv6Block
			} else {
				s.v6block, err = p.Allocate()
			}
			if err != nil {
				s.v6block = netipPrefixZero
				sh.release(s)
				return err
			}
			s.pool6 = p
			if res.Delegated.IsValid() && s.v6block.Contains(res.Delegated.Addr()) && res.Delegated.Bits() > s.v6block.Bits() {
				s.delegated = res.Delegated
			} else if p.PDLen != 0 {
				s.delegated = pool.Delegated(s.v6block, p.PDLen)
			}
		}
	}
	if !s.v4.IsValid() && !s.v6block.IsValid() {
		return errNoPool
	}
	return nil
}

// release returns the session's addresses.
func (sh *shard) release(s *session) {
	if s.pool4 != nil && s.v4.IsValid() {
		s.pool4.Release(s.v4)
	}
	if s.pool6 != nil && s.v6block.IsValid() {
		s.pool6.Release(s.v6block)
	}
	s.pool4, s.pool6 = nil, nil
}

// activate programs the user plane for s.
func (sh *shard) activate(s *session) {
	srv := sh.srv
	if s.state == stActivating || s.upDone {
		return
	}
	s.state = stActivating
	srv.ctr.inc(cUPEstablish)
	spec := s.spec()
	srv.up.Establish(spec, func(seid uint64, err error) {
		sh.post(func() {
			if s.dead || s.state == stTerminating {
				if err == nil {
					// It ended while the user plane was adding it.
					srv.up.Delete(spec, seid, func(aaa.Usage, error) {})
				}
				return
			}
			if err != nil {
				slog.Warn("user plane refused a session", "session", s.acctID(), "err", err)
				srv.ctr.inc(cUPEstablishFail)
				sh.terminate(s, causeUPFailed)
				return
			}
			s.upSEID, s.upDone = seid, true
			sh.maybeUp(s)
			if s.ipoe != nil {
				sh.ipoeActivated(s)
			}
		})
	})
}

// maybeUp: the session is up once the user plane has it and, for PPP, a
// network protocol is open.
func (sh *shard) maybeUp(s *session) {
	if s.state == stUp || s.state == stTerminating || !s.upDone {
		return
	}
	if s.ppp != nil && !s.ppp.ncp4 && !s.ppp.ncp6 {
		return
	}
	srv := sh.srv
	s.state = stUp
	s.upAt = srv.now()
	sh.stop(s, tSetup)
	srv.metrics.up(s.kind, s.upAt.Sub(s.created))
	sh.account(s, aaa.AcctStart)
	if s.v6block.IsValid() {
		sh.arm(s, tRA, srv.cfg.IPv6.RAInterval)
	}
	sh.save(s)
}

func (sh *shard) account(s *session, t aaa.AcctType) {
	srv := sh.srv
	switch t {
	case aaa.AcctStart:
		srv.ctr.inc(cAcctStart)
	case aaa.AcctInterim:
		srv.ctr.inc(cAcctInterim)
	case aaa.AcctStop:
		srv.ctr.inc(cAcctStop)
	}
	now := srv.now()
	rec := &aaa.AcctRecord{Type: t, Service: s.kind, SessionID: s.acctID(), User: s.user, Circuit: s.circuit,
		LineID: s.lineID, NASPortID: s.nasPortID(), IPv4: s.v4, IPv6: s.v6block, Delegated: s.delegated,
		Usage: s.usage, Class: s.res.Class, Time: now, TerminateCause: causes[s.termCause].radius}
	if !s.upAt.IsZero() {
		rec.SessionTime = now.Sub(s.upAt)
	}
	s.lastAcct = now
	srv.acct.Account(rec)
}

// report adds a usage report of the user plane (the volume since its
// last report: TS 29.244 5.2.2.3.1) to the session; a periodic one is an
// interim accounting record.
func (sh *shard) report(s *session, delta aaa.Usage, periodic bool) {
	sh.srv.ctr.inc(cUPReport)
	s.usage = addUsage(s.usage, delta)
	if periodic && s.state == stUp {
		sh.account(s, aaa.AcctInterim)
		sh.save(s)
	}
}

func addUsage(a, b aaa.Usage) aaa.Usage {
	return aaa.Usage{InOctets: a.InOctets + b.InOctets, OutOctets: a.OutOctets + b.OutOctets,
		InPackets: a.InPackets + b.InPackets, OutPackets: a.OutPackets + b.OutPackets}
}

// unlink removes s from the shard's lookups: a new session of the same
// subscriber can start while this one is being deleted.  The IPoE line
// stays taken until the user plane has deleted it (the user plane keys
// IPoE subscribers by their line).
func (sh *shard) unlink(s *session) {
	ck := circuitKey{s.circuit.Port, s.circuit.Line, s.circuit.MAC}
	list := sh.byMAC[ck]
	for i, x := range list {
		if x == s {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(sh.byMAC, ck)
	} else {
		sh.byMAC[ck] = list
	}
	if s.ppp != nil {
		if sh.ppp[pppKey{s.circuit.Port, s.ppp.sid}] == s {
			delete(sh.ppp, pppKey{s.circuit.Port, s.ppp.sid})
		}
	}
	if s.ipoe != nil && sh.ipoe[ck] == s {
		delete(sh.ipoe, ck)
	}
}

// terminate ends s for cause: tell the subscriber, delete it from the user
// plane, then finish (accounting stop, addresses back).
func (sh *shard) terminate(s *session, cause int) {
	if s.dead || s.state == stTerminating {
		return
	}
	s.state = stTerminating
	s.termCause = cause
	for k := range s.timers {
		s.timers[k] = 0
	}
	if s.ppp != nil {
		s.ppp.close(cause)
	}
	sh.unlink(s)
	if !s.upDone {
		sh.finish(s)
		return
	}
	sh.saveEnding(s)
	sh.deleteFromUserPlane(s)
}

// deleteFromUserPlane asks the user plane to delete s, then finishes it
// with the final usage the user plane reports.
func (sh *shard) deleteFromUserPlane(s *session) {
	srv := sh.srv
	srv.ctr.inc(cUPDelete)
	spec := s.spec()
	srv.up.Delete(spec, s.upSEID, func(final aaa.Usage, err error) {
		sh.post(func() {
			if err != nil {
				srv.ctr.inc(cUPDeleteFail)
				slog.Warn("user plane deletion", "session", s.acctID(), "err", err)
			}
			s.usage = addUsage(s.usage, final)
			sh.finish(s)
		})
	})
}

func (sh *shard) finish(s *session) {
	if s.dead {
		return
	}
	srv := sh.srv
	if !s.upAt.IsZero() {
		sh.account(s, aaa.AcctStop)
	}
	s.dead = true
	srv.metrics.ended(s.kind, s.termCause, !s.upAt.IsZero())
	sh.release(s)
	if s.ppp != nil {
		s.port.sids.put(s.ppp.sid)
	}
	if s.ipoe != nil {
		lk := lineKey{s.circuit.Port, s.circuit.Line}
		if sh.lines[lk] == s {
			delete(sh.lines, lk)
		}
	}
	srv.indexDel(s.id)
	delete(sh.all, s.id)
	srv.sessions.Add(-1)
	sh.forget(s)
}

// changeProfile applies a new profile (CoA) through the user plane.
func (sh *shard) changeProfile(s *session, p *Profile, done func(error)) {
	srv := sh.srv
	if s.state != stUp {
		done(errNotUp)
		return
	}
	old := s.profile
	s.profile = p
	srv.ctr.inc(cUPModify)
	srv.up.Modify(s.spec(), s.upSEID, func(err error) {
		sh.post(func() {
			if err != nil {
				srv.ctr.inc(cUPModifyFail)
				if !s.dead {
					s.profile = old
				}
			} else {
				sh.save(s)
			}
			done(err)
		})
	})
}

var (
	errNoPool = errors.New("no pool gives this subscriber an address")
	errNotUp  = errors.New("the session is not up")

	netipPrefixZero netip.Prefix
)

// pool4For is the IPv4 pool of an authorisation: the one holding AAA's
// address, the one AAA named, else the default (the first configured).
func (s *Server) pool4For(res aaa.Result) (*pool.V4, error) {
	if res.IPv4.IsValid() {
		for _, pc := range s.cfg.Pools {
			if p := s.pools4[pc.Name]; p != nil && p.Contains(res.IPv4) {
				return p, nil
			}
		}
		return nil, fmt.Errorf("address %s is in no pool", res.IPv4)
	}
	if res.Pool4 != "" {
		if p := s.pools4[res.Pool4]; p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("no IPv4 pool %q", res.Pool4)
	}
	if p := s.pools4[s.cfg.AAA.DefaultPool4]; p != nil {
		return p, nil
	}
	for _, pc := range s.cfg.Pools {
		if p := s.pools4[pc.Name]; p != nil {
			return p, nil
		}
	}
	return nil, nil
}

// pool6For is pool4For's IPv6 twin.
func (s *Server) pool6For(res aaa.Result) (*pool.V6, error) {
	if res.IPv6Block.IsValid() {
		for _, pc := range s.cfg.Pools {
			if p := s.pools6[pc.Name]; p != nil && p.Prefix.Contains(res.IPv6Block.Addr()) {
				return p, nil
			}
		}
		return nil, fmt.Errorf("prefix %s is in no pool", res.IPv6Block)
	}
	if res.Pool6 != "" {
		if p := s.pools6[res.Pool6]; p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("no IPv6 pool %q", res.Pool6)
	}
	if p := s.pools6[s.cfg.AAA.DefaultPool6]; p != nil {
		return p, nil
	}
	for _, pc := range s.cfg.Pools {
		if p := s.pools6[pc.Name]; p != nil {
			return p, nil
		}
	}
	return nil, nil
}
