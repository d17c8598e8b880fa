package upf

import (
	"net"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/pfcp/bbf"
)

// How an IE we do not act on is treated.  TS 29.244 clause 7.6 lets a
// receiver ignore IEs it does not know; an IE it knows and cannot honour
// (it would change forwarding) is refused: "Service not supported" with
// the IE as Offending IE, and the request changes nothing.
//
// maxKnownIE is the highest 3GPP IE type of Release 18 (320): types above
// it are unknown and ignored; other vendors' IEs are ignored too; the
// Broadband Forum's we do not implement (L2TP, LCP keepalive offload) are
// refused.
const maxKnownIE = 320

// unhandled decides what to do with child IE c of parent type parent that
// no case consumed: nil (ignore, counted) or a refusal.
func (p *parser) unhandled(parent uint16, c *ie.IE) *Reject {
	switch {
	case bbf.IsBBF(c):
		return reject(ie.CauseServiceNotSupported, c.Type, "%s (%d) in IE type %d is not supported",
			bbf.Name(c.Type), c.Type, parent)
	case c.IsVendorSpecific(), c.Type > maxKnownIE:
		p.ignored++
		return nil
	}
	return reject(ie.CauseServiceNotSupported, c.Type, "IE type %d in IE type %d is not supported", c.Type, parent)
}

// parser carries what parsing a request counts.
type parser struct {
	ignored int // IEs skipped (unknown types, other vendors)
	// room is a new session's room for its rules, in the block
	// allocated with it (establishment only; empty: each array its own
	// allocation).
	room ruleRoom
	// mac is the last MAC address decoded and its text: a TR-459 session
	// names the subscriber's MAC in two Traffic Endpoints.
	mac    [6]byte
	macStr string
}

// macText is a MAC Address IE's source MAC as text, the same string as
// the last one when the address is the same (its text was an allocation
// each time).
func (p *parser) macText(c *ie.IE) (string, *Reject) {
	a, rj := decodeMACBytes(c)
	if rj != nil {
		return "", rj
	}
	if p.macStr == "" || a != p.mac {
		p.mac, p.macStr = a, net.HardwareAddr(a[:]).String()
	}
	return p.macStr, nil
}

func children(i *ie.IE) []*ie.IE { return i.ChildIEs }

// --- PDR ---------------------------------------------------------------------

func (p *parser) pdr(i *ie.IE, cur *PDR, r *PDR) (*PDR, *Reject) {
	if cur != nil {
		*r = *cur
		r.QERs = append([]uint32(nil), cur.QERs...)
		r.URRs = append([]uint32(nil), cur.URRs...)
	}
	create := cur == nil
	var haveID, havePrec, havePDI, haveFAR bool
	var newQERs, newURRs []uint32
	var qerSeen, urrSeen bool
	for _, c := range children(i) {
		var rj *Reject
		switch {
		case c.Type == ie.PDRID:
			r.ID, rj = u16(c)
			haveID = true
		case c.Type == ie.Precedence:
			r.Precedence, rj = u32(c)
			havePrec = true
		case c.Type == ie.PDI:
			r.PDI, rj = p.pdi(c)
			havePDI = true
		case c.Type == ie.OuterHeaderRemoval:
			var d uint8
			d, rj = u8(c)
			r.OHR = &d
		case bbf.Is(c, bbf.OuterHeaderRemoval):
			d, err := bbf.ParseOuterHeaderRemoval(c)
			if err != nil {
				return nil, badIE(c, err)
			}
			if d != bbf.OHREthernet && d != bbf.OHRPPPoEEthernet {
				return nil, reject(ie.CauseServiceNotSupported, c.Type, "BBF Outer Header Removal %d: only Ethernet (1) and PPPoE/Ethernet (2)", d)
			}
			r.BBFOHR = &d
		case c.Type == ie.FARID:
			r.FAR, rj = u32(c)
			haveFAR = true
		case c.Type == ie.QERID:
			var q uint32
			q, rj = u32(c)
			newQERs, qerSeen = append(newQERs, q), true
		case c.Type == ie.URRID:
			var u uint32
			u, rj = u32(c)
			newURRs, urrSeen = append(newURRs, u), true
		default:
			rj = p.unhandled(i.Type, c)
		}
		if rj != nil {
			return nil, rj
		}
	}
	if !haveID {
		return nil, reject(ie.CauseMandatoryIEMissing, ie.PDRID, "PDR without a PDR ID")
	}
	if create {
		switch {
		case !havePrec:
			return nil, ruleReject(ie.CauseMandatoryIEMissing, RulePDR, uint32(r.ID), ie.Precedence, "PDR %d: no Precedence", r.ID)
		case !havePDI:
			return nil, ruleReject(ie.CauseMandatoryIEMissing, RulePDR, uint32(r.ID), ie.PDI, "PDR %d: no PDI", r.ID)
		case !haveFAR:
			return nil, ruleReject(ie.CauseConditionalIEMissing, RulePDR, uint32(r.ID), ie.FARID, "PDR %d: no FAR ID", r.ID)
		}
	}
	if qerSeen {
		r.QERs = newQERs
	}
	if urrSeen {
		r.URRs = newURRs
	}
	if r.OHR != nil && *r.OHR != 0 {
		return nil, ruleReject(ie.CauseServiceNotSupported, RulePDR, uint32(r.ID), ie.OuterHeaderRemoval,
			"PDR %d: Outer Header Removal %d: only GTP-U/UDP/IPv4 (0), from the control plane", r.ID, *r.OHR)
	}
	return r, nil
}

