package aaa

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"
	"layeh.com/radius/rfc3162"
	"layeh.com/radius/rfc4679"
	"layeh.com/radius/rfc4818"
)

// RadiusServer is one server: authentication and accounting addresses
// (host:port) and the shared secret.
type RadiusServer struct {
	Auth   string
	Acct   string
	Secret []byte
}

// RadiusConfig configures the client.
type RadiusConfig struct {
	Servers       []RadiusServer // tried in order; the next on a timeout
	NASIdentifier string
	NASIP         netip.Addr
	Timeout       time.Duration // per server, all retransmissions included
	Retry         time.Duration // retransmission interval
	MaxInFlight   int           // requests outstanding at once
	AcctQueue     int           // accounting records waiting; beyond: dropped and counted
}

// Radius is a RADIUS client: an Authenticator and an Accounter.
type Radius struct {
	cfg    RadiusConfig
	client *radius.Client
	sem    chan struct{}
	acct   chan *AcctRecord
	wg     sync.WaitGroup
	stop   chan struct{}

	// Counters (exported through the server's metrics).
	AccessRequests, AccessAccepts, AccessRejects, AuthTimeouts atomic.Uint64
	AcctRequests, AcctResponses, AcctTimeouts, AcctDropped     atomic.Uint64
}

// NewRadius starts the client's accounting workers.
func NewRadius(c RadiusConfig) (*Radius, error) {
	if len(c.Servers) == 0 {
		return nil, errors.New("radius: no servers")
	}
	for i, s := range c.Servers {
		if len(s.Secret) == 0 {
			return nil, fmt.Errorf("radius: server %d has no secret", i+1)
		}
	}
	if c.Timeout == 0 {
		c.Timeout = 3 * time.Second
	}
	if c.Retry == 0 {
		c.Retry = time.Second
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 256
	}
	if c.AcctQueue == 0 {
		c.AcctQueue = 65536
	}
	r := &Radius{cfg: c, client: &radius.Client{Retry: c.Retry, MaxPacketErrors: 10},
		sem: make(chan struct{}, c.MaxInFlight), acct: make(chan *AcctRecord, c.AcctQueue),
		stop: make(chan struct{})}
	workers := c.MaxInFlight / 4
	if workers < 4 {
		workers = 4
	}
	for i := 0; i < workers; i++ {
		r.wg.Add(1)
		go r.acctWorker()
	}
	return r, nil
}

// Close stops the accounting workers after the queue drains (at most
// the timeout of one request per worker).
func (r *Radius) Close() {
	close(r.stop)
	r.wg.Wait()
}

// Slow implements Authenticator.
func (r *Radius) Slow() bool { return true }

func (r *Radius) common(p *radius.Packet, acctSession, nasPortID string, mac string) {
	if r.cfg.NASIdentifier != "" {
		rfc2865.NASIdentifier_SetString(p, r.cfg.NASIdentifier)
	}
	if r.cfg.NASIP.Is4() {
		rfc2865.NASIPAddress_Set(p, r.cfg.NASIP.AsSlice())
	}
	rfc2865.NASPortType_Set(p, rfc2865.NASPortType_Value_Ethernet)
	if nasPortID != "" {
		rfc2869.NASPortID_SetString(p, nasPortID)
	}
	if mac != "" {
		rfc2865.CallingStationID_SetString(p, mac)
	}
	if acctSession != "" {
		rfc2866.AcctSessionID_SetString(p, acctSession)
	}
}

