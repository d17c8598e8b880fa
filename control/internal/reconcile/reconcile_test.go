package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/reconcile"
	"edgeplane/control/model"
)

func config(t *testing.T, nsubs int) *model.NodeConfig {
	t.Helper()
	var subs []string
	for i := 1; i <= nsubs; i++ {
		subs = append(subs, fmt.Sprintf(`{"id": %d, "sTag": %d, "cTag": %d, "mac": "02:00:00:10:%02x:%02x", "ipv4": ["198.18.%d.%d"], "policer": "p20", "pipe": "d50"}`,
			i, 100+i/4000, 1+i%4000, i>>8, i&255, 100+i>>8, i&255))
	}
	doc := `{"apiVersion": "edgeplane/v1",
	  "router": {"routes": [{"prefix": "198.18.5.0/24", "via": "198.18.1.2"}, {"prefix": "2001:db8:5::/48", "via": "2001:db8:1::2"}],
	             "acl": {"default": "permit", "rules": [{"action": "deny", "proto": "tcp", "dport": "22"}]}},
	  "bng": {"routes": [{"prefix": "0.0.0.0/0", "via": "198.18.1.2"}],
	          "acl": {"default": "deny", "rules": [{"action": "permit", "proto": "udp", "dst": "198.18.0.0/15"}]},
	          "policers": [{"name": "p20", "mode": "rfc2698", "cir": 10000000, "cbs": 65536, "pir": 20000000, "pbs": 131072}],
	          "pipes": [{"name": "d50", "rate": 50000000}],
	          "subscribers": [` + strings.Join(subs, ",") + `]},
	  "udpTermination": {"terminate": [{"address": "198.18.2.1", "ports": "5000-5099"}, {"address": "any", "ports": "1-65535"}]}}`
	c, err := model.DecodeNodeConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func planes(f *fakeDP) reconcile.Planes {
	return reconcile.Planes{Router: f, BNG: []reconcile.DataPlane{f}, UDP: f}
}

func TestFirstPassProgramsEverythingAndTheSecondNothing(t *testing.T) {
	f := newFake()
	cfg := config(t, 10)
	res := reconcile.Pass(context.Background(), planes(f), cfg)
	if !res.Converged() {
		t.Fatal(res.Drift)
	}
	want := map[string]int{"route add": 3, "acl update": 2, "acl default update": 1, "policer add": 1, "pipe add": 1,
		"subscriber add": 10, "terminate add": 2}
	if fmt.Sprint(res.Changes) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", res.Changes, want)
	}
	if f.terms[1] != "any any" {
		t.Fatalf("terminate rule text %q, want the host stack's form", f.terms[1])
	}
	f.changes()
	res = reconcile.Pass(context.Background(), planes(f), cfg)
	if len(res.Changes) != 0 || !res.Converged() {
		t.Fatalf("second pass changed %v (drift %v)", res.Changes, res.Drift)
	}
	if log := f.changes(); len(log) != 0 {
		t.Fatalf("second pass sent %v", log)
	}
}

func TestOnlyWhatDiffersIsChanged(t *testing.T) {
	f := newFake()
	cfg := config(t, 100)
	reconcile.Pass(context.Background(), planes(f), cfg)
	f.changes()

	cfg.Bng.Subscribers[41].Ipv4 = []string{"198.18.200.1"}         // id 42
	cfg.Bng.Subscribers = slices.Delete(cfg.Bng.Subscribers, 9, 10) // id 10
	cfg.Router.Routes[0].Via = "198.18.1.3"
	res := reconcile.Pass(context.Background(), planes(f), cfg)
	log := f.changes()
	want := []string{"route-add router 198.18.5.0/24 198.18.1.3", "sub-add-bulk 42", "sub-del 10"}
	if !slices.Equal(log, want) {
		t.Fatalf("sent %q, want %q", log, want)
	}
	if res.Changes["subscriber update"] != 1 || res.Changes["subscriber remove"] != 1 || res.Changes["route update"] != 1 {
		t.Fatalf("changes %v", res.Changes)
	}
}

func TestRestartedDataPlaneIsProgrammedAgain(t *testing.T) {
	f := newFake()
	cfg := config(t, 50)
	reconcile.Pass(context.Background(), planes(f), cfg)
	f.restart()
	res := reconcile.Pass(context.Background(), planes(f), cfg)
	if !res.Converged() || res.Changes["subscriber add"] != 50 || res.Changes["route add"] != 3 {
		t.Fatalf("after restart: %v %v", res.Changes, res.Drift)
	}
	if s := f.subs[7]; *s.Policer != "p20" || s.Pipe != "d50" {
		t.Fatalf("subscriber 7: %+v", s)
	}
}

