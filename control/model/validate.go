package model

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"edgeplane/control/internal/apispec"
)

// Invalid is a refused configuration: the field's path and why.
type Invalid = apispec.Invalid

// DecodeNodeConfig parses and validates one node's configuration: the
// schema first (types, ranges, unknown fields), then Validate.
func DecodeNodeConfig(b []byte) (NodeConfig, error) {
	var c NodeConfig
	v, err := apispec.Decode(b)
	if err != nil {
		return c, &Invalid{Reason: "not JSON: " + err.Error()}
	}
	if err := CheckJSON("NodeConfig", v); err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, &Invalid{Reason: err.Error()}
	}
	return c, c.Validate()
}

// Validate checks what the schema cannot: prefixes and addresses that
// must agree in family, port ranges, names that must be defined or
// unique, subscribers' access keys and addresses that must not collide.
// A config the schema accepts and Validate accepts is one the data plane
// takes: every refusal here is one the data plane would make, made before
// anything is stored, with the field's path.
func (c *NodeConfig) Validate() error {
	if c.ApiVersion != Edgeplanev1 {
		return &Invalid{Path: "apiVersion", Reason: fmt.Sprintf("want %q, got %q", Edgeplanev1, c.ApiVersion)}
	}
	if r := c.Router; r != nil {
		if err := validateRoutes("router.routes", r.Routes); err != nil {
			return err
		}
		if err := validateACL("router.acl", r.Acl); err != nil {
			return err
		}
	}
	if b := c.Bng; b != nil {
		if err := validateBNG(b); err != nil {
			return err
		}
	}
	if u := c.UdpTermination; u != nil {
		seen := map[string]int{}
		for i, t := range u.Terminate {
			p := fmt.Sprintf("udpTermination.terminate[%d]", i)
			if _, _, err := parsePorts(t.Ports, true); err != nil {
				return &Invalid{Path: p + ".ports", Reason: err.Error()}
			}
			k := t.Text()
			if j, dup := seen[k]; dup {
				return &Invalid{Path: p, Reason: fmt.Sprintf("the same rule as terminate[%d]", j)}
			}
			seen[k] = i
		}
	}
	if m := c.Cmts; m != nil {
		if err := validateCMTS(m); err != nil {
			return err
		}
	}
	if s := c.Steering; s != nil {
		seen := map[string]int{}
		for i, in := range s.Intents {
			p := fmt.Sprintf("steering.intents[%d]", i)
			if j, dup := seen[in.Name]; dup {
				return &Invalid{Path: p + ".name", Reason: fmt.Sprintf("%q is also intents[%d]'s name", in.Name, j)}
			}
			seen[in.Name] = i
			if in.Vni == nil && in.Teid == nil && in.SrcIp == nil && in.DstIp == nil && in.SrcPort == nil && in.DstPort == nil {
				return &Invalid{Path: p, Reason: "names no flow field (vni, teid, srcIp, dstIp, srcPort, dstPort): it would prioritise every flow"}
			}
			if (in.SrcPort != nil || in.DstPort != nil) && in.Proto == nil {
				return &Invalid{Path: p + ".proto", Reason: "required with srcPort or dstPort (tcp or udp)"}
			}
		}
	}
	return nil
}

func validateRoutes(path string, routes []Route) error {
	seen := map[netip.Prefix]int{}
	for i, r := range routes {
		p := fmt.Sprintf("%s[%d]", path, i)
		pfx, err := ParsePrefix(r.Prefix)
		if err != nil {
			return &Invalid{Path: p + ".prefix", Reason: err.Error() + ", got " + strconv.Quote(r.Prefix)}
		}
		via, err := netip.ParseAddr(r.Via)
		if err != nil {
			return &Invalid{Path: p + ".via", Reason: "not an address, got " + strconv.Quote(r.Via)}
		}
		if via.Is4() != pfx.Addr().Is4() {
			return &Invalid{Path: p + ".via", Reason: fmt.Sprintf("gateway %s is not of the prefix's family (%s)", r.Via, r.Prefix)}
		}
		if via.IsUnspecified() || via.IsMulticast() {
			return &Invalid{Path: p + ".via", Reason: "a gateway must be a unicast address, got " + r.Via}
		}
		if j, dup := seen[pfx]; dup {
			return &Invalid{Path: p + ".prefix", Reason: fmt.Sprintf("%s is also %s[%d]'s prefix", r.Prefix, path, j)}
		}
		seen[pfx] = i
	}
	return nil
}

func validateACL(path string, a *ACL) error {
	if a == nil {
		return nil
	}
	for i, r := range a.Rules {
		if err := validateRule(fmt.Sprintf("%s.rules[%d]", path, i), r); err != nil {
			return err
		}
	}
	return nil
}