func (p *parser) pdi(i *ie.IE) (PDI, *Reject) {
	var d PDI
	haveSource := false
	for _, c := range children(i) {
		var rj *Reject
		switch {
		case c.Type == ie.SourceInterface:
			var v uint8
			v, rj = u8(c)
			d.Source = v & 0x0f
			haveSource = true
			if rj == nil && d.Source > IfCPFunction {
				rj = reject(ie.CauseMandatoryIEIncorrect, c.Type, "Source Interface %d", d.Source)
			}
		case c.Type == ie.TrafficEndpointID:
			var t uint8
			t, rj = u8(c)
			d.TEIDs = append(d.TEIDs, t)
		case c.Type == ie.EthernetPacketFilter:
			var f EthFilter
			f, rj = p.ethFilter(c)
			d.EthFilters = append(d.EthFilters, f)
		case c.Type == ie.SDFFilter:
			fd, err := c.SDFFilter()
			if err != nil {
				return PDI{}, badIE(c, err)
			}
			if fd.FlowDescription == "" {
				return PDI{}, reject(ie.CauseServiceNotSupported, c.Type, "SDF Filter without a Flow Description")
			}
			if _, err := parseFlow(fd.FlowDescription); err != nil {
				return PDI{}, reject(ie.CauseServiceNotSupported, c.Type, "SDF Filter %q: %v", fd.FlowDescription, err)
			}
			d.SDF = append(d.SDF, fd.FlowDescription)
		case bbf.Is(c, bbf.PPPProtocol):
			pp, err := bbf.ParsePPPProtocol(c)
			if err != nil {
				return PDI{}, badIE(c, err)
			}
			d.PPP = &pp
		case c.Type == ie.EthernetPDUSessionInformation, c.Type == ie.TGPPInterfaceType:
			// Informational: all Ethernet frames of the session / the
			// 3GPP interface the traffic comes from.
		default:
			var handled bool
			handled, rj = p.match(&d.Match, c)
			if !handled && rj == nil {
				rj = p.unhandled(i.Type, c)
			}
		}
		if rj != nil {
			return PDI{}, rj
		}
	}
	if !haveSource {
		return PDI{}, reject(ie.CauseMandatoryIEMissing, ie.SourceInterface, "PDI without a Source Interface")
	}
	return d, nil
}

