package main

import (
	"context"
	"fmt"
	"net/netip"

	"edgeplane/control/internal/bngcp"
	"edgeplane/control/internal/bngcp/sci"
)

// sciSide is the control plane's PFCP side and control packet redirect
// (access mode cpr).
type sciSide struct {
	s      *sci.SCI
	access bngcp.Access
	up     bngcp.UserPlane
	srv    *bngcp.Server
	ctx    context.Context
}

func newSCI(cfg *bngcp.Config, store *bngcp.Store) (*sciSide, error) {
	listen, err := netip.ParseAddrPort(cfg.PFCP.Listen)
	if err != nil {
		return nil, fmt.Errorf("pfcp listen %q: %w", cfg.PFCP.Listen, err)
	}
	gtpu := netip.AddrPortFrom(listen.Addr(), 2152)
	if cfg.Access.GTPU != "" {
		if gtpu, err = netip.ParseAddrPort(cfg.Access.GTPU); err != nil {
			return nil, fmt.Errorf("access gtpu %q: %w", cfg.Access.GTPU, err)
		}
	}
	c := sci.Config{NodeID: cfg.NodeID, Listen: listen, GTPU: gtpu, Heartbeat: cfg.PFCP.Heartbeat,
		T1: cfg.PFCP.T1, N1: cfg.PFCP.N1}
	for _, u := range cfg.PFCP.UserPlanes {
		a, _ := netip.ParseAddrPort(u.Address)
		uc := sci.UPConfig{Name: u.Name, Addr: a, NetworkInstance: u.NetworkInstance}
		for _, p := range cfg.Ports {
			if p.UserPlane == u.Name {
				uc.Ports = append(uc.Ports, p.Name)
			}
		}
		c.UserPlanes = append(c.UserPlanes, uc)
	}
	var p sci.Persist
	if store != nil {
		p = store
	}
	s, err := sci.New(c, p)
	if err != nil {
		return nil, err
	}
	return &sciSide{s: s, access: s.Access(), up: s}, nil
}

func (x *sciSide) close() { x.s.Close() }

func (x *sciSide) bind(srv *bngcp.Server) {
	x.srv = srv
	x.s.OnReport = srv.Report
	x.s.OnAssociated = func(up string) {
		go srv.ResyncUserPlane(x.ctx, up)
	}
}

func (x *sciSide) run(ctx context.Context) {
	x.ctx = ctx
	x.s.Associate()
	x.s.Run(ctx)
}

func (x *sciSide) stats() map[string]uint64 { return x.s.Stats() }