// validateRule checks one match rule (an ACL rule, a vCMTS filter or
// classifier) at path p.
func validateRule(p string, r ACLRule) error {
	var fam [2]netip.Prefix
	for k, f := range []struct {
		name, v string
	}{{"src", r.Src}, {"dst", r.Dst}} {
		if f.v == "" {
			continue
		}
		pfx, err := ParsePrefix(f.v)
		if err != nil {
			return &Invalid{Path: p + "." + f.name, Reason: err.Error() + ", got " + strconv.Quote(f.v)}
		}
		if pfx.Bits() == 0 {
			return &Invalid{Path: p + "." + f.name, Reason: "a /0 matches every address: leave " + f.name + " out"}
		}
		fam[k] = pfx
	}
	if fam[0].IsValid() && fam[1].IsValid() && fam[0].Addr().Is4() != fam[1].Addr().Is4() {
		return &Invalid{Path: p + ".dst", Reason: "src and dst are of different families"}
	}
	proto := -1
	if r.Proto != "" {
		var err error
		if proto, err = protoNumber(r.Proto); err != nil {
			return &Invalid{Path: p + ".proto", Reason: err.Error()}
		}
	}
	for _, f := range []struct {
		name, v string
	}{{"sport", r.Sport}, {"dport", r.Dport}} {
		if f.v == "" {
			continue
		}
		if proto != 6 && proto != 17 {
			return &Invalid{Path: p + "." + f.name, Reason: "ports need proto tcp or udp"}
		}
		if _, _, err := parsePorts(f.v, false); err != nil {
			return &Invalid{Path: p + "." + f.name, Reason: err.Error()}
		}
	}
	if v6 := fam[0].IsValid() && !fam[0].Addr().Is4() || fam[1].IsValid() && !fam[1].Addr().Is4(); v6 && proto == 1 {
		return &Invalid{Path: p + ".proto", Reason: "icmp (IPv4) with IPv6 prefixes; use icmpv6"}
	}
	return nil
}

func validateBNG(b *BNGConfig) error {
	if err := validateRoutes("bng.routes", b.Routes); err != nil {
		return err
	}
	if err := validateACL("bng.acl", b.Acl); err != nil {
		return err
	}
	policers := map[string]int{}
	for i, p := range b.Policers {
		path := fmt.Sprintf("bng.policers[%d]", i)
		if j, dup := policers[p.Name]; dup {
			return &Invalid{Path: path + ".name", Reason: fmt.Sprintf("%q is also policers[%d]'s name", p.Name, j)}
		}
		policers[p.Name] = i
		if p.Name == "none" {
			return &Invalid{Path: path + ".name", Reason: `"none" means no policer`}
		}
		switch p.Mode {
		case Rfc2698:
			if p.Pir == 0 || p.Pbs == 0 {
				return &Invalid{Path: path, Reason: "rfc2698 needs pir and pbs"}
			}
			if p.Pir < p.Cir {
				return &Invalid{Path: path + ".pir", Reason: fmt.Sprintf("pir %d is below cir %d (RFC 2698: PIR >= CIR)", p.Pir, p.Cir)}
			}
			if p.Eir != 0 || p.Ebs != 0 {
				return &Invalid{Path: path, Reason: "eir and ebs are rfc4115's"}
			}
		case Rfc4115:
			if p.Eir == 0 || p.Ebs == 0 {
				return &Invalid{Path: path, Reason: "rfc4115 needs eir and ebs"}
			}
			if p.Pir != 0 || p.Pbs != 0 {
				return &Invalid{Path: path, Reason: "pir and pbs are rfc2698's"}
			}
		}
	}
	pipes := map[string]int{"default": -1}
	for i, p := range b.Pipes {
		path := fmt.Sprintf("bng.pipes[%d]", i)
		if j, dup := pipes[p.Name]; dup {
			if j < 0 {
				return &Invalid{Path: path + ".name", Reason: `"default" is the data plane's own profile (the port rate)`}
			}
			return &Invalid{Path: path + ".name", Reason: fmt.Sprintf("%q is also pipes[%d]'s name", p.Name, j)}
		}
		pipes[p.Name] = i
	}
	ids := map[int64]int{}
	keys := map[string]int{}
	v4 := v4Owners{hosts: map[netip.Addr]int{}}
	v6 := map[netip.Prefix]int{}
	for i := range b.Subscribers {
		s := &b.Subscribers[i]
		path := fmt.Sprintf("bng.subscribers[%d]", i)
		if j, dup := ids[s.Id]; dup {
			return &Invalid{Path: path + ".id", Reason: fmt.Sprintf("%d is also subscribers[%d]'s id", s.Id, j)}
		}
		ids[s.Id] = i
		if (s.STag == 0) != (s.CTag == 0) {
			return &Invalid{Path: path, Reason: "sTag and cTag go together (QinQ)"}
		}
		if s.STag != 0 && s.Vlan != 0 {
			return &Invalid{Path: path + ".vlan", Reason: "a subscriber has sTag/cTag or vlan, not both"}
		}
		if s.Pppoe != 0 && s.Mac == "" {
			return &Invalid{Path: path + ".mac", Reason: "required with pppoe (the session's client MAC is part of its key)"}
		}
		if s.STag == 0 && s.Vlan == 0 && s.Pppoe == 0 && s.Mac == "" {
			// An untagged IPoE line has no tag to find its subscriber
			// by: the data plane keys it by the client's MAC.
			return &Invalid{Path: path, Reason: "no access key: give sTag/cTag, vlan, pppoe with mac, or mac alone (untagged IPoE)"}
		}
		if s.Mac != "" && !unicastMAC(s.Mac) {
			return &Invalid{Path: path + ".mac", Reason: "a multicast MAC, got " + s.Mac}
		}
		k := s.AccessKey()
		if j, dup := keys[k]; dup {
			return &Invalid{Path: path, Reason: fmt.Sprintf("access key %s is also subscribers[%d]'s", k, j)}
		}
		keys[k] = i
		for a, text := range s.Ipv4 {
			if j, ok := v4.add(text, i); !ok {
				return &Invalid{Path: fmt.Sprintf("%s.ipv4[%d]", path, a), Reason: fmt.Sprintf("%s overlaps an address of subscribers[%d]", text, j)}
			}
		}
		if s.Ipv6 != "" {
			pfx, err := ParsePrefix(s.Ipv6)
			if err == nil && (pfx.Addr().Is4() || pfx.Bits() < 16 || pfx.Bits() > 64) {
				err = fmt.Errorf("want an IPv6 prefix /16 to /64")
			}
			if err != nil {
				return &Invalid{Path: path + ".ipv6", Reason: err.Error() + ", got " + strconv.Quote(s.Ipv6)}
			}
			if j, dup := v6[pfx]; dup {
				return &Invalid{Path: path + ".ipv6", Reason: fmt.Sprintf("%s is also subscribers[%d]'s", s.Ipv6, j)}
			}
			v6[pfx] = i
		}
		if s.Policer != "" && s.Policer != "none" {
			if _, ok := policers[s.Policer]; !ok {
				return &Invalid{Path: path + ".policer", Reason: fmt.Sprintf("no policer %q in bng.policers", s.Policer)}
			}
		}
		if s.Pipe != "" {
			if _, ok := pipes[s.Pipe]; !ok {
				return &Invalid{Path: path + ".pipe", Reason: fmt.Sprintf("no pipe %q in bng.pipes (or default)", s.Pipe)}
			}
		}
	}
	return validateInstances(b)
}

