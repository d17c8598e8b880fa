package main

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// The PPPoE client (RFC 2516 discovery, then PPP: RFC 1661 LCP with our
// MRU and magic number, the authentication the server asks for if we
// allow it (PAP RFC 1334, CHAP-MD5 RFC 1994), IPCP asking for an address
// and DNS (RFC 1332, 1877), IPv6CP (RFC 5072), then a router solicitation
// and DHCPv6 prefix delegation over the session (RFC 8415)).

func (lp *loop) frameTo(s *sess, dst mac, et uint16) []byte {
	return ethHeader(make([]byte, 0, 128), dst, s.mac, s.l, et)
}

func (lp *loop) padi(s *sess) {
	s.enter(stDiscovery)
	hu := binary.BigEndian.AppendUint32(nil, uint32(s.i))
	b := pppoeDisc(lp.frameTo(s, bcast, etDisc), codePADI, 0,
		[]tlv{{tagServiceName, []byte(lp.e.cfg.service)}, {tagHostUniq, hu}})
	lp.sendRetry(s, b)
}

func (lp *loop) padt(s *sess) {
	if s.sid == 0 {
		return
	}
	if s.lcpAcked && s.lcpPeerAck {
		s.id++
		lp.send(pppFrame(lp.frameTo(s, s.ac, etSess), s.sid, pLCP, ctl{cTermReq, s.id, nil}.bytes()))
	}
	lp.send(pppoeDisc(lp.frameTo(s, s.ac, etDisc), codePADT, s.sid, nil))
}

func (lp *loop) discovery(s *sess, f rxFrame) {
	code, sid, tags, err := parseDisc(f.payload)
	if err != nil {
		return
	}
	get := func(t uint16) ([]byte, bool) {
		for _, x := range tags {
			if x.t == t {
				return x.v, true
			}
		}
		return nil, false
	}
	for _, x := range tags {
		if x.t > tagErrors && x.t <= tagErrors+3 {
			lp.failed(s, fmt.Sprintf("discovery error tag %#x %q", x.t, x.v))
			return
		}
	}
	switch code {
	case codePADO:
		if s.st != stDiscovery {
			return
		}
		hu, _ := get(tagHostUniq)
		if len(hu) != 4 || binary.BigEndian.Uint32(hu) != uint32(s.i) {
			return
		}
		s.ac = f.src
		s.cookie, _ = get(tagACCookie)
		s.relay, _ = get(tagRelaySessID)
		req := []tlv{{tagServiceName, []byte(lp.e.cfg.service)}, {tagHostUniq, hu}}
		if s.cookie != nil {
			req = append(req, tlv{tagACCookie, s.cookie})
		}
		if s.relay != nil {
			req = append(req, tlv{tagRelaySessID, s.relay})
		}
		s.enter(stRequest)
		lp.sendRetry(s, pppoeDisc(lp.frameTo(s, s.ac, etDisc), codePADR, 0, req))
	case codePADS:
		if s.st != stRequest || sid == 0 {
			return
		}
		s.sid = sid
		s.enter(stLink)
		s.magic = rand.Uint32() | 1
		lp.lcpRequest(s)
	case codePADT:
		if sid == s.sid && s.sid != 0 {
			lp.serverDown(s, "PADT")
		}
	}
}

func (lp *loop) serverDown(s *sess, why string) {
	if s.st == stUp {
		lp.e.upN.Add(-1)
	}
	if s.st != stFailed {
		s.st = stDown
		s.fail = why
	}
	s.last = nil
	s.deadline = time.Time{}
}

func (lp *loop) sendPPP(s *sess, proto uint16, c ctl) {
	lp.send(pppFrame(lp.frameTo(s, s.ac, etSess), s.sid, proto, c.bytes()))
}

func (lp *loop) sendPPPRetry(s *sess, proto uint16, c ctl) {
	lp.sendRetry(s, pppFrame(lp.frameTo(s, s.ac, etSess), s.sid, proto, c.bytes()))
}