// match takes the IEs a PDI and a Traffic Endpoint share.
func (p *parser) match(m *Match, c *ie.IE) (bool, *Reject) {
	var rj *Reject
	switch {
	case c.Type == ie.FTEID:
		var f FTEID
		f, rj = decodeFTEID(c)
		m.Local = &f
	case c.Type == ie.NetworkInstance:
		m.NetworkInstance, rj = networkInstance(c)
	case c.Type == ie.UEIPAddress:
		if m.UEIPs == nil && len(p.room.ueips) >= 2 {
			m.UEIPs, p.room.ueips = p.room.ueips[:0:2], p.room.ueips[2:]
		}
		m.UEIPs, rj = decodeUEIP(m.UEIPs, c)
	case c.Type == ie.FramedRoute, c.Type == ie.FramedIPv6Route:
		var pr netip.Prefix
		pr, rj = decodeFramedRoute(c)
		m.FramedRoutes = append(m.FramedRoutes, pr)
	case c.Type == ie.FramedRouting:
		// RFC 2865 Framed-Routing (none/send/listen): no routing protocol
		// runs towards subscribers here; the routes above are static.
	case c.Type == ie.MACAddress:
		m.MAC, rj = p.macText(c)
	case c.Type == ie.STAG:
		m.STag, rj = decodeTag(c)
	case c.Type == ie.CTAG:
		m.CTag, rj = decodeTag(c)
	case bbf.Is(c, bbf.LogicalPort):
		s, err := bbf.ParseLogicalPort(c)
		if err != nil {
			return true, badIE(c, err)
		}
		m.LogicalPort = s
	case bbf.Is(c, bbf.PPPoESessionID):
		s, err := bbf.ParsePPPoESessionID(c)
		if err != nil {
			return true, badIE(c, err)
		}
		if s == 0 || s == 0xffff {
			return true, reject(ie.CauseMandatoryIEIncorrect, c.Type, "PPPoE session id %#04x is reserved (RFC 2516)", s)
		}
		m.PPPoESession = s
	default:
		return false, nil
	}
	return true, rj
}

func (p *parser) ethFilter(i *ie.IE) (EthFilter, *Reject) {
	var f EthFilter
	for _, c := range children(i) {
		var rj *Reject
		switch c.Type {
		case ie.MACAddress:
			f.MAC, rj = p.macText(c)
		case ie.Ethertype:
			f.Ethertype, rj = u16(c)
		case ie.STAG:
			f.STag, rj = decodeTag(c)
		case ie.CTAG:
			f.CTag, rj = decodeTag(c)
		case ie.EthernetFilterID, ie.EthernetFilterProperties:
			// Identification of the filter; bidirectional property:
			// the filters here match the access side only.
		default:
			rj = p.unhandled(i.Type, c)
		}
		if rj != nil {
			return EthFilter{}, rj
		}
	}
	return f, nil
}

// --- FAR ---------------------------------------------------------------------

func (p *parser) far(i *ie.IE, cur *FAR, r *FAR) (*FAR, *Reject) {
	if cur != nil {
		*r = *cur
	}
	var haveID, haveAction bool
	for _, c := range children(i) {
		var rj *Reject
		switch {
		case c.Type == ie.FARID:
			r.ID, rj = u32(c)
			haveID = true
		case c.Type == ie.ApplyAction:
			if len(c.Payload) < 1 {
				rj = reject(ie.CauseInvalidLength, c.Type, "Apply Action: empty")
				break
			}
			r.Action = uint16(c.Payload[0])
			if len(c.Payload) > 1 {
				r.Action |= uint16(c.Payload[1]) << 8
			}
			haveAction = true
		case c.Type == ie.ForwardingParameters, c.Type == ie.UpdateForwardingParameters:
			rj = p.fwdParams(r, c)
		default:
			rj = p.unhandled(i.Type, c)
		}
		if rj != nil {
			return nil, rj
		}
	}
	if !haveID {
		return nil, reject(ie.CauseMandatoryIEMissing, ie.FARID, "FAR without a FAR ID")
	}
	if cur == nil && !haveAction {
		return nil, ruleReject(ie.CauseMandatoryIEMissing, RuleFAR, r.ID, ie.ApplyAction, "FAR %d: no Apply Action", r.ID)
	}
	switch r.Action & 0x1f {
	case ActDrop, ActForw:
	case ActBuff, ActBuff | ActNoCP:
		return nil, ruleReject(ie.CauseServiceNotSupported, RuleFAR, r.ID, ie.ApplyAction, "FAR %d: buffering is not supported", r.ID)
	default:
		return nil, ruleReject(ie.CauseMandatoryIEIncorrect, RuleFAR, r.ID, ie.ApplyAction,
			"FAR %d: Apply Action %#x: exactly one of DROP and FORW", r.ID, r.Action)
	}
	if r.Action&^uint16(0x1f) != 0 {
		return nil, ruleReject(ie.CauseServiceNotSupported, RuleFAR, r.ID, ie.ApplyAction, "FAR %d: Apply Action %#x", r.ID, r.Action)
	}
	if r.Action&ActForw != 0 && !r.HasFwdParams {
		return nil, ruleReject(ie.CauseConditionalIEMissing, RuleFAR, r.ID, ie.ForwardingParameters, "FAR %d: FORW without Forwarding Parameters", r.ID)
	}
	return r, nil
}

