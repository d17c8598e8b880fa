// Package cpsim is a BNG control plane for tests and benchmarks: it
// speaks PFCP (go-pfcp) with TR-459's IEs to a user-plane function, builds
// sessions the way a disaggregated BNG's control plane does (Nokia MAG-c's
// PFCP Interface Description Guide shows the layout: Traffic Endpoints for
// the access side, the core side and the redirect tunnel; PDRs for
// upstream data, downstream data and control traffic both ways; one QER,
// one URR), answers the function's heartbeats and session reports, and
// ends the redirect's GTP-U tunnels.
package cpsim

import (
	"net"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/pfcp/bbf"
)

// Subscriber describes one session.
type Subscriber struct {
	CPSEID      uint64
	LogicalPort string // "" leaves the IE out (the function's default port)
	STag, CTag  uint16
	MAC         net.HardwareAddr
	PPPoE       uint16 // 0: IPoE
	IPv4        netip.Addr
	IPv6        netip.Prefix // delegated prefix (IPv6D)
	NetworkInst string
	ULMBR       uint64 // kbit/s; 0: no policer
	ULGBR       uint64
	DLMBR       uint64 // kbit/s; 0: the default pipe
	URR         *URR
	// Redirect: control traffic of this subscriber to CPTEID at CPAddr
	// (PDR 1), and a CHOOSE F-TEID for the control plane's answers (PDR 2).
	Redirect bool
	CPAddr   netip.Addr
	CPTEID   uint32
	// Standard only: no Traffic Endpoints, no BBF IEs -- the access side in
	// the PDI's Ethernet Packet Filter (what a 3GPP control plane writes).
	StandardOnly bool
}

// URR is a usage rule: volume and duration, periodic and/or thresholds.
type URR struct {
	Period     time.Duration
	VolThresh  uint64 // octets, total
	TimeThresh time.Duration
}

// Rule ids used by Establishment (the same in every session, as the
// control plane chooses them per session).
const (
	PDRUpCP   = 1 // control, UP to CP
	PDRCPUp   = 2 // control, CP to UP
	PDRUpData = 3
	PDRDnData = 4
	FARToCP   = 1
	FARToAcc  = 2
	FARToCore = 3
	FARDown   = 4
	QERID     = 1
	URRID     = 1
	TEAccess  = 1 // logical port, tags, MAC
	TEData    = 2 // + PPPoE session, UE addresses
	TECore    = 3 // UE addresses + network instance
	TECPR     = 4 // local F-TEID CHOOSE
)

func tag(t uint16, vid uint16) *ie.IE {
	// Flags: VID present; PCP/DEI 0.
	return ie.New(t, []byte{0x04, byte(vid >> 8 & 0x0f), byte(vid)})
}

func (s *Subscriber) access() []*ie.IE {
	var out []*ie.IE
	if s.LogicalPort != "" && !s.StandardOnly {
		out = append(out, bbf.NewLogicalPort(s.LogicalPort))
	}
	if s.STag != 0 {
		out = append(out, tag(ie.STAG, s.STag))
	}
	if s.CTag != 0 {
		out = append(out, tag(ie.CTAG, s.CTag))
	}
	if s.MAC != nil {
		out = append(out, ie.NewMACAddress(s.MAC, nil, nil, nil))
	}
	return out
}

func (s *Subscriber) ueIPs() []*ie.IE {
	var out []*ie.IE
	if s.IPv4.IsValid() {
		out = append(out, ie.NewUEIPAddress(0x02, s.IPv4.String(), "", 0, 0))
	}
	if s.IPv6.IsValid() {
		bits := uint8(64 - s.IPv6.Bits())
		out = append(out, ie.New(ie.UEIPAddress, append(append([]byte{0x01 | 0x08}, s.IPv6.Addr().AsSlice()...), bits)))
	}
	return out
}

// QER is the session's QER (when it has rates).
func (s *Subscriber) QER() *ie.IE {
	return ie.NewCreateQER(ie.NewQERID(QERID), ie.NewGateStatus(ie.GateStatusOpen, ie.GateStatusOpen),
		ie.NewMBR(s.ULMBR, s.DLMBR), ie.NewGBR(s.ULGBR, 0))
}

