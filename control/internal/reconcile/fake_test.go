package reconcile_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/reconcile"
)

// fakeDP is an in-memory data plane with the real one's list formats
// (canonical rule text, uppercase MACs, /32 without its length, null
// policer) and a log of every change made to it. Refuse makes a command
// fail when its argument contains a string, as the real one refuses a
// value.
type fakeDP struct {
	mu       sync.Mutex
	boot     time.Time
	down     bool
	routes   map[string]map[string]string // table -> prefix -> via
	acls     map[string]reconcile.ACLState
	policers map[string]reconcile.PolicerState
	pipes    map[string]reconcile.PipeState
	subs     map[uint32]dpctl.SubscriberState
	terms    []string
	log      []string
	refuse   map[string]string // command -> substring of the argument it refuses
	subLists int               // sub-list reads (the large table)
}

func newFake() *fakeDP {
	f := &fakeDP{refuse: map[string]string{}}
	f.restart()
	return f
}

// restart empties every table, as a data plane started with an empty
// configuration file has them.
func (f *fakeDP) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.boot = time.Now()
	f.down = false
	f.routes = map[string]map[string]string{}
	f.acls = map[string]reconcile.ACLState{}
	f.policers = map[string]reconcile.PolicerState{}
	f.pipes = map[string]reconcile.PipeState{"default": {Name: "default", Rate: 10e9, TBSize: 5e6}}
	f.subs = map[uint32]dpctl.SubscriberState{}
	f.terms = nil
}

func (f *fakeDP) changes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.log
	f.log = nil
	return out
}

func (f *fakeDP) do(cmd, arg string) error {
	if f.down {
		return dpctl.ErrConnLost
	}
	if s, ok := f.refuse[cmd]; ok && strings.Contains(arg, s) {
		return &dpctl.Error{Cmd: cmd, Msg: "refused " + arg, Index: -1}
	}
	f.log = append(f.log, cmd+" "+arg)
	return nil
}

func (f *fakeDP) Uptime(ctx context.Context) (float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return 0, dpctl.ErrConnLost
	}
	return time.Since(f.boot).Seconds(), nil
}

func (f *fakeDP) Routes(ctx context.Context, table string) ([]reconcile.RouteState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []reconcile.RouteState
	for p, v := range f.routes[table] {
		out = append(out, reconcile.RouteState{Prefix: p, Kind: "static", Via: v})
	}
	return out, nil
}

func (f *fakeDP) RouteAdd(ctx context.Context, table, prefix, via string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("route-add", table+" "+prefix+" "+via); err != nil {
		return err
	}
	if f.routes[table] == nil {
		f.routes[table] = map[string]string{}
	}
	f.routes[table][prefix] = via
	return nil
}

func (f *fakeDP) RouteDel(ctx context.Context, table, prefix string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("route-del", table+" "+prefix); err != nil {
		return err
	}
	delete(f.routes[table], prefix)
	return nil
}

func (f *fakeDP) ACL(ctx context.Context, table string) (reconcile.ACLState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.acls[table]
	if !ok {
		a.Default = "permit"
	}
	return a, nil
}

func (f *fakeDP) ACLReplace(ctx context.Context, table string, rules []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("acl-replace", table+" "+strings.Join(rules, "; ")); err != nil {
		return err
	}
	a, ok := f.acls[table]
	if !ok {
		a.Default = "permit"
	}
	a.Rules = append([]string(nil), rules...)
	f.acls[table] = a
	return nil
}

func (f *fakeDP) ACLSetDefault(ctx context.Context, table, action string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("acl-set-default", table+" "+action); err != nil {
		return err
	}
	a := f.acls[table]
	a.Default = action
	f.acls[table] = a
	return nil
}

func (f *fakeDP) Profiles(ctx context.Context) (reconcile.ProfileState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var p reconcile.ProfileState
	for _, x := range f.policers {
		p.Policers = append(p.Policers, x)
	}
	for _, x := range f.pipes {
		p.Pipes = append(p.Pipes, x)
	}
	return p, nil
}

func num(s string) int64 {
	var n int64
	fmt.Sscan(s, &n)
	return n
}

func (f *fakeDP) PolicerAdd(ctx context.Context, p dpctl.Policer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("policer-add", p.Name); err != nil {
		return err
	}
	f.policers[p.Name] = reconcile.PolicerState{Name: p.Name, Mode: p.Mode, CIR: num(p.CIR), CBS: num(p.CBS),
		PIR: num(p.PIR), PBS: num(p.PBS), EIR: num(p.EIR), EBS: num(p.EBS)}
	return nil
}

func (f *fakeDP) PipeAdd(ctx context.Context, p dpctl.Pipe) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("pipe-add", p.Name); err != nil {
		return err
	}
	tb := num(p.TBSize)
	if tb == 0 {
		tb = 4242 // the data plane's own default
	}
	f.pipes[p.Name] = reconcile.PipeState{Name: p.Name, Rate: num(p.Rate), TBSize: tb}
	return nil
}

func (f *fakeDP) Subscribers(ctx context.Context) ([]dpctl.SubscriberState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, dpctl.ErrConnLost
	}
	f.subLists++
	var out []dpctl.SubscriberState
	for _, s := range f.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (f *fakeDP) SubAddBulk(ctx context.Context, subs []dpctl.Subscriber) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, len(subs))
	for i, s := range subs {
		ids[i] = fmt.Sprint(s.ID)
	}
	if err := f.do("sub-add-bulk", strings.Join(ids, ",")); err != nil {
		return err // whole or nothing
	}
	for _, s := range subs {
		st := dpctl.SubscriberState{ID: s.ID, QinQ: s.QinQ, VLAN: s.VLAN, PPPoE: s.PPPoE, MAC: strings.ToUpper(s.MAC),
			IPv4: append([]string{}, s.IPv4...), IPv6: s.IPv6, Pipe: s.Pipe}
		if st.Pipe == "" {
			st.Pipe = "default"
		}
		if s.Policer != "" && s.Policer != "none" {
			pol := s.Policer
			st.Policer = &pol
		}
		if s.Subport != nil {
			st.Subport = *s.Subport
		}
		f.subs[s.ID] = st
	}
	return nil
}

func (f *fakeDP) SubDel(ctx context.Context, ids []uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		if err := f.do("sub-del", fmt.Sprint(id)); err != nil {
			return err
		}
		delete(f.subs, id)
	}
	return nil
}

func (f *fakeDP) Terminates(ctx context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.terms...), nil
}

func (f *fakeDP) TerminateAdd(ctx context.Context, rule string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("hs-terminate-add", rule); err != nil {
		return err
	}
	f.terms = append(f.terms, rule)
	return nil
}

func (f *fakeDP) TerminateDel(ctx context.Context, rule string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("hs-terminate-del", rule); err != nil {
		return err
	}
	for i, r := range f.terms {
		if r == rule {
			f.terms = append(f.terms[:i], f.terms[i+1:]...)
			break
		}
	}
	return nil
}
