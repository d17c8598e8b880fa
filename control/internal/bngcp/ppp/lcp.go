package ppp

import (
	"encoding/binary"
)

// LCP configuration options (RFC 1661 section 6; RFC 1994 for CHAP's
// algorithm octet).
const (
	OptMRU      uint8 = 1
	OptACCM     uint8 = 2
	OptAuth     uint8 = 3
	OptQuality  uint8 = 4
	OptMagic    uint8 = 5
	OptPFC      uint8 = 7
	OptACFC     uint8 = 8
	CHAPMD5Algo uint8 = 5
)

// Auth is an authentication protocol the server asks for.
type Auth uint8

// The protocols offered.
const (
	AuthNone Auth = iota
	AuthPAP
	AuthCHAP
)

func (a Auth) String() string {
	switch a {
	case AuthPAP:
		return "pap"
	case AuthCHAP:
		return "chap"
	}
	return "none"
}

func (a Auth) option() []byte {
	switch a {
	case AuthPAP:
		return u16(ProtoPAP)
	case AuthCHAP:
		return append(u16(ProtoCHAP), CHAPMD5Algo)
	}
	return nil
}

func authOf(v []byte) Auth {
	switch {
	case len(v) == 2 && binary.BigEndian.Uint16(v) == ProtoPAP:
		return AuthPAP
	case len(v) == 3 && binary.BigEndian.Uint16(v) == ProtoCHAP && v[2] == CHAPMD5Algo:
		return AuthCHAP
	}
	return AuthNone
}

// MinMRU is the smallest MRU we accept from a peer (RFC 1661 leaves the
// floor to the implementation; below this a PPPoE link carries no useful
// IPv6 packet: 1280 needs it, IPv4 576).
const MinMRU = 576

// LCP is the server's Link Control Protocol layer: it asks for its MRU,
// an authentication protocol and a magic number, and judges the peer's
// options as RFC 2516 section 7 requires on PPPoE (no ACCM, no ACFC, no
// FCS alternatives, MRU at most the PPPoE payload less 2).
type LCP struct {
	MRU    uint16 // ours, requested (PPPoE: at most 1492)
	MaxMRU uint16 // the largest peer MRU we accept (1492; RFC 4638 raises it)
	Auths  []Auth // acceptable, in order of preference
	Magic  uint32 // ours, nonzero
	Rand   func() uint32

	PeerMRU   uint16
	PeerMagic uint32
	Auth      Auth // the protocol we ask for now; AuthNone once all were refused
	authIdx   int
	sendMRU   bool
	sendMagic bool
	Events    LayerEvents
}

// LayerEvents receives a layer's tlu/tld/tls/tlf.
type LayerEvents interface {
	LayerUp(proto uint16)
	LayerDown(proto uint16)
	LayerStarted(proto uint16)
	LayerFinished(proto uint16)
}

// NewLCP makes the server's LCP layer.
func NewLCP(mru uint16, auths []Auth, rnd func() uint32, ev LayerEvents) *LCP {
	l := &LCP{MRU: mru, MaxMRU: mru, Auths: auths, Rand: rnd, Events: ev}
	l.Reset()
	return l
}

// Reset prepares a new negotiation.
func (l *LCP) Reset() {
	l.Magic = l.nonzero()
	l.PeerMRU = 1500
	l.PeerMagic = 0
	l.authIdx = 0
	l.Auth = AuthNone
	if len(l.Auths) > 0 {
		l.Auth = l.Auths[0]
	}
	l.sendMRU = l.MRU != 0
	l.sendMagic = true
}

func (l *LCP) nonzero() uint32 {
	for {
		if v := l.Rand(); v != 0 {
			return v
		}
	}
}

// AuthRefused reports that the peer refused every protocol we offer.
func (l *LCP) AuthRefused() bool { return len(l.Auths) > 0 && l.Auth == AuthNone }

// RequestOptions implements Layer.
func (l *LCP) RequestOptions() []Option {
	var o []Option
	if l.sendMRU {
		o = append(o, Option{OptMRU, u16(l.MRU)})
	}
	if l.Auth != AuthNone {
		o = append(o, Option{OptAuth, l.Auth.option()})
	}
	if l.sendMagic {
		o = append(o, Option{OptMagic, u32(l.Magic)})
	}
	return o
}

