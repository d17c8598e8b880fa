package upf

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/bbf"
)

// AccessKey is what identifies a subscriber on the access side: the BNG's
// classification key (tags, and for PPPoE the session and client MAC; on
// an untagged IPoE line the client MAC alone), on a logical port.
type AccessKey struct {
	Port  string
	STag  uint16
	CTag  uint16
	PPPoE uint16
	MAC   string // PPPoE, untagged IPoE: part of the key; IPoE: the downlink destination
}

// untaggedIPoE: no tags and no PPPoE session, so the client MAC is the key
// (a shared segment, TR-459's Ethernet packet filter of the PDI).
func (k AccessKey) untaggedIPoE() bool { return k.PPPoE == 0 && k.STag == 0 && k.CTag == 0 }

func (k AccessKey) String() string {
	s := fmt.Sprintf("port %s", k.Port)
	if k.STag != 0 {
		s += fmt.Sprintf(" s-tag %d", k.STag)
	}
	if k.CTag != 0 {
		s += fmt.Sprintf(" c-tag %d", k.CTag)
	}
	if k.PPPoE != 0 {
		s += fmt.Sprintf(" pppoe %#04x mac %s", k.PPPoE, k.MAC)
	} else if k.untaggedIPoE() {
		s += fmt.Sprintf(" untagged mac %s", k.MAC)
	}
	return s
}

// dpKey is the part of the key the data plane classifies on: two PPPoE
// sessions, or an IPoE subscriber and a PPPoE session, may share tags;
// untagged IPoE subscribers share the port and differ by MAC.
type dpKey struct {
	Port              string
	STag, CTag, PPPoE uint16
	MAC               string
}

func (k AccessKey) dp() dpKey {
	d := dpKey{Port: k.Port, STag: k.STag, CTag: k.CTag, PPPoE: k.PPPoE}
	if k.PPPoE != 0 || k.untaggedIPoE() {
		d.MAC = k.MAC
	}
	return d
}

// SubPlan is the subscriber a session becomes.
type SubPlan struct {
	Key     AccessKey
	Addrs   []netip.Prefix // IPv4 ranges and the IPv6 prefix: anti-spoofing and downlink lookup
	Policer *PolicerProfile
	Pipe    *PipeProfile
	// URR directions: which URRs measure uplink (PDRs from Access) and
	// which downlink (PDRs from Core).
	URRUL, URRDL []uint32
}

// Subscriber is the sub-add request for id.
func (sp *SubPlan) Subscriber(id uint32) dpctl.Subscriber {
	s := dpctl.Subscriber{ID: id, MAC: sp.Key.MAC, PPPoE: sp.Key.PPPoE}
	// The texts (tags, addresses) are written into one buffer and cut
	// from one string: fmt and each address's String were five
	// allocations a subscriber.
	var buf [128]byte
	b := buf[:0]
	var cutBuf [8]int
	cuts := cutBuf[:0] // ends of the texts in b: QinQ, then each address
	switch {
	case sp.Key.STag != 0 && sp.Key.CTag != 0:
		b = strconv.AppendUint(b, uint64(sp.Key.STag), 10)
		b = append(b, '.')
		b = strconv.AppendUint(b, uint64(sp.Key.CTag), 10)
	case sp.Key.STag != 0:
		s.VLAN = sp.Key.STag
	case sp.Key.CTag != 0:
		s.VLAN = sp.Key.CTag
	}
	cuts = append(cuts, len(b))
	v4 := 0
	for _, a := range sp.Addrs {
		if a.Addr().Is4() {
			v4++
			if a.Bits() == 32 {
				b = a.Addr().AppendTo(b)
			} else {
				b = a.AppendTo(b)
			}
		} else {
			b = a.AppendTo(b)
		}
		cuts = append(cuts, len(b))
	}
	str := string(b)
	s.QinQ = str[:cuts[0]]
	if v4 > 0 {
		s.IPv4 = make([]string, 0, v4)
	}
	for i, a := range sp.Addrs {
		t := str[cuts[i]:cuts[i+1]]
		if a.Addr().Is4() {
			s.IPv4 = append(s.IPv4, t)
		} else {
			s.IPv6 = t
		}
	}
	if sp.Policer != nil {
		s.Policer = sp.Policer.Name
	}
	if sp.Pipe != nil {
		s.Pipe = sp.Pipe.Name
	}
	return s
}