func (lp *loop) lcpRequest(s *sess) {
	s.id++
	o := []opt{{1, binary.BigEndian.AppendUint16(nil, 1492)}, {5, binary.BigEndian.AppendUint32(nil, s.magic)}}
	lp.sendPPPRetry(s, pLCP, ctl{cConfReq, s.id, optBytes(o)})
}

func (lp *loop) session(s *sess, f rxFrame) {
	p := f.payload
	if len(p) < 8 || p[0] != 0x11 || p[1] != 0 || binary.BigEndian.Uint16(p[2:]) != s.sid {
		return
	}
	n := int(binary.BigEndian.Uint16(p[4:]))
	if n < 2 || n > len(p)-6 {
		return
	}
	proto := binary.BigEndian.Uint16(p[6:])
	info := p[8 : 6+n]
	switch proto {
	case pLCP:
		lp.lcp(s, info)
	case pPAP:
		lp.pap(s, info)
	case pCHAP:
		lp.chap(s, info)
	case pIPCP:
		lp.ipcp(s, info)
	case pIPv6CP:
		lp.ipv6cp(s, info)
	case pIPv4, pIPv6:
		lp.ipIn(s, info)
	}
}

func (lp *loop) lcp(s *sess, info []byte) {
	c, ok := parseCtl(info)
	if !ok {
		return
	}
	switch c.code {
	case cConfReq:
		os, ok := opts(c.data)
		if !ok {
			return
		}
		var nak, rej []opt
		for _, o := range os {
			switch o.t {
			case 1: // MRU
			case 5: // magic
				if len(o.v) == 4 {
					s.peerMagic = binary.BigEndian.Uint32(o.v)
				}
			case 3: // authentication protocol
				a := binary.BigEndian.Uint16(o.v)
				want := lp.e.cfg.authProto()
				if a != want || (a == pCHAP && (len(o.v) != 3 || o.v[2] != 5)) {
					v := binary.BigEndian.AppendUint16(nil, want)
					if want == pCHAP {
						v = append(v, 5)
					}
					nak = append(nak, opt{3, v})
				} else {
					s.auth = a
				}
			default:
				rej = append(rej, o)
			}
		}
		switch {
		case len(rej) > 0:
			lp.sendPPP(s, pLCP, ctl{cConfRej, c.id, optBytes(rej)})
		case len(nak) > 0:
			lp.sendPPP(s, pLCP, ctl{cConfNak, c.id, optBytes(nak)})
		default:
			lp.sendPPP(s, pLCP, ctl{cConfAck, c.id, c.data})
			s.lcpPeerAck = true
			lp.lcpMaybeOpen(s)
		}
	case cConfAck:
		if c.id == s.id && s.st == stLink {
			s.lcpAcked = true
			lp.lcpMaybeOpen(s)
		}
	case cConfNak, cConfRej:
		if c.id == s.id && s.st == stLink {
			lp.lcpRequest(s)
		}
	case cEchoReq:
		if !s.echoOff {
			s.echoRx++
			lp.sendPPP(s, pLCP, ctl{cEchoRep, c.id, binary.BigEndian.AppendUint32(nil, s.magic)})
		}
	case cTermReq:
		lp.sendPPP(s, pLCP, ctl{cTermAck, c.id, nil})
		lp.serverDown(s, "LCP Terminate-Request")
	}
}

func (lp *loop) lcpMaybeOpen(s *sess) {
	if !s.lcpAcked || !s.lcpPeerAck || s.st != stLink {
		return
	}
	s.last = nil
	s.enter(stAuth)
	switch s.auth {
	case pPAP:
		u, pw := lp.e.cfg.userOf(s.i), lp.e.cfg.password
		d := append([]byte{byte(len(u))}, u...)
		d = append(d, byte(len(pw)))
		d = append(d, pw...)
		s.id++
		lp.sendPPPRetry(s, pPAP, ctl{1, s.id, d})
	case pCHAP:
		lp.arm(s, lp.e.cfg.rto*time.Duration(lp.e.cfg.retries+1)) // wait for the challenge
	default:
		lp.network(s)
	}
}

