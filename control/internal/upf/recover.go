package upf

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/wire"
)

// State across restarts.
//
// This function restarting (crash, upgrade): the store holds every
// session, the associations and our Recovery Time Stamp.  restore rebuilds
// the state from it; the first resync reads the data plane back (sub-list)
// and makes it match the store: subscribers of ours it lacks are added,
// ones that differ are replaced, ones no stored session has (a crash
// between a data-plane change and its commit) are deleted.  The Recovery
// Time Stamp is the stored one and every association is set up again with
// it (a re-association, TS 29.244 clause 6.2.6.2.2): the control plane
// keeps its sessions.  Counters are the data plane's and simply go on.
//
// edgeplane-dp restarting: the control-socket connection breaks; the next
// resync sees a data plane that started after the one we knew (stats
// uptime) and replays every subscriber, profiles first.  The control
// plane sees nothing but our counters.  Usage measured by the old
// instance up to our last read of it is carried over (Session.Acc): a URR
// loses at most what passed in its last polling interval.

// restore loads the store into the state.
func (u *UPF) restore() error {
	ts, nextSEID, err := u.store.Meta()
	if err != nil {
		return err
	}
	fresh := ts.IsZero()
	if fresh {
		ts = time.Now()
	}
	u.recovery = ts.Truncate(time.Second)
	sessions, err := u.store.Sessions(u.storedEstablishment)
	if err != nil {
		return err
	}
	// SEIDs never repeat across restarts: above every stored one, above
	// the stored bound (moved ahead as they are handed out, seidReserve at
	// a time) and above the start time's own range.  They stay below 2^53
	// (JSON numbers of the tools that show them).
	base := uint64(time.Now().Unix()) << 16
	if nextSEID > base {
		base = nextSEID
	}
	for _, s := range sessions {
		if s.SEID >= base {
			base = s.SEID + 1
		}
	}
	u.st = NewState(u.cfg.SubIDLo, u.cfg.SubIDHi, base)
	u.seidBound = base + seidReserve
	if err := u.store.PutMeta(u.recovery, u.seidBound); err != nil {
		return err
	}
	assocs, err := u.store.Associations()
	if err != nil {
		return err
	}
	for _, a := range assocs {
		u.nodes.put(&assoc{node: a.Node, peer: a.Peer, recovery: a.Recovery, features: a.Features})
	}
	st := u.st
	// Ids first: a session keeps the subscriber id it had.
	used := map[uint32]bool{}
	var dropped []uint64
	for _, s := range sessions {
		if _, ok := u.nodes.epochOf(s.CPNode); !ok {
			dropped = append(dropped, s.SEID) // its association was released while stored
			continue
		}
		plan, rj := Translate(s, u.env)
		if rj == nil {
			st.chooseTEIDs(plan, s.Chosen)
			if rj2 := st.reserve(s.SEID, plan, nil); rj2 != nil {
				rj = rj2
			}
		}
		if rj != nil {
			slog.Error("stored session no longer fits the configuration; dropped", "seid", s.SEID, "err", rj)
			dropped = append(dropped, s.SEID)
			continue
		}
		if s.SubID != 0 && (s.SubID < u.cfg.SubIDLo || s.SubID > u.cfg.SubIDHi || used[s.SubID]) {
			slog.Error("stored session's subscriber id is outside this function's range; dropped", "seid", s.SEID, "id", s.SubID)
			st.release(s.SEID, plan, nil)
			dropped = append(dropped, s.SEID)
			continue
		}
		if plan.Sub == nil {
			s.SubID = 0
		}
		used[s.SubID] = true
		e := &entry{s: s, plan: plan, subID: s.SubID, live: true}
		st.sess.Set(s.SEID, e)
		st.byCP.Set(s.CPNode, s.CPSEID, s.SEID)
		st.meter(s.SEID, e)
		if s.SubID != 0 {
			st.subs++
		}
	}
	// The id allocator hands out what no restored session holds.
	delete(used, 0)
	if top := maxUsed(used); top >= u.cfg.SubIDLo {
		for id := u.cfg.SubIDLo; id < top; id++ {
			if !used[id] {
				st.free = append(st.free, id)
			}
		}
		st.nextID = top + 1
	}
	if len(dropped) > 0 {
		if err := u.store.Commit(nil, dropped); err != nil {
			return err
		}
	}
	if !fresh || len(sessions) > 0 {
		slog.Info("pfcp sessions restored from the store", "sessions", st.sess.Len(), "subscribers", st.subs,
			"associations", len(assocs), "recovery", u.recovery)
	}
	return nil
}

func maxUsed(m map[uint32]bool) uint32 {
	var x uint32
	for k := range m {
		if k > x {
			x = k
		}
	}
	return x
}

// saveAssociation stores an association's current state.
func (u *UPF) saveAssociation(a *assoc) {
	u.nodes.mu.Lock()
	s := storedAssoc{Node: a.node, Peer: a.peer, Recovery: a.recovery, Features: a.features}
	u.nodes.mu.Unlock()
	if err := u.store.PutAssociation(s); err != nil {
		u.c.storeErrors.Add(1)
		slog.Error("session store: association", "node", a.node, "err", err)
	}
}

