// Package aaa authenticates subscribers, authorises what they get, and
// accounts for what they use: from a local subscriber file, or from RADIUS
// servers (RFC 2865 access, RFC 2866 accounting, RFC 5176 dynamic
// authorisation: CoA and Disconnect) through layeh.com/radius.
//
// What a BNG sends and reads (docs/bng-control.md lists it as a table):
//
//	Access-Request   User-Name, User-Password (PAP) or CHAP-Password and
//	                 CHAP-Challenge (CHAP), Service-Type Framed,
//	                 Framed-Protocol PPP (PPPoE), NAS-Identifier,
//	                 NAS-IP-Address, NAS-Port-Type, NAS-Port-Id (port and
//	                 tags), Calling-Station-Id (MAC), Acct-Session-Id,
//	                 Agent-Circuit-Id / Agent-Remote-Id (RFC 4679)
//	Access-Accept    Filter-Id (the profile's name), Framed-IP-Address,
//	                 Framed-Pool, Framed-IPv6-Prefix / Delegated-IPv6-Prefix,
//	                 Framed-IPv6-Pool, Session-Timeout, Idle-Timeout,
//	                 Acct-Interim-Interval, Class (echoed in accounting)
//	Accounting       Acct-Status-Type Start / Interim-Update / Stop,
//	                 Acct-Input/Output-Octets and -Gigawords, -Packets,
//	                 Acct-Session-Time, Acct-Terminate-Cause, Event-Timestamp
//	CoA-Request      a session (Acct-Session-Id, User-Name or
//	                 Framed-IP-Address) and a new Filter-Id
//	Disconnect-Req   a session
package aaa

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pppoe"
)

// Service is the kind of session.
type Service uint8

// Services.
const (
	PPPoE Service = iota + 1
	IPoE
)

func (s Service) String() string {
	switch s {
	case PPPoE:
		return "pppoe"
	case IPoE:
		return "ipoe"
	}
	return "?"
}

// Method is how the subscriber proved who it is.
type Method uint8

// Methods.
const (
	MethodNone Method = iota // IPoE: authorised by its line or MAC
	MethodPAP
	MethodCHAP
)

// Request asks to authenticate and authorise one subscriber.
type Request struct {
	Service       Service
	Method        Method
	User          string
	Password      []byte // PAP; IPoE: the configured password
	CHAPID        uint8
	CHAPChallenge []byte
	CHAPResponse  []byte
	Circuit       frame.Circuit
	LineID        pppoe.LineID
	AcctSessionID string
	NASPortID     string
}

// Result is the answer.
type Result struct {
	Accept         bool
	Reason         string // why not (logged, and the PAP/CHAP failure message)
	Profile        string
	IPv4           netip.Addr
	Pool4          string
	IPv6Block      netip.Prefix // Framed-IPv6-Prefix: the subscriber's block
	Delegated      netip.Prefix // Delegated-IPv6-Prefix
	Pool6          string
	SessionTimeout time.Duration
	IdleTimeout    time.Duration
	Interim        time.Duration
	Class          [][]byte
	// Attributes are what the server sent, for the session record.
	Attributes map[string]string
}

// Authenticator decides on a request.  Blocking: the caller runs a slow
// one (RADIUS) off its event loop.
type Authenticator interface {
	Authenticate(ctx context.Context, r *Request) Result
	// Slow reports whether Authenticate waits on the network.
	Slow() bool
}

// AcctType is an accounting record's Acct-Status-Type.
type AcctType uint8

// Record types (RFC 2866 section 5.1).
const (
	AcctStart AcctType = iota + 1
	AcctStop
	AcctInterim
)

func (t AcctType) String() string {
	switch t {
	case AcctStart:
		return "start"
	case AcctStop:
		return "stop"
	case AcctInterim:
		return "interim"
	}
	return "?"
}

// Usage is a session's volume as the user plane measured it.  Input is
// from the subscriber (uplink), output towards it (RFC 2866 5.3-5.4: the
// NAS's port view).
type Usage struct {
	InOctets, OutOctets   uint64
	InPackets, OutPackets uint64
}

// Terminate causes (RFC 2866 section 5.10).
const (
	CauseUserRequest    = 1
	CauseLostCarrier    = 2
	CauseLostService    = 3
	CauseIdleTimeout    = 4
	CauseSessionTimeout = 5
	CauseAdminReset     = 6
	CauseAdminReboot    = 7
	CausePortError      = 8
	CauseNASError       = 9
	CauseNASRequest     = 10
	CauseNASReboot      = 11
	CauseServiceUnavail = 15
	CauseUserError      = 17
)

// AcctRecord is one accounting record.
type AcctRecord struct {
	Type           AcctType
	Service        Service
	SessionID      string
	User           string
	Circuit        frame.Circuit
	LineID         pppoe.LineID
	NASPortID      string
	IPv4           netip.Addr
	IPv6           netip.Prefix
	Delegated      netip.Prefix
	Usage          Usage
	SessionTime    time.Duration
	TerminateCause int
	Class          [][]byte
	Time           time.Time
}

// Accounter takes accounting records; it queues and retries them itself
// and never blocks its caller.
type Accounter interface {
	Account(r *AcctRecord)
}

// Selector names the session(s) a CoA or Disconnect request is about.
type Selector struct {
	AcctSessionID string
	User          string
	IPv4          netip.Addr
	MAC           string
}

// Empty reports whether the selector names nothing.
func (s Selector) Empty() bool {
	return s.AcctSessionID == "" && s.User == "" && !s.IPv4.IsValid() && s.MAC == ""
}

// Errors a dynamic authorisation handler returns.
var (
	ErrNoSession    = errors.New("no such session")         // Error-Cause 503
	ErrUnsupported  = errors.New("unsupported attribute")   // 401
	ErrInvalidValue = errors.New("invalid attribute value") // 407
	ErrNotApplied   = errors.New("could not apply")         // 506
)

// DynamicAuth is what CoA and Disconnect requests act on (the session
// table).
type DynamicAuth interface {
	Disconnect(ctx context.Context, s Selector) error
	Change(ctx context.Context, s Selector, profile string) error
}