// CheckRequest implements Layer: the peer's options.
func (l *LCP) CheckRequest(opts []Option, notConverging bool) (uint8, []Option) {
	var nak, rej []Option
	mru, magic := uint16(1500), uint32(0)
	for _, o := range opts {
		switch o.Type {
		case OptMRU:
			if len(o.Value) != 2 {
				rej = append(rej, o)
				continue
			}
			v := binary.BigEndian.Uint16(o.Value)
			switch {
			case v > l.MaxMRU:
				nak = append(nak, Option{OptMRU, u16(l.MaxMRU)})
			case v < MinMRU:
				nak = append(nak, Option{OptMRU, u16(MinMRU)})
			default:
				mru = v
			}
		case OptMagic:
			if len(o.Value) != 4 {
				rej = append(rej, o)
				continue
			}
			v := binary.BigEndian.Uint32(o.Value)
			if v == 0 || v == l.Magic {
				// Zero, or our own number: a looped-back link or a
				// collision (RFC 1661 6.4): suggest another.
				nak = append(nak, Option{OptMagic, u32(l.nonzero())})
				continue
			}
			magic = v
		default:
			// Auth (we do not authenticate ourselves to the peer), ACCM,
			// ACFC, PFC, FCS alternatives (RFC 2516 section 7), quality
			// protocols, callback, multilink: not on this link.
			rej = append(rej, o)
		}
	}
	if len(rej) > 0 {
		return ConfRej, rej
	}
	if len(nak) > 0 {
		return nakOrReject(nak, opts, notConverging)
	}
	l.PeerMRU, l.PeerMagic = mru, magic
	return ConfAck, nil
}

// Acked implements Layer.
func (l *LCP) Acked([]Option) {}

// Naked implements Layer: the peer suggests other values.
func (l *LCP) Naked(opts []Option) {
	for _, o := range opts {
		switch o.Type {
		case OptMRU:
			if len(o.Value) == 2 {
				if v := binary.BigEndian.Uint16(o.Value); v >= MinMRU && v < l.MRU {
					l.MRU = v
				}
			}
		case OptMagic:
			l.Magic = l.nonzero()
		case OptAuth:
			// The peer prefers another protocol: take it if we offer it,
			// else the next of ours.
			if a := authOf(o.Value); a != AuthNone && l.offers(a) && a != l.Auth {
				l.Auth = a
				continue
			}
			l.nextAuth()
		}
	}
}

func (l *LCP) offers(a Auth) bool {
	for _, x := range l.Auths {
		if x == a {
			return true
		}
	}
	return false
}

func (l *LCP) nextAuth() {
	l.authIdx++
	if l.authIdx < len(l.Auths) {
		l.Auth = l.Auths[l.authIdx]
	} else {
		l.Auth = AuthNone
	}
}

// Rejected implements Layer.
func (l *LCP) Rejected(opts []Option) {
	for _, o := range opts {
		switch o.Type {
		case OptMRU:
			l.sendMRU = false
		case OptMagic:
			l.sendMagic = false
			l.Magic = 0
		case OptAuth:
			// A peer that will not authenticate: nothing else to offer.
			l.Auth = AuthNone
			l.authIdx = len(l.Auths)
		}
	}
}

// Up implements Layer.
func (l *LCP) Up() { l.Events.LayerUp(ProtoLCP) }

// Down implements Layer.
func (l *LCP) Down() { l.Events.LayerDown(ProtoLCP) }

// Started implements Layer.
func (l *LCP) Started() { l.Events.LayerStarted(ProtoLCP) }

// Finished implements Layer.
func (l *LCP) Finished() { l.Events.LayerFinished(ProtoLCP) }

// EchoData is the data of an Echo-Request/Reply: our magic number, then
// nothing (RFC 1661 5.8).
func EchoData(magic uint32) []byte { return u32(magic) }

// EchoMagic reads the magic number of an Echo packet's data; ok false when
// the data is shorter than four octets.
func EchoMagic(data []byte) (uint32, bool) {
	if len(data) < 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(data), true
}

// ProtocolRejected reads a Protocol-Reject's rejected protocol.
func ProtocolRejected(data []byte) (uint16, bool) {
	if len(data) < 2 {
		return 0, false
	}
	return binary.BigEndian.Uint16(data), true
}

// ProtocolReject is the data of an LCP Protocol-Reject: the protocol and
// the rejected information field, cut to fit.
func ProtocolReject(proto uint16, info []byte, mru int) []byte {
	max := mru - 4 - 2
	if max < 0 {
		max = 0
	}
	if len(info) > max {
		info = info[:max]
	}
	return append(u16(proto), info...)
}
