// Package reconcile makes a node's data planes match its desired
// configuration (model.NodeConfig), level-based: each pass reads what the
// data plane has, compares it with what it should have, and changes only
// what differs. No pass depends on what an earlier pass did, so a
// restarted data plane (its tables back to its configuration file) or a
// restarted agent (no memory at all) converges the same way, and an
// object that is already right is never touched: its traffic does not
// notice the pass.
//
//	desired (etcd) ──┐
//	                 ├─> diff per table ─> ops (only what differs) ─> data plane
//	observed (read) ─┘        │
//	                          └─> Result: changes made, drift that stays
//
// Order within a pass: profiles before the subscribers that name them,
// subscribers added or replaced before the removals (a subscriber moving
// its address to another id is replaced whole by sub-add-bulk), routes,
// then each ACL replaced whole (one RCU swap) when its text differs.
package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/model"
)

// Table names of edgeplane-dp's instances (dataplane/router/README.md,
// dataplane/bng/README.md).
const (
	RouterFIB = "router"
	RouterACL = "router"
	BNGFIB    = "bng"
	BNGACL    = "bng-uplink"
)

// Planes says which data plane serves each section (one edgeplane-dp may
// serve several). A section the node's config has and Planes lacks is
// drift: nothing here can realise it.
type Planes struct {
	Router, UDP DataPlane
	// BNG is every vBNG process of the node: one that runs both pipelines,
	// or a split pair (bng-uplink and bng-downlink in processes of their
	// own, each with its own subscriber table, profiles, FIB and ACL).
	// Each gets the whole bng section.
	BNG []DataPlane
	// CMTS is every vCMTS process of the node; a service group is
	// reconciled on the one that has it.
	CMTS     []CMTS
	Steering Steering // the agent's XDP function, when it runs with --iface
	// SubIDs is the range of subscriber ids the bng section owns; others
	// (a PFCP user plane's, `edgeplane upf --sub-ids`) are left alone.
	SubIDLo, SubIDHi uint32
}

// Drift is something the pass found different and could not fix.
type Drift = model.Drift

// Result is what one pass did.
type Result struct {
	Changes map[string]int // "subscriber add", "route remove", ...
	Drift   []Drift
}

func (r *Result) count(kind, op string, n int) {
	if n > 0 {
		r.Changes[kind+" "+op] += n
	}
}

func (r *Result) drift(kind, key string, err error) {
	r.Drift = append(r.Drift, Drift{Kind: kind, Key: key, Error: err.Error()})
}

// Converged: nothing was left different.
func (r *Result) Converged() bool { return len(r.Drift) == 0 }

// Pass makes the planes match cfg. Errors of one table do not stop the
// others: each becomes drift, and the next pass tries again.
func Pass(ctx context.Context, p Planes, cfg *model.NodeConfig) Result {
	res := Result{Changes: map[string]int{}}
	if r := cfg.Router; r != nil {
		if p.Router == nil {
			res.drift("section", "router", fmt.Errorf("no data plane serves the router on this node (--router-socket)"))
		} else {
			routes(ctx, p.Router, RouterFIB, r.Routes, &res)
			acl(ctx, p.Router, RouterACL, r.Acl, &res)
		}
	}
	if b := cfg.Bng; b != nil {
		if len(p.BNG) == 0 {
			res.drift("section", "bng", fmt.Errorf("no data plane serves the BNG on this node (--bng-socket)"))
		}
		p.eachBNG(&res, func(dp DataPlane, one *Result) {
			if profiles(ctx, dp, b, one) {
				subscribers(ctx, dp, p.SubIDLo, p.SubIDHi, b.Subscribers, one)
			}
			routes(ctx, dp, BNGFIB, b.Routes, one)
			acl(ctx, dp, BNGACL, b.Acl, one)
		})
	}
	if u := cfg.UdpTermination; u != nil {
		if p.UDP == nil {
			res.drift("section", "udpTermination", fmt.Errorf("no data plane serves UDP termination on this node (--udp-socket)"))
		} else {
			terminates(ctx, p.UDP, u.Terminate, &res)
		}
	}
	if c := cfg.Cmts; c != nil {
		cmts(ctx, p.CMTS, c, &res)
	}
	if st := cfg.Steering; st != nil {
		if p.Steering == nil {
			res.drift("section", "steering", fmt.Errorf("no XDP steering function on this node (edgeplane agent --iface)"))
		} else {
			steering(ctx, p.Steering, st.Intents, &res)
		}
	}
	return res
}