// v4Owners finds overlapping IPv4 addresses among subscribers: a /32 (the
// common case) is a map lookup, a shorter prefix is compared with every
// other range and every host address (ranges are few).
type v4Owners struct {
	hosts  map[netip.Addr]int
	ranges []struct {
		p   netip.Prefix
		idx int
	}
}

func (o *v4Owners) add(text string, idx int) (int, bool) {
	p, _ := parseV4OrPrefix(text) // the schema's format checked it
	for _, r := range o.ranges {
		if r.p.Overlaps(p) {
			return r.idx, false
		}
	}
	if p.IsSingleIP() {
		if j, dup := o.hosts[p.Addr()]; dup {
			return j, false
		}
		o.hosts[p.Addr()] = idx
		return 0, true
	}
	for a, j := range o.hosts {
		if p.Contains(a) {
			return j, false
		}
	}
	o.ranges = append(o.ranges, struct {
		p   netip.Prefix
		idx int
	}{p, idx})
	return 0, true
}

func unicastMAC(m string) bool {
	b, err := strconv.ParseUint(m[:2], 16, 8)
	return err == nil && b&1 == 0
}

func protoNumber(p string) (int, error) {
	switch p {
	case "tcp":
		return 6, nil
	case "udp":
		return 17, nil
	case "icmp":
		return 1, nil
	case "icmpv6":
		return 58, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n > 255 {
		return 0, fmt.Errorf("want tcp, udp, icmp, icmpv6 or 0-255, got %q", p)
	}
	return n, nil
}

// parsePorts reads "p", "lo-hi" (and "any" when allowed).
func parsePorts(s string, anyOK bool) (lo, hi int, err error) {
	if anyOK && s == "any" {
		return 0, 65535, nil
	}
	a, b, rng := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil || lo > 65535 {
		return 0, 0, fmt.Errorf("port %q is not 0-65535", a)
	}
	hi = lo
	if rng {
		if hi, err = strconv.Atoi(b); err != nil || hi > 65535 {
			return 0, 0, fmt.Errorf("port %q is not 0-65535", b)
		}
		if lo > hi {
			return 0, 0, fmt.Errorf("range %s: low end above high end", s)
		}
	}
	return lo, hi, nil
}
