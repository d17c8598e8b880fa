package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/etcdtest"
	"edgeplane/control/internal/reconcile"
	"edgeplane/control/model"
)

// eventually polls cond every 50 ms for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type harness struct {
	ep     string
	st     *controller.Store
	agent  *reconcile.Agent
	reg    *prometheus.Registry
	events *lineBuffer
}

// lineBuffer collects the agent's JSON lines (written from its goroutines).
type lineBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// passes decodes every line written so far.
func (l *lineBuffer) passes(t *testing.T) []reconcile.PassEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []reconcile.PassEvent
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var ev reconcile.PassEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

func startAgent(t *testing.T, p reconcile.Planes) *harness {
	t.Helper()
	ep := etcdtest.Embedded(t)
	cli := etcdtest.Client(t, ep)
	h := &harness{ep: ep, st: controller.NewStore(cli), reg: prometheus.NewRegistry(), events: &lineBuffer{}}
	h.agent = reconcile.NewAgent(reconcile.AgentConfig{Node: "edge1", Etcd: cli, Planes: p,
		Check: 100 * time.Millisecond, Resync: time.Hour, StatusTTL: 3 * time.Second, Registry: h.reg,
		Events: h.events})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.agent.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func (h *harness) apply(t *testing.T, cfg *model.NodeConfig) int64 {
	t.Helper()
	a, err := h.st.Apply(context.Background(), model.ChangeRequest{Nodes: map[string]model.NodeConfig{"edge1": *cfg}})
	if err != nil {
		t.Fatal(err)
	}
	return a.Revision
}

// resyncs reads edgeplane_agent_resyncs_total{reason} from the registry.
func (h *harness) resyncs(reason string) float64 {
	mfs, _ := h.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "edgeplane_agent_resyncs_total" {
			continue
		}
		for _, m := range mf.Metric {
			if m.Label[0].GetValue() == reason {
				return m.Counter.GetValue()
			}
		}
	}
	return 0
}

func TestAgentFollowsTheDesiredStateAndARestart(t *testing.T) {
	f := newFake()
	h := startAgent(t, planes(f))
	cfg := config(t, 20)
	rev := h.apply(t, cfg)
	eventually(t, "converged to revision 1", func() bool {
		st := h.agent.Status()
		return st.Converged && st.ObservedRevision == rev && len(f.subs) == 20
	})
	// The controller sees the agent's report.
	eventually(t, "status in etcd", func() bool {
		st, err := h.st.Status(context.Background(), "edge1")
		return err == nil && st.ObservedRevision == rev && st.Converged
	})

	// The data plane restarts with empty tables: the agent notices by its
	// uptime and programs it again, with no operator action.
	f.restart()
	eventually(t, "reprogrammed after the restart", func() bool { return len(f.subs) == 20 && len(f.routes["router"]) == 2 })
	if n := h.resyncs("restart"); n < 1 {
		t.Fatalf("resyncs{reason=restart} = %v", n)
	}

	// A data plane that stops answering and comes back is a restart too.
	f.mu.Lock()
	f.down = true
	f.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	before := h.resyncs("restart")
	f.restart()
	eventually(t, "resync after the data plane came back", func() bool { return h.resyncs("restart") > before })

	// A change: one subscriber fewer, as revision 2.
	cfg.Bng.Subscribers = cfg.Bng.Subscribers[:19]
	f.changes()
	rev = h.apply(t, cfg)
	eventually(t, "converged to revision 2", func() bool {
		st := h.agent.Status()
		return st.ObservedRevision == rev && len(f.subs) == 19
	})
	if log := f.changes(); len(log) != 1 || log[0] != "sub-del 20" {
		t.Fatalf("revision 2 sent %q, want only the removal", log)
	}
}