// eachBNG runs f on every BNG data plane; with several, their drift keys
// name the one concerned.
func (p Planes) eachBNG(res *Result, f func(dp DataPlane, one *Result)) {
	for i, dp := range p.BNG {
		one := Result{Changes: res.Changes}
		f(dp, &one)
		for _, d := range one.Drift {
			if len(p.BNG) > 1 {
				d.Key = PlaneName(dp, i) + ": " + d.Key
			}
			res.Drift = append(res.Drift, d)
		}
	}
}

// PlaneName is a data plane's name in drift keys: its label (the control
// socket's file name) or, without one, its place in the list.
func PlaneName(dp DataPlane, i int) string {
	if s, ok := dp.(fmt.Stringer); ok && s.String() != "" {
		return s.String()
	}
	return "#" + strconv.Itoa(i)
}

func routes(ctx context.Context, dp DataPlane, table string, want []model.Route, res *Result) {
	have, err := dp.Routes(ctx, table)
	if err != nil {
		res.drift("route", table, err)
		return
	}
	cur := make(map[string]string, len(have))
	for _, r := range have {
		cur[model.CanonicalPrefix(r.Prefix)] = canonicalAddr(r.Via)
	}
	keep := make(map[string]bool, len(want))
	for _, r := range want {
		pfx := model.CanonicalPrefix(r.Prefix)
		keep[pfx] = true
		via, ok := cur[pfx]
		if ok && via == canonicalAddr(r.Via) {
			continue
		}
		if err := dp.RouteAdd(ctx, table, pfx, r.Via); err != nil {
			res.drift("route", table+" "+pfx, err)
			continue
		}
		res.count("route", map[bool]string{true: "update", false: "add"}[ok], 1)
	}
	for pfx := range cur {
		if keep[pfx] {
			continue
		}
		if err := dp.RouteDel(ctx, table, pfx); err != nil {
			res.drift("route", table+" "+pfx, err)
			continue
		}
		res.count("route", "remove", 1)
	}
}

func canonicalAddr(s string) string {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String()
	}
	return s
}

// acl replaces the table's rules whole when their text differs: the data
// plane builds the new classifier aside and swaps it in, so packets of
// flows the change does not concern see no difference.
func acl(ctx context.Context, dp DataPlane, table string, want *model.ACL, res *Result) {
	if want == nil {
		return
	}
	have, err := dp.ACL(ctx, table)
	if err != nil {
		res.drift("acl", table, err)
		return
	}
	texts := want.Texts()
	if !slices.Equal(have.Rules, texts) {
		if err := dp.ACLReplace(ctx, table, texts); err != nil {
			res.drift("acl", table, err)
			return
		}
		res.count("acl", "update", 1)
	}
	if have.Default != string(want.Default) {
		if err := dp.ACLSetDefault(ctx, table, string(want.Default)); err != nil {
			res.drift("acl", table+" default", err)
			return
		}
		res.count("acl default", "update", 1)
	}
}