func (lp *loop) pap(s *sess, info []byte) {
	c, ok := parseCtl(info)
	if !ok || s.st != stAuth {
		return
	}
	switch c.code {
	case 2:
		lp.network(s)
	case 3:
		lp.failed(s, "PAP rejected")
	}
}

func (lp *loop) chap(s *sess, info []byte) {
	c, ok := parseCtl(info)
	if !ok {
		return
	}
	switch c.code {
	case 1: // Challenge
		if s.st != stAuth || len(c.data) < 1 || int(c.data[0])+1 > len(c.data) {
			return
		}
		ch := c.data[1 : 1+int(c.data[0])]
		h := md5.New()
		h.Write([]byte{c.id})
		h.Write([]byte(lp.e.cfg.password))
		h.Write(ch)
		u := lp.e.cfg.userOf(s.i)
		d := append([]byte{16}, h.Sum(nil)...)
		d = append(d, u...)
		lp.sendPPPRetry(s, pCHAP, ctl{2, c.id, d})
	case 3:
		if s.st == stAuth {
			lp.network(s)
		}
	case 4:
		lp.failed(s, "CHAP failure")
	}
}

// network starts the NCPs.
func (lp *loop) network(s *sess) {
	s.enter(stNetwork)
	s.last = nil
	s.reqIPCP = []opt{{3, []byte{0, 0, 0, 0}}, {129, []byte{0, 0, 0, 0}}, {131, []byte{0, 0, 0, 0}}}
	lp.ipcpRequest(s)
	if lp.e.cfg.ipv6 {
		s.ifid = rand.Uint64() | 1
		lp.ip6Request(s)
	}
}

func (lp *loop) ipcpRequest(s *sess) {
	s.id++
	lp.sendPPPRetry(s, pIPCP, ctl{cConfReq, s.id, optBytes(s.reqIPCP)})
}

func (lp *loop) ip6Request(s *sess) {
	s.id++
	// Not through sendPPPRetry: IPCP's retransmission carries the phase;
	// IPv6CP's request goes again when IPCP's does or the server naks it.
	lp.sendPPP(s, pIPv6CP, ctl{cConfReq, s.id, optBytes([]opt{{1, binary.BigEndian.AppendUint64(nil, s.ifid)}})})
}

func (lp *loop) ipcp(s *sess, info []byte) {
	c, ok := parseCtl(info)
	if !ok || s.st < stNetwork {
		return
	}
	switch c.code {
	case cConfReq:
		lp.sendPPP(s, pIPCP, ctl{cConfAck, c.id, c.data})
		s.ipcpPeer = true
	case cConfNak:
		os, _ := opts(c.data)
		for _, o := range os {
			for k := range s.reqIPCP {
				if s.reqIPCP[k].t == o.t {
					s.reqIPCP[k].v = append([]byte(nil), o.v...)
				}
			}
		}
		lp.ipcpRequest(s)
	case cConfRej:
		os, _ := opts(c.data)
		var keep []opt
		for _, r := range s.reqIPCP {
			drop := false
			for _, o := range os {
				if o.t == r.t {
					drop = true
				}
			}
			if !drop {
				keep = append(keep, r)
			}
		}
		s.reqIPCP = keep
		lp.ipcpRequest(s)
	case cConfAck:
		s.ipcpAcked = true
		for _, o := range s.reqIPCP {
			if a, ok := netip.AddrFromSlice(o.v); ok {
				if o.t == 3 {
					s.v4 = a
				} else {
					s.dns = append(s.dns, a)
				}
			}
		}
		if lp.e.cfg.ipv6 && !s.ip6Acked {
			// Keep the phase's retransmission on IPv6CP now.
			s.id++
			lp.sendPPPRetry(s, pIPv6CP, ctl{cConfReq, s.id, optBytes([]opt{{1, binary.BigEndian.AppendUint64(nil, s.ifid)}})})
		}
	case cTermReq:
		lp.sendPPP(s, pIPCP, ctl{cTermAck, c.id, nil})
	}
	lp.ncpCheck(s)
}