func (p *parser) fwdParams(r *FAR, i *ie.IE) *Reject {
	haveDest := r.HasFwdParams
	for _, c := range children(i) {
		var rj *Reject
		switch {
		case c.Type == ie.DestinationInterface:
			var v uint8
			v, rj = u8(c)
			r.Dest = v & 0x0f
			haveDest = true
			if rj == nil && r.Dest > IfCPFunction {
				rj = reject(ie.CauseServiceNotSupported, c.Type, "Destination Interface %d", r.Dest)
			}
		case c.Type == ie.NetworkInstance:
			r.NetworkInstance, rj = networkInstance(c)
		case c.Type == ie.OuterHeaderCreation:
			var o OHC
			o, rj = decodeOHC(c)
			r.OHC = &o
		case bbf.Is(c, bbf.OuterHeaderCreation):
			o, err := bbf.ParseOuterHeaderCreation(c)
			if err != nil {
				return badIE(c, err)
			}
			if o.Description != bbf.OHCTrafficEndpoint && o.Description != bbf.OHCCPRNSH {
				return reject(ie.CauseServiceNotSupported, c.Type,
					"BBF Outer Header Creation %#04x: only Traffic-Endpoint and CPR-NSH (no L2TP, PPP)", o.Description)
			}
			r.BBFOHC = &o
		case c.Type == ie.TrafficEndpointID: // "Linked Traffic Endpoint ID"
			var t uint8
			t, rj = u8(c)
			r.LinkedTE = &t
		case c.Type == ie.TransportLevelMarking, c.Type == ie.TGPPInterfaceType:
			// The DSCP of the redirect tunnel's outer header and the 3GPP
			// interface type: informational here.
		default:
			rj = p.unhandled(i.Type, c)
		}
		if rj != nil {
			return rj
		}
	}
	if !haveDest {
		return reject(ie.CauseMandatoryIEMissing, ie.DestinationInterface, "Forwarding Parameters without a Destination Interface")
	}
	r.HasFwdParams = true
	return nil
}

// --- QER ---------------------------------------------------------------------

func (p *parser) qer(i *ie.IE, cur *QER, r *QER) (*QER, *Reject) {
	if cur != nil {
		*r = *cur
	}
	var haveID bool
	for _, c := range children(i) {
		var rj *Reject
		switch c.Type {
		case ie.QERID:
			r.ID, rj = u32(c)
			haveID = true
		case ie.GateStatus:
			var g uint8
			g, rj = u8(c)
			r.GateUL, r.GateDL = (g>>2)&0x03, g&0x03
		case ie.MBR:
			r.MBRUL, r.MBRDL, rj = bitrates(c)
		case ie.GBR:
			r.GBRUL, r.GBRDL, rj = bitrates(c)
		case ie.QERCorrelationID, ie.AveragingWindow, ie.PagingPolicyIndicator, ie.QFI:
			// Correlation of QERs across sessions, the GBR averaging
			// window, paging and QoS flow ids: no action on this access.
		default:
			rj = p.unhandled(i.Type, c)
		}
		if rj != nil {
			return nil, rj
		}
	}
	if !haveID {
		return nil, reject(ie.CauseMandatoryIEMissing, ie.QERID, "QER without a QER ID")
	}
	if r.GateUL != 0 || r.GateDL != 0 {
		return nil, ruleReject(ie.CauseServiceNotSupported, RuleQER, r.ID, ie.GateStatus,
			"QER %d: a closed gate is not supported (the subscriber would be deleted instead)", r.ID)
	}
	const maxKbps = 400_000_000 // 400 Gbit/s: above any port here
	if r.MBRUL > maxKbps || r.MBRDL > maxKbps || r.GBRUL > maxKbps || r.GBRDL > maxKbps {
		return nil, ruleReject(ie.CauseMandatoryIEIncorrect, RuleQER, r.ID, ie.MBR, "QER %d: bit rate beyond 400 Gbit/s", r.ID)
	}
	if r.GBRUL > r.MBRUL && r.MBRUL != 0 {
		return nil, ruleReject(ie.CauseMandatoryIEIncorrect, RuleQER, r.ID, ie.GBR, "QER %d: UL GBR %d above MBR %d kbit/s", r.ID, r.GBRUL, r.MBRUL)
	}
	return r, nil
}

