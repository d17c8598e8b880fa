package bngcp

import (
	"bytes"
	"net"
	"net/netip"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pppoe"
)

// The DHCPv4 server of IPoE subscribers (RFC 2131, options RFC 2132;
// messages decoded and built with github.com/insomniacslk/dhcp).
//
//	client                               BNG
//	DISCOVER ---------------------> admit; AAA (user: MAC, option 82
//	                                circuit/remote id, or the line); pool
//	        <---------------------- OFFER (address, lease, router, DNS)
//	REQUEST (selecting) ----------> user plane session established, then
//	        <---------------------- ACK
//	REQUEST (renewing, unicast) --> ACK, lease extended
//	RELEASE ----------------------> session ends
//	(no renewal)                    the lease ends: the session ends
//
// The Relay Agent Information option (82, RFC 3046) an access node put in
// the client's messages is kept with the session (the line's Agent-Circuit
// and Agent-Remote ids go to AAA) and copied into every answer, as RFC
// 3046 2.2 asks of a server.  One IPoE subscriber per tagged line (the
// user plane classifies IPoE subscribers by their tags): a DISCOVER from a
// second MAC on a line with a session is counted (line_busy) and ignored.
// An untagged port is a shared segment whose subscribers only their MACs
// tell apart: each MAC is a session (in direct mode; a user plane whose
// data plane has no MAC key for IPoE refuses them, and the session fails
// with the cause it gave).

type ipoeSession struct {
	discover *dhcpv4.DHCPv4 // the DISCOVER waiting for authorisation
	pending4 *dhcpv4.DHCPv4 // the REQUEST waiting for the user plane
	pendingE event
	bound4   bool
	leaseEnd time.Time
	opt82    []byte

	duid      []byte
	pending6  *pending6
	bound6    bool
	lease6End time.Time
}

func (sh *shard) dhcp4(ev event, u frame.UDP) {
	srv := sh.srv
	m, err := dhcpv4.FromBytes(u.Payload)
	if err != nil || m.OpCode != dhcpv4.OpcodeBootRequest || m.HWType != iana.HWTypeEthernet ||
		len(m.ClientHWAddr) != 6 {
		srv.ctr.inc(cDHCPMalformed)
		return
	}
	// The client's hardware address is the frame's source: the line
	// is point to point, a different one is someone else's.
	if !bytes.Equal(m.ClientHWAddr, ev.hdr.Src[:]) {
		srv.ctr.inc(cDHCPIgnored)
		return
	}
	ck := circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}
	s := sh.ipoe[ck]
	if opt := m.GetOneOption(dhcpv4.OptionRelayAgentInformation); opt != nil {
		srv.ctr.inc(cDHCPOption82)
	}
	switch m.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		srv.ctr.inc(cDHCPDiscover)
		sh.discover(ev, m, s, ck)
	case dhcpv4.MessageTypeRequest:
		srv.ctr.inc(cDHCPRequest)
		sh.request(ev, m, s)
	case dhcpv4.MessageTypeRelease:
		srv.ctr.inc(cDHCPRelease)
		if s != nil && s.v4.IsValid() && netipOf(m.ClientIPAddr) == s.v4 {
			sh.release4(s)
		}
	case dhcpv4.MessageTypeDecline:
		srv.ctr.inc(cDHCPDecline)
		if s != nil {
			sh.terminate(s, causeDeclined)
		}
	case dhcpv4.MessageTypeInform:
		srv.ctr.inc(cDHCPInform)
		if s != nil && s.state == stUp {
			sh.reply4(ev, s, m, dhcpv4.MessageTypeAck)
		}
	default:
		srv.ctr.inc(cDHCPIgnored)
	}
}

func netipOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip.To4())
	return a
}

// newIPoE starts a session for a subscriber's first DHCP message.
func (sh *shard) newIPoE(ev event, ck circuitKey, lineID pppoe.LineID, dropped counter) *session {
	srv := sh.srv
	lk := lineKey{ck.port, ck.line}
	tagged := ck.line.Tags() > 0
	if other := sh.lines[lk]; tagged && other != nil {
		srv.ctr.inc(cDHCPLineBusy)
		return nil
	}
	if !sh.admit(ck) {
		srv.ctr.inc(dropped)
		return nil
	}
	if srv.sessions.Load() >= int64(srv.cfg.Limits.MaxSessions) {
		srv.ctr.inc(cSessionLimit)
		return nil
	}
	s := sh.newSession(aaa.IPoE, ev.port, ev.hdr)
	s.ipoe = &ipoeSession{}
	s.lineID = lineID
	sh.ipoe[ck] = s
	if tagged {
		sh.lines[lk] = s
	}
	sh.arm(s, tSetup, srv.cfg.IPoE.OfferHold)
	return s
}

// ipoeUser is the AAA name of an IPoE subscriber.
func (sh *shard) ipoeUser(s *session) string {
	switch sh.srv.cfg.IPoE.Username {
	case "circuit-id":
		if s.lineID.CircuitID != "" {
			return s.lineID.CircuitID
		}
	case "remote-id":
		if s.lineID.RemoteID != "" {
			return s.lineID.RemoteID
		}
	case "line":
		return s.nasPortID()
	}
	return s.circuit.MAC.String()
}

