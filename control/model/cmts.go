package model

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The vCMTS section (dataplane/cmts): per service group, the filter-group
// rules and the cable modems with their service flows and classifiers, in
// the forms edgeplane-dp's cm-get and filter-list print, so that a plan
// and a reconciliation compare the same strings.

// CMTSMatch is the match fields of a filter or classifier.
type CMTSMatch struct {
	Proto, Src, Dst, Sport, Dport, Tos string
}

// Match is a filter's match fields.
func (f CMTSFilter) Match() CMTSMatch {
	return CMTSMatch{f.Proto, f.Src, f.Dst, f.Sport, f.Dport, f.Tos}
}

// Match is a classifier's match fields.
func (c Classifier) Match() CMTSMatch {
	return CMTSMatch{c.Proto, c.Src, c.Dst, c.Sport, c.Dport, c.Tos}
}

// Canonical is the match as cm-get and filter-list print it
// (dataplane/cmts match_json): proto a number, prefixes address/length,
// port and ToS ranges lo-hi, each only when it restricts.
func (m CMTSMatch) Canonical() string {
	var b strings.Builder
	if m.Proto != "" {
		n, _ := protoNumber(m.Proto)
		fmt.Fprintf(&b, " proto=%d", n)
	}
	for _, f := range []struct{ k, v string }{{"src", m.Src}, {"dst", m.Dst}} {
		if f.v != "" {
			if p, err := ParsePrefix(f.v); err == nil && p.Bits() > 0 {
				b.WriteString(" " + f.k + "=" + p.String())
			}
		}
	}
	for _, f := range []struct {
		k, v string
		max  int
	}{{"sport", m.Sport, 65535}, {"dport", m.Dport, 65535}, {"tos", m.Tos, 255}} {
		if f.v == "" {
			continue
		}
		lo, hi, _ := parseRange(f.v, f.max)
		if lo != 0 || hi != f.max {
			fmt.Fprintf(&b, " %s=%d-%d", f.k, lo, hi)
		}
	}
	return strings.TrimSpace(b.String())
}

// Fields are the match as a control command's key=value fields.
func (m CMTSMatch) Fields(into map[string]any) {
	for _, f := range []struct{ k, v string }{{"proto", m.Proto}, {"src", m.Src}, {"dst", m.Dst},
		{"sport", m.Sport}, {"dport", m.Dport}, {"tos", m.Tos}} {
		if f.v != "" {
			into[f.k] = f.v
		}
	}
}

// Text is the filter-add rule: "<group> <order> permit|deny [k=v ...]".
func (f CMTSFilter) Text() string {
	m := f.Match().Canonical()
	if m != "" {
		m = " " + m
	}
	return fmt.Sprintf("%d %d %s%s", f.Group, f.Order, f.Action, m)
}

// Key is a filter's identity within its service group.
func (f CMTSFilter) Key() string { return fmt.Sprintf("%d %d", f.Group, f.Order) }

// DefaultSF is SF 0 as a new CM has it (rate 0: unlimited, unshaped).
var DefaultSF = ServiceFlow{Sf: 0}

// DefaultBurst is a set flow's max traffic burst when it names none
// (MULPI's default, as sf-set's).
const DefaultBurst = 3044

// Flows is the modem's service flows as the data plane holds them: SF 0
// always, as a new CM has it unless the modem sets it.
func (m *CableModem) Flows() map[int]ServiceFlow {
	out := map[int]ServiceFlow{0: DefaultSF}
	for _, f := range m.ServiceFlows {
		if f.Burst == 0 {
			f.Burst = DefaultBurst
		}
		out[f.Sf] = f
	}
	return out
}

func parseRange(s string, max int) (lo, hi int, err error) {
	a, b, rng := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil || lo > max {
		return 0, 0, fmt.Errorf("%q is not 0-%d", a, max)
	}
	hi = lo
	if rng {
		if hi, err = strconv.Atoi(b); err != nil || hi > max {
			return 0, 0, fmt.Errorf("%q is not 0-%d", b, max)
		}
		if lo > hi {
			return 0, 0, fmt.Errorf("range %s: low end above high end", s)
		}
	}
	return lo, hi, nil
}

func validateMatch(p string, m CMTSMatch) error {
	if err := validateRule(p, ACLRule{Proto: m.Proto, Src: m.Src, Dst: m.Dst, Sport: m.Sport, Dport: m.Dport}); err != nil {
		return err
	}
	if m.Tos != "" {
		if _, _, err := parseRange(m.Tos, 255); err != nil {
			return &Invalid{Path: p + ".tos", Reason: err.Error()}
		}
	}
	return nil
}