// --- URR ---------------------------------------------------------------------

// supportedTriggers are the reporting triggers measured here: periodic,
// volume threshold and time threshold.
const supportedTriggers = TrigPERIO | TrigVOLTH | TrigTIMTH

func (p *parser) urr(i *ie.IE, cur *URR) (*URR, *Reject) {
	var r URR
	if cur != nil {
		r = *cur
	}
	var haveID, haveMethod, haveTrig bool
	for _, c := range children(i) {
		var rj *Reject
		switch c.Type {
		case ie.URRID:
			r.ID, rj = u32(c)
			haveID = true
		case ie.MeasurementMethod:
			r.Method, rj = u8(c)
			haveMethod = true
		case ie.ReportingTriggers:
			r.Triggers, rj = decodeTriggers(c)
			haveTrig = true
		case ie.MeasurementPeriod:
			r.PeriodS, rj = u32(c)
		case ie.VolumeThreshold:
			r.VolThresh, rj = decodeVolume(c)
		case ie.TimeThreshold:
			r.TimeThresh, rj = u32(c)
		case ie.MeasurementInformation:
			r.MeasInfo, rj = u8(c)
			// MBQE (measure before QoS enforcement) is honoured; INAM
			// (inactive measurement), RADI, ISTM are not.
			if rj == nil && r.MeasInfo&^0x01 != 0 {
				rj = reject(ie.CauseServiceNotSupported, c.Type, "Measurement Information %#x: only MBQE", r.MeasInfo)
			}
		default:
			rj = p.unhandled(i.Type, c)
		}
		if rj != nil {
			return nil, rj
		}
	}
	if !haveID {
		return nil, reject(ie.CauseMandatoryIEMissing, ie.URRID, "URR without a URR ID")
	}
	if cur == nil && (!haveMethod || !haveTrig) {
		t := ie.MeasurementMethod
		if haveMethod {
			t = ie.ReportingTriggers
		}
		return nil, ruleReject(ie.CauseMandatoryIEMissing, RuleURR, r.ID, t, "URR %d: no %s", r.ID,
			map[bool]string{true: "Reporting Triggers", false: "Measurement Method"}[haveMethod])
	}
	if r.Method&MeasEvent != 0 || r.Method&(MeasVolume|MeasDuration) == 0 {
		return nil, ruleReject(ie.CauseServiceNotSupported, RuleURR, r.ID, ie.MeasurementMethod,
			"URR %d: measurement method %#x: volume and duration only", r.ID, r.Method)
	}
	if r.Triggers&^supportedTriggers != 0 {
		return nil, ruleReject(ie.CauseServiceNotSupported, RuleURR, r.ID, ie.ReportingTriggers,
			"URR %d: reporting triggers %#x: periodic, volume and time thresholds only", r.ID, r.Triggers)
	}
	if r.Triggers&TrigPERIO != 0 && r.PeriodS == 0 {
		return nil, ruleReject(ie.CauseConditionalIEMissing, RuleURR, r.ID, ie.MeasurementPeriod, "URR %d: PERIO without a Measurement Period", r.ID)
	}
	if r.Triggers&TrigVOLTH != 0 && r.VolThresh == (Volume{}) {
		return nil, ruleReject(ie.CauseConditionalIEMissing, RuleURR, r.ID, ie.VolumeThreshold, "URR %d: VOLTH without a Volume Threshold", r.ID)
	}
	if r.Triggers&TrigTIMTH != 0 && r.TimeThresh == 0 {
		return nil, ruleReject(ie.CauseConditionalIEMissing, RuleURR, r.ID, ie.TimeThreshold, "URR %d: TIMTH without a Time Threshold", r.ID)
	}
	return &r, nil
}

// --- Traffic Endpoint --------------------------------------------------------

