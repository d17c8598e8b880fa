package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptest"
	"edgeplane/control/internal/reconcile"
	"edgeplane/control/model"
)

// scaleConfig is a bng section of n QinQ subscribers (ids 1..n) that name
// no instance, on the named instances (each served by the data plane
// "bng-<name>", budget 1000, no pool: any address): the controller
// places them.
func scaleConfig(n int, instances ...string) *model.NodeConfig {
	b := &model.BNGConfig{Routes: []model.Route{{Prefix: "0.0.0.0/0", Via: "198.18.1.2"}}}
	for _, name := range instances {
		b.Instances = append(b.Instances, model.BNGInstance{Name: name, DataPlanes: []string{"bng-" + name}, MaxSubscribers: 1000})
	}
	for id := 1; id <= n; id++ {
		b.Subscribers = append(b.Subscribers, model.Subscriber{Id: int64(id), STag: 100, CTag: id,
			Ipv4: []string{fmt.Sprintf("198.19.%d.%d", id>>8, id&255)}})
	}
	return &model.NodeConfig{ApiVersion: model.Edgeplanev1, Bng: b}
}

// namedFake is a fake data plane with the name an instance gives it.
type namedFake struct {
	*fakeDP
	name string
}

func (n namedFake) String() string { return n.name }

// instanceOf is every subscriber's instance in the stored state.
func (h *harness) instanceOf(t *testing.T) map[uint32]string {
	t.Helper()
	d, err := h.st.Node(context.Background(), "edge1")
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]string{}
	for _, s := range d.Config.Bng.Subscribers {
		out[uint32(s.Id)] = s.Instance
	}
	return out
}

// TestAddingAnInstanceSendsOnlyTheMovedSubscribers: three data planes
// under one agent, the controller placing 30 subscribers on two
// instances, then on three. Each data plane holds its instance's
// subscribers; adding the third removes exactly the moved ones from their
// old data planes and adds them to the new one, and sends nothing else
// (the fakes log every command).
func TestAddingAnInstanceSendsOnlyTheMovedSubscribers(t *testing.T) {
	fakes := map[string]namedFake{}
	var planes []reconcile.DataPlane
	for _, n := range []string{"a", "b", "c"} {
		fakes[n] = namedFake{newFake(), "bng-" + n}
		planes = append(planes, fakes[n])
	}
	h := startAgent(t, reconcile.Planes{BNG: planes})
	rev := h.apply(t, scaleConfig(30, "a", "b"))
	eventually(t, "two instances converged", func() bool { st := h.agent.Status(); return st.ObservedRevision == rev && st.Converged })
	on := h.instanceOf(t)
	for n, f := range fakes {
		f.mu.Lock()
		for id := range f.subs {
			if "bng-"+on[id] != f.name {
				t.Errorf("subscriber %d of instance %s is on %s", id, on[id], f.name)
			}
		}
		if held := len(f.subs); held != map[string]int{"a": 15, "b": 15, "c": 0}[n] {
			t.Errorf("%s holds %d subscribers", f.name, held)
		}
		f.mu.Unlock()
		f.changes()
	}

	a, err := h.st.Apply(context.Background(), model.ChangeRequest{Nodes: map[string]model.NodeConfig{"edge1": *scaleConfig(30, "a", "b", "c")}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "three instances converged", func() bool {
		st := h.agent.Status()
		return st.ObservedRevision == a.Revision && st.Converged
	})
	moves := a.Plan.Nodes[0].Moves
	if len(moves) != 10 {
		t.Fatalf("moves %v: want the fair share of 10", moves)
	}
	wantDel := map[string][]string{}
	var wantAdd []string
	for _, m := range moves {
		wantDel[m.From] = append(wantDel[m.From], "sub-del "+fmt.Sprint(m.Id))
		wantAdd = append(wantAdd, fmt.Sprint(m.Id))
	}
	for n, f := range fakes {
		log := f.changes()
		want := wantDel[n]
		if n == "c" {
			want = []string{"sub-add-bulk " + strings.Join(wantAdd, ",")}
		}
		sort.Strings(log)
		sort.Strings(want)
		if !slices.Equal(log, want) {
			t.Errorf("%s was sent %v, want %v (only the moved subscribers)", f.name, log, want)
		}
	}
}

// TestRebalanceOnRealDataPlanesLeavesTheUnmovedAlone runs the controller's
// store, the agent and three real edgeplane-dp BNG processes: 60
// subscribers placed on two instances, then a third instance added. The
// agent's pass for the new revision sends only the moved subscribers (its
// JSON line counts 20 adds and removes: 20 moved, nothing else), and each
// data plane then lists exactly its instance's subscribers, the unmoved
// ones where they were.
func TestRebalanceOnRealDataPlanesLeavesTheUnmovedAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts edgeplane-dp")
	}
	clients := map[string]*dpctl.Client{}
	var planes []reconcile.DataPlane
	for _, n := range []string{"a", "b", "c"} {
		b := dptest.StartBNG(t, dptest.Options{})
		c := dpctl.New(b.Socket, dpctl.Options{})
		t.Cleanup(func() { c.Close() })
		clients["bng-"+n] = c
		planes = append(planes, reconcile.DP{C: c, Label: "bng-" + n})
	}
	h := startAgent(t, reconcile.Planes{BNG: planes})
	held := func(dp string) []uint32 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		subs, _, err := clients[dp].SubList(ctx, 0, 4096)
		if err != nil {
			t.Fatalf("%s: sub-list: %v", dp, err)
		}
		var ids []uint32
		for _, s := range subs {
			ids = append(ids, s.ID)
		}
		return ids
	}
	check := func(on map[uint32]string) {
		t.Helper()
		for dp := range clients {
			for _, id := range held(dp) {
				if "bng-"+on[id] != dp {
					t.Errorf("%s holds subscriber %d of instance %q", dp, id, on[id])
				}
			}
		}
	}
	rev := h.apply(t, scaleConfig(60, "a", "b"))
	eventually(t, "two instances converged", func() bool { st := h.agent.Status(); return st.ObservedRevision == rev && st.Converged })
	before := h.instanceOf(t)
	check(before)
	if len(held("bng-a")) != 30 || len(held("bng-b")) != 30 || len(held("bng-c")) != 0 {
		t.Fatalf("two instances: a %d, b %d, c %d subscribers", len(held("bng-a")), len(held("bng-b")), len(held("bng-c")))
	}

	rev = h.apply(t, scaleConfig(60, "a", "b", "c"))
	var pass *reconcile.PassEvent
	eventually(t, "three instances converged", func() bool {
		for _, ev := range h.events.passes(t) {
			if ev.Revision == rev && ev.Converged {
				pass = &ev
				return true
			}
		}
		return false
	})
	if fmt.Sprint(pass.Changes) != "map[subscriber add:20 subscriber remove:20]" {
		t.Fatalf("the rebalance's pass (%s) sent %v: want 20 moved subscribers, each removed and added, and nothing else", pass.Reason, pass.Changes)
	}
	after := h.instanceOf(t)
	check(after)
	moved := 0
	for id, was := range before {
		if after[id] != was {
			if after[id] != "c" {
				t.Errorf("subscriber %d moved from %s to %s, not to the new instance", id, was, after[id])
			}
			moved++
		}
	}
	if moved != 20 || len(held("bng-c")) != 20 || len(held("bng-a")) != 20 || len(held("bng-b")) != 20 {
		t.Fatalf("moved %d; a %d, b %d, c %d subscribers", moved, len(held("bng-a")), len(held("bng-b")), len(held("bng-c")))
	}
}
