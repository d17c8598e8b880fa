package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/model"
)

// Incremental makes the planes go from old to new when the data planes
// are known to hold old (the last pass converged on it and no data plane
// restarted since): it sends what the revision changed and reads only the
// small tables of the sections that changed.
//
// The cost of a full pass grows with the node (sub-list of every
// subscriber: 65,536 of them are 8 requests and 8 MiB of JSON); one
// subscriber changed in a node of thousands is one sub-add-bulk here.
// Subscribers, the one large table, are compared object by object between
// the two revisions; a changed ACL, profile list, route list, terminate
// list, steering or cmts section gets that section's full comparison with
// the data plane (each reads one small table). A section added or removed
// gets a full pass. Drift from someone else's change to a table is still
// fixed by the periodic full pass (--resync) and a restart by the restart
// pass: this is an early, cheaper step, not the level the agent converges
// to.
func Incremental(ctx context.Context, p Planes, old, new *model.NodeConfig) Result {
	if (old.Router == nil) != (new.Router == nil) || (old.Bng == nil) != (new.Bng == nil) ||
		(old.UdpTermination == nil) != (new.UdpTermination == nil) || (old.Steering == nil) != (new.Steering == nil) ||
		(old.Cmts == nil) != (new.Cmts == nil) {
		return Pass(ctx, p, new)
	}
	res := Result{Changes: map[string]int{}}
	if r := new.Router; r != nil && !sameJSON(old.Router, r) {
		sub := *new
		sub.Bng, sub.UdpTermination, sub.Steering, sub.Cmts = nil, nil, nil, nil
		res.merge(Pass(ctx, p, &sub))
	}
	if u := new.UdpTermination; u != nil && !sameJSON(old.UdpTermination, u) {
		sub := model.NodeConfig{ApiVersion: new.ApiVersion, UdpTermination: u}
		res.merge(Pass(ctx, p, &sub))
	}
	if st := new.Steering; st != nil && !sameJSON(old.Steering, st) {
		sub := model.NodeConfig{ApiVersion: new.ApiVersion, Steering: st}
		res.merge(Pass(ctx, p, &sub))
	}
	if c := new.Cmts; c != nil && !sameJSON(old.Cmts, c) {
		sub := model.NodeConfig{ApiVersion: new.ApiVersion, Cmts: c}
		res.merge(Pass(ctx, p, &sub))
	}
	if b := new.Bng; b != nil {
		bngIncremental(ctx, p, old.Bng, b, &res)
	}
	return res
}

func (r *Result) merge(o Result) {
	for k, n := range o.Changes {
		r.Changes[k] += n
	}
	r.Drift = append(r.Drift, o.Drift...)
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func bngIncremental(ctx context.Context, p Planes, old, b *model.BNGConfig, res *Result) {
	if len(p.BNG) == 0 {
		res.drift("section", "bng", fmt.Errorf("no data plane serves the BNG on this node (--bng-socket)"))
		return
	}
	profilesChanged := !sameJSON(old.Policers, b.Policers) || !sameJSON(old.Pipes, b.Pipes)
	owned := func(id uint32) bool { return p.SubIDHi == 0 || id >= p.SubIDLo && id <= p.SubIDHi }
	// The subscribers the revision added or changed, and those it removed.
	was := make(map[int64]*model.Subscriber, len(old.Subscribers))
	for i := range old.Subscribers {
		was[old.Subscribers[i].Id] = &old.Subscribers[i]
	}
	var put []dpctl.Subscriber
	replace := map[uint32]bool{}
	for i := range b.Subscribers {
		s := &b.Subscribers[i]
		o, found := was[s.Id]
		delete(was, s.Id)
		if found && sameJSON(o, s) {
			continue
		}
		d := ToDP(s)
		if !owned(d.ID) {
			res.drift("subscriber", strconv.FormatInt(s.Id, 10), fmt.Errorf("id outside the agent's --sub-ids %d-%d", p.SubIDLo, p.SubIDHi))
			continue
		}
		put = append(put, d)
		replace[d.ID] = found
	}
	var del []uint32
	for id := range was {
		if owned(uint32(id)) {
			del = append(del, uint32(id))
		}
	}
	p.eachBNG(res, func(dp DataPlane, one *Result) {
		ok := true
		if profilesChanged {
			ok = profiles(ctx, dp, b, one)
		}
		if ok {
			sendSubscribers(ctx, dp, put, replace, append([]uint32(nil), del...), one)
		}
		if !sameJSON(old.Routes, b.Routes) {
			routes(ctx, dp, BNGFIB, b.Routes, one)
		}
		if !sameJSON(old.Acl, b.Acl) {
			acl(ctx, dp, BNGACL, b.Acl, one)
		}
	})
}