func TestAgentKeepsTheLastGoodStateWhenTheStoredOneIsInvalid(t *testing.T) {
	f := newFake()
	h := startAgent(t, planes(f))
	h.apply(t, config(t, 3))
	eventually(t, "converged", func() bool { return len(f.subs) == 3 })
	// A value written to etcd behind the controller's back, that the
	// model refuses (a subscriber naming a missing policer).
	bad := model.NodeDesired{Node: "edge1", Revision: 99, Config: *config(t, 3)}
	bad.Config.Bng.Policers = nil
	b, _ := json.Marshal(bad)
	cli := etcdtest.Client(t, h.ep)
	if _, err := cli.Put(context.Background(), controller.DesiredKey("edge1"), string(b)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refusal reported", func() bool {
		for _, d := range h.agent.Status().Drift {
			if d.Kind == "node" {
				return true
			}
		}
		return false
	})
	if len(f.subs) != 3 {
		t.Fatalf("subscribers %d after an invalid desired state", len(f.subs))
	}
}

// TestAgentsOfSeveralNodesFollowTheirOwnPart: two nodes' agents under one
// controller's etcd; one change places both nodes' configurations, and a
// later change to one node prompts only its agent, which sends only what
// changed.
func TestAgentsOfSeveralNodesFollowTheirOwnPart(t *testing.T) {
	f1, f2 := newFake(), newFake()
	h := startAgent(t, planes(f1))
	a2 := reconcile.NewAgent(reconcile.AgentConfig{Node: "edge2", Etcd: etcdtest.Client(t, h.ep), Planes: planes(f2),
		Check: 100 * time.Millisecond, Resync: time.Hour, StatusTTL: 3 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a2.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	c1, c2 := config(t, 10), config(t, 30)
	a, err := h.st.Apply(context.Background(), model.ChangeRequest{Nodes: map[string]model.NodeConfig{"edge1": *c1, "edge2": *c2}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "both nodes converged", func() bool {
		return h.agent.Status().ObservedRevision == a.Revision && a2.Status().ObservedRevision == a.Revision &&
			len(f1.subs) == 10 && len(f2.subs) == 30
	})
	f1.changes()
	f2.changes()
	passes1 := h.agent.Status().Resyncs["desired"]

	c2.Bng.Subscribers[29].Ipv4 = []string{"198.18.200.30"} // id 30
	a, err = h.st.Apply(context.Background(), model.ChangeRequest{Nodes: map[string]model.NodeConfig{"edge2": *c2}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "edge2 converged", func() bool { return a2.Status().ObservedRevision == a.Revision })
	if log := f2.changes(); len(log) != 1 || log[0] != "sub-add-bulk 30" {
		t.Fatalf("edge2 was sent %q, want the one subscriber", log)
	}
	if log := f1.changes(); len(log) != 0 || h.agent.Status().Resyncs["desired"] != passes1 {
		t.Fatalf("edge1 was prompted (%d passes) and sent %q", h.agent.Status().Resyncs["desired"]-passes1, log)
	}
}

func TestAgentWritesAJSONLinePerPass(t *testing.T) {
	f := newFake()
	h := startAgent(t, planes(f))
	rev := h.apply(t, config(t, 5))
	eventually(t, "converged", func() bool { return h.agent.Status().ObservedRevision == rev })
	f.restart()
	eventually(t, "a restart pass", func() bool {
		for _, ev := range h.events.passes(t) {
			if ev.Reason == "restart" {
				return true
			}
		}
		return false
	})
	evs := h.events.passes(t)
	var applied *reconcile.PassEvent
	for i, ev := range evs {
		if ev.Type != "pass" || ev.Node != "edge1" || ev.Time.IsZero() || ev.TookMs < 0 {
			t.Fatalf("line %d: %+v", i, ev)
		}
		if ev.Revision == rev && ev.Changes["subscriber add"] == 5 && applied == nil {
			applied = &evs[i]
		}
	}
	if applied == nil || !applied.Converged || applied.Reason == "restart" {
		t.Fatalf("no converged pass adding the 5 subscribers of revision %d: %+v", rev, evs)
	}
	for _, ev := range evs {
		if ev.Reason == "restart" {
			// The data plane came back empty: the pass programmed it again.
			if ev.Changes["subscriber add"] != 5 || !ev.Converged {
				t.Fatalf("the restart's pass: %+v", ev)
			}
			break
		}
	}
}
