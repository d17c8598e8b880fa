package bngcp

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"net/netip"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/ppp"
	"edgeplane/control/internal/bngcp/pppoe"
)

// One PPP session over PPPoE, the server's side, in RFC 1661's phases:
//
//	Establish  LCP negotiates MRU, magic numbers and the authentication
//	           protocol (ours: CHAP-MD5 or PAP, in the configured order)
//	Authenticate  PAP: wait for Authenticate-Request; CHAP: challenge,
//	           response; either way the answer waits for AAA
//	Network    IPCP (address, DNS) and IPv6CP (interface identifiers);
//	           the user plane is programmed in parallel
//	Open       LCP echo keepalive: an Echo-Request every interval, the
//	           session ends after N unanswered
//	Terminate  LCP Terminate-Request and a PADT

type pppPhase uint8

const (
	phEstablish pppPhase = iota
	phAuth
	phNetwork
	phTerminate
)

type pppSession struct {
	sh  *shard
	s   *session
	sid uint16

	hostUniq     []byte
	padtReceived bool
	phase        pppPhase

	lcp   *ppp.LCP
	lcpF  *ppp.FSM
	ipcp  *ppp.IPCP
	ipcpF *ppp.FSM
	ip6   *ppp.IPv6CP
	ip6F  *ppp.FSM

	authPending bool
	authDone    bool
	authOK      bool
	chapID      uint8
	challenge   []byte
	authTries   int
	echoID      uint8
	echoMissed  int
	ncp4, ncp6  bool
	ip6Enabled  bool
	lcpPassive  bool // LCP waits for the client's request (start)
}

func newPPPSession(sh *shard, s *session, sid uint16, hostUniq []byte) *pppSession {
	cfg := &sh.srv.cfg.PPPoE
	p := &pppSession{sh: sh, s: s, sid: sid, hostUniq: append([]byte(nil), hostUniq...),
		ip6Enabled: on(cfg.IPv6, true)}
	var auths []ppp.Auth
	for _, a := range cfg.Auth {
		if a == "pap" {
			auths = append(auths, ppp.AuthPAP)
		} else {
			auths = append(auths, ppp.AuthCHAP)
		}
	}
	fc := ppp.Config{}
	p.lcp = ppp.NewLCP(cfg.MRU, auths, mrand.Uint32, p)
	p.lcpF = ppp.NewFSM(ppp.ProtoLCP, p.lcp, p, fc)
	p.ipcp = &ppp.IPCP{Events: p}
	p.ipcpF = ppp.NewFSM(ppp.ProtoIPCP, p.ipcp, p, fc)
	p.ip6 = &ppp.IPv6CP{Local: ifidOf(s.port.mac), Rand: mrand.Uint64, Events: p}
	p.ip6F = ppp.NewFSM(ppp.ProtoIPv6CP, p.ip6, p, fc)
	return p
}

// ifidOf is the modified EUI-64 interface identifier of a MAC.
func ifidOf(m frame.MAC) uint64 {
	return binary.BigEndian.Uint64([]byte{m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]})
}

// start begins LCP once the PADS is out.  Passively (RFC 1661 4.2: the
// Stopped state, "waiting for a Configure-Request"): a Configure-Request
// of ours sent with the PADS can overtake it on the way -- two frames
// sent back to back leave one CPU's backlog and the next, seen in the lab
// for a third of the sessions on a loaded host -- and a client discards
// session frames before its PADS (RFC 2516 5.4), so ours would wait a
// restart interval to go again.  The client's own request opens LCP
// (ours, then our Ack); a client that stays silent gets ours after one
// restart interval.
func (p *pppSession) start() {
	p.sh.arm(p.s, tSetup, p.sh.srv.cfg.PPPoE.SetupTimeout)
	p.lcpF.Up()
	p.lcpF.Restore(ppp.Stopped)
	p.lcpPassive = true
	p.sh.arm(p.s, tLCP, p.sh.srv.cfg.PPPoE.Restart)
}

func (p *pppSession) padrRetransmit(hu []byte) bool {
	return p.phase == phEstablish && p.lcpF.State != ppp.Opened && bytes.Equal(hu, p.hostUniq)
}