func (p *parser) te(i *ie.IE, cur *TE, r *TE) (*TE, *Reject) {
	if cur != nil {
		*r = *cur
		r.UEIPs = nil // an update replaces the addresses it carries
		r.FramedRoutes = nil
	}
	var haveID bool
	var sawIP, sawRoute bool
	for _, c := range children(i) {
		var rj *Reject
		switch {
		case c.Type == ie.TrafficEndpointID:
			r.ID, rj = u8(c)
			haveID = true
		case c.Type == ie.EthernetPDUSessionInformation, c.Type == ie.TGPPInterfaceType:
		default:
			var handled bool
			handled, rj = p.match(&r.Match, c)
			if handled {
				sawIP = sawIP || c.Type == ie.UEIPAddress
				sawRoute = sawRoute || c.Type == ie.FramedRoute || c.Type == ie.FramedIPv6Route
			} else if rj == nil {
				rj = p.unhandled(i.Type, c)
			}
		}
		if rj != nil {
			return nil, rj
		}
	}
	if !haveID {
		return nil, reject(ie.CauseMandatoryIEMissing, ie.TrafficEndpointID, "Traffic Endpoint without an ID")
	}
	if cur != nil {
		if !sawIP {
			r.UEIPs = cur.UEIPs
		}
		if !sawRoute {
			r.FramedRoutes = cur.FramedRoutes
		}
	}
	return r, nil
}

// --- Session ------------------------------------------------------------------

// ruleArena holds the rules a request creates, one array of each kind
// sized by the request's Create IEs: a rule each was an allocation each
// (eight for the usual TR-459 session), one array of a kind is one.  A
// rule is never changed once made (an update makes a new one), so rules
// of one session may share an array; the session's maps, created when
// its first rule of a kind is, are sized by the same counts.
type ruleArena struct {
	pdrs                        []PDR
	fars                        []FAR
	qers                        []QER
	tes                         []TE
	nPDR, nFAR, nQER, nURR, nTE int
}

// take is the next element of an arena's array (a fresh one when the
// array is full: an IE counted as something else).
func take[T any](a *[]T) *T {
	if n := len(*a); n < cap(*a) {
		*a = (*a)[:n+1]
		return &(*a)[n]
	}
	return new(T)
}

func newSession(seid uint64, now time.Time) *Session {
	return &Session{SEID: seid, Created: now}
}

// clone copies the session deeply enough that changes to the copy's rules
// never reach the original (rules are replaced, not edited in place; a
// URR's measurement state is, so URRs are copied).
func (s *Session) clone() *Session {
	n := *s
	n.PDRs, n.FARs, n.QERs, n.TEs = s.PDRs.clone(nil), s.FARs.clone(nil), s.QERs.clone(nil), s.TEs.clone(nil)
	n.URRs = s.URRs.clone(func(r *URR) *URR { c := *r; return &c })
	return &n
}

