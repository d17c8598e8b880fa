package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptest"
	"edgeplane/control/internal/reconcile"
	"edgeplane/control/model"
)

// bngConfig is a BNG section for dptest's data plane (4096 subscriber
// ids): n subscribers on QinQ, two profiles, core routes, an uplink ACL.
func bngConfig(t *testing.T, n int) *model.NodeConfig {
	t.Helper()
	var subs []string
	for i := 1; i <= n; i++ {
		subs = append(subs, fmt.Sprintf(`{"id": %d, "sTag": %d, "cTag": %d, "mac": "02:00:00:20:%02x:%02x", "ipv4": ["198.19.%d.%d"], "ipv6": "2001:db8:%x::/56", "policer": "p20", "pipe": "d50"}`,
			i, 100+i/4000, 1+i%4000, i>>8, i&255, i>>8, i&255, 0x1000+i))
	}
	doc := `{"apiVersion": "edgeplane/v1", "bng": {
	  "routes": [{"prefix": "0.0.0.0/0", "via": "198.18.1.2"}, {"prefix": "198.18.64.0/18", "via": "198.18.1.3"}],
	  "acl": {"default": "permit", "rules": [{"action": "deny", "proto": "udp", "dport": "5201"}, {"action": "deny", "proto": "tcp", "src": "198.19.0.0/24", "dport": "25"}]},
	  "policers": [{"name": "p20", "mode": "rfc2698", "cir": 10000000, "cbs": 65536, "pir": 20000000, "pbs": 131072}],
	  "pipes": [{"name": "d50", "rate": 50000000}],
	  "subscribers": [` + strings.Join(subs, ",") + `]}}`
	c, err := model.DecodeNodeConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestRealDataPlaneConvergesAndStaysUntouched programs the real
// edgeplane-dp, then checks that a second pass finds nothing to change:
// the model's forms (rule text, prefixes, MACs, profile rates) are the
// ones the data plane lists, so nothing that is right is ever rewritten.
func TestRealDataPlaneConvergesAndStaysUntouched(t *testing.T) {
	if testing.Short() {
		t.Skip("starts edgeplane-dp")
	}
	b := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(b.Socket, dpctl.Options{})
	defer c.Close()
	p := reconcile.Planes{BNG: []reconcile.DataPlane{reconcile.DP{C: c}}}
	cfg := bngConfig(t, 2000)
	ctx := context.Background()
	res := reconcile.Pass(ctx, p, cfg)
	if !res.Converged() {
		t.Fatalf("drift: %+v", res.Drift)
	}
	// dptest's configuration file has two static routes the desired state
	// lacks: they go.
	want := map[string]int{"acl update": 1, "pipe add": 1, "policer add": 1, "route add": 2, "route remove": 2, "subscriber add": 2000}
	if fmt.Sprint(res.Changes) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", res.Changes, want)
	}
	res = reconcile.Pass(ctx, p, cfg)
	if len(res.Changes) != 0 || !res.Converged() {
		t.Fatalf("second pass against the real data plane changed %v (drift %v): a form differs", res.Changes, res.Drift)
	}
	s, err := c.SubGet(ctx, 77)
	if err != nil || s.QinQ != "100.78" || *s.Policer != "p20" || s.IPv6 != "2001:db8:104d::/56" {
		t.Fatalf("subscriber 77: %+v %v", s, err)
	}

	// One subscriber changes: one replaced in place, nothing else sent.
	cfg.Bng.Subscribers[9].Ipv4 = []string{"198.19.200.1"}
	res = reconcile.Pass(ctx, p, cfg)
	if fmt.Sprint(res.Changes) != "map[subscriber update:1]" {
		t.Fatalf("changes %v", res.Changes)
	}
}

// TestAgentReprogramsARealDataPlaneAfterKill9 runs the whole agent (the
// embedded etcd, the controller's store) against the real edgeplane-dp,
// kills the data plane with SIGKILL and starts it again: the agent
// notices, counts a resync and programs every subscriber again.
func TestAgentReprogramsARealDataPlaneAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts edgeplane-dp")
	}
	b := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(b.Socket, dpctl.Options{})
	defer c.Close()
	h := startAgent(t, reconcile.Planes{BNG: []reconcile.DataPlane{reconcile.DP{C: c}}})
	cfg := bngConfig(t, 1000)
	rev := h.apply(t, cfg)
	count := func() int {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, total, err := c.SubList(cctx, 0, 1)
		if err != nil {
			return -1
		}
		return total
	}
	eventually(t, "converged", func() bool { return h.agent.Status().ObservedRevision == rev && count() == 1000 })
	before := h.resyncs("restart")
	b.Restart() // SIGKILL, then the same configuration file
	// The restart's pass has ended (its line is written last; the status
	// may still say converged from before the restart while it runs).
	restartPassDone := func() bool {
		for _, ev := range h.events.passes(t) {
			if ev.Reason == "restart" && ev.Converged {
				return true
			}
		}
		return false
	}
	eventually(t, "reprogrammed after kill -9", func() bool { return restartPassDone() && count() == 1000 })
	if after := h.resyncs("restart"); after <= before {
		t.Fatalf("resyncs{reason=restart} %v -> %v", before, after)
	}
	acl, err := reconcile.DP{C: c}.ACL(context.Background(), reconcile.BNGACL)
	if err != nil || len(acl.Rules) != 2 {
		t.Fatalf("ACL after the restart: %+v %v", acl, err)
	}
}

// TestRealDataPlaneTakesAnUntaggedIPoESubscriberByMAC programs a
// subscriber on an untagged line (no tags, no PPPoE: the data plane keys
// it by the client's MAC) beside a QinQ one, and checks the data plane
// lists it in the form the model has, so a second pass changes nothing.
func TestRealDataPlaneTakesAnUntaggedIPoESubscriberByMAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts edgeplane-dp")
	}
	b := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(b.Socket, dpctl.Options{})
	defer c.Close()
	p := reconcile.Planes{BNG: []reconcile.DataPlane{reconcile.DP{C: c}}}
	cfg := bngConfig(t, 1)
	untagged := model.Subscriber{Id: 2, Mac: "02:00:00:30:00:0B", Ipv4: []string{"198.19.9.9"}, Policer: "p20", Pipe: "d50"}
	cfg.Bng.Subscribers = append(cfg.Bng.Subscribers, untagged)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the model refuses an untagged IPoE subscriber: %v", err)
	}
	ctx := context.Background()
	if res := reconcile.Pass(ctx, p, cfg); !res.Converged() || res.Changes["subscriber add"] != 2 {
		t.Fatalf("changes %v drift %+v", res.Changes, res.Drift)
	}
	s, err := c.SubGet(ctx, 2)
	if err != nil || s.QinQ != "" || s.VLAN != 0 || s.PPPoE != 0 || !strings.EqualFold(s.MAC, untagged.Mac) {
		t.Fatalf("subscriber 2: %+v %v", s, err)
	}
	if res := reconcile.Pass(ctx, p, cfg); len(res.Changes) != 0 || !res.Converged() {
		t.Fatalf("second pass changed %v (drift %v)", res.Changes, res.Drift)
	}
}
