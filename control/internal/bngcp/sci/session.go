package sci

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/bngcp"
	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/pfcp/bbf"
)

// A subscriber's PFCP session (after Nokia MAG-c's PFCP interface
// description of a TR-459 session, as the user plane's tests build it):
//
//	TE 1  access: logical port, S-TAG, C-TAG, MAC
//	TE 2  TE 1 + PPPoE session id + UE addresses (IPv4 /32, IPv6 block)
//	TE 3  UE addresses + network instance (the core side)
//	PDR 3 Access (TE 2) -> FAR 3 Core; BBF Outer Header Removal
//	      Ethernet or PPPoE/Ethernet; QER 1, URR 1
//	PDR 4 Core (TE 3) -> FAR 4 Access (TE 2, BBF Outer Header Creation
//	      "Traffic-Endpoint"); QER 1, URR 1
//	QER 1 the profile's rates: uplink MBR/GBR (policer), downlink MBR (pipe)
//	URR 1 volume and duration, periodic at the interim interval
//
// and, for a PPPoE session, its own control packet redirect tunnel (the
// session's LCP, authentication and NCPs, and DHCPv6 and ND inside PPP,
// no longer go through the default session's rules):
//
//	PDR 1 Access (TE 1 + PPPoE session id, PPP Protocol "control")
//	      -> FAR 1: GTP-U to us, TEID sessionTEID(port, id)
//	PDR 5 Access (the same, PPP Protocol "data", SDF DHCPv6 and RS/NS)
//	      -> FAR 1
//	PDR 2 CP function, local F-TEID CHOOSE -> FAR 2 Access (TE 1)
//
// IPoE subscribers' DHCP, ARP and ND keep using the default session.

const (
	pdrCtlUp   = 1
	pdrCtlDown = 2
	pdrUp      = 3
	pdrDown    = 4
	pdrCtlData = 5
	farToCP    = 1
	farToAcc   = 2
	farCore    = 3
	farDown    = 4
	qerID      = 1
	urrID      = 1
	teAcc      = 1
	teData     = 2
	teCore     = 3
)

// sessionTEID is our TEID for a session's redirected control frames: the
// top bit marks a session tunnel, then the user plane's and the logical
// port's index (what delivery needs: the frame itself names its
// session), then the low bits of the session id.  It is computed, not
// stored, so a restarted control plane knows the tunnels of the sessions
// it restores.
func sessionTEID(upIdx, portIdx int, id uint64) uint32 {
	return 0x80000000 | uint32(upIdx&0x7f)<<24 | uint32(portIdx&0xff)<<16 | uint32(id&0xffff)
}

func tag(t uint16, vid uint16) *ie.IE {
	// Flags: VID present; PCP and DEI not.
	return ie.New(t, []byte{0x04, byte(vid >> 8 & 0x0f), byte(vid)})
}

func kbps(bps uint64) uint64 { return (bps + 999) / 1000 }

func qerOf(p *bngcp.Profile) (ulMBR, ulGBR, dlMBR uint64) {
	if p == nil {
		return 0, 0, 0
	}
	return kbps(p.UpMBR), kbps(p.UpGBR), kbps(p.DownMBR)
}