// profiles adds the policer and pipe profiles that are missing or
// different (the data plane cannot delete a profile: extra ones stay).
// It says whether the subscribers may go ahead (their profiles exist).
func profiles(ctx context.Context, dp DataPlane, b *model.BNGConfig, res *Result) bool {
	have, err := dp.Profiles(ctx)
	if err != nil {
		res.drift("policer", "*", err)
		return false
	}
	pol := map[string]PolicerState{}
	for _, p := range have.Policers {
		pol[p.Name] = p
	}
	ok := true
	for _, p := range b.Policers {
		h, found := pol[p.Name]
		if found && h.Mode == string(p.Mode) && h.CIR == p.Cir && h.CBS == p.Cbs && h.PIR == p.Pir && h.PBS == p.Pbs && h.EIR == p.Eir && h.EBS == p.Ebs {
			continue
		}
		req := dpctl.Policer{Name: p.Name, Mode: string(p.Mode), CIR: itoa(p.Cir), CBS: itoa(p.Cbs)}
		if p.Mode == model.Rfc2698 {
			req.PIR, req.PBS = itoa(p.Pir), itoa(p.Pbs)
		} else {
			req.EIR, req.EBS = itoa(p.Eir), itoa(p.Ebs)
		}
		if err := dp.PolicerAdd(ctx, req); err != nil {
			res.drift("policer", p.Name, err)
			ok = false
			continue
		}
		res.count("policer", map[bool]string{true: "update", false: "add"}[found], 1)
	}
	pipes := map[string]PipeState{}
	for _, p := range have.Pipes {
		pipes[p.Name] = p
	}
	for _, p := range b.Pipes {
		h, found := pipes[p.Name]
		if found && h.Rate == p.Rate && (p.TbSize == 0 || h.TBSize == p.TbSize) {
			continue
		}
		req := dpctl.Pipe{Name: p.Name, Rate: itoa(p.Rate)}
		if p.TbSize != 0 {
			req.TBSize = itoa(p.TbSize)
		}
		if err := dp.PipeAdd(ctx, req); err != nil {
			res.drift("pipe", p.Name, err)
			ok = false
			continue
		}
		res.count("pipe", map[bool]string{true: "update", false: "add"}[found], 1)
	}
	return ok
}

// BulkSize is the subscribers sent in one sub-add-bulk.
const BulkSize = 4096

func subscribers(ctx context.Context, dp DataPlane, lo, hi uint32, want []model.Subscriber, res *Result) {
	have, err := dp.Subscribers(ctx)
	if err != nil {
		res.drift("subscriber", "*", err)
		return
	}
	owned := func(id uint32) bool { return hi == 0 || id >= lo && id <= hi }
	cur := make(map[uint32]string, len(have))
	for i := range have {
		if owned(have[i].ID) {
			cur[have[i].ID] = stateKey(&have[i])
		}
	}
	var put []dpctl.Subscriber
	replace := map[uint32]bool{}
	keep := make(map[uint32]bool, len(want))
	for i := range want {
		s := ToDP(&want[i])
		if !owned(s.ID) {
			res.drift("subscriber", strconv.Itoa(int(s.ID)), fmt.Errorf("id outside the agent's --sub-ids %d-%d", lo, hi))
			continue
		}
		keep[s.ID] = true
		k, found := cur[s.ID]
		if found && k == wantKey(&s) {
			continue
		}
		replace[s.ID] = found
		put = append(put, s)
	}
	var del []uint32
	for id := range cur {
		if !keep[id] {
			del = append(del, id)
		}
	}
	sendSubscribers(ctx, dp, put, replace, del, res)
}

