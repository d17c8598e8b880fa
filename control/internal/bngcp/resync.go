package bngcp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/ppp"
)

// restore brings back the sessions of the store after a restart, before
// any frame is read:
//
//  1. each record becomes a session in its shard, its addresses and PPPoE
//     session id taken again, its protocols in the state they were (LCP
//     and the NCPs Opened with the same magic numbers and identifiers,
//     DHCP bindings with their lease ends), its timers re-armed;
//  2. once a user plane is associated (UserPlane implementations call
//     ResyncUserPlane), it is asked about each of its sessions (a
//     Session Modification that only queries usage): one it lost is
//     established again, one it has keeps forwarding untouched.
//
// A record whose port or pool is gone is dropped, and its session on the
// user plane deleted.
func (s *Server) restore(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	if id := s.store.getMeta("next_id"); id > s.nextID.Load() {
		s.nextID.Store(id)
	}
	recs, err := s.store.load()
	if err != nil {
		return err
	}
	var restored []*session
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range recs {
		r := recs[i]
		if r.ID >= s.nextID.Load() {
			s.nextID.Store(r.ID + 1)
		}
		port := s.ports[r.Circuit.Port]
		if port == nil {
			slog.Warn("restore: port gone", "session", r.ID, "port", r.Circuit.Port)
			s.store.del(r.ID)
			continue
		}
		sh := s.shardOf(r.Circuit.Port, r.Circuit.Line, r.Circuit.MAC)
		wg.Add(1)
		sh.post(func() {
			defer wg.Done()
			if sess := sh.restoreOne(port, &r); sess != nil {
				mu.Lock()
				restored = append(restored, sess)
				mu.Unlock()
			} else {
				s.store.del(r.ID)
			}
		})
	}
	wg.Wait()
	// A restart hands out ids above every stored one, even if this
	// process stops before the next save.
	s.store.setMeta("next_id", s.nextID.Load()+1<<16)
	if len(restored) > 0 {
		slog.Info("sessions restored", "count", len(restored))
	}
	return nil
}

func (sh *shard) restoreOne(port *portState, r *record) *session {
	srv := sh.srv
	s := &session{id: r.ID, kind: r.Kind, port: port, circuit: r.Circuit, lineID: r.LineID, state: stUp,
		created: r.Created, upAt: r.UpAt, user: r.User, v4: r.V4, v6block: r.V6, delegated: r.Delegated,
		upSEID: r.UpSEID, upDone: true, usage: r.Usage, interim: r.Interim, endAt: r.EndAt}
	s.res.Class = r.Class
	if r.Profile != "" {
		if s.profile = srv.profiles[r.Profile]; s.profile == nil {
			slog.Warn("restore: profile gone", "session", r.ID, "profile", r.Profile)
		}
	}
	if r.V4.IsValid() {
		if s.pool4 = srv.pools4[r.Pool4]; s.pool4 == nil || s.pool4.Reserve(r.V4) != nil {
			slog.Warn("restore: IPv4 address not available", "session", r.ID, "addr", r.V4)
			s.pool4 = nil
			sh.dropRestored(s)
			return nil
		}
	}
	if r.V6.IsValid() {
		if s.pool6 = srv.pools6[r.Pool6]; s.pool6 == nil || s.pool6.Reserve(r.V6) != nil {
			slog.Warn("restore: IPv6 block not available", "session", r.ID, "block", r.V6)
			s.pool6 = nil
			sh.dropRestored(s)
			return nil
		}
	}
	if r.Ending {
		return sh.restoreEnding(port, s, r)
	}
	ck := circuitKey{r.Circuit.Port, r.Circuit.Line, r.Circuit.MAC}
	now := srv.now()
	switch r.Kind {
	case aaa.PPPoE:
		if !sh.retakeSID(port, s, r) {
			return nil
		}
		p := newPPPSession(sh, s, r.SID, nil)
		s.ppp = p
		p.lcp.Magic, p.lcp.PeerMagic, p.lcp.PeerMRU = r.Magic, r.PeerMagic, r.PeerMRU
		p.lcp.Auth = ppp.Auth(r.Auth)
		p.lcpF.Restore(ppp.Opened)
		p.phase, p.authDone, p.authOK = phNetwork, true, true
		if r.NCP4 && s.pool4 != nil {
			p.ipcp.Peer, p.ipcp.Local = s.v4, s.pool4.Gateway.Addr()
			p.ipcpF.Restore(ppp.Opened)
			p.ncp4 = true
		}
		if r.NCP6 {
			p.ip6.Local, p.ip6.Peer = r.LocalID, r.PeerID
			p.ip6F.Restore(ppp.Opened)
			p.ncp6 = true
		}
		sh.ppp[pppKey{r.Circuit.Port, r.SID}] = s
		sh.arm(s, tKeepalive, srv.cfg.PPPoE.Keepalive)
	case aaa.IPoE:
		d := &ipoeSession{bound4: r.Bound4, leaseEnd: r.Lease4End, bound6: r.Bound6, lease6End: r.Lease6End,
			opt82: r.Opt82, duid: r.DUID}
		s.ipoe = d
		if d.bound4 {
			sh.arm(s, tLease4, untilOrZero(d.leaseEnd.Add(srv.cfg.IPoE.Lease/16), now))
		}
		if d.bound6 {
			sh.arm(s, tLease6, untilOrZero(d.lease6End.Add(srv.cfg.IPv6.Valid/16), now))
		}
		sh.ipoe[ck] = s
		if r.Circuit.Line.Tags() > 0 {
			sh.lines[lineKey{r.Circuit.Port, r.Circuit.Line}] = s
		}
	default:
		return nil
	}
	if !s.endAt.IsZero() {
		sh.arm(s, tSessionEnd, untilOrZero(s.endAt, now))
	}
	if s.v6block.IsValid() {
		sh.arm(s, tRA, srv.cfg.IPv6.RAInterval)
	}
	sh.byMAC[ck] = append(sh.byMAC[ck], s)
	srv.sessions.Add(1)
	srv.indexAdd(s.id, sh)
	sh.all[s.id] = s
	srv.metrics.createdSession(s.kind)
	srv.metrics.up(s.kind, 0)
	return s
}