// resync checks which data plane we talk to and brings it in line with
// the state: at start and after a reconnection a read-back reconcile, after
// a restart of the data plane a replay.  Runs on the applier goroutine
// with no batch in flight.
//
// A restart is recognised on a new connection (a restart breaks the old
// one) by the data plane's uptime (stats) that did not go on with the
// wall clock, or by what it lacks: profiles we created, or every one of
// our subscribers.
func (u *UPF) resync(ctx context.Context) {
	stats, err := u.dp.Stats(ctx)
	if err != nil {
		slog.Warn("data plane unreachable; sessions wait", "socket", u.dp.Path(), "err", err)
		return
	}
	now := time.Now()
	gen := u.dp.Generation()
	if !u.dpSeen.IsZero() && gen == u.dpGen {
		// The same connection: the same data plane (a restart breaks it).
		u.dpUptime, u.dpSeen = stats.UptimeS, now
		return
	}
	// A new connection: the same data plane if its uptime went on with
	// the wall clock since we last saw it (2 s and 1 % of slack: its
	// clock is the TSC), a new one if it started since.
	newInstance := false
	if !u.dpSeen.IsZero() {
		expected := u.dpUptime + now.Sub(u.dpSeen).Seconds()
		newInstance = stats.UptimeS+2 < expected*0.99
	}
	profs, err := u.dp.ProfileList(ctx)
	if err != nil {
		slog.Warn("data plane reconcile: profile-list", "err", err)
		return
	}
	have, err := u.readBack(ctx)
	if err != nil {
		slog.Warn("data plane reconcile: sub-list", "err", err)
		return
	}
	var names []string
	for _, p := range profs.Policers {
		names = append(names, p.Name)
	}
	for _, p := range profs.Pipes {
		names = append(names, p.Name)
	}
	ours := 0
	for id := range have {
		if id >= u.cfg.SubIDLo && id <= u.cfg.SubIDHi {
			ours++
		}
	}
	_, subs := u.st.Sessions()
	restarted := !u.dpSeen.IsZero() && (newInstance || u.prof.missingFrom(names) || subs > 0 && ours == 0)
	if restarted {
		u.c.dpRestarts.Add(1)
		slog.Warn("data plane restarted: replaying every subscriber", "socket", u.dp.Path(), "subscribers", subs)
		u.carryOver()
		u.prof.Forget()
	}
	u.prof.Learn(names)
	if err := u.reconcile(ctx, have); err != nil {
		slog.Warn("data plane reconcile incomplete; tried again at the next check", "err", err)
		return
	}
	u.dpUptime, u.dpSeen, u.dpGen = stats.UptimeS, now, gen
}

// readBack lists every subscriber the data plane holds.
func (u *UPF) readBack(ctx context.Context) (map[uint32]dpctl.SubscriberState, error) {
	have := map[uint32]dpctl.SubscriberState{}
	for off := 0; ; {
		page, total, err := u.dp.SubList(ctx, off, 10000)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			have[s.ID] = s
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			return have, nil
		}
	}
}

// carryOver adds what the vanished data plane counted (as last read) to
// each session's carried usage, so URR measurements go on from there.
func (u *UPF) carryOver() {
	st := u.st
	st.mu.Lock()
	var dirty []*Session
	for _, e := range st.sess.All() {
		if e.subID == 0 || e.last == (Usage{}) {
			continue
		}
		e.s.Acc = e.s.Acc.add(e.last)
		e.last = Usage{}
		dirty = append(dirty, e.s)
	}
	st.mu.Unlock()
	if err := u.store.CommitModels(dirty); err != nil {
		u.c.storeErrors.Add(1)
	}
}