// rules applies a request's Remove, Create and Update IEs to s in that
// order (a request may replace a rule by removing and creating it).
// Establishment passes only creations.
func (p *parser) rules(s *Session, ies []*ie.IE, now time.Time) *Reject {
	var ar ruleArena
	for _, i := range ies {
		var rj *Reject
		switch i.Type {
		case ie.RemovePDR, ie.RemoveFAR, ie.RemoveQER, ie.RemoveURR, ie.RemoveTrafficEndpoint:
			rj = p.remove(s, i)
		case ie.CreatePDR:
			ar.nPDR++
		case ie.CreateFAR:
			ar.nFAR++
		case ie.CreateQER:
			ar.nQER++
		case ie.CreateURR:
			ar.nURR++
		case ie.CreateTrafficEndpoint:
			ar.nTE++
		}
		if rj != nil {
			return rj
		}
	}
	// A new session's arrays are in the block allocated with it
	// (p.room, sessionblock.go); room() allocates what it has no room for.
	r := &p.room
	ar.pdrs, ar.fars = room(r.pdrs, ar.nPDR), room(r.fars, ar.nFAR)
	ar.qers, ar.tes = room(r.qers, ar.nQER), room(r.tes, ar.nTE)
	if r.pdrE != nil {
		s.PDRs.e, s.FARs.e = room(r.pdrE, ar.nPDR), room(r.farE, ar.nFAR)
		s.QERs.e, s.URRs.e = room(r.qerE, ar.nQER), room(r.urrE, ar.nURR)
		s.TEs.e = room(r.teE, ar.nTE)
	}
	*r = ruleRoom{ueips: r.ueips} // once
	for _, i := range ies {
		var rj *Reject
		switch i.Type {
		case ie.CreatePDR:
			var r *PDR
			if r, rj = p.pdr(i, nil, take(&ar.pdrs)); rj == nil {
				if s.PDRs.Has(r.ID) {
					rj = ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, uint32(r.ID), i.Type, "PDR %d exists", r.ID)
				} else {
					if cap(s.PDRs.e) == 0 {
						s.PDRs = newRuleSet[uint16, PDR](ar.nPDR)
					}
					s.PDRs.Put(r.ID, r)
				}
			}
		case ie.CreateFAR:
			var r *FAR
			if r, rj = p.far(i, nil, take(&ar.fars)); rj == nil {
				if s.FARs.Has(r.ID) {
					rj = ruleReject(ie.CauseRuleCreationModificationFailure, RuleFAR, r.ID, i.Type, "FAR %d exists", r.ID)
				} else {
					if cap(s.FARs.e) == 0 {
						s.FARs = newRuleSet[uint32, FAR](ar.nFAR)
					}
					s.FARs.Put(r.ID, r)
				}
			}
		case ie.CreateQER:
			var r *QER
			if r, rj = p.qer(i, nil, take(&ar.qers)); rj == nil {
				if s.QERs.Has(r.ID) {
					rj = ruleReject(ie.CauseRuleCreationModificationFailure, RuleQER, r.ID, i.Type, "QER %d exists", r.ID)
				} else {
					if cap(s.QERs.e) == 0 {
						s.QERs = newRuleSet[uint32, QER](ar.nQER)
					}
					s.QERs.Put(r.ID, r)
				}
			}
		case ie.CreateURR:
			var r *URR
			if r, rj = p.urr(i, nil); rj == nil {
				if s.URRs.Has(r.ID) {
					rj = ruleReject(ie.CauseRuleCreationModificationFailure, RuleURR, r.ID, i.Type, "URR %d exists", r.ID)
				} else {
					r.Start = now
					if cap(s.URRs.e) == 0 {
						s.URRs = newRuleSet[uint32, URR](ar.nURR)
					}
					s.URRs.Put(r.ID, r)
				}
			}
		case ie.CreateTrafficEndpoint:
			var r *TE
			if r, rj = p.te(i, nil, take(&ar.tes)); rj == nil {
				if s.TEs.Has(r.ID) {
					rj = reject(ie.CauseRuleCreationModificationFailure, i.Type, "Traffic Endpoint %d exists", r.ID)
				} else {
					if cap(s.TEs.e) == 0 {
						s.TEs = newRuleSet[uint8, TE](ar.nTE)
					}
					s.TEs.Put(r.ID, r)
				}
			}
		}
		if rj != nil {
			return rj
		}
	}
	for _, i := range ies {
		var rj *Reject
		switch i.Type {
		case ie.UpdatePDR:
			rj = p.updatePDR(s, i)
		case ie.UpdateFAR:
			rj = p.updateFAR(s, i)
		case ie.UpdateQER:
			rj = p.updateQER(s, i)
		case ie.UpdateURR:
			rj = p.updateURR(s, i)
		case ie.UpdateTrafficEndpoint:
			rj = p.updateTE(s, i)
		}
		if rj != nil {
			return rj
		}
	}
	return nil
}

// idOf finds the id IE of type t in a grouped IE.
func idOf(i *ie.IE, t uint16) (uint32, *Reject) {
	for _, c := range children(i) {
		if c.Type != t {
			continue
		}
		switch t {
		case ie.PDRID:
			v, rj := u16(c)
			return uint32(v), rj
		case ie.TrafficEndpointID:
			v, rj := u8(c)
			return uint32(v), rj
		default:
			return u32(c)
		}
	}
	return 0, reject(ie.CauseMandatoryIEMissing, t, "IE type %d without its rule id (IE type %d)", i.Type, t)
}