func (s *SCI) establishIEs(u *upState, sp *bngcp.SessionSpec) []*ie.IE {
	access := []*ie.IE{bbf.NewLogicalPort(sp.Circuit.Port)}
	l := sp.Circuit.Line
	if l.STag != 0 {
		access = append(access, tag(ie.STAG, l.STag))
	}
	if l.CTag != 0 {
		access = append(access, tag(ie.CTAG, l.CTag))
	}
	access = append(access, ie.NewMACAddress(net.HardwareAddr(sp.Circuit.MAC[:]), nil, nil, nil))
	var ue []*ie.IE
	if sp.IPv4.IsValid() {
		ue = append(ue, ie.NewUEIPAddress(0x02, sp.IPv4.String(), "", 0, 0))
	}
	if sp.IPv6.IsValid() {
		// V6 + IPv6D: the prefix as Prefix Delegation Bits from /64.
		bits := uint8(64 - sp.IPv6.Bits())
		ue = append(ue, ie.New(ie.UEIPAddress, append(append([]byte{0x01 | 0x08}, sp.IPv6.Addr().AsSlice()...), bits)))
	}
	te1 := append([]*ie.IE{ie.NewTrafficEndpointID(teAcc)}, access...)
	te2 := append([]*ie.IE{ie.NewTrafficEndpointID(teData)}, access...)
	ohr := bbf.OHREthernet
	if sp.PPPoE != 0 {
		te2 = append(te2, bbf.NewPPPoESessionID(sp.PPPoE))
		ohr = bbf.OHRPPPoEEthernet
	}
	te2 = append(te2, ue...)
	te3 := append([]*ie.IE{ie.NewTrafficEndpointID(teCore)}, ue...)
	fwdCore := []*ie.IE{ie.NewDestinationInterface(ie.DstInterfaceCore)}
	if ni := u.cfg.NetworkInstance; ni != "" {
		te3 = append(te3, ie.NewNetworkInstance(ni))
		fwdCore = append(fwdCore, ie.NewNetworkInstance(ni))
	}
	ulMBR, ulGBR, dlMBR := qerOf(sp.Profile)
	ies := []*ie.IE{
		ie.NewNodeIDHeuristic(s.cfg.NodeID), ie.NewFSEID(sp.ID, s.cfg.Listen.Addr().AsSlice(), nil),
		ie.NewPDNType(ie.PDNTypeEthernet),
		ie.NewCreateTrafficEndpoint(te1...), ie.NewCreateTrafficEndpoint(te2...), ie.NewCreateTrafficEndpoint(te3...),
	}
	var rules []*ie.IE
	if ulMBR != 0 || dlMBR != 0 {
		ies = append(ies, ie.NewCreateQER(ie.NewQERID(qerID), ie.NewGateStatus(ie.GateStatusOpen, ie.GateStatusOpen),
			ie.NewMBR(ulMBR, dlMBR), ie.NewGBR(ulGBR, 0)))
		rules = append(rules, ie.NewQERID(qerID))
	}
	if sp.Interim > 0 {
		ies = append(ies, ie.NewCreateURR(ie.NewURRID(urrID), ie.NewMeasurementMethod(0, 1, 1),
			ie.NewMeasurementPeriod(sp.Interim), ie.NewReportingTriggers(0x01, 0, 0)))
	} else {
		ies = append(ies, ie.NewCreateURR(ie.NewURRID(urrID), ie.NewMeasurementMethod(0, 1, 1),
			ie.NewReportingTriggers(0, 0, 0)))
	}
	rules = append(rules, ie.NewURRID(urrID))
	ies = append(ies,
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(pdrUp), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewTrafficEndpointID(teData)),
			bbf.NewOuterHeaderRemoval(ohr), ie.NewFARID(farCore)}, rules...)...),
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(pdrDown), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewTrafficEndpointID(teCore)),
			ie.NewFARID(farDown)}, rules...)...),
		ie.NewCreateFAR(ie.NewFARID(farCore), ie.NewApplyAction(0x02), ie.NewForwardingParameters(fwdCore...)),
		ie.NewCreateFAR(ie.NewFARID(farDown), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewTrafficEndpointID(teData),
			bbf.NewOuterHeaderCreation(bbf.OHC{Description: bbf.OHCTrafficEndpoint}))))
	if sp.PPPoE != 0 {
		ies = append(ies, s.redirectIEs(u, sp)...)
	}
	return ies
}

// redirectIEs are a PPPoE session's own redirect rules (above).
func (s *SCI) redirectIEs(u *upState, sp *bngcp.SessionSpec) []*ie.IE {
	teid := sessionTEID(u.idx, u.portIndex(sp.Circuit.Port), sp.ID)
	pdi := func(flags uint8, match ...*ie.IE) *ie.IE {
		return ie.NewPDI(append([]*ie.IE{ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewTrafficEndpointID(teAcc),
			bbf.NewPPPoESessionID(sp.PPPoE), bbf.NewPPPProtocol(bbf.PPPProto{Flags: flags})}, match...)...)
	}
	sdf := func(fd string) *ie.IE { return ie.NewSDFFilter(fd, "", "", "", 0) }
	return []*ie.IE{
		ie.NewCreatePDR(ie.NewPDRID(pdrCtlUp), ie.NewPrecedence(10), pdi(bbf.PPPControl), ie.NewFARID(farToCP)),
		ie.NewCreatePDR(ie.NewPDRID(pdrCtlData), ie.NewPrecedence(20), pdi(bbf.PPPData,
			sdf("permit out 17 from any 547 to any 546"), sdf("permit out 58 from any to any 133,135")),
			ie.NewFARID(farToCP)),
		ie.NewCreatePDR(ie.NewPDRID(pdrCtlDown), ie.NewPrecedence(10),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCPFunction), ie.NewFTEID(0x05, 0, nil, nil, 0)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(farToAcc)),
		ie.NewCreateFAR(ie.NewFARID(farToCP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceCPFunction),
			ie.NewOuterHeaderCreation(0x0100, teid, s.cpr.addr().String(), "", 0, 0, 0))),
		ie.NewCreateFAR(ie.NewFARID(farToAcc), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewTrafficEndpointID(teAcc))),
	}
}