// reconcile makes our subscriber ids in the data plane (have, read back)
// what the state says.
func (u *UPF) reconcile(ctx context.Context, have map[uint32]dpctl.SubscriberState) error {
	st := u.st
	st.mu.Lock()
	want := map[uint32]dpctl.Subscriber{}
	var plans []*SubPlan
	for _, e := range st.sess.All() {
		if e.live && e.subID != 0 && e.plan.Sub != nil {
			want[e.subID] = e.plan.Sub.Subscriber(e.subID)
			plans = append(plans, e.plan.Sub)
		}
	}
	st.mu.Unlock()
	for id := range have {
		if id < u.cfg.SubIDLo || id > u.cfg.SubIDHi {
			continue // not ours (the data plane's own configuration)
		}
		if _, ok := want[id]; !ok {
			if err := u.dp.SubDel(ctx, id); err != nil && !isGone(err) {
				return err
			}
			u.c.orphans.Add(1)
		}
	}
	var add []dpctl.Subscriber
	for id, w := range want {
		if h, ok := have[id]; !ok || !same(w, h) {
			add = append(add, w)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := u.prof.Ensure(ctx, u.dp, plans); err != nil {
		return err
	}
	slices.SortFunc(add, func(a, b dpctl.Subscriber) int { return int(a.ID) - int(b.ID) })
	for len(add) > 0 {
		n := min(len(add), u.cfg.BatchMax)
		chunk := add[:n]
		if _, err := u.dp.SubAddBulk(ctx, chunk); err != nil {
			var de *dpctl.Error
			if asErr(err, &de) && de.Index >= 0 && de.Index < n {
				slog.Error("data plane refuses a stored session's subscriber", "id", chunk[de.Index].ID, "err", err)
				u.c.dpFailures.Add(1)
				add = append(append([]dpctl.Subscriber(nil), chunk[:de.Index]...), add[de.Index+1:]...)
				continue
			}
			return err
		}
		u.c.replayed.Add(uint64(n))
		add = add[n:]
	}
	return nil
}

// same compares what we want with what the data plane holds.
func same(w dpctl.Subscriber, h dpctl.SubscriberState) bool {
	pol := ""
	if h.Policer != nil {
		pol = *h.Policer
	}
	pipe := w.Pipe
	if pipe == "" {
		pipe = "default"
	}
	v4 := append([]string(nil), w.IPv4...)
	hv4 := append([]string(nil), h.IPv4...)
	slices.Sort(v4)
	slices.Sort(hv4)
	return w.QinQ == h.QinQ && w.VLAN == h.VLAN && w.PPPoE == h.PPPoE &&
		strings.EqualFold(w.MAC, h.MAC) && slices.Equal(v4, hv4) && w.IPv6 == h.IPv6 &&
		w.Policer == pol && pipe == h.Pipe
}

// runPurge deletes every session of a control plane in one step (no batch
// is in flight; ops planned for it before are voided by its epoch).
func (u *UPF) runPurge(ctx context.Context, o *op) {
	st := u.st
	st.mu.Lock()
	var seids []uint64
	var ids []uint32
	var again []queued
	for seid, e := range st.sess.All() {
		if e.s.CPNode != o.node {
			continue
		}
		seids = append(seids, seid)
		st.release(seid, e.plan, nil)
		if e.subID != 0 {
			ids = append(ids, e.subID)
			st.freeID(e.subID)
			if e.live {
				st.subs--
			}
		}
		st.sess.Delete(seid)
		st.byCP.Delete(e.s.CPNode, e.s.CPSEID)
		st.meter(seid, nil)
		u.cpr.update(seid, nil)
		again = append(again, e.queue...)
	}
	st.mu.Unlock()
	var calls []*dpctl.Call
	for _, id := range ids {
		calls = append(calls, u.dp.GoSubDel(ctx, id))
	}
	for _, k := range calls {
		if _, err := k.Wait(ctx); err != nil && !isGone(err) {
			// The state and the store no longer have it: the next
			// reconcile removes it from the data plane.
			slog.Warn("purge: subscriber deletion not confirmed", "err", err)
		}
	}
	if err := u.store.Commit(nil, seids); err != nil {
		u.c.storeErrors.Add(1)
	}
	u.c.purged.Add(uint64(len(seids)))
	if o.dropAssoc {
		u.nodes.drop(o.node)
		if err := u.store.DeleteAssociation(o.node); err != nil {
			u.c.storeErrors.Add(1)
		}
	}
	slog.Info("pfcp sessions purged", "node", o.node, "sessions", len(seids), "association_dropped", o.dropAssoc)
	if o.then != nil {
		o.then()
	}
	for _, q := range again {
		u.process(q.msg, q.peer)
	}
}

func asErr(err error, target **dpctl.Error) bool { return errors.As(err, target) }

// storedEstablishment rebuilds a session from its stored establishment.
func (u *UPF) storedEstablishment(raw []byte, created time.Time) (*Session, error) {
	ies, werr := wire.Decode(raw)
	if werr != nil {
		return nil, werr
	}
	nid, fs := findIE(ies, ie.NodeID), findIE(ies, ie.FSEID)
	if nid == nil || fs == nil {
		return nil, errors.New("stored establishment without Node ID or F-SEID")
	}
	node, rj := decodeNodeID(nid)
	if rj != nil {
		return nil, rj
	}
	f, rj := decodeFSEID(fs)
	if rj != nil {
		return nil, rj
	}
	var p parser
	s, rj := p.establishment(node, f, ies, created)
	if rj != nil {
		return nil, rj
	}
	return s, nil
}

// seidReserve is how far ahead of the SEIDs handed out the stored bound is.
const seidReserve = 1 << 20

// keepSEIDBound moves the stored SEID bound ahead when the SEIDs handed
// out come near it (one store write per seidReserve/2 sessions).
func (u *UPF) keepSEIDBound() {
	u.st.mu.Lock()
	next := u.st.nextSEID
	u.st.mu.Unlock()
	if next+seidReserve/2 < u.seidBound {
		return
	}
	u.seidBound = next + seidReserve
	if err := u.store.PutMeta(u.recovery, u.seidBound); err != nil {
		u.c.storeErrors.Add(1)
	}
}
