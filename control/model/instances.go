package model

import (
	"fmt"
	"net/netip"
)

// BNG instances: a node's bng section may name several edgeplane-dp BNG
// processes as instances, each with its own slice of the address space
// (ipv4Pool, ipv6Pool) and a subscriber budget. Every subscriber then
// belongs to one instance (Subscriber.Instance; the controller fills it
// in when the request leaves it out) and only that instance's data planes
// hold it. Routes, the ACL and the profiles go to every instance.

// validateInstances checks what the schema cannot: unique instance and
// data plane names, pools of the right family that do not overlap another
// instance's, and that a subscriber naming an instance names one that
// exists and whose pools hold its addresses.
func validateInstances(b *BNGConfig) error {
	names := map[string]int{}
	planes := map[string]int{}
	type owned struct {
		p   netip.Prefix
		idx int
	}
	var pools []owned
	for i, in := range b.Instances {
		path := fmt.Sprintf("bng.instances[%d]", i)
		if j, dup := names[in.Name]; dup {
			return &Invalid{Path: path + ".name", Reason: fmt.Sprintf("%q is also instances[%d]'s name", in.Name, j)}
		}
		names[in.Name] = i
		for k, dp := range in.DataPlanes {
			if j, dup := planes[dp]; dup {
				return &Invalid{Path: fmt.Sprintf("%s.dataPlanes[%d]", path, k), Reason: fmt.Sprintf("data plane %q also serves instances[%d]", dp, j)}
			}
			planes[dp] = i
		}
		subports := map[int]bool{}
		for k, sp := range in.Subports {
			if subports[sp.Subport] {
				return &Invalid{Path: fmt.Sprintf("%s.subports[%d].subport", path, k), Reason: fmt.Sprintf("subport %d has two budgets", sp.Subport)}
			}
			subports[sp.Subport] = true
		}
		for fam, list := range map[string][]IPPrefix{"ipv4Pool": in.Ipv4Pool, "ipv6Pool": in.Ipv6Pool} {
			for k, text := range list {
				p, err := ParsePrefix(text)
				if err == nil && p.Addr().Is4() != (fam == "ipv4Pool") {
					err = fmt.Errorf("not an %s prefix", map[bool]string{true: "IPv4", false: "IPv6"}[fam == "ipv4Pool"])
				}
				if err != nil {
					return &Invalid{Path: fmt.Sprintf("%s.%s[%d]", path, fam, k), Reason: err.Error() + ", got " + text}
				}
				for _, o := range pools {
					if o.p.Overlaps(p) {
						return &Invalid{Path: fmt.Sprintf("%s.%s[%d]", path, fam, k), Reason: fmt.Sprintf("%s overlaps %s of instances[%d]", text, o.p, o.idx)}
					}
				}
				pools = append(pools, owned{p, i})
			}
		}
	}
	for i := range b.Subscribers {
		s := &b.Subscribers[i]
		if s.Instance == "" {
			continue
		}
		path := fmt.Sprintf("bng.subscribers[%d].instance", i)
		j, ok := names[s.Instance]
		if !ok {
			return &Invalid{Path: path, Reason: fmt.Sprintf("no instance %q in bng.instances", s.Instance)}
		}
		if why, ok := b.Instances[j].Holds(s); !ok {
			return &Invalid{Path: path, Reason: why}
		}
	}
	return nil
}

// Holds says whether the instance can serve s: every address of s lies
// in its pools (a family without a pool takes any address) and, when it
// budgets subports, s's subport is one of them; if not, it says why.
func (in *BNGInstance) Holds(s *Subscriber) (string, bool) {
	inPool := func(p netip.Prefix, pool []IPPrefix) bool {
		if len(pool) == 0 {
			return true
		}
		for _, text := range pool {
			q, err := netip.ParsePrefix(text)
			if err == nil && q.Bits() <= p.Bits() && q.Contains(p.Addr()) {
				return true
			}
		}
		return false
	}
	for _, text := range s.Ipv4 {
		if p, err := parseV4OrPrefix(text); err != nil || !inPool(p, in.Ipv4Pool) {
			return fmt.Sprintf("%s is outside instance %q's pool", text, in.Name), false
		}
	}
	if s.Ipv6 != "" {
		if p, err := netip.ParsePrefix(s.Ipv6); err != nil || !inPool(p, in.Ipv6Pool) {
			return fmt.Sprintf("%s is outside instance %q's pool", s.Ipv6, in.Name), false
		}
	}
	if in.SubportBudget(s.Subport) == 0 {
		return fmt.Sprintf("subport %d has no budget on instance %q", s.Subport, in.Name), false
	}
	return "", true
}

// SubportBudget is how many subscribers of subport sp the instance takes:
// its budget for sp, maxSubscribers when it budgets no subport, 0 when it
// budgets others only.
func (in *BNGInstance) SubportBudget(sp int) int {
	if len(in.Subports) == 0 {
		return in.MaxSubscribers
	}
	for _, b := range in.Subports {
		if b.Subport == sp {
			return b.MaxSubscribers
		}
	}
	return 0
}

// ForDataPlane is the bng section as the data plane named dp (its control
// socket's file name) holds it: without instances the whole section;
// with instances only the subscribers of the instance dp serves (none if
// no instance names it). The routes, ACL and profiles are everyone's.
func (b *BNGConfig) ForDataPlane(dp string) *BNGConfig {
	if len(b.Instances) == 0 {
		return b
	}
	inst := ""
	for _, in := range b.Instances {
		for _, n := range in.DataPlanes {
			if n == dp {
				inst = in.Name
			}
		}
	}
	v := *b
	v.Subscribers = nil
	for _, s := range b.Subscribers {
		if inst != "" && s.Instance == inst {
			v.Subscribers = append(v.Subscribers, s)
		}
	}
	return &v
}