// CPRUp is one rule sending control packets from subscribers to the
// control plane (TR-459 control packet redirect, UP to CP): a PDR with
// source interface Access whose FAR forwards to the CP function through a
// GTP-U tunnel.
type CPRUp struct {
	SEID       uint64
	PDR        uint16
	Precedence uint32
	Default    bool      // a default (IBCP) session's rule: any subscriber
	Key        AccessKey // fields that must match (zero: any)
	Ethertypes []uint16
	SDF        []flowRule
	PPP        *bbf.PPPProto
	TEID       uint32
	Peer       netip.Addr
	NSH        bool // BBF Outer Header Creation CPR-NSH: logical port in NSH metadata
	URRs       []uint32
}

// setSEID names the session in the plan's redirect rules (a plan
// translated before its session had a SEID).
func (p *Plan) setSEID(seid uint64) {
	for i := range p.CPRUp {
		p.CPRUp[i].SEID = seid
	}
	for i := range p.CPRDown {
		p.CPRDown[i].SEID = seid
	}
}

// CPRDown is a tunnel on which the control plane sends frames to a
// subscriber (CP to UP): our TEID, and where the frames go.
type CPRDown struct {
	SEID uint64
	PDR  uint16
	TEID uint32
	Key  AccessKey
	// Where the local F-TEID came from: CHOOSE (we pick the TEID, once per
	// PDR, Traffic Endpoint or CHOOSE ID) and, for the answer, whether it
	// was a Traffic Endpoint's (Created Traffic Endpoint) or the PDI's
	// (Created PDR).
	choose bool
	ck     chooseKey
	te     uint8
	fromTE bool
}

// Plan is what a session needs: a subscriber in the data plane (nil for
// the default session, which only redirects), redirect rules, and the
// F-TEIDs chosen for it.
type Plan struct {
	Sub     *SubPlan
	CPRUp   []CPRUp
	CPRDown []CPRDown
	sub     SubPlan // where Sub points when the plan made it (one allocation, not two)
}

// chooseKey identifies one CHOOSE request: a PDR's or a Traffic
// Endpoint's own, or a shared CHOOSE ID.
type chooseKey struct {
	kind byte // 'p' PDR, 't' traffic endpoint, 'c' CHOOSE ID
	id   uint32
}

// Env is what translation needs to know about this user plane.
type Env struct {
	Ports            []string // logical ports served; the first is the default
	NetworkInstances []string // accepted for the core side (empty: any)
	Profiles         *Profiles
}

// effective merges a PDI's own match with its Traffic Endpoints'; a field
// set in both must agree.
func effective(s *Session, r *PDR) (Match, *Reject) {
	m := r.PDI.Match
	for _, id := range r.PDI.TEIDs {
		te, ok := s.TEs.Lookup(id)
		if !ok {
			return m, ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(r.ID), ie.TrafficEndpointID,
				"PDR %d names Traffic Endpoint %d, which does not exist", r.ID, id)
		}
		if rj := merge(&m, &te.Match, r.ID); rj != nil {
			return m, rj
		}
	}
	for _, f := range r.PDI.EthFilters {
		fm := Match{MAC: f.MAC, STag: f.STag, CTag: f.CTag}
		if rj := merge(&m, &fm, r.ID); rj != nil {
			return m, rj
		}
	}
	return m, nil
}

func merge(dst, src *Match, pdr uint16) *Reject {
	conflict := func(what string) *Reject {
		return ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(pdr), ie.TrafficEndpointID,
			"PDR %d: %s differs between its PDI and its Traffic Endpoint", pdr, what)
	}
	if src.LogicalPort != "" {
		if dst.LogicalPort != "" && dst.LogicalPort != src.LogicalPort {
			return conflict("logical port")
		}
		dst.LogicalPort = src.LogicalPort
	}
	if src.STag != nil {
		if dst.STag != nil && *dst.STag != *src.STag {
			return conflict("S-TAG")
		}
		dst.STag = src.STag
	}
	if src.CTag != nil {
		if dst.CTag != nil && *dst.CTag != *src.CTag {
			return conflict("C-TAG")
		}
		dst.CTag = src.CTag
	}
	if src.MAC != "" {
		if dst.MAC != "" && dst.MAC != src.MAC {
			return conflict("MAC address")
		}
		dst.MAC = src.MAC
	}
	if src.PPPoESession != 0 {
		if dst.PPPoESession != 0 && dst.PPPoESession != src.PPPoESession {
			return conflict("PPPoE session id")
		}
		dst.PPPoESession = src.PPPoESession
	}
	if src.NetworkInstance != "" {
		if dst.NetworkInstance != "" && dst.NetworkInstance != src.NetworkInstance {
			return conflict("network instance")
		}
		dst.NetworkInstance = src.NetworkInstance
	}
	if src.Local != nil && dst.Local == nil {
		dst.Local = src.Local
	}
	// dst's lists may be its PDI's and src's its Traffic Endpoint's: a
	// list taken whole is clipped, so that appending to it later copies
	// it rather than writing into the rule's array.
	dst.UEIPs = appendClipped(dst.UEIPs, src.UEIPs)
	dst.FramedRoutes = appendClipped(dst.FramedRoutes, src.FramedRoutes)
	return nil
}

