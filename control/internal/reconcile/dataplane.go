package reconcile

import (
	"context"
	"strconv"

	"edgeplane/control/internal/dpctl"
)

// DataPlane is what reconciliation reads from and writes to one
// edgeplane-dp instance: its tables as the control socket lists them, and
// the commands that change one object each (or, for an ACL, the whole
// list at once). DP is the real one; the unit tests use a fake.
type DataPlane interface {
	// Uptime is the seconds since the data plane started: a restart shows
	// as an uptime that did not go on with the wall clock.
	Uptime(ctx context.Context) (float64, error)

	Routes(ctx context.Context, table string) ([]RouteState, error) // static routes only
	RouteAdd(ctx context.Context, table, prefix, via string) error
	RouteDel(ctx context.Context, table, prefix string) error

	ACL(ctx context.Context, table string) (ACLState, error)
	ACLReplace(ctx context.Context, table string, rules []string) error
	ACLSetDefault(ctx context.Context, table, action string) error

	Profiles(ctx context.Context) (ProfileState, error)
	PolicerAdd(ctx context.Context, p dpctl.Policer) error
	PipeAdd(ctx context.Context, p dpctl.Pipe) error
	Subscribers(ctx context.Context) ([]dpctl.SubscriberState, error)
	SubAddBulk(ctx context.Context, subs []dpctl.Subscriber) error
	SubDel(ctx context.Context, ids []uint32) error

	Terminates(ctx context.Context) ([]string, error)
	TerminateAdd(ctx context.Context, rule string) error
	TerminateDel(ctx context.Context, rule string) error
}

// RouteState is one route of route-list.
type RouteState struct {
	Prefix string `json:"prefix"`
	Kind   string `json:"kind"`
	Via    string `json:"via"`
}

// ACLState is acl-list's answer.
type ACLState struct {
	Default string   `json:"default"`
	Rules   []string `json:"-"`
}

// ProfileState is profile-list's answer (rates bit/s, sizes bytes).
type ProfileState struct {
	Policers []PolicerState `json:"policers"`
	Pipes    []PipeState    `json:"pipes"`
}

// PolicerState is one policer profile.
type PolicerState struct {
	Name string `json:"name"`
	Mode string `json:"mode"`
	CIR  int64  `json:"cir"`
	CBS  int64  `json:"cbs"`
	PIR  int64  `json:"pir"`
	PBS  int64  `json:"pbs"`
	EIR  int64  `json:"eir"`
	EBS  int64  `json:"ebs"`
}

// PipeState is one pipe profile.
type PipeState struct {
	Name   string `json:"name"`
	Rate   int64  `json:"rate"`
	TBSize int64  `json:"tb_size"`
}

// DP is a DataPlane over edgeplane-dp's control socket; Label names it
// in drift and logs (the socket's file name: uplink, downlink).
type DP struct {
	C     *dpctl.Client
	Label string
}

func (d DP) String() string { return d.Label }

// Uptime reads stats' uptime_s.
func (d DP) Uptime(ctx context.Context) (float64, error) {
	s, err := d.C.Stats(ctx)
	return s.UptimeS, err
}

// Routes lists the table's static routes.
func (d DP) Routes(ctx context.Context, table string) ([]RouteState, error) {
	var r struct {
		Routes []RouteState `json:"routes"`
	}
	if err := d.C.Cmd(ctx, "route-list", map[string]any{"table": table, "limit": 1 << 31}, &r); err != nil {
		return nil, err
	}
	out := r.Routes[:0]
	for _, rt := range r.Routes {
		if rt.Kind == "static" {
			out = append(out, rt)
		}
	}
	return out, nil
}

// RouteAdd adds or replaces a static route.
func (d DP) RouteAdd(ctx context.Context, table, prefix, via string) error {
	return d.C.Cmd(ctx, "route-add", map[string]any{"table": table, "prefix": prefix, "via": via}, nil)
}

// RouteDel deletes a route.
func (d DP) RouteDel(ctx context.Context, table, prefix string) error {
	return d.C.Cmd(ctx, "route-del", map[string]any{"table": table, "prefix": prefix}, nil)
}

// ACL lists the table's rules in their canonical text.
func (d DP) ACL(ctx context.Context, table string) (ACLState, error) {
	var r struct {
		Default string `json:"default"`
		Rules   []struct {
			Rule string `json:"rule"`
		} `json:"rules"`
	}
	if err := d.C.Cmd(ctx, "acl-list", map[string]any{"table": table}, &r); err != nil {
		return ACLState{}, err
	}
	s := ACLState{Default: r.Default, Rules: make([]string, len(r.Rules))}
	for i, x := range r.Rules {
		s.Rules[i] = x.Rule
	}
	return s, nil
}

// ACLReplace swaps the whole rule list at once (RCU: a packet sees the
// old list or the new one).
func (d DP) ACLReplace(ctx context.Context, table string, rules []string) error {
	if rules == nil {
		rules = []string{}
	}
	return d.C.Cmd(ctx, "acl-replace", map[string]any{"table": table, "rules": rules}, nil)
}

// ACLSetDefault sets the action when no rule matches.
func (d DP) ACLSetDefault(ctx context.Context, table, action string) error {
	return d.C.Cmd(ctx, "acl-set-default", map[string]any{"table": table, "action": action}, nil)
}

// Profiles reads the policer and pipe profiles.
func (d DP) Profiles(ctx context.Context) (ProfileState, error) {
	var p ProfileState
	err := d.C.Cmd(ctx, "profile-list", nil, &p)
	return p, err
}

// PolicerAdd adds or replaces a policer profile.
func (d DP) PolicerAdd(ctx context.Context, p dpctl.Policer) error { return d.C.PolicerAdd(ctx, p) }

// PipeAdd adds or changes a pipe profile.
func (d DP) PipeAdd(ctx context.Context, p dpctl.Pipe) error { return d.C.PipeAdd(ctx, p) }

// Subscribers lists every subscriber, 8192 a request.
func (d DP) Subscribers(ctx context.Context) ([]dpctl.SubscriberState, error) {
	var out []dpctl.SubscriberState
	for {
		page, total, err := d.C.SubList(ctx, len(out), 8192)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) == 0 || len(out) >= total {
			return out, nil
		}
	}
}

// SubAddBulk adds or replaces subscribers (in place: their counters go
// on), whole or not at all.
func (d DP) SubAddBulk(ctx context.Context, subs []dpctl.Subscriber) error {
	_, err := d.C.SubAddBulk(ctx, subs)
	return err
}

// SubDel deletes subscribers, pipelined.
func (d DP) SubDel(ctx context.Context, ids []uint32) error {
	calls := make([]*dpctl.Call, len(ids))
	for i, id := range ids {
		calls[i] = d.C.GoSubDel(ctx, id)
	}
	var first error
	for _, c := range calls {
		if _, err := c.Wait(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Terminates lists the host stack's terminate rules.
func (d DP) Terminates(ctx context.Context) ([]string, error) {
	var r struct {
		Rules []string `json:"rules"`
	}
	err := d.C.Cmd(ctx, "hs-terminate-list", nil, &r)
	return r.Rules, err
}

// TerminateAdd adds a terminate rule.
func (d DP) TerminateAdd(ctx context.Context, rule string) error {
	return d.C.Cmd(ctx, "hs-terminate-add", map[string]any{"rule": rule}, nil)
}

// TerminateDel removes one (existing sockets stay).
func (d DP) TerminateDel(ctx context.Context, rule string) error {
	return d.C.Cmd(ctx, "hs-terminate-del", map[string]any{"rule": rule}, nil)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