// sendSubscribers adds or replaces put (replace says which ids the data
// plane had) in batches of BulkSize, then deletes del.
func sendSubscribers(ctx context.Context, dp DataPlane, put []dpctl.Subscriber, replace map[uint32]bool, del []uint32, res *Result) {
	// Removals last, unless an address or access key moving between ids
	// makes the add refuse: the add is whole or nothing, so a refused
	// batch leaves the old subscribers forwarding.
	sort.Slice(del, func(i, j int) bool { return del[i] < del[j] })
	for start := 0; start < len(put); start += BulkSize {
		batch := put[start:min(start+BulkSize, len(put))]
		if err := dp.SubAddBulk(ctx, batch); err != nil {
			// A batch can be refused because a subscriber about to be
			// deleted still holds the key or address it takes: delete
			// first, once, and try again.
			if len(del) > 0 {
				if derr := dp.SubDel(ctx, del); derr == nil {
					res.count("subscriber", "remove", len(del))
					del = nil
					err = dp.SubAddBulk(ctx, batch)
				}
			}
			if err != nil {
				res.drift("subscriber", fmt.Sprintf("%d..%d", batch[0].ID, batch[len(batch)-1].ID), err)
				continue
			}
		}
		for _, x := range batch {
			res.count("subscriber", map[bool]string{true: "update", false: "add"}[replace[x.ID]], 1)
		}
	}
	if len(del) > 0 {
		if err := dp.SubDel(ctx, del); err != nil {
			res.drift("subscriber", "remove", err)
		} else {
			res.count("subscriber", "remove", len(del))
		}
	}
}

// ToDP is the sub-add request of a model subscriber.
func ToDP(s *model.Subscriber) dpctl.Subscriber {
	d := dpctl.Subscriber{ID: uint32(s.Id), VLAN: uint16(s.Vlan), PPPoE: uint16(s.Pppoe),
		MAC: strings.ToLower(s.Mac), IPv4: s.Ipv4, IPv6: s.Ipv6, Policer: s.Policer, Pipe: s.Pipe}
	if s.STag != 0 {
		d.QinQ = fmt.Sprintf("%d.%d", s.STag, s.CTag)
	}
	if s.Subport != 0 {
		sp := uint32(s.Subport)
		d.Subport = &sp
	}
	return d
}

// subKey is a subscriber's every stored field, in one form for the
// desired and the listed subscriber.
func subKey(qinq string, vlan, pppoe uint16, mac string, v4 []string, v6, policer, pipe string, subport uint32) string {
	addrs := make([]string, len(v4))
	for i, a := range v4 {
		addrs[i] = strings.TrimSuffix(a, "/32")
	}
	sort.Strings(addrs)
	if policer == "none" {
		policer = ""
	}
	if pipe == "" {
		pipe = "default"
	}
	if v6 != "" {
		v6 = model.CanonicalPrefix(v6)
	}
	return fmt.Sprintf("%s|%d|%d|%s|%s|%s|%s|%s|%d", qinq, vlan, pppoe, strings.ToLower(mac),
		strings.Join(addrs, ","), v6, policer, pipe, subport)
}

func wantKey(s *dpctl.Subscriber) string {
	var sp uint32
	if s.Subport != nil {
		sp = *s.Subport
	}
	return subKey(s.QinQ, s.VLAN, s.PPPoE, s.MAC, s.IPv4, s.IPv6, s.Policer, s.Pipe, sp)
}

func stateKey(s *dpctl.SubscriberState) string {
	pol := ""
	if s.Policer != nil {
		pol = *s.Policer
	}
	return subKey(s.QinQ, s.VLAN, s.PPPoE, s.MAC, s.IPv4, s.IPv6, pol, s.Pipe, s.Subport)
}

func terminates(ctx context.Context, dp DataPlane, want []model.TerminateRule, res *Result) {
	have, err := dp.Terminates(ctx)
	if err != nil {
		res.drift("terminate", "*", err)
		return
	}
	cur := make(map[string]bool, len(have))
	for _, r := range have {
		cur[r] = true
	}
	keep := map[string]bool{}
	for _, t := range want {
		k := t.Text()
		keep[k] = true
		if cur[k] {
			continue
		}
		if err := dp.TerminateAdd(ctx, k); err != nil {
			res.drift("terminate", k, err)
			continue
		}
		res.count("terminate", "add", 1)
	}
	for _, r := range have {
		if keep[r] {
			continue
		}
		if err := dp.TerminateDel(ctx, r); err != nil {
			res.drift("terminate", r, err)
			continue
		}
		res.count("terminate", "remove", 1)
	}
}
