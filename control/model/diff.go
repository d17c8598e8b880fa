package model

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
)

// Diff lists what changes from old to new for one node (either may be
// nil: a node added or removed), object by object, in a stable order:
// sections, then each section's objects by kind and key. The controller's
// plan is this list; it has no side effect.
func Diff(old, new *NodeConfig) []Change {
	var d differ
	switch {
	case old == nil && new == nil:
		return nil
	case old == nil:
		d.add(ChangeKindNode, "", ChangeOpAdd)
		old = &NodeConfig{}
	case new == nil:
		d.add(ChangeKindNode, "", ChangeOpRemove)
		new = &NodeConfig{}
	}
	d.section("router", old.Router != nil, new.Router != nil)
	d.section("bng", old.Bng != nil, new.Bng != nil)
	d.section("udpTermination", old.UdpTermination != nil, new.UdpTermination != nil)
	d.section("steering", old.Steering != nil, new.Steering != nil)
	d.section("cmts", old.Cmts != nil, new.Cmts != nil)

	var or, nr RouterConfig
	if old.Router != nil {
		or = *old.Router
	}
	if new.Router != nil {
		nr = *new.Router
	}
	d.routes("router", or.Routes, nr.Routes)
	d.acl("router.acl", or.Acl, nr.Acl)

	var ob, nb BNGConfig
	if old.Bng != nil {
		ob = *old.Bng
	}
	if new.Bng != nil {
		nb = *new.Bng
	}
	d.routes("bng", ob.Routes, nb.Routes)
	d.acl("bng.acl", ob.Acl, nb.Acl)
	diffBy(&d, ChangeKindPolicer, ob.Policers, nb.Policers, func(p Policer) string { return p.Name })
	diffBy(&d, ChangeKindPipe, ob.Pipes, nb.Pipes, func(p Pipe) string { return p.Name })
	diffBy(&d, ChangeKindSubscriber, ob.Subscribers, nb.Subscribers, func(s Subscriber) string { return strconv.FormatInt(s.Id, 10) })

	var ou, nu UDPTerminationConfig
	if old.UdpTermination != nil {
		ou = *old.UdpTermination
	}
	if new.UdpTermination != nil {
		nu = *new.UdpTermination
	}
	diffBy(&d, ChangeKindTerminate, ou.Terminate, nu.Terminate, TerminateRule.Text)

	var os, ns SteeringConfig
	if old.Steering != nil {
		os = *old.Steering
	}
	if new.Steering != nil {
		ns = *new.Steering
	}
	diffBy(&d, ChangeKindIntent, os.Intents, ns.Intents, func(i SteeringIntent) string { return i.Name })
	d.cmts(old.Cmts, new.Cmts)
	return d.out
}

type differ struct{ out []Change }

// cmts compares service group by service group: its filters (key "sg
// group order") and modems (key "sg id"); a modem's service flows and
// classifiers are part of the modem.
func (d *differ) cmts(old, new *CMTSConfig) {
	type sgPair struct{ old, new CMTSServiceGroup }
	sgs := map[string]*sgPair{}
	var names []string
	for _, c := range []*CMTSConfig{old, new} {
		if c == nil {
			continue
		}
		for _, sg := range c.ServiceGroups {
			if sgs[sg.Name] == nil {
				sgs[sg.Name] = &sgPair{}
				names = append(names, sg.Name)
			}
			if c == old {
				sgs[sg.Name].old = sg
			} else {
				sgs[sg.Name].new = sg
			}
		}
	}
	for _, n := range names {
		p := sgs[n]
		diffBy(d, ChangeKindFilter, p.old.Filters, p.new.Filters, func(f CMTSFilter) string { return n + " " + f.Key() })
		diffBy(d, ChangeKindModem, p.old.Modems, p.new.Modems, func(m CableModem) string { return n + " " + strconv.Itoa(m.Id) })
	}
}

func (d *differ) add(kind ChangeKind, key string, op ChangeOp) {
	d.out = append(d.out, Change{Kind: kind, Key: key, Op: op})
}

func (d *differ) section(name string, had, has bool) {
	switch {
	case !had && has:
		d.add(ChangeKindSection, name, ChangeOpAdd)
	case had && !has:
		d.add(ChangeKindSection, name, ChangeOpRemove)
	}
}

func (d *differ) routes(table string, old, new []Route) {
	diffBy(d, ChangeKindRoute, old, new, func(r Route) string { return table + " " + CanonicalPrefix(r.Prefix) })
}

func (d *differ) acl(key string, old, new *ACL) {
	switch {
	case old == nil && new == nil:
	case old == nil:
		d.add(ChangeKindAcl, key, ChangeOpAdd)
	case new == nil:
		d.add(ChangeKindAcl, key, ChangeOpRemove)
	case old.Default != new.Default || !slices.Equal(old.Texts(), new.Texts()):
		d.add(ChangeKindAcl, key, ChangeOpUpdate)
	}
}

// diffBy compares two lists of objects keyed by key: added, removed, and
// updated when their JSON differs.
func diffBy[T any](d *differ, kind ChangeKind, old, new []T, key func(T) string) {
	was := make(map[string]T, len(old))
	for _, o := range old {
		was[key(o)] = o
	}
	var keys []string
	is := make(map[string]T, len(new))
	for _, n := range new {
		k := key(n)
		is[k] = n
		keys = append(keys, k)
	}
	for k := range was {
		if _, ok := is[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return naturalLess(keys[i], keys[j]) })
	for _, k := range keys {
		o, had := was[k]
		n, has := is[k]
		switch {
		case !had:
			d.add(kind, k, ChangeOpAdd)
		case !has:
			d.add(kind, k, ChangeOpRemove)
		case !sameJSON(o, n):
			d.add(kind, k, ChangeOpUpdate)
		}
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// naturalLess orders numeric keys (subscriber ids) as numbers.
func naturalLess(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}