// exchange sends p to each server's address in turn until one answers.
func (r *Radius) exchange(ctx context.Context, build func(secret []byte) *radius.Packet, acct bool) (*radius.Packet, error) {
	var last error
	for _, s := range r.cfg.Servers {
		addr := s.Auth
		if acct {
			addr = s.Acct
		}
		if addr == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		resp, err := r.client.Exchange(cctx, build(s.Secret), addr)
		cancel()
		if err == nil {
			return resp, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// Authenticate implements Authenticator: one Access-Request.
func (r *Radius) Authenticate(ctx context.Context, q *Request) Result {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{Reason: "radius: " + ctx.Err().Error()}
	}
	defer func() { <-r.sem }()
	r.AccessRequests.Add(1)
	build := func(secret []byte) *radius.Packet {
		p := radius.New(radius.CodeAccessRequest, secret)
		rfc2865.UserName_SetString(p, q.User)
		switch q.Method {
		case MethodCHAP:
			// CHAP-Password: the identifier then the response (RFC 2865 5.3).
			rfc2865.CHAPPassword_Set(p, append([]byte{q.CHAPID}, q.CHAPResponse...))
			rfc2865.CHAPChallenge_Set(p, q.CHAPChallenge)
		default:
			rfc2865.UserPassword_Set(p, q.Password)
		}
		rfc2865.ServiceType_Set(p, rfc2865.ServiceType_Value_FramedUser)
		if q.Service == PPPoE {
			rfc2865.FramedProtocol_Set(p, rfc2865.FramedProtocol_Value_PPP)
		}
		r.common(p, q.AcctSessionID, q.NASPortID, q.Circuit.MAC.String())
		if q.LineID.CircuitID != "" {
			rfc4679.ADSLAgentCircuitID_SetString(p, q.LineID.CircuitID)
		}
		if q.LineID.RemoteID != "" {
			rfc4679.ADSLAgentRemoteID_SetString(p, q.LineID.RemoteID)
		}
		return p
	}
	resp, err := r.exchange(ctx, build, false)
	if err != nil {
		r.AuthTimeouts.Add(1)
		return Result{Reason: "radius: " + err.Error()}
	}
	if resp.Code != radius.CodeAccessAccept {
		r.AccessRejects.Add(1)
		msg := rfc2865.ReplyMessage_GetString(resp)
		if msg == "" {
			msg = "rejected"
		}
		return Result{Reason: msg}
	}
	r.AccessAccepts.Add(1)
	return parseAccept(resp)
}

// parseAccept reads the authorisation attributes of an Access-Accept.
func parseAccept(p *radius.Packet) Result {
	res := Result{Accept: true, Attributes: map[string]string{}}
	if v := rfc2865.FilterID_GetString(p); v != "" {
		res.Profile = v
		res.Attributes["Filter-Id"] = v
	}
	if ip := rfc2865.FramedIPAddress_Get(p); ip != nil {
		if a, ok := netip.AddrFromSlice(ip.To4()); ok && a.Is4() && !a.IsUnspecified() &&
			a != netip.AddrFrom4([4]byte{255, 255, 255, 254}) {
			// 255.255.255.254 means "the NAS chooses" (RFC 2865 5.8).
			res.IPv4 = a
			res.Attributes["Framed-IP-Address"] = a.String()
		}
	}
	if v := rfc2869.FramedPool_GetString(p); v != "" {
		res.Pool4 = v
		res.Attributes["Framed-Pool"] = v
	}
	if v := rfc3162.FramedIPv6Pool_GetString(p); v != "" {
		res.Pool6 = v
		res.Attributes["Framed-IPv6-Pool"] = v
	}
	if n := rfc3162.FramedIPv6Prefix_Get(p); n != nil {
		if pf, ok := prefixOf(n.IP, n.Mask); ok {
			res.IPv6Block = pf
			res.Attributes["Framed-IPv6-Prefix"] = pf.String()
		}
	}
	if n := rfc4818.DelegatedIPv6Prefix_Get(p); n != nil {
		if pf, ok := prefixOf(n.IP, n.Mask); ok {
			res.Delegated = pf
			res.Attributes["Delegated-IPv6-Prefix"] = pf.String()
		}
	}
	if v := rfc2865.SessionTimeout_Get(p); v != 0 {
		res.SessionTimeout = time.Duration(v) * time.Second
		res.Attributes["Session-Timeout"] = strconv.Itoa(int(v))
	}
	if v := rfc2865.IdleTimeout_Get(p); v != 0 {
		res.IdleTimeout = time.Duration(v) * time.Second
	}
	if v := rfc2869.AcctInterimInterval_Get(p); v != 0 {
		// RFC 2869 5.16: not below 60 seconds; a smaller value is what
		// tests ask for, and it is honoured down to 1 s.
		res.Interim = time.Duration(v) * time.Second
		res.Attributes["Acct-Interim-Interval"] = strconv.Itoa(int(v))
	}
	if cs, err := rfc2865.Class_Gets(p); err == nil {
		res.Class = cs
	}
	return res
}

func prefixOf(ip []byte, mask []byte) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok || !a.Is6() {
		return netip.Prefix{}, false
	}
	ones := 0
	for _, b := range mask {
		for i := 7; i >= 0; i-- {
			if b&(1<<i) != 0 {
				ones++
			}
		}
	}
	return netip.PrefixFrom(a, ones).Masked(), true
}

// Account implements Accounter: the record is queued; a full queue
// drops it (counted): accounting never holds up a session.
func (r *Radius) Account(rec *AcctRecord) {
	select {
	case r.acct <- rec:
	default:
		r.AcctDropped.Add(1)
	}
}

func (r *Radius) acctWorker() {
	defer r.wg.Done()
	for {
		select {
		case rec := <-r.acct:
			r.sendAcct(rec)
		case <-r.stop:
			for {
				select {
				case rec := <-r.acct:
					r.sendAcct(rec)
				default:
					return
				}
			}
		}
	}
}

func (r *Radius) sendAcct(rec *AcctRecord) {
	r.AcctRequests.Add(1)
	queued := time.Now()
	build := func(secret []byte) *radius.Packet {
		p := radius.New(radius.CodeAccountingRequest, secret)
		switch rec.Type {
		case AcctStart:
			rfc2866.AcctStatusType_Set(p, rfc2866.AcctStatusType_Value_Start)
		case AcctStop:
			rfc2866.AcctStatusType_Set(p, rfc2866.AcctStatusType_Value_Stop)
			rfc2866.AcctTerminateCause_Set(p, rfc2866.AcctTerminateCause(rec.TerminateCause))
		default:
			rfc2866.AcctStatusType_Set(p, rfc2866.AcctStatusType_Value_InterimUpdate)
		}
		if rec.User != "" {
			rfc2865.UserName_SetString(p, rec.User)
		}
		r.common(p, rec.SessionID, rec.NASPortID, rec.Circuit.MAC.String())
		rfc2865.ServiceType_Set(p, rfc2865.ServiceType_Value_FramedUser)
		if rec.Service == PPPoE {
			rfc2865.FramedProtocol_Set(p, rfc2865.FramedProtocol_Value_PPP)
		}
		if rec.IPv4.IsValid() {
			rfc2865.FramedIPAddress_Set(p, rec.IPv4.AsSlice())
		}
		if rec.IPv6.IsValid() {
			rfc3162.FramedIPv6Prefix_Set(p, ipnet(rec.IPv6))
		}
		if rec.Delegated.IsValid() {
			rfc4818.DelegatedIPv6Prefix_Set(p, ipnet(rec.Delegated))
		}
		if rec.LineID.CircuitID != "" {
			rfc4679.ADSLAgentCircuitID_SetString(p, rec.LineID.CircuitID)
		}
		if rec.LineID.RemoteID != "" {
			rfc4679.ADSLAgentRemoteID_SetString(p, rec.LineID.RemoteID)
		}
		if rec.Type != AcctStart {
			u := rec.Usage
			rfc2866.AcctInputOctets_Set(p, rfc2866.AcctInputOctets(uint32(u.InOctets)))
			rfc2869.AcctInputGigawords_Set(p, rfc2869.AcctInputGigawords(uint32(u.InOctets>>32)))
			rfc2866.AcctOutputOctets_Set(p, rfc2866.AcctOutputOctets(uint32(u.OutOctets)))
			rfc2869.AcctOutputGigawords_Set(p, rfc2869.AcctOutputGigawords(uint32(u.OutOctets>>32)))
			rfc2866.AcctInputPackets_Set(p, rfc2866.AcctInputPackets(uint32(u.InPackets)))
			rfc2866.AcctOutputPackets_Set(p, rfc2866.AcctOutputPackets(uint32(u.OutPackets)))
			rfc2866.AcctSessionTime_Set(p, rfc2866.AcctSessionTime(uint32(rec.SessionTime/time.Second)))
		}
		for _, c := range rec.Class {
			rfc2865.Class_Add(p, c)
		}
		rfc2869.EventTimestamp_Set(p, rec.Time)
		if d := time.Since(queued); d >= time.Second {
			rfc2866.AcctDelayTime_Set(p, rfc2866.AcctDelayTime(uint32(d/time.Second)))
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout*time.Duration(len(r.cfg.Servers)))
	defer cancel()
	if _, err := r.exchange(ctx, build, true); err != nil {
		r.AcctTimeouts.Add(1)
		slog.Debug("radius accounting", "session", rec.SessionID, "type", rec.Type, "err", err)
		return
	}
	r.AcctResponses.Add(1)
}

func ipnet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// NewChallenge is a random CHAP challenge of 16 octets.
func NewChallenge() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return b
}