// appendClipped is dst with src appended, never writing into the arrays
// of either: src itself when dst is empty (clipped), a new array when
// both have elements.
func appendClipped[T any](dst, src []T) []T {
	switch {
	case len(src) == 0:
		return dst
	case len(dst) == 0:
		return slices.Clip(src)
	}
	return append(slices.Clip(dst), src...)
}

func keyOf(m Match, defPort string) AccessKey {
	k := AccessKey{Port: m.LogicalPort, PPPoE: m.PPPoESession, MAC: m.MAC}
	if k.Port == "" {
		k.Port = defPort
	}
	if m.STag != nil {
		k.STag = m.STag.VID
	}
	if m.CTag != nil {
		k.CTag = m.CTag.VID
	}
	return k
}

// Translate checks a whole session and says what it needs.  It has no
// side effects: TEIDs to choose and profiles to create are only named.
func Translate(s *Session, env *Env) (*Plan, *Reject) {
	p := &Plan{}
	// Deterministic order: by precedence, then id.
	// (The rules by value, on the stack for a usual session: sort.Slice
	// and its closure were three allocations a translation.)
	type byPrec struct {
		id   uint16
		prec uint32
		r    *PDR
	}
	var idBuf [8]byPrec
	ids := idBuf[:0]
	for id, r := range s.PDRs.All() {
		ids = append(ids, byPrec{id, r.Precedence, r})
	}
	slices.SortFunc(ids, func(a, b byPrec) int {
		if a.prec != b.prec {
			return cmp.Compare(a.prec, b.prec)
		}
		return cmp.Compare(a.id, b.id)
	})
	var addrBuf [8]netip.Prefix
	addrs := addrBuf[:0]
	var sub *SubPlan
	var subKeyFrom uint16
	var ulQER, dlQER *QER
	addURR := func(list *[]uint32, ids []uint32) {
		for _, u := range ids {
			if !slices.Contains(*list, u) {
				*list = append(*list, u)
			}
		}
	}
	needSub := func(k AccessKey, pdr uint16) *Reject {
		if sub == nil {
			sub = &p.sub
		}
		if sub.Key.Port == "" {
			sub.Key, subKeyFrom = k, pdr
			return nil
		}
		// A PDR that names no MAC takes the other's (checkKey wants one).
		a, b := sub.Key, k
		if a.MAC == "" {
			a.MAC = b.MAC
		} else if b.MAC == "" {
			b.MAC = a.MAC
		}
		if a != b {
			return ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(pdr), ie.TrafficEndpointID,
				"PDR %d's access (%s) differs from PDR %d's (%s): one subscriber per session", pdr, k, subKeyFrom, sub.Key)
		}
		sub.Key = a
		return nil
	}
	for _, x := range ids {
		id, r := x.id, x.r
		far, ok := s.FARs.Lookup(r.FAR)
		if !ok {
			return nil, ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(id), ie.FARID,
				"PDR %d names FAR %d, which does not exist", id, r.FAR)
		}
		for _, q := range r.QERs {
			if _, ok := s.QERs.Lookup(q); !ok {
				return nil, ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(id), ie.QERID,
					"PDR %d names QER %d, which does not exist", id, q)
			}
		}
		for _, u := range r.URRs {
			if _, ok := s.URRs.Lookup(u); !ok {
				return nil, ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(id), ie.URRID,
					"PDR %d names URR %d, which does not exist", id, u)
			}
		}
		m, rj := effective(s, r)
		if rj != nil {
			return nil, rj
		}
		if m.LogicalPort != "" && !slices.Contains(env.Ports, m.LogicalPort) {
			return nil, ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(id), bbf.LogicalPort,
				"PDR %d: logical port %q is not served here (%v)", id, m.LogicalPort, env.Ports)
		}
		if far.Action&ActDrop != 0 {
			continue // dropping is what the data plane does with anything unmatched
		}
		fail := func(format string, a ...any) *Reject {
			return ruleReject(ie.CauseServiceNotSupported, RulePDR, uint32(id), ie.PDI, "PDR %d: "+format, append([]any{id}, a...)...)
		}
		src, dst := r.PDI.Source, far.Dest
		switch {
		case src == IfAccess && (dst == IfCore || dst == IfSGiLAN):
			// Upstream data: the subscriber's frames, access header removed.
			if len(r.PDI.SDF) > 0 || len(r.PDI.EthFilters) > 0 && r.PDI.EthFilters[0].Ethertype != 0 {
				return nil, fail("upstream data is forwarded per subscriber, not per flow (SDF filters, Ethertype)")
			}
			if r.PDI.PPP != nil && r.PDI.PPP.Flags&bbf.PPPControl != 0 {
				return nil, fail("PPP control protocols go to the control plane, not to the core")
			}
			if rj := checkNI(env, far, id); rj != nil {
				return nil, rj
			}
			k := keyOf(m, env.Ports[0])
			if rj := needSub(k, id); rj != nil {
				return nil, rj
			}
			addrs = appendUEAddrs(addrs, &m)
			for _, q := range r.QERs {
				if qq := s.QERs.Get(q); qq.MBRUL != 0 {
					if ulQER != nil && ulQER.ID != qq.ID {
						return nil, ruleReject(ie.CauseServiceNotSupported, RuleQER, qq.ID, ie.MBR,
							"QER %d: a subscriber has one uplink policer (QER %d has one already)", qq.ID, ulQER.ID)
					}
					ulQER = qq
				}
			}
			addURR(&sub.URRUL, r.URRs)
		case (src == IfCore || src == IfSGiLAN) && dst == IfAccess:
			// Downstream data: to the subscriber's addresses, with its
			// access header (the Traffic Endpoint the FAR links, or the
			// BBF Outer Header Creation "Traffic-Endpoint").
			if len(r.PDI.SDF) > 0 {
				return nil, fail("downstream data is forwarded per subscriber, not per flow (SDF filters)")
			}
			if far.OHC != nil {
				return nil, ruleReject(ie.CauseServiceNotSupported, RuleFAR, far.ID, ie.OuterHeaderCreation,
					"FAR %d: downstream data leaves on the access port, not in a tunnel", far.ID)
			}
			if len(m.UEIPs) == 0 && len(m.FramedRoutes) == 0 {
				return nil, ruleReject(ie.CauseConditionalIEMissing, RulePDR, uint32(id), ie.UEIPAddress,
					"PDR %d: downstream data needs the UE IP address", id)
			}
			if m.NetworkInstance != "" && len(env.NetworkInstances) > 0 && !slices.Contains(env.NetworkInstances, m.NetworkInstance) {
				return nil, ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(id), ie.NetworkInstance,
					"PDR %d: network instance %q is not served here", id, m.NetworkInstance)
			}
			addrs = appendUEAddrs(addrs, &m)
			if far.LinkedTE != nil {
				te, ok := s.TEs.Lookup(*far.LinkedTE)
				if !ok {
					return nil, ruleReject(ie.CauseRuleCreationModificationFailure, RuleFAR, far.ID, ie.TrafficEndpointID,
						"FAR %d links Traffic Endpoint %d, which does not exist", far.ID, *far.LinkedTE)
				}
				if te.STag != nil || te.CTag != nil || te.PPPoESession != 0 || te.MAC != "" {
					if rj := needSub(keyOf(te.Match, env.Ports[0]), id); rj != nil {
						return nil, rj
					}
				}
			} else if m.STag != nil || m.CTag != nil || m.PPPoESession != 0 {
				if rj := needSub(keyOf(m, env.Ports[0]), id); rj != nil {
					return nil, rj
				}
			}
			for _, q := range r.QERs {
				if qq := s.QERs.Get(q); qq.MBRDL != 0 {
					if dlQER != nil && dlQER.ID != qq.ID {
						return nil, ruleReject(ie.CauseServiceNotSupported, RuleQER, qq.ID, ie.MBR,
							"QER %d: a subscriber has one downlink pipe (QER %d has one already)", qq.ID, dlQER.ID)
					}
					dlQER = qq
				}
			}
			if sub == nil {
				// The access side may come from a later PDR.
				sub = &p.sub
				subKeyFrom = id
			}
			addURR(&sub.URRDL, r.URRs)
		case src == IfAccess && dst == IfCPFunction:
			up, rj := cprUp(s, r, far, m, env)
			if rj != nil {
				return nil, rj
			}
			p.CPRUp = append(p.CPRUp, up)
		case src == IfCPFunction && dst == IfAccess:
			down := CPRDown{SEID: s.SEID, PDR: id}
			local := r.PDI.Local
			down.ck = chooseKey{'p', uint32(id)}
			if local == nil {
				for _, tid := range r.PDI.TEIDs {
					if te := s.TEs.Get(tid); te != nil && te.Local != nil {
						local, down.ck, down.te, down.fromTE = te.Local, chooseKey{'t', uint32(tid)}, tid, true
						break
					}
				}
			}
			if local == nil {
				return nil, ruleReject(ie.CauseConditionalIEMissing, RulePDR, uint32(id), ie.FTEID,
					"PDR %d: from the CP function without a local F-TEID", id)
			}
			if local.Choose {
				down.choose = true
				if local.ChooseID != 0 {
					down.ck = chooseKey{'c', uint32(local.ChooseID)}
				}
			} else {
				if local.TEID == 0 {
					return nil, ruleReject(ie.CauseMandatoryIEIncorrect, RulePDR, uint32(id), ie.FTEID, "PDR %d: TEID 0", id)
				}
				down.TEID = local.TEID
			}
			k := m
			if far.LinkedTE != nil {
				te, ok := s.TEs.Lookup(*far.LinkedTE)
				if !ok {
					return nil, ruleReject(ie.CauseRuleCreationModificationFailure, RuleFAR, far.ID, ie.TrafficEndpointID,
						"FAR %d links Traffic Endpoint %d, which does not exist", far.ID, *far.LinkedTE)
				}
				k = te.Match
			}
			down.Key = keyOf(k, env.Ports[0])
			p.CPRDown = append(p.CPRDown, down)
		default:
			return nil, fail("source interface %d to destination interface %d is not a BNG path", src, dst)
		}
	}
	if sub != nil {
		if sub.Key.Port == "" {
			// Only downstream PDRs, none naming the access side.
			return nil, ruleReject(ie.CauseConditionalIEMissing, RulePDR, uint32(subKeyFrom), ie.TrafficEndpointID,
				"PDR %d: the subscriber's access (tags, PPPoE session, MAC) is not given", subKeyFrom)
		}
		if rj := checkKey(sub.Key, subKeyFrom); rj != nil {
			return nil, rj
		}
		var rj *Reject
		if sub.Addrs, rj = addrSet(addrs, subKeyFrom); rj != nil {
			return nil, rj
		}
		if ulQER != nil {
			sub.Policer = env.Profiles.PolicerFor(ulQER.MBRUL, ulQER.GBRUL)
		}
		if dlQER != nil {
			sub.Pipe = env.Profiles.PipeFor(dlQER.MBRDL)
		}
		p.Sub = sub
	}
	if p.Sub == nil && s.PDNType != 0 && len(p.CPRUp) == 0 && len(p.CPRDown) == 0 {
		return nil, reject(ie.CauseRuleCreationModificationFailure, ie.CreatePDR, "the session forwards nothing")
	}
	return p, nil
}