// CauseError is a user plane's refusal.
type CauseError struct {
	Cause     uint8
	Offending uint16
}

func (e *CauseError) Error() string {
	return fmt.Sprintf("user plane answered cause %d (offending IE %d)", e.Cause, e.Offending)
}

func (s *SCI) upFor(sp *bngcp.SessionSpec) (*upState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.byPort[sp.Circuit.Port]
	if u == nil {
		return nil, fmt.Errorf("no user plane serves port %s", sp.Circuit.Port)
	}
	if !u.associated || !u.defReady {
		return nil, fmt.Errorf("user plane %s is not associated", u.cfg.Name)
	}
	return u, nil
}

// Establish implements bngcp.UserPlane.
func (s *SCI) Establish(sp *bngcp.SessionSpec, done func(uint64, error)) {
	u, err := s.upFor(sp)
	if err != nil {
		done(0, err)
		return
	}
	s.NEstablish.Add(1)
	m := message.NewSessionEstablishmentRequest(0, 0, 0, s.nextSeq(), 0, s.establishIEs(u, sp)...)
	s.request(u, m, func(m message.Message, err error) {
		if err != nil {
			done(0, err)
			return
		}
		r, ok := m.(*message.SessionEstablishmentResponse)
		if !ok {
			done(0, fmt.Errorf("answer is %s", m.MessageTypeName()))
			return
		}
		if c := cause(r.Cause); c != ie.CauseRequestAccepted {
			s.Rejected.Add(1)
			done(0, &CauseError{Cause: c, Offending: offending(r)})
			return
		}
		if r.UPFSEID == nil {
			done(0, errors.New("no UP F-SEID in the answer"))
			return
		}
		f, err := r.UPFSEID.FSEID()
		if err != nil {
			done(0, err)
			return
		}
		s.learnTunnel(sp.ID, r.CreatedPDR)
		done(f.SEID, nil)
	})
}

// Modify implements bngcp.UserPlane: the QER's rates from the profile.
func (s *SCI) Modify(sp *bngcp.SessionSpec, upSEID uint64, done func(error)) {
	u, err := s.upFor(sp)
	if err != nil {
		done(err)
		return
	}
	s.NModify.Add(1)
	ulMBR, ulGBR, dlMBR := qerOf(sp.Profile)
	m := message.NewSessionModificationRequest(0, 0, upSEID, s.nextSeq(), 0,
		ie.NewUpdateQER(ie.NewQERID(qerID), ie.NewMBR(ulMBR, dlMBR), ie.NewGBR(ulGBR, 0)))
	s.request(u, m, func(m message.Message, err error) {
		if err != nil {
			done(err)
			return
		}
		r, ok := m.(*message.SessionModificationResponse)
		if !ok {
			done(fmt.Errorf("answer is %s", m.MessageTypeName()))
			return
		}
		if c := cause(r.Cause); c != ie.CauseRequestAccepted {
			s.Rejected.Add(1)
			done(&CauseError{Cause: c})
			return
		}
		s.usage(sp.ID, r.UsageReport, false)
		done(nil)
	})
}