func TestObjectsNotDesiredAreRemovedWithinTheOwnedIDs(t *testing.T) {
	f := newFake()
	cfg := config(t, 5)
	p := planes(f)
	p.SubIDLo, p.SubIDHi = 1, 100
	reconcile.Pass(context.Background(), p, cfg)
	// Someone else's changes: a subscriber in our range, one outside it
	// (a PFCP user plane's), a static route and a terminate rule.
	ctx := context.Background()
	f.SubAddBulk(ctx, []dpctl.Subscriber{{ID: 99, VLAN: 99}, {ID: 500, VLAN: 500}})
	f.RouteAdd(ctx, "router", "198.18.9.0/24", "198.18.1.9")
	f.TerminateAdd(ctx, "198.18.2.9 53")
	f.changes()
	res := reconcile.Pass(ctx, p, cfg)
	log := f.changes()
	slices.Sort(log)
	want := []string{"hs-terminate-del 198.18.2.9 53", "route-del router 198.18.9.0/24", "sub-del 99"}
	if !slices.Equal(log, want) {
		t.Fatalf("sent %q, want %q", log, want)
	}
	if _, kept := f.subs[500]; !kept || !res.Converged() {
		t.Fatalf("subscriber 500 (not ours) removed, or drift %v", res.Drift)
	}
}

func TestRefusalIsDriftAndTheRestIsApplied(t *testing.T) {
	f := newFake()
	f.refuse["route-add"] = "2001:db8:5::/48"
	f.refuse["sub-add-bulk"] = ","
	cfg := config(t, 3)
	res := reconcile.Pass(context.Background(), planes(f), cfg)
	if res.Converged() {
		t.Fatal("converged with a refused route")
	}
	kinds := map[string]string{}
	for _, d := range res.Drift {
		kinds[d.Kind] = d.Key
	}
	if kinds["route"] != "router 2001:db8:5::/48" || kinds["subscriber"] != "1..3" {
		t.Fatalf("drift %+v", res.Drift)
	}
	if res.Changes["route add"] != 2 || len(f.subs) != 0 {
		t.Fatalf("changes %v, subscribers %d (a refused bulk adds none)", res.Changes, len(f.subs))
	}
	delete(f.refuse, "route-add")
	delete(f.refuse, "sub-add-bulk")
	if res := reconcile.Pass(context.Background(), planes(f), cfg); !res.Converged() || res.Changes["subscriber add"] != 3 {
		t.Fatalf("retry: %v %v", res.Changes, res.Drift)
	}
}

func TestSectionWithoutADataPlaneIsDrift(t *testing.T) {
	f := newFake()
	cfg := config(t, 1)
	res := reconcile.Pass(context.Background(), reconcile.Planes{Router: f}, cfg)
	var keys []string
	for _, d := range res.Drift {
		keys = append(keys, d.Kind+" "+d.Key)
	}
	if !slices.Equal(keys, []string{"section bng", "section udpTermination"}) {
		t.Fatalf("drift %v", keys)
	}
	if res.Changes["route add"] != 2 {
		t.Fatalf("the router section was not applied: %v", res.Changes)
	}
}

// TestIncrementalSendsTheRevisionsChangesWithoutReadingSubscribers: from
// a converged revision, the next is sent object by object (the changed
// subscriber, the removed one, the changed route) without listing the
// subscriber table, and a full pass afterwards finds nothing left.
func TestIncrementalSendsTheRevisionsChangesWithoutReadingSubscribers(t *testing.T) {
	f := newFake()
	old := config(t, 100)
	reconcile.Pass(context.Background(), planes(f), old)
	f.changes()
	lists := f.subLists

	cfg := config(t, 100)
	cfg.Bng.Subscribers[41].Ipv4 = []string{"198.18.200.1"}         // id 42
	cfg.Bng.Subscribers = slices.Delete(cfg.Bng.Subscribers, 9, 10) // id 10
	cfg.Router.Routes[0].Via = "198.18.1.3"
	res := reconcile.Incremental(context.Background(), planes(f), old, cfg)
	if !res.Converged() {
		t.Fatal(res.Drift)
	}
	want := []string{"route-add router 198.18.5.0/24 198.18.1.3", "sub-add-bulk 42", "sub-del 10"}
	if log := f.changes(); !slices.Equal(log, want) {
		t.Fatalf("sent %q, want %q", log, want)
	}
	if f.subLists != lists {
		t.Fatalf("sub-list read %d times", f.subLists-lists)
	}
	if res := reconcile.Pass(context.Background(), planes(f), cfg); len(res.Changes) != 0 {
		t.Fatalf("a full pass after the incremental one changed %v", res.Changes)
	}
}