func validateCMTS(c *CMTSConfig) error {
	sgs := map[string]int{}
	for i, sg := range c.ServiceGroups {
		p := fmt.Sprintf("cmts.serviceGroups[%d]", i)
		if j, dup := sgs[sg.Name]; dup {
			return &Invalid{Path: p + ".name", Reason: fmt.Sprintf("%q is also serviceGroups[%d]'s name", sg.Name, j)}
		}
		sgs[sg.Name] = i
		filters := map[string]int{}
		for k, f := range sg.Filters {
			fp := fmt.Sprintf("%s.filters[%d]", p, k)
			if j, dup := filters[f.Key()]; dup {
				return &Invalid{Path: fp + ".order", Reason: fmt.Sprintf("group %d order %d is also filters[%d]'s", f.Group, f.Order, j)}
			}
			filters[f.Key()] = k
			if err := validateMatch(fp, f.Match()); err != nil {
				return err
			}
		}
		if err := validateModems(p, sg.Modems); err != nil {
			return err
		}
	}
	return nil
}

func validateModems(p string, modems []CableModem) error {
	ids, macs, addrs, sids := map[int]int{}, map[string]int{}, map[netip.Addr]int{}, map[int]int{}
	for i := range modems {
		m := &modems[i]
		mp := fmt.Sprintf("%s.modems[%d]", p, i)
		if j, dup := ids[m.Id]; dup {
			return &Invalid{Path: mp + ".id", Reason: fmt.Sprintf("%d is also modems[%d]'s id", m.Id, j)}
		}
		ids[m.Id] = i
		mac := strings.ToLower(m.Mac)
		if !unicastMAC(mac) {
			return &Invalid{Path: mp + ".mac", Reason: "not a unicast MAC, got " + m.Mac}
		}
		if j, dup := macs[mac]; dup {
			return &Invalid{Path: mp + ".mac", Reason: fmt.Sprintf("%s is also modems[%d]'s", m.Mac, j)}
		}
		macs[mac] = i
		for k, cpe := range m.Cpe {
			a, cmac, _ := strings.Cut(cpe, "@")
			addr, err := netip.ParseAddr(a)
			if err != nil || addr.Zone() != "" {
				return &Invalid{Path: fmt.Sprintf("%s.cpe[%d]", mp, k), Reason: "not an IPv4 or IPv6 address, got " + strconv.Quote(a)}
			}
			if cmac != "" && !unicastMAC(cmac) {
				return &Invalid{Path: fmt.Sprintf("%s.cpe[%d]", mp, k), Reason: "not a unicast MAC, got " + cmac}
			}
			if j, dup := addrs[addr.Unmap()]; dup {
				return &Invalid{Path: fmt.Sprintf("%s.cpe[%d]", mp, k), Reason: fmt.Sprintf("%s is also modems[%d]'s CPE", a, j)}
			}
			addrs[addr.Unmap()] = i
		}
		if len(m.FilterGroups) == 2 && m.FilterGroups[0] == m.FilterGroups[1] {
			return &Invalid{Path: mp + ".filterGroups[1]", Reason: "the same group twice"}
		}
		for k, s := range m.Sids {
			if j, dup := sids[s]; dup {
				return &Invalid{Path: fmt.Sprintf("%s.sids[%d]", mp, k), Reason: fmt.Sprintf("SID %d is also modems[%d]'s", s, j)}
			}
			sids[s] = i
		}
		flows := map[int]bool{}
		for k, f := range m.ServiceFlows {
			if flows[f.Sf] {
				return &Invalid{Path: fmt.Sprintf("%s.serviceFlows[%d].sf", mp, k), Reason: fmt.Sprintf("SF %d is defined twice", f.Sf)}
			}
			flows[f.Sf] = true
		}
		cls := map[int]bool{}
		for k, c := range m.Classifiers {
			cp := fmt.Sprintf("%s.classifiers[%d]", mp, k)
			if cls[c.Cls] {
				return &Invalid{Path: cp + ".cls", Reason: fmt.Sprintf("classifier %d is defined twice", c.Cls)}
			}
			cls[c.Cls] = true
			if !flows[c.Sf] {
				return &Invalid{Path: cp + ".sf", Reason: fmt.Sprintf("no SF %d in the modem's serviceFlows", c.Sf)}
			}
			if err := validateMatch(cp, c.Match()); err != nil {
				return err
			}
		}
	}
	return nil
}
