package main

import (
	"context"
	"errors"

	"edgeplane/control/internal/bngcp"
)

// sciSide is the control plane's PFCP side and control packet redirect.
type sciSide struct {
	access bngcp.Access
	up     bngcp.UserPlane
}

func newSCI(*bngcp.Config, *bngcp.Store) (*sciSide, error) {
	return nil, errors.New("access mode cpr: not built yet")
}
func (s *sciSide) close()                   {}
func (s *sciSide) bind(*bngcp.Server)       {}
func (s *sciSide) run(context.Context)      {}
func (s *sciSide) stats() map[string]uint64 { return nil }