// --- ppp.Port ---------------------------------------------------------------

func (p *pppSession) frameFor(proto uint16, n int) []byte {
	b := frame.Append(make([]byte, 0, frame.HeaderLen(p.s.circuit.Line)+8+n), p.s.circuit.MAC,
		p.s.port.mac, p.s.circuit.Line, frame.TypePPPoES)
	return pppoe.AppendSession(b, p.sid, proto)
}

// sendRaw sends one PPP frame: info is everything after the protocol.
func (p *pppSession) sendRaw(proto uint16, info []byte) {
	b := p.frameFor(proto, len(info))
	off := frame.HeaderLen(p.s.circuit.Line)
	b = append(b, info...)
	pppoe.FixSessionLength(b, off)
	p.sh.sendFor(p.s, b)
}

// Send implements ppp.Port.
func (p *pppSession) Send(proto uint16, pk ppp.Packet) {
	b := p.frameFor(proto, 4+len(pk.Data))
	off := frame.HeaderLen(p.s.circuit.Line)
	b = pk.Append(b)
	pppoe.FixSessionLength(b, off)
	p.sh.sendFor(p.s, b)
	switch proto {
	case ppp.ProtoLCP:
		p.sh.srv.ctr.inc(cLCPTx)
	case ppp.ProtoIPCP:
		p.sh.srv.ctr.inc(cIPCPTx)
	case ppp.ProtoIPv6CP:
		p.sh.srv.ctr.inc(cIPv6CPTx)
	}
}

func timerOf(proto uint16) timerKind {
	switch proto {
	case ppp.ProtoIPCP:
		return tIPCP
	case ppp.ProtoIPv6CP:
		return tIPv6CP
	}
	return tLCP
}

// Arm implements ppp.Port.
func (p *pppSession) Arm(proto uint16) {
	p.sh.arm(p.s, timerOf(proto), p.sh.srv.cfg.PPPoE.Restart)
}

// Stop implements ppp.Port.
func (p *pppSession) Stop(proto uint16) { p.sh.stop(p.s, timerOf(proto)) }

// --- layer events -------------------------------------------------------------

// LayerUp implements ppp.LayerEvents.
func (p *pppSession) LayerUp(proto uint16) {
	srv := p.sh.srv
	switch proto {
	case ppp.ProtoLCP:
		srv.ctr.inc(cLCPOpened)
		p.echoMissed = 0
		p.sh.arm(p.s, tKeepalive, srv.cfg.PPPoE.Keepalive)
		if p.authDone {
			// LCP renegotiated after authentication: back to the network phase.
			p.openNCPs()
			return
		}
		p.phase = phAuth
		switch p.lcp.Auth {
		case ppp.AuthCHAP:
			p.challengeOut()
		case ppp.AuthPAP:
			p.sh.arm(p.s, tAuth, srv.cfg.PPPoE.AuthTimeout)
		default:
			// The peer refused every protocol we offer.
			p.sh.terminate(p.s, causeAuthFailed)
		}
	case ppp.ProtoIPCP:
		srv.ctr.inc(cIPCPOpened)
		p.ncp4 = true
		p.sh.maybeUp(p.s)
	case ppp.ProtoIPv6CP:
		srv.ctr.inc(cIPv6CPOpened)
		p.ncp6 = true
		p.sh.maybeUp(p.s)
		p.sh.sendRA(p.s, p.s.circuit.MAC, p.peerLL())
	}
}

// LayerDown implements ppp.LayerEvents.
func (p *pppSession) LayerDown(proto uint16) {
	switch proto {
	case ppp.ProtoLCP:
		p.sh.stop(p.s, tKeepalive)
		if p.phase != phTerminate {
			// The peer renegotiates LCP (a Configure-Request in Opened):
			// the NCPs go down with it and come back after.
			p.ipcpF.Down()
			p.ip6F.Down()
		}
	case ppp.ProtoIPCP:
		p.ncp4 = false
	case ppp.ProtoIPv6CP:
		p.ncp6 = false
	}
}

