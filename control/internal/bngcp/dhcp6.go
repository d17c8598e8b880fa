package bngcp

import (
	"bytes"
	"net"
	"net/netip"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pool"
	"edgeplane/control/internal/bngcp/ppp"
	"edgeplane/control/internal/bngcp/pppoe"
)

// The DHCPv6 server (RFC 8415; messages decoded and built with
// github.com/insomniacslk/dhcp), for IPoE subscribers and inside PPP
// sessions (prefix delegation once IPv6CP is up).  A subscriber's block
// (pool.V6) holds what it is given:
//
//	IA_NA  <link /64>::2        the WAN address (IPoE; PPP if asked)
//	IA_PD  the block's delegated prefix (RFC 8415 6.3)
//
// so the user plane forwards both with the one prefix it holds per
// subscriber.  Over IPoE the first SOLICIT starts a session like a
// DISCOVER; the REPLY to REQUEST (or to a rapid-commit SOLICIT) waits for
// the user plane, as the DHCPv4 ACK does.

type pending6 struct {
	ev      event
	msg     *dhcpv6.Message
	ps      *session // over PPP
	needsUP bool     // the answer commits bindings: after the user plane
	src     netip.Addr
}

// wanHost is the IA_NA address's interface id inside the link /64.
const wanHost = 2

func (sh *shard) dhcp6(ev event, u frame.UDP, ps *session) {
	srv := sh.srv
	m, err := dhcpv6.MessageFromBytes(u.Payload)
	if err != nil {
		srv.ctr.inc(cDHCP6Malformed)
		return
	}
	cid := m.Options.ClientID()
	if cid == nil && m.MessageType != dhcpv6.MessageTypeInformationRequest {
		srv.ctr.inc(cDHCP6Malformed)
		return
	}
	ourDUID := ev.port.duid
	if sidOpt := m.Options.ServerID(); sidOpt != nil {
		if !bytes.Equal(sidOpt.ToBytes(), ourDUID) {
			// RFC 8415 16.x: for another server, or a SOLICIT/REBIND/
			// CONFIRM/INFORMATION-REQUEST that must not name one.
			srv.ctr.inc(cDHCP6Ignored)
			return
		}
	}
	counters := map[dhcpv6.MessageType]counter{
		dhcpv6.MessageTypeSolicit: cDHCP6Solicit, dhcpv6.MessageTypeRequest: cDHCP6Request,
		dhcpv6.MessageTypeRenew: cDHCP6Renew, dhcpv6.MessageTypeRebind: cDHCP6Rebind,
		dhcpv6.MessageTypeRelease: cDHCP6Release, dhcpv6.MessageTypeConfirm: cDHCP6Confirm,
		dhcpv6.MessageTypeInformationRequest: cDHCP6InfoReq, dhcpv6.MessageTypeDecline: cDHCP6Decline,
	}
	c, known := counters[m.MessageType]
	if !known {
		srv.ctr.inc(cDHCP6Ignored)
		return
	}
	srv.ctr.inc(c)
	p := &pending6{ev: ev, msg: m, ps: ps, src: u.Src}
	if ps != nil {
		sh.answer6(ps, p)
		return
	}
	if !srv.ipoeOn() || !on(srv.cfg.IPoE.DHCPv6, true) {
		srv.ctr.inc(cDHCP6Ignored)
		return
	}
	ck := circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}
	s := sh.ipoe[ck]
	rapid := m.MessageType == dhcpv6.MessageTypeSolicit && srv.cfg.IPoE.RapidCommit &&
		m.GetOneOption(dhcpv6.OptionRapidCommit) != nil
	p.needsUP = m.MessageType == dhcpv6.MessageTypeRequest || rapid
	if s == nil {
		if m.MessageType != dhcpv6.MessageTypeSolicit {
			if m.MessageType == dhcpv6.MessageTypeRenew || m.MessageType == dhcpv6.MessageTypeRebind ||
				m.MessageType == dhcpv6.MessageTypeConfirm {
				// No binding here (we lost it): tell the client so it
				// starts again.
				sh.reply6(nil, p, dhcpv6.MessageTypeReply)
			}
			return
		}
		if s = sh.newIPoE(ev, ck, pppoe.LineID{}, cDHCP6RateLimited); s == nil {
			return
		}
		s.ipoe.duid = cid.ToBytes()
		s.ipoe.pending6 = p
		sh.authenticate(s, &aaa.Request{Service: aaa.IPoE, Method: aaa.MethodNone, User: sh.ipoeUser(s),
			Password: []byte(srv.cfg.IPoE.Password)})
		return
	}
	switch s.state {
	case stAuthorizing:
		s.ipoe.pending6 = p
		return
	case stTerminating:
		return
	}
	if s.ipoe.duid == nil && cid != nil {
		s.ipoe.duid = cid.ToBytes()
	}
	if p.needsUP && !s.upDone {
		s.ipoe.pending6 = p
		sh.activate(s)
		return
	}
	sh.answer6(s, p)
}