func checkNI(env *Env, far *FAR, pdr uint16) *Reject {
	if far.NetworkInstance != "" && len(env.NetworkInstances) > 0 && !slices.Contains(env.NetworkInstances, far.NetworkInstance) {
		return ruleReject(ie.CauseRuleCreationModificationFailure, RuleFAR, far.ID, ie.NetworkInstance,
			"FAR %d: network instance %q is not served here (%v)", far.ID, far.NetworkInstance, env.NetworkInstances)
	}
	return nil
}

// appendUEAddrs appends a match's UE addresses and framed routes to out.
func appendUEAddrs(out []netip.Prefix, m *Match) []netip.Prefix {
	for _, u := range m.UEIPs {
		out = append(out, u.Prefix)
	}
	return append(out, m.FramedRoutes...)
}

// checkKey: what the BNG's classification needs (dataplane/bng/README.md,
// subscriber fields): the client's MAC always -- part of a PPPoE session's
// key, the whole key of an untagged IPoE line, a tagged IPoE subscriber's
// downlink destination.
func checkKey(k AccessKey, pdr uint16) *Reject {
	if k.MAC == "" {
		return ruleReject(ie.CauseConditionalIEMissing, RulePDR, uint32(pdr), ie.MACAddress,
			"PDR %d: the subscriber's MAC address is needed (PPPoE or untagged IPoE key, IPoE downlink destination)", pdr)
	}
	return nil
}