// LayerStarted implements ppp.LayerEvents: the lower layer of LCP is the
// PPPoE session, always there; the NCPs' lower layer is LCP.
func (p *pppSession) LayerStarted(uint16) {}

// LayerFinished implements ppp.LayerEvents.
func (p *pppSession) LayerFinished(proto uint16) {
	switch proto {
	case ppp.ProtoLCP:
		if p.phase != phTerminate {
			p.sh.terminate(p.s, causeLCPClosed)
		}
	case ppp.ProtoIPCP, ppp.ProtoIPv6CP:
		// A peer that refuses one family keeps the other; one that has
		// neither has no use for the link.
		v4gone := p.ipcpF.State <= ppp.Stopped
		v6gone := !p.ip6Enabled || p.ip6F.State <= ppp.Stopped
		if p.phase == phNetwork && v4gone && v6gone {
			p.sh.terminate(p.s, causeNoNCP)
		}
	}
}

// --- frames from the peer -----------------------------------------------------

func (p *pppSession) input(ev event, proto uint16, info []byte) {
	srv := p.sh.srv
	if p.phase == phTerminate {
		return
	}
	switch proto {
	case ppp.ProtoLCP:
		srv.ctr.inc(cLCPRx)
		pk, err := ppp.ParsePacket(info)
		if err != nil {
			srv.ctr.inc(cLCPMalformed)
			return
		}
		p.lcpInput(pk, info)
	case ppp.ProtoPAP:
		p.papInput(info)
	case ppp.ProtoCHAP:
		p.chapInput(info)
	case ppp.ProtoIPCP, ppp.ProtoIPv6CP:
		f, rx, bad := p.ipcpF, cIPCPRx, cIPCPBad
		if proto == ppp.ProtoIPv6CP {
			f, rx, bad = p.ip6F, cIPv6CPRx, cIPv6CPBad
			if !p.ip6Enabled {
				p.protocolReject(proto, info)
				return
			}
		}
		srv.ctr.inc(rx)
		if p.phase != phNetwork {
			return // RFC 1661 3.4: NCP packets before the network phase are discarded
		}
		pk, err := ppp.ParsePacket(info)
		if err != nil {
			srv.ctr.inc(bad)
			return
		}
		f.Input(pk, info)
	case ppp.ProtoIPv6:
		if p.ncp6 {
			p.sh.ipv6(ev, info, p.s)
		}
	case ppp.ProtoIPv4:
		// Data reaches us only if the user plane punted it: nothing to do.
	default:
		p.protocolReject(proto, info)
	}
}

func (p *pppSession) protocolReject(proto uint16, info []byte) {
	if p.lcpF.State != ppp.Opened {
		return
	}
	p.sh.srv.ctr.inc(cLCPProtoRejTx)
	p.echoID++
	p.Send(ppp.ProtoLCP, ppp.Packet{Code: ppp.ProtoRej, ID: p.echoID,
		Data: ppp.ProtocolReject(proto, info, int(p.lcp.PeerMRU))})
}

func (p *pppSession) lcpInput(pk ppp.Packet, raw []byte) {
	srv := p.sh.srv
	switch pk.Code {
	case ppp.EchoReq:
		srv.ctr.inc(cLCPEchoReqRx)
		if p.lcpF.State == ppp.Opened {
			data := append(ppp.EchoData(p.lcp.Magic), pk.Data[min(4, len(pk.Data)):]...)
			p.Send(ppp.ProtoLCP, ppp.Packet{Code: ppp.EchoReply, ID: pk.ID, Data: data})
		}
	case ppp.EchoReply:
		srv.ctr.inc(cLCPEchoReplyRx)
		if m, ok := ppp.EchoMagic(pk.Data); ok && (p.lcp.PeerMagic == 0 || m == p.lcp.PeerMagic) {
			p.echoMissed = 0
		}
	case ppp.DiscReq:
	case ppp.ProtoRej:
		srv.ctr.inc(cLCPProtoRejRx)
		if proto, ok := ppp.ProtocolRejected(pk.Data); ok && p.lcpF.State == ppp.Opened {
			switch proto {
			case ppp.ProtoIPCP:
				p.ipcpF.RejectFatal()
			case ppp.ProtoIPv6CP:
				p.ip6F.RejectFatal()
			}
		}
	default:
		p.lcpF.Input(pk, raw)
	}
}

