package bngcp

import (
	"net/netip"

	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/nd"
	"edgeplane/control/internal/bngcp/pool"
	"edgeplane/control/internal/bngcp/ppp"
)

// Router advertisements and the gateway's neighbour answers.
//
// IPoE: RA with M and O set (addresses and prefixes come from DHCPv6),
// the subscriber's link /64 on-link, not for SLAAC; source our link-local
// address, which the host then resolves with an NS we answer here (the
// data plane punts ND it does not answer).  Before the subscriber has a
// session the RA carries no prefix and a zero router lifetime: it only
// says "use DHCPv6".
//
// PPP: after IPv6CP, RA with O set and the link /64 for SLAAC (A flag);
// the delegated prefix comes by DHCPv6 over the session.

func (sh *shard) rs(ev event, ic frame.ICMPv6, ps *session) {
	srv := sh.srv
	srv.ctr.inc(cNDRS)
	if _, err := nd.CheckRS(ic.Body); err != nil {
		srv.ctr.inc(cNDMalformed)
		return
	}
	dst := ic.Src
	if !dst.IsValid() || dst.IsUnspecified() {
		dst = nd.AllNodes
	}
	if ps != nil {
		sh.sendRA(ps, ps.circuit.MAC, dst)
		return
	}
	s := sh.ipoe[circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}]
	if s == nil {
		// Not yet a subscriber: "use DHCPv6", no default route.
		if !srv.ipoeOn() || !sh.admit(circuitKey{ev.port.cfg.Name, ev.hdr.Line, ev.hdr.Src}) {
			srv.ctr.inc(cNDIgnored)
			return
		}
		ra := &nd.RA{Managed: true, Other: true, MTU: srv.cfg.IPv6.MTU}
		sh.sendRAFrame(ev.port, ev.hdr.Src, ev.hdr.Line, dst, ra)
		return
	}
	sh.sendRA(s, ev.hdr.Src, dst)
}

// raFor is what a session's RA says.
func (sh *shard) raFor(s *session) *nd.RA {
	cfg := &sh.srv.cfg.IPv6
	ra := &nd.RA{Managed: s.ppp == nil, Other: true, MTU: cfg.MTU, Lifetime: cfg.RALifetime,
		DNS: sh.dns6(s), DNSLifetime: cfg.RALifetime}
	if s.v6block.IsValid() {
		ra.Prefix = pool.Link(s.v6block)
		ra.OnLink = true
		ra.Auto = s.ppp != nil
		ra.Valid, ra.Pref = cfg.Valid, cfg.Preferred
	} else {
		ra.Lifetime = 0
	}
	return ra
}

func (sh *shard) sendRA(s *session, mac frame.MAC, dst netip.Addr) {
	ra := sh.raFor(s)
	if s.ppp != nil {
		pp := s.ppp
		if !pp.ncp6 {
			return
		}
		pk, err := frame.AppendICMPv6(nil, pp.localLL(), dst, 255, nd.TypeRA, 0, ra.Body(s.port.mac))
		if err != nil {
			return
		}
		pp.sendRaw(ppp.ProtoIPv6, pk)
		sh.srv.ctr.inc(cNDRA)
		return
	}
	sh.sendRAFrame(s.port, mac, s.circuit.Line, dst, ra)
}

func (sh *shard) sendRAFrame(port *portState, mac frame.MAC, line frame.Line, dst netip.Addr, ra *nd.RA) {
	to := mac
	if dst == nd.AllNodes {
		to = frame.MAC{0x33, 0x33, 0, 0, 0, 1}
	}
	b := frame.Append(make([]byte, 0, 160), to, port.mac, line, frame.TypeIPv6)
	b, err := frame.AppendICMPv6(b, port.ll, dst, 255, nd.TypeRA, 0, ra.Body(port.mac))
	if err != nil {
		return
	}
	sh.send(port, b)
	sh.srv.ctr.inc(cNDRA)
}

// unsolicitedRA is the periodic RA of an up session (RFC 4861 6.2.4).
func (sh *shard) unsolicitedRA(s *session) {
	if s.state != stUp || !s.v6block.IsValid() {
		return
	}
	sh.sendRA(s, s.circuit.MAC, nd.AllNodes)
	sh.arm(s, tRA, sh.srv.cfg.IPv6.RAInterval)
}

// ns answers a neighbour solicitation for our link-local address.
func (sh *shard) ns(ev event, ic frame.ICMPv6, ps *session) {
	srv := sh.srv
	srv.ctr.inc(cNDNS)
	target, _, err := nd.ParseNS(ic.Body)
	if err != nil {
		srv.ctr.inc(cNDMalformed)
		return
	}
	if ps != nil || target != ev.port.ll {
		// PPP links resolve no neighbours; other targets are not ours.
		srv.ctr.inc(cNDIgnored)
		return
	}
	dst := ic.Src
	to := ev.hdr.Src
	if dst.IsUnspecified() {
		dst = nd.AllNodes // duplicate address detection (RFC 4861 7.2.4)
		to = frame.MAC{0x33, 0x33, 0, 0, 0, 1}
	}
	b := frame.Append(make([]byte, 0, 100), to, ev.port.mac, ev.hdr.Line, frame.TypeIPv6)
	b, err = frame.AppendICMPv6(b, ev.port.ll, dst, 255, nd.TypeNA, 0, nd.NABody(target, ev.port.mac))
	if err != nil {
		return
	}
	sh.send(ev.port, b)
	srv.ctr.inc(cNDNA)
}

// arp answers ARP requests for a pool's gateway address (when the data
// plane punts them rather than answering itself).
func (sh *shard) arp(ev event, b []byte) {
	srv := sh.srv
	a, err := nd.ParseARP(b)
	if err != nil {
		srv.ctr.inc(cARPMalformed)
		return
	}
	if a.Op != 1 {
		srv.ctr.inc(cARPIgnored)
		return
	}
	srv.ctr.inc(cARPRequest)
	if !srv.isGateway(a.TargetIP) || a.SenderMAC != ev.hdr.Src {
		srv.ctr.inc(cARPIgnored)
		return
	}
	r := nd.ARP{Op: 2, SenderMAC: ev.port.mac, SenderIP: a.TargetIP, TargetMAC: a.SenderMAC, TargetIP: a.SenderIP}
	out := frame.Append(make([]byte, 0, 64), ev.hdr.Src, ev.port.mac, ev.hdr.Line, frame.TypeARP)
	sh.send(ev.port, r.Append(out))
	srv.ctr.inc(cARPReply)
}

func (s *Server) isGateway(a netip.Addr) bool {
	for _, p := range s.pools4 {
		if p.Gateway.Addr() == a {
			return true
		}
	}
	return false
}