// addrSet dedups and checks the subscriber's addresses against what the
// data plane holds per subscriber: up to 4 IPv4 ranges and one IPv6
// prefix of /16 to /64.
func addrSet(in []netip.Prefix, pdr uint16) ([]netip.Prefix, *Reject) {
	// Working lists on the stack (a subscriber has a few addresses); the
	// result is one allocation.
	var b4, b6, bk [4]netip.Prefix
	v4, v6 := b4[:0], b6[:0]
	for _, a := range in {
		a = a.Masked()
		if a.Addr().Is4() {
			if !slices.Contains(v4, a) {
				v4 = append(v4, a)
			}
			continue
		}
		if a.Bits() == 128 {
			// An IPv6 address of the UE stands for its /64.
			a, _ = a.Addr().Prefix(64)
		}
		if !slices.Contains(v6, a) {
			v6 = append(v6, a)
		}
	}
	// An IPv6 prefix inside another one (the /64 of a WAN address inside
	// the delegated /56) adds nothing.
	keep6 := bk[:0]
	for i, a := range v6 {
		covered := false
		for j, b := range v6 {
			if i != j && b.Bits() < a.Bits() && b.Contains(a.Addr()) {
				covered = true
			}
		}
		if !covered {
			keep6 = append(keep6, a)
		}
	}
	if len(v4) > 4 {
		return nil, ruleReject(ie.CauseServiceNotSupported, RulePDR, uint32(pdr), ie.UEIPAddress,
			"%d IPv4 ranges: the data plane holds 4 per subscriber", len(v4))
	}
	if len(keep6) > 1 {
		return nil, ruleReject(ie.CauseServiceNotSupported, RulePDR, uint32(pdr), ie.UEIPAddress,
			"IPv6 prefixes %v: the data plane holds one per subscriber", slices.Clone(keep6)) // a copy: keep6 stays on the stack
	}
	if len(keep6) == 1 && (keep6[0].Bits() < 16 || keep6[0].Bits() > 64) {
		return nil, ruleReject(ie.CauseServiceNotSupported, RulePDR, uint32(pdr), ie.UEIPAddress,
			"IPv6 prefix %s: /16 to /64", keep6[0])
	}
	if len(v4) == 0 && len(keep6) == 0 {
		return nil, ruleReject(ie.CauseConditionalIEMissing, RulePDR, uint32(pdr), ie.UEIPAddress,
			"PDR %d: the subscriber has no address (UE IP Address, Framed-Route)", pdr)
	}
	return append(append(make([]netip.Prefix, 0, len(v4)+len(keep6)), v4...), keep6...), nil
}

