package model

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The objects in the form edgeplane-dp lists them: a plan and a
// reconciliation compare these strings, so an object the data plane
// already has in that form is left alone.

// Text is the rule in the ACL module's grammar, exactly as acl-list
// prints it (dataplane/acl ep_acl_rule_format): the action, then proto,
// src, dst, sport, dport, each only when it restricts.
func (r ACLRule) Text() string {
	var b strings.Builder
	b.WriteString(string(r.Action))
	if r.Proto != "" {
		if n, err := strconv.Atoi(r.Proto); err == nil {
			switch n {
			case 6:
				b.WriteString(" proto tcp")
			case 17:
				b.WriteString(" proto udp")
			case 1:
				b.WriteString(" proto icmp")
			case 58:
				b.WriteString(" proto icmpv6")
			default:
				fmt.Fprintf(&b, " proto %d", n)
			}
		} else {
			b.WriteString(" proto " + r.Proto)
		}
	}
	for _, f := range []struct{ k, v string }{{"src", r.Src}, {"dst", r.Dst}} {
		if f.v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f.v); err == nil && p.Bits() == 0 {
			continue // matches every address of the family: printed as nothing
		}
		b.WriteString(" " + f.k + " " + f.v)
	}
	for _, f := range []struct{ k, v string }{{"sport", r.Sport}, {"dport", r.Dport}} {
		if f.v == "" {
			continue
		}
		lo, hi, err := parsePorts(f.v, false)
		switch {
		case err != nil || lo == 0 && hi == 65535:
		case lo == hi:
			fmt.Fprintf(&b, " %s %d", f.k, lo)
		default:
			fmt.Fprintf(&b, " %s %d-%d", f.k, lo, hi)
		}
	}
	return b.String()
}

// Texts is an ACL's rules as text, in order.
func (a *ACL) Texts() []string {
	out := make([]string, len(a.Rules))
	for i, r := range a.Rules {
		out[i] = r.Text()
	}
	return out
}

// Text is the host stack's terminate rule ("<address|any> <port|lo-hi|any>").
func (t TerminateRule) Text() string {
	ports := t.Ports
	if lo, hi, err := parsePorts(t.Ports, true); err == nil {
		switch {
		case lo <= 1 && hi == 65535: // the host stack's "any" is 1-65535
			ports = "any"
		case lo == hi:
			ports = strconv.Itoa(lo)
		default:
			ports = fmt.Sprintf("%d-%d", lo, hi)
		}
	}
	return t.Address + " " + ports
}

// AccessKey names what the data plane finds a subscriber by on the
// access side: its tags, for PPPoE the session and client MAC, and for
// IPoE on an untagged line the client MAC alone.
func (s *Subscriber) AccessKey() string {
	k := ""
	switch {
	case s.STag != 0:
		k = fmt.Sprintf("qinq %d.%d", s.STag, s.CTag)
	case s.Vlan != 0:
		k = fmt.Sprintf("vlan %d", s.Vlan)
	default:
		k = "untagged"
	}
	switch {
	case s.Pppoe != 0:
		k += fmt.Sprintf(" pppoe %d %s", s.Pppoe, strings.ToLower(s.Mac))
	case k == "untagged":
		k += " mac " + strings.ToLower(s.Mac)
	}
	return k
}

// CanonicalPrefix is a prefix as the data plane prints it.
func CanonicalPrefix(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return s
}
