package aaa

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
)

// Error-Cause values (RFC 5176 section 3.5).
const (
	errCauseUnsupportedAttribute = 401
	errCauseMissingAttribute     = 402
	errCauseInvalidValue         = 407
	errCauseSessionNotFound      = 503
	errCauseResourcesUnavailable = 506
	attrErrorCause               = 101
)

// CoAServer answers CoA-Request and Disconnect-Request packets (RFC 5176)
// from the RADIUS servers: it finds the session and asks the session
// table to change its profile or to end it.
type CoAServer struct {
	srv     *radius.PacketServer
	conn    net.PacketConn
	da      DynamicAuth
	Timeout time.Duration
	// Allowed is the set of client addresses (the RADIUS servers); a
	// request from elsewhere is dropped and counted.
	Allowed map[netip.Addr]bool

	Requests, Acks, Naks, Refused atomic.Uint64
}

// ListenCoA starts a server on addr (host:port, usually :3799).
func ListenCoA(addr string, secret []byte, da DynamicAuth, allowed []netip.Addr) (*CoAServer, error) {
	conn, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	c := &CoAServer{conn: conn, da: da, Timeout: 5 * time.Second, Allowed: map[netip.Addr]bool{}}
	for _, a := range allowed {
		c.Allowed[a.Unmap()] = true
	}
	c.srv = &radius.PacketServer{
		SecretSource: radius.StaticSecretSource(secret),
		Handler:      radius.HandlerFunc(c.serve),
	}
	go func() {
		if err := c.srv.Serve(conn); err != nil && !errors.Is(err, radius.ErrServerShutdown) {
			slog.Error("coa server", "err", err)
		}
	}()
	return c, nil
}

// Addr is the server's address.
func (c *CoAServer) Addr() net.Addr { return c.conn.LocalAddr() }

// Close stops the server.
func (c *CoAServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.srv.Shutdown(ctx)
}

func selectorOf(p *radius.Packet) Selector {
	s := Selector{AcctSessionID: rfc2866.AcctSessionID_GetString(p), User: rfc2865.UserName_GetString(p),
		MAC: rfc2865.CallingStationID_GetString(p)}
	if ip := rfc2865.FramedIPAddress_Get(p); ip != nil {
		if a, ok := netip.AddrFromSlice(ip.To4()); ok {
			s.IPv4 = a
		}
	}
	return s
}

func errorCause(err error) uint32 {
	switch {
	case errors.Is(err, ErrNoSession):
		return errCauseSessionNotFound
	case errors.Is(err, ErrUnsupported):
		return errCauseUnsupportedAttribute
	case errors.Is(err, ErrInvalidValue):
		return errCauseInvalidValue
	}
	return errCauseResourcesUnavailable
}

func (c *CoAServer) serve(w radius.ResponseWriter, r *radius.Request) {
	if len(c.Allowed) > 0 {
		ua, ok := r.RemoteAddr.(*net.UDPAddr)
		if !ok || !c.Allowed[ua.AddrPort().Addr().Unmap()] {
			c.Refused.Add(1)
			return
		}
	}
	c.Requests.Add(1)
	var ack, nak radius.Code
	switch r.Code {
	case radius.CodeCoARequest:
		ack, nak = radius.CodeCoAACK, radius.CodeCoANAK
	case radius.CodeDisconnectRequest:
		ack, nak = radius.CodeDisconnectACK, radius.CodeDisconnectNAK
	default:
		c.Refused.Add(1)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	sel := selectorOf(r.Packet)
	var err error
	switch {
	case sel.Empty():
		err = errMissing
	case r.Code == radius.CodeDisconnectRequest:
		err = c.da.Disconnect(ctx, sel)
	default:
		profile := rfc2865.FilterID_GetString(r.Packet)
		if profile == "" {
			err = errMissing
		} else {
			err = c.da.Change(ctx, sel, profile)
		}
	}
	resp := r.Response(ack)
	if err != nil {
		resp = r.Response(nak)
		cause := errorCause(err)
		if errors.Is(err, errMissing) {
			cause = errCauseMissingAttribute
		}
		resp.Add(attrErrorCause, radius.NewInteger(cause))
		c.Naks.Add(1)
	} else {
		c.Acks.Add(1)
	}
	w.Write(resp)
}

var errMissing = errors.New("no session named, or nothing to change")