// --- authentication -----------------------------------------------------------

func (p *pppSession) papInput(info []byte) {
	srv := p.sh.srv
	srv.ctr.inc(cPAPRequestRx)
	pk, err := ppp.ParsePacket(info)
	if err != nil || pk.Code != ppp.PAPRequest {
		srv.ctr.inc(cPAPMalformed)
		return
	}
	if p.phase == phEstablish || p.lcp.Auth != ppp.AuthPAP {
		return
	}
	if p.authDone {
		// Our Ack was lost: the same answer again (RFC 1334 2.2.2).
		p.papReply(pk.ID, p.authOK)
		return
	}
	if p.authPending {
		return
	}
	peer, pass, err := ppp.ParsePAPRequest(pk.Data)
	if err != nil {
		srv.ctr.inc(cPAPMalformed)
		return
	}
	p.chapID = pk.ID
	p.authPending = true
	p.sh.stop(p.s, tAuth)
	p.sh.authenticate(p.s, &aaa.Request{Service: aaa.PPPoE, Method: aaa.MethodPAP, User: string(peer),
		Password: append([]byte(nil), pass...)})
}

func (p *pppSession) papReply(id uint8, ok bool) {
	code, msg, c := ppp.PAPAck, "welcome", cPAPAckTx
	if !ok {
		code, msg, c = ppp.PAPNak, "authentication failed", cPAPNakTx
	}
	p.sh.srv.ctr.inc(c)
	p.sendRaw(ppp.ProtoPAP, ppp.Packet{Code: code, ID: id, Data: ppp.PAPReplyData(msg)}.Append(nil))
}

func (p *pppSession) challengeOut() {
	srv := p.sh.srv
	if p.authTries >= 10 {
		srv.ctr.inc(cAuthTimeout)
		p.sh.terminate(p.s, causeAuthFailed)
		return
	}
	p.authTries++
	p.chapID++
	p.challenge = make([]byte, 16)
	rand.Read(p.challenge)
	srv.ctr.inc(cCHAPChallengeTx)
	p.sendRaw(ppp.ProtoCHAP, ppp.Packet{Code: ppp.CHAPChallenge, ID: p.chapID,
		Data: ppp.CHAPValueData(p.challenge, srv.cfg.PPPoE.ACName)}.Append(nil))
	p.sh.arm(p.s, tAuth, srv.cfg.PPPoE.Restart)
}

func (p *pppSession) chapInput(info []byte) {
	srv := p.sh.srv
	pk, err := ppp.ParsePacket(info)
	if err != nil || pk.Code != ppp.CHAPResponse {
		srv.ctr.inc(cCHAPMalformed)
		return
	}
	srv.ctr.inc(cCHAPResponseRx)
	if p.phase == phEstablish || p.lcp.Auth != ppp.AuthCHAP || pk.ID != p.chapID {
		return
	}
	if p.authDone {
		p.chapReply(p.authOK)
		return
	}
	if p.authPending {
		return
	}
	v, err := ppp.ParseCHAPValue(pk.Data)
	if err != nil {
		srv.ctr.inc(cCHAPMalformed)
		return
	}
	p.authPending = true
	p.sh.stop(p.s, tAuth)
	p.sh.authenticate(p.s, &aaa.Request{Service: aaa.PPPoE, Method: aaa.MethodCHAP, User: string(v.Name),
		CHAPID: pk.ID, CHAPChallenge: p.challenge, CHAPResponse: append([]byte(nil), v.Value...)})
}

func (p *pppSession) chapReply(ok bool) {
	code, msg, c := ppp.CHAPSuccess, "welcome", cCHAPSuccessTx
	if !ok {
		code, msg, c = ppp.CHAPFailure, "authentication failed", cCHAPFailureTx
	}
	p.sh.srv.ctr.inc(c)
	p.sendRaw(ppp.ProtoCHAP, ppp.Packet{Code: code, ID: p.chapID, Data: []byte(msg)}.Append(nil))
}

