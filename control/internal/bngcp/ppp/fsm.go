package ppp

import (
	"bytes"
)

// State is an automaton state (RFC 1661 section 4.2).
type State uint8

// The ten states.
const (
	Initial State = iota
	Starting
	Closed
	Stopped
	Closing
	Stopping
	ReqSent
	AckRcvd
	AckSent
	Opened
)

var stateNames = [...]string{"initial", "starting", "closed", "stopped", "closing", "stopping",
	"req-sent", "ack-rcvd", "ack-sent", "opened"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "?"
}

// Layer is what a control protocol adds to the automaton: its options and
// what the layer events mean for it (RFC 1661 section 4.4 "actions" tlu,
// tld, tls, tlf).
type Layer interface {
	// RequestOptions are the options of our next Configure-Request.
	RequestOptions() []Option
	// CheckRequest decides on the peer's Configure-Request: ConfAck with
	// the options as they came, or ConfNak/ConfRej with the options to
	// send back.  notConverging is set once Max-Failure Configure-Naks were
	// sent in a row: the layer then rejects what it would have naked.
	CheckRequest(opts []Option, notConverging bool) (code uint8, reply []Option)
	// Acked, Naked, Rejected: the peer's answer to our request (the
	// automaton has checked that it answers the request we sent last).
	Acked(opts []Option)
	Naked(opts []Option)
	Rejected(opts []Option)
	Up()       // tlu: the layer is open
	Down()     // tld: it is leaving the Opened state
	Started()  // tls: it wants the lower layer
	Finished() // tlf: it no longer needs the lower layer
}

// Config bounds the automaton (RFC 1661 section 4.6).
type Config struct {
	MaxConfigure int // Configure-Requests sent without an answer (default 10)
	MaxTerminate int // Terminate-Requests (default 2)
	MaxFailure   int // Configure-Naks in a row before rejecting (default 5)
}

func (c *Config) defaults() {
	if c.MaxConfigure == 0 {
		c.MaxConfigure = 10
	}
	if c.MaxTerminate == 0 {
		c.MaxTerminate = 2
	}
	if c.MaxFailure == 0 {
		c.MaxFailure = 5
	}
}

// Port is the automaton's view of its session: where packets go and the
// restart timer (the session owns time; Arm restarts the timer, Stop
// cancels it, and the session calls FSM.Timeout when it fires).
type Port interface {
	Send(proto uint16, p Packet)
	Arm(proto uint16)
	Stop(proto uint16)
}

// FSM is the option negotiation automaton of one control protocol.
type FSM struct {
	Proto uint16
	State State
	cfg   Config
	layer Layer
	port  Port

	restart int    // restart counter
	nextID  uint8  // identifier of our next request
	reqID   uint8  // identifier of the request awaiting an answer
	reqData []byte // its options, to match an Ack (RFC 1661 5.2)
	termID  uint8
	naks    int // Configure-Naks sent since the last Configure-Ack
	// Counters for telemetry: malformed or unmatched packets discarded.
	Discarded uint64
}

// NewFSM makes an automaton in the Initial state.
func NewFSM(proto uint16, l Layer, p Port, c Config) *FSM {
	c.defaults()
	return &FSM{Proto: proto, layer: l, port: p, cfg: c, nextID: 1}
}

// --- the actions of RFC 1661 section 4.4 -----------------------------------

func (f *FSM) irc(forTerminate bool) {
	if forTerminate {
		f.restart = f.cfg.MaxTerminate
	} else {
		f.restart = f.cfg.MaxConfigure
	}
}

func (f *FSM) zrc() {
	f.restart = 0
	f.port.Arm(f.Proto)
}

func (f *FSM) scr() {
	opts := f.layer.RequestOptions()
	f.reqID = f.nextID
	f.nextID++
	f.reqData = AppendOptions(f.reqData[:0], opts)
	f.port.Send(f.Proto, Packet{Code: ConfReq, ID: f.reqID, Data: f.reqData})
	f.restart--
	f.port.Arm(f.Proto)
}

func (f *FSM) str() {
	f.termID = f.nextID
	f.nextID++
	f.port.Send(f.Proto, Packet{Code: TermReq, ID: f.termID})
	f.restart--
	f.port.Arm(f.Proto)
}

func (f *FSM) sta(id uint8) { f.port.Send(f.Proto, Packet{Code: TermAck, ID: id}) }

