package bngcp

import (
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/nd"
)

// frame hands a subscriber's frame to its protocol by EtherType, and
// IPv4/IPv6 by UDP port or ICMPv6 type: what the data plane punts
// (dataplane/bng/README.md, "Punted control traffic").
func (sh *shard) frame(ev event) {
	payload := ev.data[ev.hdr.Len:]
	switch ev.hdr.EtherType {
	case frame.TypePPPoED:
		sh.discovery(ev, payload)
	case frame.TypePPPoES:
		sh.pppFrame(ev, payload)
	case frame.TypeIPv4:
		sh.ipv4(ev, payload)
	case frame.TypeIPv6:
		sh.ipv6(ev, payload, nil)
	case frame.TypeARP:
		sh.arp(ev, payload)
	default:
		sh.srv.ctr.inc(cAccessEtherType)
	}
}

func (sh *shard) ipv4(ev event, b []byte) {
	if !sh.srv.ipoeOn() {
		sh.srv.ctr.inc(cDHCPIgnored)
		return
	}
	u, err := frame.ParseUDP4(b)
	if err != nil {
		if len(b) >= 20 && b[9] == 17 {
			sh.srv.ctr.inc(cDHCPMalformed)
		} else {
			sh.srv.ctr.inc(cAccessEtherType)
		}
		return
	}
	if u.DstPort != 67 {
		sh.srv.ctr.inc(cDHCPIgnored)
		return
	}
	sh.dhcp4(ev, u)
}

// ipv6 handles DHCPv6 and neighbour discovery, over IPoE (ps nil) or
// inside a PPP session (ps set).
func (sh *shard) ipv6(ev event, b []byte, ps *session) {
	if len(b) < 40 || b[0]>>4 != 6 {
		sh.srv.ctr.inc(cNDMalformed)
		return
	}
	switch b[6] {
	case 17:
		u, err := frame.ParseUDP6(b)
		if err != nil {
			sh.srv.ctr.inc(cDHCP6Malformed)
			return
		}
		if u.DstPort != 547 {
			sh.srv.ctr.inc(cDHCP6Ignored)
			return
		}
		sh.dhcp6(ev, u, ps)
	case 58:
		ic, err := frame.ParseICMPv6(b)
		if err != nil {
			sh.srv.ctr.inc(cNDMalformed)
			return
		}
		// RFC 4861 6.1.1 and 7.1.1: hop limit 255, code 0, or it is not
		// from the link.
		if ic.HopLimit != 255 || ic.Code != 0 {
			sh.srv.ctr.inc(cNDMalformed)
			return
		}
		switch ic.Type {
		case nd.TypeRS:
			sh.rs(ev, ic, ps)
		case nd.TypeNS:
			sh.ns(ev, ic, ps)
		default:
			sh.srv.ctr.inc(cNDIgnored)
		}
	default:
		sh.srv.ctr.inc(cNDIgnored)
	}
}