// Delete implements bngcp.UserPlane; the answer's usage reports are the
// final volume.
func (s *SCI) Delete(sp *bngcp.SessionSpec, upSEID uint64, done func(aaa.Usage, error)) {
	s.mu.Lock()
	u := s.byPort[sp.Circuit.Port]
	s.mu.Unlock()
	if u == nil {
		done(aaa.Usage{}, fmt.Errorf("no user plane serves port %s", sp.Circuit.Port))
		return
	}
	s.NDelete.Add(1)
	s.mu.Lock()
	delete(s.tunnels, sp.ID)
	s.mu.Unlock()
	m := message.NewSessionDeletionRequest(0, 0, upSEID, s.nextSeq(), 0)
	s.request(u, m, func(m message.Message, err error) {
		if err != nil {
			done(aaa.Usage{}, err)
			return
		}
		r, ok := m.(*message.SessionDeletionResponse)
		if !ok {
			done(aaa.Usage{}, fmt.Errorf("answer is %s", m.MessageTypeName()))
			return
		}
		total := sumReports(r.UsageReport)
		if c := cause(r.Cause); c != ie.CauseRequestAccepted {
			if c == ie.CauseSessionContextNotFound {
				done(total, nil) // gone already: nothing to delete
				return
			}
			done(total, &CauseError{Cause: c})
			return
		}
		done(total, nil)
	})
}

// Check implements bngcp.UserPlane: a modification that only queries the
// URR (TS 29.244 7.5.4.10): accepted means the session is there, and its
// usage since the last report comes back.
func (s *SCI) Check(ctx context.Context, sp *bngcp.SessionSpec, upSEID uint64) (bool, error) {
	u, err := s.upFor(sp)
	if err != nil {
		return false, err
	}
	m := message.NewSessionModificationRequest(0, 0, upSEID, s.nextSeq(), 0, ie.NewQueryURR(ie.NewURRID(urrID)))
	a, err := s.call(ctx, u, m)
	if err != nil {
		return false, err
	}
	r, ok := a.(*message.SessionModificationResponse)
	if !ok {
		return false, fmt.Errorf("answer is %s", a.MessageTypeName())
	}
	switch c := cause(r.Cause); c {
	case ie.CauseRequestAccepted:
		s.usage(sp.ID, r.UsageReport, false)
		return true, nil
	case ie.CauseSessionContextNotFound:
		return false, nil
	default:
		return false, &CauseError{Cause: c}
	}
}

// learnTunnel records the TEID the user plane chose for a session's
// frames from us (Created PDR of PDR 2).  A restarted control plane
// does not know it: its frames take the port's default tunnel, which
// reaches the subscriber all the same.
func (s *SCI) learnTunnel(id uint64, created []*ie.IE) {
	for _, c := range created {
		pid, err1 := c.PDRID()
		f, err2 := c.FTEID()
		if err1 != nil || err2 != nil || pid != pdrCtlDown {
			continue
		}
		if a, ok := netip.AddrFromSlice(f.IPv4Address); ok {
			s.mu.Lock()
			s.tunnels[id] = fteid{TEID: f.TEID, Addr: a.Unmap()}
			s.mu.Unlock()
		}
	}
}

// sumReports adds the volume of usage reports.
func sumReports(reps []*ie.IE) aaa.Usage {
	var u aaa.Usage
	for _, r := range reps {
		v, err := r.VolumeMeasurement()
		if err != nil {
			continue
		}
		// Uplink is what the subscriber sent: accounting's input.
		u.InOctets += v.UplinkVolume
		u.OutOctets += v.DownlinkVolume
		u.InPackets += v.UplinkNumberOfPackets
		u.OutPackets += v.DownlinkNumberOfPackets
	}
	return u
}

func (s *SCI) usage(id uint64, reps []*ie.IE, periodic bool) {
	if len(reps) == 0 || s.OnReport == nil {
		return
	}
	s.OnReport(bngcp.UsageReport{ID: id, Delta: sumReports(reps), Periodic: periodic})
}

// onReport answers a Session Report Request (its SEID is ours).
func (s *SCI) onReport(r *message.SessionReportRequest, peer netip.AddrPort) {
	s.Reports.Add(1)
	s.write(peer, message.NewSessionReportResponse(0, 0, 0, r.Sequence(), 0, ie.NewCause(ie.CauseRequestAccepted)))
	periodic := false
	for _, rep := range r.UsageReport {
		if t, err := rep.UsageReportTrigger(); err == nil && len(t) > 0 && t[0]&0x01 != 0 {
			periodic = true
		}
	}
	s.usage(r.SEID(), r.UsageReport, periodic)
}
