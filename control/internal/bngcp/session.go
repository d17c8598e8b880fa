package bngcp

import (
	"fmt"
	"net/netip"
	"time"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pool"
	"edgeplane/control/internal/bngcp/pppoe"
)

// A subscriber session's life:
//
//	            PPPoE                           IPoE
//	discovery   PADI/PADO/PADR/PADS          DHCPDISCOVER or SOLICIT
//	link        LCP (MRU, magic, auth)             -
//	authenticate PAP or CHAP  ------ AAA ------  by MAC, line or option 82
//	address     pools (or AAA's Framed-*)        pools (or AAA's)
//	activate    PFCP Session Establishment: the user plane forwards
//	            NCPs (IPCP, IPv6CP) open         DHCPACK / REPLY sent
//	up          LCP echo keepalive; RA,          lease timers; RA
//	            DHCPv6-PD over the session
//	            usage reports -> accounting interim; CoA -> modification
//	terminate   PADT / LCP terminate, PFCP deletion (final usage),
//	            accounting stop, addresses back to their pools
//
// A session belongs to one shard (an event loop) chosen by its circuit;
// all its state changes happen there, so none of it is locked.

type sessState uint8

const (
	stSetup       sessState = iota // discovery, link, authentication
	stAuthorizing                  // waiting for AAA
	stActivating                   // waiting for the user plane
	stUp
	stTerminating // waiting for the user plane's deletion
)

var stateNames = [...]string{"setup", "authorizing", "activating", "up", "terminating"}

func (s sessState) String() string { return stateNames[s] }

// timer kinds of a session.
type timerKind uint8

const (
	tLCP timerKind = iota
	tIPCP
	tIPv6CP
	tAuth       // CHAP retransmission, PAP wait
	tKeepalive  // LCP echo
	tLease4     // DHCPv4 lease end
	tLease6     // DHCPv6 bindings' end
	tRA         // unsolicited router advertisement
	tSetup      // the whole set-up must finish by then
	tSessionEnd // Session-Timeout
	numTimers
)

type session struct {
	id      uint64
	kind    aaa.Service
	circuit frame.Circuit
	port    *portState
	lineID  pppoe.LineID
	state   sessState
	created time.Time
	upAt    time.Time
	user    string
	res     aaa.Result // authorisation
	profile *Profile

	v4        netip.Addr
	pool4     *pool.V4
	v6block   netip.Prefix
	pool6     *pool.V6
	delegated netip.Prefix

	upSEID   uint64 // the user plane's F-SEID
	upDone   bool   // established
	usage    aaa.Usage
	interim  time.Duration
	lastAcct time.Time

	endAt     time.Time // Session-Timeout
	termCause int
	timers    [numTimers]uint32 // generation of each timer kind (0: none armed)
	dead      bool              // removed from the shard: callbacks ignore it
	// endPending: restored from a record written while the session was
	// being deleted; the user plane is asked to delete it once associated.
	endPending bool

	ppp  *pppSession
	ipoe *ipoeSession
}

func (s *session) acctID() string { return fmt.Sprintf("%016x", s.id) }

// nasPortID describes the line for RADIUS (NAS-Port-Id): port, then the
// tags as s.c or c.
func (s *session) nasPortID() string {
	return fmt.Sprintf("%s:%s", s.circuit.Port, s.circuit.Line)
}

// SessionInfo is a session as the API shows it.
type SessionInfo struct {
	ID          string        `json:"id"`
	Type        string        `json:"type"`
	State       string        `json:"state"`
	Port        string        `json:"port"`
	Line        frame.Line    `json:"line"`
	MAC         string        `json:"mac"`
	PPPoE       uint16        `json:"pppoe_session,omitempty"`
	User        string        `json:"user,omitempty"`
	Profile     string        `json:"profile,omitempty"`
	IPv4        string        `json:"ipv4,omitempty"`
	IPv6        string        `json:"ipv6_block,omitempty"`
	Delegated   string        `json:"delegated_prefix,omitempty"`
	CircuitID   string        `json:"agent_circuit_id,omitempty"`
	RemoteID    string        `json:"agent_remote_id,omitempty"`
	UpSEID      string        `json:"up_seid,omitempty"`
	UserPlane   string        `json:"user_plane,omitempty"`
	Created     time.Time     `json:"created"`
	UpSince     *time.Time    `json:"up_since,omitempty"`
	Usage       aaa.Usage     `json:"usage"`
	PPP         *PPPInfo      `json:"ppp,omitempty"`
	LeaseExpiry *time.Time    `json:"lease_expiry,omitempty"`
	Interim     time.Duration `json:"interim_ns,omitempty"`
}

// PPPInfo is the PPP side of a session.
type PPPInfo struct {
	LCP        string `json:"lcp"`
	IPCP       string `json:"ipcp"`
	IPv6CP     string `json:"ipv6cp,omitempty"`
	Auth       string `json:"auth"`
	MRU        uint16 `json:"peer_mru"`
	Magic      string `json:"magic"`
	PeerMagic  string `json:"peer_magic"`
	EchoMissed int    `json:"echo_missed"`
}

func (s *session) info() SessionInfo {
	i := SessionInfo{ID: s.acctID(), Type: s.kind.String(), State: s.state.String(), Port: s.circuit.Port,
		Line: s.circuit.Line, MAC: s.circuit.MAC.String(), User: s.user, Created: s.created,
		Usage: s.usage, CircuitID: s.lineID.CircuitID, RemoteID: s.lineID.RemoteID, Interim: s.interim}
	if s.profile != nil {
		i.Profile = s.profile.Name
	}
	if s.v4.IsValid() {
		i.IPv4 = s.v4.String()
	}
	if s.v6block.IsValid() {
		i.IPv6 = s.v6block.String()
	}
	if s.delegated.IsValid() {
		i.Delegated = s.delegated.String()
	}
	if s.upDone {
		i.UpSEID = fmt.Sprintf("%016x", s.upSEID)
		i.UserPlane = s.port.cfg.UserPlane
	}
	if s.state == stUp {
		t := s.upAt
		i.UpSince = &t
	}
	if p := s.ppp; p != nil {
		i.PPPoE = p.sid
		i.PPP = p.info()
	}
	if d := s.ipoe; d != nil && !d.leaseEnd.IsZero() {
		t := d.leaseEnd
		i.LeaseExpiry = &t
	}
	return i
}

// spec is what the user plane is told about the session.
func (s *session) spec() *SessionSpec {
	sp := &SessionSpec{ID: s.id, UserPlane: s.port.cfg.UserPlane, Circuit: s.circuit, IPv4: s.v4,
		IPv6: s.v6block, Profile: s.profile, Interim: s.interim}
	if s.ppp != nil {
		sp.PPPoE = s.ppp.sid
	}
	return sp
}