func (p *parser) remove(s *Session, i *ie.IE) *Reject {
	switch i.Type {
	case ie.RemovePDR:
		id, rj := idOf(i, ie.PDRID)
		if rj != nil {
			return rj
		}
		if !s.PDRs.Has(uint16(id)) {
			return ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, id, i.Type, "Remove PDR %d: no such PDR", id)
		}
		s.PDRs.Delete(uint16(id))
	case ie.RemoveFAR:
		id, rj := idOf(i, ie.FARID)
		if rj != nil {
			return rj
		}
		if !s.FARs.Has(id) {
			return ruleReject(ie.CauseRuleCreationModificationFailure, RuleFAR, id, i.Type, "Remove FAR %d: no such FAR", id)
		}
		s.FARs.Delete(id)
	case ie.RemoveQER:
		id, rj := idOf(i, ie.QERID)
		if rj != nil {
			return rj
		}
		if !s.QERs.Has(id) {
			return ruleReject(ie.CauseRuleCreationModificationFailure, RuleQER, id, i.Type, "Remove QER %d: no such QER", id)
		}
		s.QERs.Delete(id)
	case ie.RemoveURR:
		id, rj := idOf(i, ie.URRID)
		if rj != nil {
			return rj
		}
		if !s.URRs.Has(id) {
			return ruleReject(ie.CauseRuleCreationModificationFailure, RuleURR, id, i.Type, "Remove URR %d: no such URR", id)
		}
		s.URRs.Delete(id)
	case ie.RemoveTrafficEndpoint:
		id, rj := idOf(i, ie.TrafficEndpointID)
		if rj != nil {
			return rj
		}
		if !s.TEs.Has(uint8(id)) {
			return reject(ie.CauseRuleCreationModificationFailure, i.Type, "Remove Traffic Endpoint %d: no such endpoint", id)
		}
		s.TEs.Delete(uint8(id))
	}
	return nil
}

func (p *parser) updatePDR(s *Session, i *ie.IE) *Reject {
	id, rj := idOf(i, ie.PDRID)
	if rj != nil {
		return rj
	}
	cur := s.PDRs.Get(uint16(id))
	if cur == nil {
		return ruleReject(ie.CauseRuleCreationModificationFailure, RulePDR, id, i.Type, "Update PDR %d: no such PDR", id)
	}
	r, rj := p.pdr(i, cur, new(PDR))
	if rj != nil {
		return rj
	}
	s.PDRs.Put(r.ID, r)
	return nil
}

func (p *parser) updateFAR(s *Session, i *ie.IE) *Reject {
	id, rj := idOf(i, ie.FARID)
	if rj != nil {
		return rj
	}
	cur := s.FARs.Get(id)
	if cur == nil {
		return ruleReject(ie.CauseRuleCreationModificationFailure, RuleFAR, id, i.Type, "Update FAR %d: no such FAR", id)
	}
	r, rj := p.far(i, cur, new(FAR))
	if rj != nil {
		return rj
	}
	s.FARs.Put(r.ID, r)
	return nil
}

func (p *parser) updateQER(s *Session, i *ie.IE) *Reject {
	id, rj := idOf(i, ie.QERID)
	if rj != nil {
		return rj
	}
	cur := s.QERs.Get(id)
	if cur == nil {
		return ruleReject(ie.CauseRuleCreationModificationFailure, RuleQER, id, i.Type, "Update QER %d: no such QER", id)
	}
	r, rj := p.qer(i, cur, new(QER))
	if rj != nil {
		return rj
	}
	s.QERs.Put(r.ID, r)
	return nil
}

func (p *parser) updateURR(s *Session, i *ie.IE) *Reject {
	id, rj := idOf(i, ie.URRID)
	if rj != nil {
		return rj
	}
	cur := s.URRs.Get(id)
	if cur == nil {
		return ruleReject(ie.CauseRuleCreationModificationFailure, RuleURR, id, i.Type, "Update URR %d: no such URR", id)
	}
	r, rj := p.urr(i, cur)
	if rj != nil {
		return rj
	}
	s.URRs.Put(r.ID, r)
	return nil
}

func (p *parser) updateTE(s *Session, i *ie.IE) *Reject {
	id, rj := idOf(i, ie.TrafficEndpointID)
	if rj != nil {
		return rj
	}
	cur := s.TEs.Get(uint8(id))
	if cur == nil {
		return reject(ie.CauseRuleCreationModificationFailure, i.Type, "Update Traffic Endpoint %d: no such endpoint", id)
	}
	r, rj := p.te(i, cur, new(TE))
	if rj != nil {
		return rj
	}
	s.TEs.Put(r.ID, r)
	return nil
}