// answer6 answers a message of a session whose addresses are known.
func (sh *shard) answer6(s *session, p *pending6) {
	m := p.msg
	switch m.MessageType {
	case dhcpv6.MessageTypeSolicit:
		t := dhcpv6.MessageTypeAdvertise
		if p.needsUP {
			t = dhcpv6.MessageTypeReply
		}
		sh.reply6(s, p, t)
		if t == dhcpv6.MessageTypeReply {
			sh.bind6(s)
		}
	case dhcpv6.MessageTypeRequest, dhcpv6.MessageTypeRenew, dhcpv6.MessageTypeRebind:
		sh.reply6(s, p, dhcpv6.MessageTypeReply)
		sh.bind6(s)
	case dhcpv6.MessageTypeRelease, dhcpv6.MessageTypeDecline:
		sh.reply6(s, p, dhcpv6.MessageTypeReply)
		if s.ipoe != nil {
			s.ipoe.bound6 = false
			sh.stop(s, tLease6)
			if !s.ipoe.bound4 {
				sh.terminate(s, causeUserRequest)
			}
		}
	case dhcpv6.MessageTypeConfirm, dhcpv6.MessageTypeInformationRequest:
		sh.reply6(s, p, dhcpv6.MessageTypeReply)
	}
}

func (sh *shard) bind6(s *session) {
	if s.ipoe == nil {
		return
	}
	v := sh.srv.cfg.IPv6.Valid
	s.ipoe.bound6 = true
	s.ipoe.lease6End = sh.now().Add(v)
	sh.arm(s, tLease6, v+v/16)
	sh.maybeUp(s)
}