func (f *FSM) tlu() { f.layer.Up() }
func (f *FSM) tld() { f.layer.Down() }
func (f *FSM) tls() { f.layer.Started() }
func (f *FSM) tlf() { f.layer.Finished() }

func (f *FSM) stopTimer() { f.port.Stop(f.Proto) }

// scj: Code-Reject carries the rejected packet, cut to fit the peer's MRU
// (1492 on PPPoE less the 4-octet header).
func (f *FSM) scj(raw []byte) {
	if len(raw) > 1488 {
		raw = raw[:1488]
	}
	f.nextID++
	f.port.Send(f.Proto, Packet{Code: CodeRej, ID: f.nextID, Data: raw})
}

// --- administrative and lower-layer events ---------------------------------

// Up: the lower layer is available.
func (f *FSM) Up() {
	switch f.State {
	case Initial:
		f.State = Closed
	case Starting:
		f.irc(false)
		f.scr()
		f.State = ReqSent
	}
}

// Down: the lower layer went away.
func (f *FSM) Down() {
	switch f.State {
	case Closed, Closing:
		f.stopTimer()
		f.State = Initial
	case Stopped:
		f.tls()
		f.State = Starting
	case Stopping, ReqSent, AckRcvd, AckSent:
		f.stopTimer()
		f.State = Starting
	case Opened:
		f.tld()
		f.State = Starting
	}
}

// Open: the administrator (here: the session) allows the link to open.
func (f *FSM) Open() {
	switch f.State {
	case Initial:
		f.tls()
		f.State = Starting
	case Closed:
		f.irc(false)
		f.scr()
		f.State = ReqSent
	case Closing:
		f.State = Stopping
	}
}

// Close: the link is to be closed.
func (f *FSM) Close() {
	switch f.State {
	case Starting:
		f.tlf()
		f.State = Initial
	case Stopped:
		f.State = Closed
	case Stopping:
		f.State = Closing
	case ReqSent, AckRcvd, AckSent:
		f.irc(true)
		f.str()
		f.State = Closing
	case Opened:
		f.tld()
		f.irc(true)
		f.str()
		f.State = Closing
	}
}

// Timeout: the restart timer fired (TO+ while the counter is above zero,
// TO- once it is exhausted).
func (f *FSM) Timeout() {
	if f.restart > 0 {
		switch f.State {
		case Closing, Stopping:
			f.str()
		case ReqSent, AckRcvd:
			f.scr()
			f.State = ReqSent
		case AckSent:
			f.scr()
		}
		return
	}
	switch f.State {
	case Closing:
		f.tlf()
		f.State = Closed
	case Stopping, ReqSent, AckRcvd, AckSent:
		f.tlf()
		f.State = Stopped
	}
}

// --- received packets ------------------------------------------------------

// Input handles a control packet of codes 1-7 (LCP adds its own codes
// before calling this); raw is the whole packet as received (for a
// Code-Reject).
func (f *FSM) Input(p Packet, raw []byte) {
	switch p.Code {
	case ConfReq:
		f.rcr(p)
	case ConfAck:
		if f.matches(p) {
			opts, _ := ParseOptions(p.Data)
			f.layer.Acked(opts)
			f.rca()
		} else {
			f.Discarded++
		}
	case ConfNak, ConfRej:
		if p.ID != f.reqID || !f.awaiting() {
			f.Discarded++
			return
		}
		opts, err := ParseOptions(p.Data)
		if err != nil {
			f.Discarded++
			return
		}
		if p.Code == ConfNak {
			f.layer.Naked(opts)
		} else {
			f.layer.Rejected(opts)
		}
		f.rcn()
	case TermReq:
		f.rtr(p.ID)
	case TermAck:
		f.rta(p.ID)
	case CodeRej:
		f.rxj(p)
	default:
		f.ruc(raw)
	}
}

// awaiting: a Configure-Request of ours is outstanding.
func (f *FSM) awaiting() bool {
	return f.State == ReqSent || f.State == AckSent || f.State == AckRcvd || f.State == Opened
}

// matches: an Ack must answer our last request with exactly its options
// (RFC 1661 5.2: "the Identifier field MUST match ... and the options
// MUST be an exact copy").
func (f *FSM) matches(p Packet) bool {
	return f.awaiting() && p.ID == f.reqID && bytes.Equal(p.Data, f.reqData)
}

