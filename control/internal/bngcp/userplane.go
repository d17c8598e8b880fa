package bngcp

import (
	"context"
	"net/netip"
	"time"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
)

// SessionSpec is what the user plane needs to forward one subscriber's
// traffic (the content of its PFCP session).
type SessionSpec struct {
	ID        uint64 // ours: the CP F-SEID
	UserPlane string
	Circuit   frame.Circuit
	PPPoE     uint16 // 0: IPoE
	IPv4      netip.Addr
	IPv6      netip.Prefix // the subscriber's block (link and delegated prefixes inside)
	Profile   *Profile
	Interim   time.Duration // usage report period (0: none)
}

// UserPlane is the SCi: per subscriber, a session established, modified
// (a profile change) and deleted.  Calls return at once; done runs later
// on another goroutine (the caller posts the result to its event loop).
type UserPlane interface {
	Establish(s *SessionSpec, done func(upSEID uint64, err error))
	Modify(s *SessionSpec, upSEID uint64, done func(err error))
	Delete(s *SessionSpec, upSEID uint64, done func(final aaa.Usage, err error))
	// Check asks whether the user plane still has the session (restart
	// resynchronisation); ok false: it does not.  The usage it reports
	// comes back through Server.Report.
	Check(ctx context.Context, s *SessionSpec, upSEID uint64) (ok bool, err error)
}

// UsageReport is what a user plane reports for a session: the volume
// since its previous report.
type UsageReport struct {
	ID       uint64 // our SEID
	Delta    aaa.Usage
	Periodic bool // a periodic report (interim accounting); else a query's answer
}

// noUserPlane stands for a user plane that needs no programming (direct
// mode without PFCP: the protocol tests and the control plane's own
// setup-rate benchmark).  Sessions are "established" at once.
type noUserPlane struct{}

func (noUserPlane) Establish(s *SessionSpec, done func(uint64, error)) { go done(s.ID, nil) }
func (noUserPlane) Modify(_ *SessionSpec, _ uint64, done func(error))  { go done(nil) }
func (noUserPlane) Delete(_ *SessionSpec, _ uint64, done func(aaa.Usage, error)) {
	go done(aaa.Usage{}, nil)
}
func (noUserPlane) Check(context.Context, *SessionSpec, uint64) (bool, error) { return true, nil }
