package bngcp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/pool"
)

// The business functions of operations: the REST API, the CLI (through
// the API) and RADIUS dynamic authorisation all call these, which post
// work to the shards that own the sessions.

// Filter selects sessions; empty fields match all.
type Filter struct {
	Type  string // pppoe | ipoe
	User  string
	MAC   string
	Port  string
	IPv4  netip.Addr
	State string
	ID    uint64
}

func (f *Filter) match(s *session) bool {
	switch {
	case f.ID != 0 && s.id != f.ID:
	case f.Type != "" && s.kind.String() != f.Type:
	case f.User != "" && s.user != f.User:
	case f.MAC != "" && !strings.EqualFold(s.circuit.MAC.String(), f.MAC):
	case f.Port != "" && s.circuit.Port != f.Port:
	case f.IPv4.IsValid() && s.v4 != f.IPv4:
	case f.State != "" && s.state.String() != f.State:
	default:
		return true
	}
	return false
}

// ParseID reads a session id as the API shows it (16 hex digits).
func ParseID(s string) (uint64, error) {
	if len(s) == 0 || len(s) > 16 {
		return 0, fmt.Errorf("session id %q: up to 16 hex digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("session id %q: up to 16 hex digits", s)
	}
	return v, nil
}

// onShards runs fn on every shard and waits.
func (s *Server) onShards(ctx context.Context, fn func(sh *shard)) error {
	done := make(chan struct{}, len(s.shards))
	for _, sh := range s.shards {
		sh := sh
		sh.post(func() { fn(sh); done <- struct{}{} })
	}
	for range s.shards {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (sh *shard) each(fn func(*session)) {
	for _, s := range sh.all {
		fn(s)
	}
}

// Sessions lists the sessions f selects, ordered by id.
func (s *Server) Sessions(ctx context.Context, f Filter) ([]SessionInfo, error) {
	var parts [][]SessionInfo
	partc := make(chan []SessionInfo, len(s.shards))
	err := s.onShards(ctx, func(sh *shard) {
		var out []SessionInfo
		sh.each(func(x *session) {
			if f.match(x) {
				out = append(out, x.info())
			}
		})
		partc <- out
	})
	if err != nil {
		return nil, err
	}
	close(partc)
	for p := range partc {
		parts = append(parts, p)
	}
	var all []SessionInfo
	for _, p := range parts {
		all = append(all, p...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all, nil
}

// ErrNoSession: no session has this id.
var ErrNoSession = errors.New("no such session")

// Clear ends the sessions f selects (cause: administratively cleared);
// it returns how many.
func (s *Server) Clear(ctx context.Context, f Filter) (int, error) {
	return s.clear(ctx, f, causeAdminReset)
}

func (s *Server) clear(ctx context.Context, f Filter, cause int) (int, error) {
	n := make(chan int, len(s.shards))
	if f.ID != 0 {
		sh := s.shardByID(f.ID)
		if sh == nil {
			return 0, ErrNoSession
		}
		done := make(chan int, 1)
		sh.post(func() {
			c := 0
			if x := sh.all[f.ID]; x != nil && f.match(x) && x.state != stTerminating {
				sh.terminate(x, cause)
				c++
			}
			done <- c
		})
		select {
		case c := <-done:
			if c == 0 {
				return 0, ErrNoSession
			}
			return c, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	err := s.onShards(ctx, func(sh *shard) {
		var victims []*session
		sh.each(func(x *session) {
			if f.match(x) && x.state != stTerminating {
				victims = append(victims, x)
			}
		})
		for _, x := range victims {
			sh.terminate(x, cause)
		}
		n <- len(victims)
	})
	close(n)
	total := 0
	for c := range n {
		total += c
	}
	return total, err
}

// ChangeProfile gives the sessions f selects another profile (the user
// plane's session is modified: new rates).
func (s *Server) ChangeProfile(ctx context.Context, f Filter, name string) (int, error) {
	p := s.profiles[name]
	if p == nil {
		return 0, fmt.Errorf("%w: no profile %q", aaa.ErrInvalidValue, name)
	}
	type target struct {
		sh *shard
		s  *session
	}
	var targets []target
	tc := make(chan target, 1024)
	collect := make(chan struct{})
	go func() {
		for t := range tc {
			targets = append(targets, t)
		}
		close(collect)
	}()
	err := s.onShards(ctx, func(sh *shard) {
		sh.each(func(x *session) {
			if f.match(x) && x.state == stUp {
				tc <- target{sh, x}
			}
		})
	})
	close(tc)
	<-collect
	if err != nil {
		return 0, err
	}
	if len(targets) == 0 {
		return 0, ErrNoSession
	}
	errs := make(chan error, len(targets))
	for _, t := range targets {
		t := t
		t.sh.post(func() { t.sh.changeProfile(t.s, p, func(err error) { errs <- err }) })
	}
	var first error
	for range targets {
		select {
		case err := <-errs:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if first == nil {
		s.ctr.inc(cCoAChange)
	}
	return len(targets), first
}

// Disconnect implements aaa.DynamicAuth (RADIUS Disconnect-Request).
func (s *Server) Disconnect(ctx context.Context, sel aaa.Selector) error {
	f, err := filterOf(sel)
	if err != nil {
		return err
	}
	n, err := s.clear(ctx, f, causeDisconnectRequest)
	if err == nil && n == 0 {
		err = aaa.ErrNoSession
	}
	if errors.Is(err, ErrNoSession) {
		err = aaa.ErrNoSession
	}
	if err == nil {
		s.ctr.inc(cCoAKick)
	}
	return err
}

// Change implements aaa.DynamicAuth (RADIUS CoA-Request with Filter-Id).
func (s *Server) Change(ctx context.Context, sel aaa.Selector, profile string) error {
	f, err := filterOf(sel)
	if err != nil {
		return err
	}
	_, err = s.ChangeProfile(ctx, f, profile)
	if errors.Is(err, ErrNoSession) {
		return aaa.ErrNoSession
	}
	if err != nil && !errors.Is(err, aaa.ErrInvalidValue) {
		return fmt.Errorf("%w: %v", aaa.ErrNotApplied, err)
	}
	return err
}

func filterOf(sel aaa.Selector) (Filter, error) {
	f := Filter{User: sel.User, IPv4: sel.IPv4, MAC: sel.MAC}
	if sel.AcctSessionID != "" {
		id, err := ParseID(sel.AcctSessionID)
		if err != nil {
			return f, aaa.ErrNoSession
		}
		f.ID = id
	}
	return f, nil
}

// Stats is the control plane's summary.
type Stats struct {
	Sessions map[string]map[string]int    `json:"sessions"` // type -> state -> count
	Pools    []pool.Stats                 `json:"pools"`
	Counters map[string]map[string]uint64 `json:"counters"`
	Extra    map[string]map[string]uint64 `json:"components,omitempty"`
}

// Stats gathers sessions by type and state, pools and counters.
func (s *Server) Stats(ctx context.Context) (*Stats, error) {
	st := &Stats{Sessions: map[string]map[string]int{}, Counters: s.ctr.snapshot()}
	counts := make(chan map[string]map[string]int, len(s.shards))
	err := s.onShards(ctx, func(sh *shard) {
		m := map[string]map[string]int{}
		sh.each(func(x *session) {
			if m[x.kind.String()] == nil {
				m[x.kind.String()] = map[string]int{}
			}
			m[x.kind.String()][x.state.String()]++
		})
		counts <- m
	})
	if err != nil {
		return nil, err
	}
	close(counts)
	for m := range counts {
		for k, v := range m {
			if st.Sessions[k] == nil {
				st.Sessions[k] = map[string]int{}
			}
			for state, n := range v {
				st.Sessions[k][state] += n
			}
		}
	}
	for _, pc := range s.cfg.Pools {
		if p := s.pools4[pc.Name]; p != nil {
			st.Pools = append(st.Pools, p.Stats())
		} else if p := s.pools6[pc.Name]; p != nil {
			st.Pools = append(st.Pools, p.Stats())
		}
	}
	if s.Components != nil {
		st.Extra = s.Components()
	}
	return st, nil
}

// Report takes a user plane's usage report to its session (any goroutine).
func (s *Server) Report(r UsageReport) {
	sh := s.shardByID(r.ID)
	if sh == nil {
		return
	}
	sh.post(func() {
		if x := sh.all[r.ID]; x != nil {
			sh.report(x, r.Delta, r.Periodic)
		}
	})
}

// Lost tells the control plane that the user plane dropped a session
// (it restarted without it, or reported it gone).
func (s *Server) Lost(id uint64) {
	sh := s.shardByID(id)
	if sh == nil {
		return
	}
	sh.post(func() {
		if x := sh.all[id]; x != nil {
			x.upDone = false
			sh.terminate(x, causeUPLost)
		}
	})
}

// Shutdown ends every session (the control plane is stopping for good,
// not restarting: a restart keeps them).
func (s *Server) Shutdown(ctx context.Context) (int, error) {
	return s.clear(ctx, Filter{}, causeShutdown)
}