// restoreEnding brings back a session that was being deleted from the
// user plane when the previous process stopped: it keeps what a session
// in that state keeps (addresses, PPPoE session id, the IPoE line) until
// the user plane confirms the deletion, but no lookup finds it, no timer
// runs and nothing is said to the subscriber, who was told already.
func (sh *shard) restoreEnding(port *portState, s *session, r *record) *session {
	srv := sh.srv
	s.state, s.termCause, s.endPending = stTerminating, r.TermCause, true
	switch r.Kind {
	case aaa.PPPoE:
		if !sh.retakeSID(port, s, r) {
			return nil
		}
		s.ppp = newPPPSession(sh, s, r.SID, nil)
	case aaa.IPoE:
		s.ipoe = &ipoeSession{opt82: r.Opt82, duid: r.DUID}
		if r.Circuit.Line.Tags() > 0 {
			sh.lines[lineKey{r.Circuit.Port, r.Circuit.Line}] = s
		}
	default:
		return nil
	}
	srv.sessions.Add(1)
	srv.indexAdd(s.id, sh)
	sh.all[s.id] = s
	srv.metrics.createdSession(s.kind)
	srv.metrics.up(s.kind, 0)
	if _, none := srv.up.(noUserPlane); none {
		sh.resumeEnd(s)
	}
	return s
}

// resumeEnd asks the user plane to delete a session restored while ending.
func (sh *shard) resumeEnd(s *session) {
	if s.dead || !s.endPending {
		return
	}
	s.endPending = false
	sh.srv.ctr.inc(cRestoreEnding)
	sh.deleteFromUserPlane(s)
}

// retakeSID takes again a restored PPPoE session's id; a record whose id
// another record took is dropped.
func (sh *shard) retakeSID(port *portState, s *session, r *record) bool {
	if port.sids.take(r.SID) {
		return true
	}
	slog.Warn("restore: PPPoE session id taken twice", "session", r.ID, "sid", r.SID)
	sh.dropRestored(s)
	return false
}

// dropRestored gives back what a record that cannot be restored took, and
// deletes its session on the user plane.
func (sh *shard) dropRestored(s *session) {
	sh.release(s)
	if s.upDone {
		sh.srv.up.Delete(s.spec(), s.upSEID, func(aaa.Usage, error) {})
	}
}

func untilOrZero(t, now time.Time) time.Duration {
	if t.Before(now) {
		return 0
	}
	return t.Sub(now)
}

// resyncUserPlane asks the user plane about every restored session, a
// bounded number at a time.
func (s *Server) resyncUserPlane(ctx context.Context, sessions []*session) {
	sem := make(chan struct{}, 64)
	for _, sess := range sessions {
		sess := sess
		sh := s.shardByID(sess.id)
		if sh == nil {
			continue
		}
		var spec *SessionSpec
		var seid uint64
		done := make(chan struct{})
		sh.post(func() {
			if !sess.dead {
				spec, seid = sess.spec(), sess.upSEID
			}
			close(done)
		})
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
		if spec == nil {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		go func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			ok, err := s.up.Check(cctx, spec, seid)
			cancel()
			if err != nil {
				s.ctr.inc(cUPCheckFail)
				slog.Warn("resync: user plane did not answer", "session", sess.acctID(), "err", err)
				return
			}
			s.ctr.inc(cUPCheck)
			if ok {
				return
			}
			s.ctr.inc(cUPCheckLost)
			sh.post(func() {
				if sess.dead || sess.state != stUp {
					return
				}
				// The user plane lost it: establish it again.
				slog.Info("resync: re-establishing", "session", sess.acctID())
				sess.upDone = false
				sess.state = stActivating
				s.ctr.inc(cUPEstablish)
				s.up.Establish(sess.spec(), func(seid uint64, err error) {
					sh.post(func() {
						if sess.dead {
							return
						}
						if err != nil {
							s.ctr.inc(cUPEstablishFail)
							sess.state = stUp
							sh.terminate(sess, causeUPLost)
							return
						}
						sess.upSEID, sess.upDone, sess.state = seid, true, stUp
						sh.save(sess)
					})
				})
			})
		}()
	}
}

// ResyncUserPlane checks every session on a user plane that restarted
// without its state, and establishes again the ones it lost.
func (s *Server) ResyncUserPlane(ctx context.Context, name string) {
	// The association can come up before the store's sessions are back
	// (the PFCP side starts with the server): wait for them, or the
	// sessions restored after this point would never be checked.
	select {
	case <-s.ready:
	case <-ctx.Done():
		return
	}
	var list []*session
	var mu sync.Mutex
	s.onShards(ctx, func(sh *shard) {
		sh.each(func(x *session) {
			if x.endPending && x.port.cfg.UserPlane == name {
				sh.resumeEnd(x)
				return
			}
			if x.upDone && x.state == stUp && x.port.cfg.UserPlane == name {
				mu.Lock()
				list = append(list, x)
				mu.Unlock()
			}
		})
	})
	slog.Info("resynchronising with a restarted user plane", "up", name, "sessions", len(list))
	s.resyncUserPlane(ctx, list)
}