func (lp *loop) ipv6cp(s *sess, info []byte) {
	c, ok := parseCtl(info)
	if !ok || s.st < stNetwork {
		return
	}
	if !lp.e.cfg.ipv6 {
		// A client without IPv6 rejects the protocol (RFC 1661 5.7, as
		// pppd's noipv6 does): the server's IPv6CP stops instead of
		// retransmitting its request every restart interval.
		s.rejID++
		data := binary.BigEndian.AppendUint16(nil, pIPv6CP)
		lp.sendPPP(s, pLCP, ctl{cProtoRej, s.rejID, append(data, info...)})
		return
	}
	switch c.code {
	case cConfReq:
		os, _ := opts(c.data)
		for _, o := range os {
			if o.t == 1 && len(o.v) == 8 {
				s.peerIfid = binary.BigEndian.Uint64(o.v)
			}
		}
		lp.sendPPP(s, pIPv6CP, ctl{cConfAck, c.id, c.data})
		s.ip6Peer = true
	case cConfNak:
		os, _ := opts(c.data)
		for _, o := range os {
			if o.t == 1 && len(o.v) == 8 {
				s.ifid = binary.BigEndian.Uint64(o.v)
			}
		}
		lp.ip6Request(s)
	case cConfAck:
		s.ip6Acked = true
	}
	lp.ncpCheck(s)
}

// ncpCheck: once the NCPs are open, IPv6 configuration (RS, then DHCPv6).
func (lp *loop) ncpCheck(s *sess) {
	if s.st != stNetwork || !s.ipcpAcked || !s.ipcpPeer {
		return
	}
	if !lp.e.cfg.ipv6 {
		lp.up(s)
		return
	}
	if !s.ip6Acked || !s.ip6Peer || s.ncpDone {
		return
	}
	s.ncpDone = true
	lp.sendRetry(s, pppFrame(lp.frameTo(s, s.ac, etSess), s.sid, pIPv6, rs6(linkLocal(s.ifid))))
}

// ipIn: IPv6 inside the session (RA, DHCPv6), or traffic.
func (lp *loop) ipIn(s *sess, b []byte) {
	p, ok := parseIP(b)
	if !ok {
		return
	}
	if p.isUDP && p.dp == lp.e.cfg.trafficPort {
		lp.trafficIn(s, p)
		return
	}
	if s.st != stNetwork {
		return
	}
	switch {
	case p.isICMP && p.icmpType == 134 && !s.ra.IsValid():
		pf, auto, ok := raPrefix(p.payload)
		if !ok {
			return
		}
		s.ra = pf
		if auto {
			a := pf.Addr().As16()
			binary.BigEndian.PutUint64(a[8:], s.ifid)
			s.slaac = netip.AddrFrom16(a)
		}
		lp.solicit6(s, linkLocal(s.ifid), func(payload []byte) []byte {
			return pppFrame(lp.frameTo(s, s.ac, etSess), s.sid, pIPv6,
				udp6(linkLocal(s.ifid), allDHCP, 546, 547, 1, payload))
		}, false, true)
	case p.isUDP && p.dp == 546:
		lp.dhcp6In(s, p, func(payload []byte) []byte {
			return pppFrame(lp.frameTo(s, s.ac, etSess), s.sid, pIPv6,
				udp6(linkLocal(s.ifid), allDHCP, 546, 547, 1, payload))
		})
	}
}