// Establishment is the body of a Session Establishment Request (without
// Node ID and F-SEID).
func (s *Subscriber) Establishment() []*ie.IE {
	var ies []*ie.IE
	if !s.StandardOnly {
		ies = append(ies, ie.NewPDNType(ie.PDNTypeEthernet))
	} else {
		ies = append(ies, ie.NewPDNType(ie.PDNTypeIPv4v6))
	}
	var qer []*ie.IE
	if s.ULMBR != 0 || s.DLMBR != 0 {
		ies = append(ies, s.QER())
		qer = []*ie.IE{ie.NewQERID(QERID)}
	}
	var urr []*ie.IE
	if s.URR != nil {
		trig := uint8(0)
		kids := []*ie.IE{ie.NewURRID(URRID), ie.NewMeasurementMethod(0, 1, 1)}
		if s.URR.Period > 0 {
			trig |= 0x01
			kids = append(kids, ie.NewMeasurementPeriod(s.URR.Period))
		}
		if s.URR.VolThresh > 0 {
			trig |= 0x02
			kids = append(kids, ie.NewVolumeThreshold(0x01, s.URR.VolThresh, 0, 0))
		}
		if s.URR.TimeThresh > 0 {
			trig |= 0x04
			kids = append(kids, ie.NewTimeThreshold(s.URR.TimeThresh))
		}
		kids = append(kids, ie.NewReportingTriggers(trig, 0, 0))
		ies = append(ies, ie.NewCreateURR(kids...))
		urr = []*ie.IE{ie.NewURRID(URRID)}
	}
	withRules := func(base []*ie.IE) []*ie.IE {
		return append(append(base, qer...), urr...)
	}
	if s.StandardOnly {
		// The access side in the PDI, the way a 3GPP control plane
		// describes an Ethernet session: Ethernet Packet Filter with the
		// MAC and tags, UE IP addresses.
		filter := ie.NewEthernetPacketFilter(s.access()...)
		upPDI := append([]*ie.IE{ie.NewSourceInterface(ie.SrcInterfaceAccess), filter}, s.ueIPs()...)
		dnPDI := append([]*ie.IE{ie.NewSourceInterface(ie.SrcInterfaceCore)}, s.ueIPs()...)
		ies = append(ies,
			ie.NewCreatePDR(withRules([]*ie.IE{ie.NewPDRID(PDRUpData), ie.NewPrecedence(100), ie.NewPDI(upPDI...),
				ie.NewFARID(FARToCore)})...),
			ie.NewCreatePDR(withRules([]*ie.IE{ie.NewPDRID(PDRDnData), ie.NewPrecedence(100), ie.NewPDI(dnPDI...),
				ie.NewFARID(FARDown)})...),
			ie.NewCreateFAR(ie.NewFARID(FARToCore), ie.NewApplyAction(0x02),
				ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
			ie.NewCreateFAR(ie.NewFARID(FARDown), ie.NewApplyAction(0x02),
				ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
					ie.NewTrafficEndpointID(TEAccess))))
		// The downlink FAR links the access side: a standard control
		// plane names it with a Traffic Endpoint too.
		ies = append(ies, ie.NewCreateTrafficEndpoint(append([]*ie.IE{ie.NewTrafficEndpointID(TEAccess)}, s.access()...)...))
		return ies
	}
	te1 := append([]*ie.IE{ie.NewTrafficEndpointID(TEAccess)}, s.access()...)
	te2 := append([]*ie.IE{ie.NewTrafficEndpointID(TEData)}, s.access()...)
	if s.PPPoE != 0 {
		te2 = append(te2, bbf.NewPPPoESessionID(s.PPPoE))
	}
	te2 = append(te2, s.ueIPs()...)
	te3 := append([]*ie.IE{ie.NewTrafficEndpointID(TECore)}, s.ueIPs()...)
	if s.NetworkInst != "" {
		te3 = append(te3, ie.NewNetworkInstance(s.NetworkInst))
	}
	ies = append(ies, ie.NewCreateTrafficEndpoint(te1...), ie.NewCreateTrafficEndpoint(te2...),
		ie.NewCreateTrafficEndpoint(te3...))
	ohr := bbf.OHREthernet
	if s.PPPoE != 0 {
		ohr = bbf.OHRPPPoEEthernet
	}
	ies = append(ies,
		ie.NewCreatePDR(withRules([]*ie.IE{ie.NewPDRID(PDRUpData), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewTrafficEndpointID(TEData)),
			bbf.NewOuterHeaderRemoval(ohr), ie.NewFARID(FARToCore)})...),
		ie.NewCreatePDR(withRules([]*ie.IE{ie.NewPDRID(PDRDnData), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewTrafficEndpointID(TECore)),
			ie.NewFARID(FARDown)})...))
	fwdCore := []*ie.IE{ie.NewDestinationInterface(ie.DstInterfaceCore)}
	if s.NetworkInst != "" {
		fwdCore = append(fwdCore, ie.NewNetworkInstance(s.NetworkInst))
	}
	ies = append(ies,
		ie.NewCreateFAR(ie.NewFARID(FARToCore), ie.NewApplyAction(0x02), ie.NewForwardingParameters(fwdCore...)),
		ie.NewCreateFAR(ie.NewFARID(FARDown), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewTrafficEndpointID(TEData),
			bbf.NewOuterHeaderCreation(bbf.OHC{Description: bbf.OHCTrafficEndpoint}))))
	if s.Redirect {
		ies = append(ies, ie.NewCreateTrafficEndpoint(ie.NewTrafficEndpointID(TECPR), ie.NewFTEID(0x05, 0, nil, nil, 0)))
		ctl := []*ie.IE{ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewTrafficEndpointID(TEAccess)}
		if s.PPPoE != 0 {
			ctl = append(ctl, bbf.NewPPPoESessionID(s.PPPoE), bbf.NewPPPProtocol(bbf.PPPProto{Flags: bbf.PPPControl}))
		}
		ies = append(ies,
			ie.NewCreatePDR(ie.NewPDRID(PDRUpCP), ie.NewPrecedence(10), ie.NewPDI(ctl...), ie.NewFARID(FARToCP)),
			ie.NewCreatePDR(ie.NewPDRID(PDRCPUp), ie.NewPrecedence(10),
				ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCPFunction), ie.NewTrafficEndpointID(TECPR)),
				ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(FARToAcc)),
			ie.NewCreateFAR(ie.NewFARID(FARToCP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceCPFunction),
				ie.NewOuterHeaderCreation(0x0100, s.CPTEID, s.CPAddr.String(), "", 0, 0, 0))),
			ie.NewCreateFAR(ie.NewFARID(FARToAcc), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewTrafficEndpointID(TEAccess))))
	}
	return ies
}