// reply6 builds the answer: the client's IAs with what the session has
// (or the status saying why not), DNS, our server id.
func (sh *shard) reply6(s *session, p *pending6, t dhcpv6.MessageType) {
	srv := sh.srv
	m := p.msg
	cfg := &srv.cfg.IPv6
	r := &dhcpv6.Message{MessageType: t, TransactionID: m.TransactionID}
	if cid := m.GetOneOption(dhcpv6.OptionClientID); cid != nil {
		r.AddOption(cid)
	}
	duid := p.ev.port.duid
	r.AddOption(dhcpv6.OptServerID(&dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: net.HardwareAddr(duid[4:])}))
	if t == dhcpv6.MessageTypeReply && m.MessageType == dhcpv6.MessageTypeSolicit {
		r.AddOption(&dhcpv6.OptionGeneric{OptionCode: dhcpv6.OptionRapidCommit})
	}
	valid, pref := cfg.Valid, cfg.Preferred
	t1, t2 := pref/2, pref*4/5
	release := m.MessageType == dhcpv6.MessageTypeRelease || m.MessageType == dhcpv6.MessageTypeDecline
	var link, pd netip.Prefix
	if s != nil && s.v6block.IsValid() {
		link = pool.Link(s.v6block)
		pd = s.delegated
	}
	status := func(code uint16, msg string) *dhcpv6.OptStatusCode {
		return &dhcpv6.OptStatusCode{StatusCode: iana.StatusCode(code), StatusMessage: msg}
	}
	switch m.MessageType {
	case dhcpv6.MessageTypeConfirm:
		code := uint16(0)
		for _, ia := range m.Options.IANA() {
			for _, a := range ia.Options.Addresses() {
				if ad, ok := netip.AddrFromSlice(a.IPv6Addr); !ok || !link.IsValid() || !link.Contains(ad) {
					code = 4 // NotOnLink
				}
			}
		}
		if !link.IsValid() {
			code = 4
		}
		r.AddOption(status(code, ""))
	case dhcpv6.MessageTypeInformationRequest:
	default:
		for _, ia := range m.Options.IANA() {
			out := &dhcpv6.OptIANA{IaId: ia.IaId, T1: t1, T2: t2}
			switch {
			case release:
				out.Options.Add(status(0, ""))
			case s == nil:
				out.Options.Add(status(3, "no binding")) // NoBinding
			case !link.IsValid():
				out.Options.Add(status(2, "no addresses")) // NoAddrsAvail
			default:
				out.Options.Add(&dhcpv6.OptIAAddress{IPv6Addr: pool.Host(link, wanHost).AsSlice(),
					PreferredLifetime: pref, ValidLifetime: valid})
			}
			r.AddOption(out)
		}
		for _, ia := range m.Options.IAPD() {
			out := &dhcpv6.OptIAPD{IaId: ia.IaId, T1: t1, T2: t2}
			switch {
			case release:
				out.Options.Add(status(0, ""))
			case s == nil:
				out.Options.Add(status(3, "no binding"))
			case !pd.IsValid():
				out.Options.Add(status(6, "no prefixes")) // NoPrefixAvail
			default:
				out.Options.Add(&dhcpv6.OptIAPrefix{PreferredLifetime: pref, ValidLifetime: valid,
					Prefix: &net.IPNet{IP: pd.Addr().AsSlice(), Mask: net.CIDRMask(pd.Bits(), 128)}})
			}
			r.AddOption(out)
		}
		if release {
			r.AddOption(status(0, "released"))
		}
	}
	if dns := sh.dns6(s); len(dns) > 0 && m.IsOptionRequested(dhcpv6.OptionDNSRecursiveNameServer) {
		ips := make([]net.IP, 0, len(dns))
		for _, d := range dns {
			ips = append(ips, d.AsSlice())
		}
		r.AddOption(dhcpv6.OptDNS(ips...))
	}
	sh.send6(s, p, r.ToBytes())
	if t == dhcpv6.MessageTypeAdvertise {
		srv.ctr.inc(cDHCP6Advertise)
	} else {
		srv.ctr.inc(cDHCP6Reply)
	}
}

func (sh *shard) dns6(s *session) []netip.Addr {
	if s != nil && s.pool6 != nil && len(s.pool6.DNS) > 0 {
		return s.pool6.DNS
	}
	return sh.srv.cfg.IPv6.dns
}

// send6 sends a DHCPv6 answer to the client's link-local address, over
// the access line or inside its PPP session.
func (sh *shard) send6(s *session, p *pending6, payload []byte) {
	if p.ps != nil {
		pp := p.ps.ppp
		pk, err := frame.AppendUDP(nil, pp.localLL(), p.src, 547, 546, 255, payload)
		if err == nil {
			pp.sendRaw(ppp.ProtoIPv6, pk)
		}
		return
	}
	ev := p.ev
	b := frame.Append(make([]byte, 0, 256), ev.hdr.Src, ev.port.mac, ev.hdr.Line, frame.TypeIPv6)
	b, err := frame.AppendUDP(b, ev.port.ll, p.src, 547, 546, 255, payload)
	if err != nil {
		return
	}
	sh.send(ev.port, b)
}