// option82 reads the Agent Circuit ID and Agent Remote ID sub-options.
func option82(m *dhcpv4.DHCPv4) ([]byte, pppoe.LineID) {
	raw := m.GetOneOption(dhcpv4.OptionRelayAgentInformation)
	if raw == nil {
		return nil, pppoe.LineID{}
	}
	var l pppoe.LineID
	if ri := m.RelayAgentInfo(); ri != nil {
		l.CircuitID = string(ri.Get(dhcpv4.GenericOptionCode(1)))
		l.RemoteID = string(ri.Get(dhcpv4.GenericOptionCode(2)))
	}
	return append([]byte(nil), raw...), l
}

func (sh *shard) discover(ev event, m *dhcpv4.DHCPv4, s *session, ck circuitKey) {
	srv := sh.srv
	if s == nil {
		raw, lineID := option82(m)
		if s = sh.newIPoE(ev, ck, lineID, cDHCPRateLimited); s == nil {
			return
		}
		s.ipoe.opt82 = raw
		s.ipoe.discover = m
		s.ipoe.pendingE = ev
		sh.authenticate(s, &aaa.Request{Service: aaa.IPoE, Method: aaa.MethodNone, User: sh.ipoeUser(s),
			Password: []byte(srv.cfg.IPoE.Password)})
		return
	}
	if !sh.again(ck) {
		srv.ctr.inc(cDHCPRateLimited)
		return
	}
	switch s.state {
	case stAuthorizing:
		s.ipoe.discover, s.ipoe.pendingE = m, ev // answer the latest one
	case stTerminating:
		srv.ctr.inc(cDHCPIgnored)
	default:
		if !s.v4.IsValid() {
			srv.ctr.inc(cDHCPIgnored)
			return
		}
		sh.reply4(ev, s, m, dhcpv4.MessageTypeOffer)
	}
}

// ipoeAuthorized: AAA accepted and the addresses are taken.  Offer what
// was asked for (DHCPv4 and/or DHCPv6).
func (sh *shard) ipoeAuthorized(s *session) {
	d := s.ipoe
	if d.discover != nil {
		if s.v4.IsValid() {
			sh.reply4(d.pendingE, s, d.discover, dhcpv4.MessageTypeOffer)
		}
		d.discover = nil
	}
	if p := d.pending6; p != nil && !p.needsUP {
		d.pending6 = nil
		sh.answer6(s, p)
	} else if p != nil {
		sh.activate(s)
	}
}

func (sh *shard) request(ev event, m *dhcpv4.DHCPv4, s *session) {
	srv := sh.srv
	sid := netipOf(m.ServerIdentifier())
	req := netipOf(m.RequestedIPAddress())
	ci := netipOf(m.ClientIPAddr)
	if s == nil {
		// A client renewing an address we know nothing of (we lost it,
		// or it is another server's): a NAK sends it back to DISCOVER.
		if (ci.IsValid() && !ci.IsUnspecified() && srv.inPool4(ci)) || (!sid.IsValid() && req.IsValid() && srv.inPool4(req)) {
			if sh.admit(circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}) {
				sh.nak4(ev, m, srv.gatewayFor(ci, req))
			}
		}
		return
	}
	if s.state == stAuthorizing || s.state == stTerminating || !s.v4.IsValid() {
		return
	}
	ours := s.pool4.Gateway.Addr()
	switch {
	case sid.IsValid() && !sid.IsUnspecified(): // selecting
		if sid != ours {
			// It took another server's offer.
			if s.state != stUp && !s.ipoe.bound6 {
				sh.terminate(s, causeUserRequest)
			}
			return
		}
		if req != s.v4 {
			sh.nak4(ev, m, ours)
			return
		}
	case ci.IsValid() && !ci.IsUnspecified(): // renewing or rebinding
		if ci != s.v4 {
			sh.nak4(ev, m, ours)
			return
		}
	default: // init-reboot
		if req != s.v4 {
			sh.nak4(ev, m, ours)
			return
		}
	}
	if s.upDone {
		sh.ack4(ev, s, m)
		return
	}
	s.ipoe.pending4, s.ipoe.pendingE = m, ev
	sh.activate(s)
}

// ipoeActivated: the user plane has the subscriber; answer what waited.
func (sh *shard) ipoeActivated(s *session) {
	d := s.ipoe
	if m := d.pending4; m != nil {
		d.pending4 = nil
		sh.ack4(d.pendingE, s, m)
	}
	if p := d.pending6; p != nil {
		d.pending6 = nil
		sh.answer6(s, p)
	}
}

func (sh *shard) ack4(ev event, s *session, m *dhcpv4.DHCPv4) {
	lease := sh.srv.cfg.IPoE.Lease
	if !sh.reply4(ev, s, m, dhcpv4.MessageTypeAck) {
		return
	}
	s.ipoe.bound4 = true
	s.ipoe.leaseEnd = sh.now().Add(lease)
	// The session ends a little after the lease: a client renews at T1,
	// rebinds at T2, and its last REQUEST may arrive at the very end.
	sh.arm(s, tLease4, lease+lease/16)
	sh.maybeUp(s)
	if s.state == stUp {
		sh.save(s)
	}
}