func (f *FSM) rcr(p Packet) {
	if f.State == Initial || f.State == Starting {
		f.Discarded++
		return
	}
	opts, err := ParseOptions(p.Data)
	var code uint8
	var reply []Option
	if err != nil {
		// A request we cannot read is not a request: discard it.
		f.Discarded++
		return
	}
	code, reply = f.layer.CheckRequest(opts, f.naks >= f.cfg.MaxFailure)
	good := code == ConfAck
	send := func() {
		data := p.Data
		if !good {
			data = AppendOptions(nil, reply)
			if code == ConfNak {
				f.naks++
			}
		} else {
			f.naks = 0
		}
		f.port.Send(f.Proto, Packet{Code: code, ID: p.ID, Data: data})
	}
	switch f.State {
	case Closed:
		f.sta(p.ID)
	case Stopped:
		f.irc(false)
		f.scr()
		send()
		if good {
			f.State = AckSent
		} else {
			f.State = ReqSent
		}
	case Closing, Stopping:
	case ReqSent:
		send()
		if good {
			f.State = AckSent
		}
	case AckRcvd:
		send()
		if good {
			f.stopTimer()
			f.tlu()
			f.State = Opened
		}
	case AckSent:
		send()
		if !good {
			f.State = ReqSent
		}
	case Opened:
		f.tld()
		f.scr()
		send()
		if good {
			f.State = AckSent
		} else {
			f.State = ReqSent
		}
	}
}

func (f *FSM) rca() {
	switch f.State {
	case Closed, Stopped:
		f.sta(f.reqID)
	case ReqSent:
		f.irc(false)
		f.State = AckRcvd
		f.port.Arm(f.Proto)
	case AckRcvd:
		f.scr()
		f.State = ReqSent
	case AckSent:
		f.irc(false)
		f.stopTimer()
		f.tlu()
		f.State = Opened
	case Opened:
		f.tld()
		f.scr()
		f.State = ReqSent
	}
}

func (f *FSM) rcn() {
	switch f.State {
	case Closed, Stopped:
		f.sta(f.reqID)
	case ReqSent:
		f.irc(false)
		f.scr()
	case AckRcvd:
		f.scr()
		f.State = ReqSent
	case AckSent:
		f.irc(false)
		f.scr()
	case Opened:
		f.tld()
		f.scr()
		f.State = ReqSent
	}
}

func (f *FSM) rtr(id uint8) {
	switch f.State {
	case Initial, Starting:
		f.Discarded++
	case Closed, Stopped, Closing, Stopping:
		f.sta(id)
	case ReqSent, AckRcvd, AckSent:
		f.sta(id)
		f.State = ReqSent
	case Opened:
		f.tld()
		f.zrc()
		f.sta(id)
		f.State = Stopping
	}
}

func (f *FSM) rta(id uint8) {
	switch f.State {
	case Closing:
		f.stopTimer()
		f.tlf()
		f.State = Closed
	case Stopping:
		f.stopTimer()
		f.tlf()
		f.State = Stopped
	case AckRcvd:
		f.State = ReqSent
	case Opened:
		f.tld()
		f.scr()
		f.State = ReqSent
	}
}

// rxj: a Code-Reject (or, for LCP, a Protocol-Reject the session decided
// is catastrophic).  Rejecting a code the automaton needs (1-7) is
// catastrophic (RXJ-); another is acceptable (RXJ+).
func (f *FSM) rxj(p Packet) {
	fatal := len(p.Data) > 0 && p.Data[0] >= ConfReq && p.Data[0] <= CodeRej
	if !fatal {
		return
	}
	f.RejectFatal()
}

// RejectFatal is RXJ-: the peer cannot do this protocol.
func (f *FSM) RejectFatal() {
	switch f.State {
	case Closed, Closing:
		f.stopTimer()
		f.tlf()
		f.State = Closed
	case Stopped, Stopping, ReqSent, AckRcvd, AckSent:
		f.stopTimer()
		f.tlf()
		f.State = Stopped
	case Opened:
		f.tld()
		f.irc(true)
		f.str()
		f.State = Stopping
	}
}

func (f *FSM) ruc(raw []byte) {
	if f.State == Initial || f.State == Starting {
		f.Discarded++
		return
	}
	f.scj(raw)
}

// Restore puts the automaton in a state without any action (a session
// brought back after a restart of the control plane, whose peer saw no
// change).
func (f *FSM) Restore(s State) { f.State = s }
