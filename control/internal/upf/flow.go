package upf

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// flowRule is an SDF Filter's Flow Description (TS 29.244 clause 8.2.5,
// the IPFilterRule of RFC 6733 section 4.3 as TS 29.212 restricts it):
//
//	permit out <proto> from <src> [<ports>] to <dst> [<ports>]
//
// proto is a number or "ip" (any); src and dst are "any", "assigned"
// (the UE's addresses: any here) or an address with an optional length;
// ports are "p", "p1-p2" or lists of them.  Only the redirect uses these
// (which punted control packets a default session sends where), so the
// subset is what a BNG control plane writes for DHCP, DHCPv6 and ICMPv6.
type flowRule struct {
	proto        int // -1: any
	src, dst     netip.Prefix
	sport, dport []portRange
}

type portRange struct{ lo, hi uint16 }

func parseFlow(s string) (flowRule, error) {
	f := strings.Fields(s)
	r := flowRule{proto: -1}
	if len(f) < 7 || f[0] != "permit" || f[1] != "out" {
		return r, fmt.Errorf("want 'permit out <proto> from <src> [ports] to <dst> [ports]'")
	}
	if f[2] != "ip" {
		p, err := strconv.ParseUint(f[2], 10, 8)
		if err != nil {
			return r, fmt.Errorf("protocol %q", f[2])
		}
		r.proto = int(p)
	}
	k := 3
	var err error
	if f[k] != "from" {
		return r, fmt.Errorf("'from' expected, got %q", f[k])
	}
	k++
	if r.src, err = flowAddr(f[k]); err != nil {
		return r, err
	}
	k++
	if k < len(f) && f[k] != "to" {
		if r.sport, err = flowPorts(f[k]); err != nil {
			return r, err
		}
		k++
	}
	if k >= len(f) || f[k] != "to" {
		return r, fmt.Errorf("'to' expected")
	}
	k++
	if k >= len(f) {
		return r, fmt.Errorf("no destination")
	}
	if r.dst, err = flowAddr(f[k]); err != nil {
		return r, err
	}
	k++
	if k < len(f) {
		if r.dport, err = flowPorts(f[k]); err != nil {
			return r, err
		}
		k++
	}
	if k != len(f) {
		return r, fmt.Errorf("options (%q) are not supported", strings.Join(f[k:], " "))
	}
	return r, nil
}

func flowAddr(s string) (netip.Prefix, error) {
	if s == "any" || s == "assigned" {
		return netip.Prefix{}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("address %q", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address %q", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func flowPorts(s string) ([]portRange, error) {
	var out []portRange
	for _, part := range strings.Split(s, ",") {
		lo, hi, rng := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q", part)
		}
		b := a
		if rng {
			if b, err = strconv.ParseUint(hi, 10, 16); err != nil || b < a {
				return nil, fmt.Errorf("port range %q", part)
			}
		}
		out = append(out, portRange{uint16(a), uint16(b)})
	}
	return out, nil
}

func inPorts(rs []portRange, p uint16) bool {
	if len(rs) == 0 {
		return true
	}
	for _, r := range rs {
		if p >= r.lo && p <= r.hi {
			return true
		}
	}
	return false
}

// matches reports whether a packet (protocol, addresses, ports) fits the
// rule.  A rule is written from the network's side ("out": towards the
// UE); the redirect matches packets from the UE, so both orientations are
// tried.
func (r flowRule) matches(proto int, src, dst netip.Addr, sport, dport uint16) bool {
	if r.proto >= 0 && r.proto != proto {
		return false
	}
	one := func(s, d netip.Addr, sp, dp uint16) bool {
		return (!r.src.IsValid() || r.src.Contains(s)) && (!r.dst.IsValid() || r.dst.Contains(d)) &&
			inPorts(r.sport, sp) && inPorts(r.dport, dp)
	}
	return one(src, dst, sport, dport) || one(dst, src, dport, sport)
}