func (sh *shard) release4(s *session) {
	s.ipoe.bound4 = false
	sh.stop(s, tLease4)
	if !s.ipoe.bound6 {
		sh.terminate(s, causeUserRequest)
	}
}

func (sh *shard) leaseTimeout(s *session, k timerKind) {
	d := s.ipoe
	if k == tLease4 {
		sh.srv.ctr.inc(cDHCPExpired)
		d.bound4 = false
	} else {
		sh.srv.ctr.inc(cDHCP6Expired)
		d.bound6 = false
	}
	if !d.bound4 && !d.bound6 {
		sh.terminate(s, causeLeaseExpired)
	}
}

func (s *Server) inPool4(a netip.Addr) bool {
	for _, p := range s.pools4 {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// gatewayFor is our server identifier towards a client whose address is
// in one of our pools.
func (s *Server) gatewayFor(addrs ...netip.Addr) netip.Addr {
	for _, a := range addrs {
		for _, p := range s.pools4 {
			if a.IsValid() && p.Contains(a) {
				return p.Gateway.Addr()
			}
		}
	}
	return netip.IPv4Unspecified()
}

func (sh *shard) nak4(ev event, m *dhcpv4.DHCPv4, server netip.Addr) {
	r, err := dhcpv4.NewReplyFromRequest(m, dhcpv4.WithMessageType(dhcpv4.MessageTypeNak),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(server.AsSlice())),
		dhcpv4.WithOption(dhcpv4.OptMessage("address not valid here")))
	if err != nil {
		return
	}
	r.YourIPAddr = net.IPv4zero
	sh.sendDHCP4(ev, r, server, netip.IPv4Unspecified(), true)
	sh.srv.ctr.inc(cDHCPNak)
}

// reply4 builds and sends an OFFER, ACK (INFORM: no address) to m.
func (sh *shard) reply4(ev event, s *session, m *dhcpv4.DHCPv4, t dhcpv4.MessageType) bool {
	srv := sh.srv
	p := s.pool4
	gw := p.Gateway
	lease := uint32(srv.cfg.IPoE.Lease / time.Second)
	mods := []dhcpv4.Modifier{
		dhcpv4.WithMessageType(t),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(gw.Addr().AsSlice())),
		dhcpv4.WithOption(dhcpv4.OptSubnetMask(net.CIDRMask(gw.Bits(), 32))),
		dhcpv4.WithOption(dhcpv4.OptRouter(gw.Addr().AsSlice())),
	}
	if len(p.DNS) > 0 {
		ips := make([]net.IP, 0, len(p.DNS))
		for _, d := range p.DNS {
			ips = append(ips, d.AsSlice())
		}
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptDNS(ips...)))
	}
	inform := m.MessageType() == dhcpv4.MessageTypeInform
	if !inform {
		mods = append(mods, dhcpv4.WithYourIP(s.v4.AsSlice()), dhcpv4.WithLeaseTime(lease),
			dhcpv4.WithOption(dhcpv4.OptRenewTimeValue(time.Duration(lease/2)*time.Second)),
			dhcpv4.WithOption(dhcpv4.OptRebindingTimeValue(time.Duration(lease*7/8)*time.Second)))
	}
	r, err := dhcpv4.NewReplyFromRequest(m, mods...)
	if err != nil {
		return false
	}
	// Option 82 of the session when this message came without it (a
	// renewal unicast past the access node): RFC 3046 asks to echo what
	// the request carried, and no more.
	if raw := m.GetOneOption(dhcpv4.OptionRelayAgentInformation); raw == nil {
		r.Options.Del(dhcpv4.OptionRelayAgentInformation)
	}
	to, bcast := s.v4, m.IsBroadcast()
	if ci := netipOf(m.ClientIPAddr); ci.IsValid() && !ci.IsUnspecified() {
		to, bcast = ci, false
	} else if bcast {
		to = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	}
	sh.sendDHCP4(ev, r, gw.Addr(), to, bcast)
	switch t {
	case dhcpv4.MessageTypeOffer:
		srv.ctr.inc(cDHCPOffer)
	case dhcpv4.MessageTypeAck:
		srv.ctr.inc(cDHCPAck)
	}
	return true
}

func (sh *shard) sendDHCP4(ev event, r *dhcpv4.DHCPv4, from, to netip.Addr, bcast bool) {
	dst := ev.hdr.Src
	if bcast || to.IsUnspecified() {
		dst = frame.Broadcast
		to = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	}
	b := frame.Append(make([]byte, 0, 400), dst, ev.port.mac, ev.hdr.Line, frame.TypeIPv4)
	b, err := frame.AppendUDP(b, from, to, 67, 68, 64, r.ToBytes())
	if err != nil {
		return
	}
	sh.send(ev.port, b)
}