// RateChange is the body of a Session Modification Request changing the
// QER's rates (kbit/s).
func RateChange(ulMBR, ulGBR, dlMBR uint64) []*ie.IE {
	return []*ie.IE{ie.NewUpdateQER(ie.NewQERID(QERID), ie.NewMBR(ulMBR, dlMBR), ie.NewGBR(ulGBR, 0))}
}

// DefaultSession is the control plane's default session (TR-459: created
// right after association, no PDN type): PDRs catching control traffic of
// subscribers without a session -- PPPoE discovery, ARP (by Ethertype),
// DHCPv4, DHCPv6, ICMPv6 RS/NS (SDF filters) -- to tunnel teid at cp.
func DefaultSession(port string, cp netip.Addr, teid uint32) []*ie.IE {
	far := ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
		ie.NewDestinationInterface(ie.DstInterfaceCPFunction),
		ie.NewOuterHeaderCreation(0x0100, teid, cp.String(), "", 0, 0, 0)))
	pdr := func(id uint16, prec uint32, match ...*ie.IE) *ie.IE {
		pdi := []*ie.IE{ie.NewSourceInterface(ie.SrcInterfaceAccess)}
		if port != "" {
			pdi = append(pdi, bbf.NewLogicalPort(port))
		}
		return ie.NewCreatePDR(ie.NewPDRID(id), ie.NewPrecedence(prec), ie.NewPDI(append(pdi, match...)...), ie.NewFARID(1))
	}
	eth := func(t uint16) *ie.IE { return ie.NewEthernetPacketFilter(ie.NewEthertype(t)) }
	sdf := func(fd string) *ie.IE { return ie.NewSDFFilter(fd, "", "", "", 0) }
	return []*ie.IE{far,
		pdr(1, 100, eth(0x8863)),
		pdr(2, 100, eth(0x0806)),
		pdr(3, 200, sdf("permit out 17 from any 67 to any 68")),
		pdr(4, 200, sdf("permit out 17 from any 547 to any 546")),
		pdr(5, 200, sdf("permit out 58 from any to any 133,135")),
	}
}