func cprUp(s *Session, r *PDR, far *FAR, m Match, env *Env) (CPRUp, *Reject) {
	if far.OHC == nil {
		return CPRUp{}, ruleReject(ie.CauseConditionalIEMissing, RuleFAR, far.ID, ie.OuterHeaderCreation,
			"FAR %d: to the CP function without an Outer Header Creation (GTP-U)", far.ID)
	}
	up := CPRUp{SEID: s.SEID, PDR: r.ID, Precedence: r.Precedence, TEID: far.OHC.TEID, Peer: far.OHC.Addr,
		PPP: r.PDI.PPP, URRs: r.URRs}
	up.Default = s.PDNType == 0
	if m.STag != nil || m.CTag != nil || m.PPPoESession != 0 || m.MAC != "" || m.LogicalPort != "" {
		up.Key = keyOf(m, "")
		if m.LogicalPort == "" && !up.Default {
			up.Key.Port = env.Ports[0]
		}
	}
	for _, f := range r.PDI.EthFilters {
		if f.Ethertype != 0 {
			up.Ethertypes = append(up.Ethertypes, f.Ethertype)
		}
	}
	for _, fd := range r.PDI.SDF {
		fr, err := parseFlow(fd)
		if err != nil {
			return CPRUp{}, ruleReject(ie.CauseServiceNotSupported, RulePDR, uint32(r.ID), ie.SDFFilter, "%v", err)
		}
		up.SDF = append(up.SDF, fr)
	}
	if far.BBFOHC != nil && far.BBFOHC.Description == bbf.OHCCPRNSH {
		up.NSH = true
	}
	return up, nil
}