// authResult: AAA answered (and, on success, the addresses are taken).
func (p *pppSession) authResult(ok bool) {
	p.authPending = false
	p.authDone = true
	p.authOK = ok
	if p.lcp.Auth == ppp.AuthPAP {
		p.papReply(p.chapID, ok)
	} else {
		p.chapReply(ok)
	}
	if !ok {
		p.sh.terminate(p.s, causeAuthFailed)
		return
	}
	p.phase = phNetwork
	p.openNCPs()
}

func (p *pppSession) openNCPs() {
	s := p.s
	if s.v4.IsValid() {
		p.ipcp.Peer = s.v4
		p.ipcp.Local = s.pool4.Gateway.Addr()
		p.ipcp.DNS = [2]netip.Addr{}
		for i, d := range s.pool4.DNS {
			if i < 2 {
				p.ipcp.DNS[i] = d
			}
		}
		p.ipcpF.Up()
		p.ipcpF.Open()
	}
	if p.ip6Enabled && s.v6block.IsValid() {
		p.ip6F.Up()
		p.ip6F.Open()
	}
}

// --- timers -------------------------------------------------------------------

func (p *pppSession) timeout(k timerKind) {
	srv := p.sh.srv
	switch k {
	case tLCP:
		if p.lcpPassive && p.lcpF.State == ppp.Stopped {
			// No request from the client: open actively.
			p.lcpPassive = false
			p.lcpF.Restore(ppp.Closed)
			p.lcpF.Open()
			return
		}
		p.lcpPassive = false
		p.lcpF.Timeout()
	case tIPCP:
		p.ipcpF.Timeout()
	case tIPv6CP:
		p.ip6F.Timeout()
	case tAuth:
		if p.authPending || p.authDone {
			return
		}
		if p.lcp.Auth == ppp.AuthCHAP {
			p.challengeOut()
			return
		}
		srv.ctr.inc(cAuthTimeout)
		p.sh.terminate(p.s, causeAuthFailed)
	case tKeepalive:
		if p.lcpF.State != ppp.Opened {
			return
		}
		if p.echoMissed >= srv.cfg.PPPoE.KeepaliveMax {
			srv.ctr.inc(cLCPKeepalive)
			p.sh.terminate(p.s, causeKeepalive)
			return
		}
		p.echoMissed++
		p.echoID++
		srv.ctr.inc(cLCPEchoReqTx)
		p.Send(ppp.ProtoLCP, ppp.Packet{Code: ppp.EchoReq, ID: p.echoID, Data: ppp.EchoData(p.lcp.Magic)})
		p.sh.arm(p.s, tKeepalive, srv.cfg.PPPoE.Keepalive)
	}
}

// close ends the PPP side: a Terminate-Request (no wait for the Ack: the
// PADT that follows ends the session whatever the peer answers) and the
// PADT, unless the peer sent one.
func (p *pppSession) close(cause int) {
	if p.phase == phTerminate {
		return
	}
	p.phase = phTerminate
	if p.padtReceived {
		return
	}
	if p.lcpF.State == ppp.Opened {
		p.echoID++
		p.Send(ppp.ProtoLCP, ppp.Packet{Code: ppp.TermReq, ID: p.echoID, Data: []byte(causeText(cause))})
	}
	p.sh.sendPADT(p.s, causeText(cause))
}

func (p *pppSession) peerLL() netip.Addr  { return ppp.LinkLocal(p.ip6.Peer) }
func (p *pppSession) localLL() netip.Addr { return ppp.LinkLocal(p.ip6.Local) }

func (p *pppSession) info() *PPPInfo {
	i := &PPPInfo{LCP: p.lcpF.State.String(), IPCP: p.ipcpF.State.String(), Auth: p.lcp.Auth.String(),
		MRU: p.lcp.PeerMRU, Magic: fmt.Sprintf("%08x", p.lcp.Magic), PeerMagic: fmt.Sprintf("%08x", p.lcp.PeerMagic),
		EchoMissed: p.echoMissed}
	if p.ip6Enabled {
		i.IPv6CP = p.ip6F.State.String()
	}
	return i
}
