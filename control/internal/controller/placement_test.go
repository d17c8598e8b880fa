package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/etcdtest"
	"edgeplane/control/model"
)

// scaleNode is a node with BNG instances and n subscribers (ids 1..n,
// vlan = id, one IPv4 address each: 198.18.<id/256>.<id%256>) that name
// no instance: the controller places them.
func scaleNode(instances []model.BNGInstance, n int) model.NodeConfig {
	b := &model.BNGConfig{Instances: instances}
	for id := 1; id <= n; id++ {
		b.Subscribers = append(b.Subscribers, model.Subscriber{Id: int64(id), Vlan: id,
			Ipv4: []string{fmt.Sprintf("198.18.%d.%d", id/256, id%256)}})
	}
	return model.NodeConfig{ApiVersion: model.Edgeplanev1, Bng: b}
}

func inst(name string, budget int, pool ...string) model.BNGInstance {
	return model.BNGInstance{Name: name, DataPlanes: []string{"dp-" + name}, MaxSubscribers: budget, Ipv4Pool: pool}
}

// placedOn is each subscriber's instance in the stored state of node.
func placedOn(t *testing.T, st *controller.Store, node string) map[int64]string {
	t.Helper()
	d, err := st.Node(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, s := range d.Config.Bng.Subscribers {
		out[s.Id] = s.Instance
	}
	return out
}

func apply(t *testing.T, st *controller.Store, node string, cfg model.NodeConfig) model.Applied {
	t.Helper()
	a, err := st.Apply(context.Background(), model.ChangeRequest{Nodes: map[string]model.NodeConfig{node: cfg}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func load(p []model.InstancePlacement) map[string]int {
	out := map[string]int{}
	for _, ip := range p {
		out[ip.Instance] = ip.Subscribers
	}
	return out
}

func TestPlacementOnBNGInstances(t *testing.T) {
	st := controller.NewStore(etcdtest.Client(t, etcdtest.Embedded(t)))
	ctx := context.Background()

	t.Run("fill", func(t *testing.T) {
		a := apply(t, st, "fill", scaleNode([]model.BNGInstance{inst("a", 10), inst("b", 10), inst("c", 10)}, 20))
		np := a.Plan.Nodes[0]
		if got := load(np.Placement); got["a"] != 7 || got["b"] != 7 || got["c"] != 6 {
			t.Fatalf("least-loaded fill: got %v, want a 7, b 7, c 6", got)
		}
		on := placedOn(t, st, "fill")
		for id, want := range map[int64]string{1: "a", 2: "b", 3: "c", 4: "a", 20: "b"} {
			if on[id] != want {
				t.Errorf("subscriber %d on %q, want %q (id order, least loaded, then name)", id, on[id], want)
			}
		}
		if np.Placement[0].Placed != 7 || len(np.Moves) != 0 {
			t.Errorf("placement %+v moves %v: want a placed 7 and no move", np.Placement[0], np.Moves)
		}
	})

	t.Run("stable across re-plans", func(t *testing.T) {
		insts := []model.BNGInstance{inst("a", 10), inst("b", 10), inst("c", 10)}
		first := apply(t, st, "stable", scaleNode(insts, 20))
		before := placedOn(t, st, "stable")
		again := apply(t, st, "stable", scaleNode(insts, 20))
		if again.Revision != first.Revision || len(again.Plan.Nodes) != 0 {
			t.Fatalf("the same request again: revision %d (was %d), plan %+v; want nothing changed", again.Revision, first.Revision, again.Plan)
		}
		grown := apply(t, st, "stable", scaleNode(insts, 23))
		np := grown.Plan.Nodes[0]
		if np.Counts["add"] != 3 || len(np.Counts) != 1 || len(np.Moves) != 0 {
			t.Fatalf("three more subscribers: counts %v moves %v; want 3 adds only", np.Counts, np.Moves)
		}
		after := placedOn(t, st, "stable")
		for id, was := range before {
			if after[id] != was {
				t.Errorf("subscriber %d moved from %s to %s on a re-plan", id, was, after[id])
			}
		}
		if after[21] != "c" || after[22] != "a" || after[23] != "b" {
			t.Errorf("new subscribers 21-23 on %s %s %s, want c a b (least loaded)", after[21], after[22], after[23])
		}
	})

	t.Run("an added instance takes only a share", func(t *testing.T) {
		apply(t, st, "grow", scaleNode([]model.BNGInstance{inst("a", 100), inst("b", 100)}, 30))
		before := placedOn(t, st, "grow")
		a := apply(t, st, "grow", scaleNode([]model.BNGInstance{inst("a", 100), inst("b", 100), inst("c", 100)}, 30))
		np := a.Plan.Nodes[0]
		if got := load(np.Placement); got["a"] != 10 || got["b"] != 10 || got["c"] != 10 {
			t.Fatalf("after adding c: %v, want 10 each (the fair share)", got)
		}
		if len(np.Moves) != 10 || np.Counts["update"] != 10 || np.Counts["add"] != 1 || len(np.Counts) != 2 {
			t.Fatalf("moves %v counts %v: want 10 moves, 10 subscriber updates and the instance added", np.Moves, np.Counts)
		}
		for _, ch := range np.Changes {
			if (ch.Kind != model.ChangeKindSubscriber || ch.Op != model.ChangeOpUpdate) && (ch.Kind != model.ChangeKindInstance || ch.Key != "c") {
				t.Errorf("change %+v: only the moved subscribers and instance c should change", ch)
			}
		}
		moved := map[int64]bool{}
		for _, m := range np.Moves {
			if m.To != "c" || before[m.Id] != m.From {
				t.Errorf("move %+v: want from its old instance (%s) to c", m, before[m.Id])
			}
			moved[m.Id] = true
		}
		after := placedOn(t, st, "grow")
		for id, was := range before {
			if !moved[id] && after[id] != was {
				t.Errorf("subscriber %d not in the moves but on %s (was %s)", id, after[id], was)
			}
		}
	})

	t.Run("budget exhausted", func(t *testing.T) {
		_, err := st.Apply(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{
			"budget": scaleNode([]model.BNGInstance{inst("a", 5), inst("b", 5)}, 11)}})
		if !errors.Is(err, controller.ErrBadChange) || !strings.Contains(err.Error(), "budget exhausted: 11 subscribers, the instances' budgets hold 10") {
			t.Fatalf("11 subscribers on budgets of 5+5: %v", err)
		}
		if _, err := st.Node(ctx, "budget"); !errors.Is(err, controller.ErrNotFound) {
			t.Fatalf("a refused change stored the node: %v", err)
		}
	})

	t.Run("pool exhausted", func(t *testing.T) {
		// Subscribers 1-3 are 198.18.0.1-3: only a's pool holds them.
		cfg := scaleNode([]model.BNGInstance{inst("a", 2, "198.18.0.0/24"), inst("b", 10, "198.18.1.0/24")}, 3)
		_, err := st.Plan(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{"pool": cfg}})
		if !errors.Is(err, controller.ErrBadChange) ||
			!strings.Contains(err.Error(), "pool exhausted: subscriber 3 (198.18.0.3): the instances whose pools hold its addresses (a) are at their budgets") {
			t.Fatalf("three subscribers for a pool of an instance of budget 2: %v", err)
		}
		cfg.Bng.Subscribers[2].Ipv4 = []string{"198.18.9.3"}
		_, err = st.Plan(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{"pool": cfg}})
		if !errors.Is(err, controller.ErrBadChange) || !strings.Contains(err.Error(), "subscriber 3: no instance's pool holds its addresses (198.18.9.3)") {
			t.Fatalf("an address outside every pool: %v", err)
		}
		cfg.Bng.Subscribers[2].Ipv4 = []string{"198.18.1.3"}
		p, err := st.Plan(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{"pool": cfg}})
		if err != nil || load(p.Nodes[0].Placement)["b"] != 1 {
			t.Fatalf("198.18.1.3 belongs on b: %v %+v", err, p)
		}
	})

	t.Run("a removed instance's subscribers are placed again", func(t *testing.T) {
		apply(t, st, "shrink", scaleNode([]model.BNGInstance{inst("a", 100), inst("b", 100), inst("c", 100)}, 30))
		before := placedOn(t, st, "shrink")
		a := apply(t, st, "shrink", scaleNode([]model.BNGInstance{inst("a", 100), inst("b", 100)}, 30))
		np := a.Plan.Nodes[0]
		if got := load(np.Placement); got["a"] != 15 || got["b"] != 15 || len(got) != 2 {
			t.Fatalf("after removing c: %v, want a 15, b 15", got)
		}
		if len(np.Moves) != 10 {
			t.Fatalf("moves %v: want c's 10", np.Moves)
		}
		for _, m := range np.Moves {
			if m.From != "c" {
				t.Errorf("move %+v: only c's subscribers should move", m)
			}
		}
		after := placedOn(t, st, "shrink")
		for id, was := range before {
			if was != "c" && after[id] != was {
				t.Errorf("subscriber %d of %s moved to %s", id, was, after[id])
			}
		}
	})

	t.Run("subport budgets", func(t *testing.T) {
		a, b := inst("a", 10), inst("b", 10)
		a.Subports = []model.SubportBudget{{Subport: 0, MaxSubscribers: 1}, {Subport: 1, MaxSubscribers: 1}}
		b.Subports = []model.SubportBudget{{Subport: 0, MaxSubscribers: 10}}
		cfg := scaleNode([]model.BNGInstance{a, b}, 4)
		for i, sp := range []int{0, 0, 1, 0} {
			cfg.Bng.Subscribers[i].Subport = sp
		}
		apply(t, st, "subports", cfg)
		on := placedOn(t, st, "subports")
		if on[1] != "a" || on[2] != "b" || on[3] != "a" || on[4] != "b" {
			t.Fatalf("placed %v: want 1 a, 2 b (a's subport 0 is full), 3 a (only a takes subport 1), 4 b", on)
		}
		cfg = scaleNode([]model.BNGInstance{a, b}, 5)
		for i, sp := range []int{0, 0, 1, 0, 1} {
			cfg.Bng.Subscribers[i].Subport = sp
		}
		_, err := st.Plan(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{"subports": cfg}})
		if !errors.Is(err, controller.ErrBadChange) ||
			!strings.Contains(err.Error(), "subport exhausted: subscriber 5 (subport 1): the instances that serve it (a) are at that subport's budget") {
			t.Fatalf("a second subscriber of subport 1: %v", err)
		}
	})

	t.Run("a pinned subscriber stays and counts", func(t *testing.T) {
		cfg := scaleNode([]model.BNGInstance{inst("a", 2), inst("b", 10)}, 4)
		cfg.Bng.Subscribers[3].Instance = "a"
		a := apply(t, st, "pinned", cfg)
		on := placedOn(t, st, "pinned")
		if on[4] != "a" || load(a.Plan.Nodes[0].Placement)["a"] != 2 {
			t.Fatalf("subscriber 4 pinned to a: on %v, placement %+v", on, a.Plan.Nodes[0].Placement)
		}
		cfg.Bng.Subscribers[0].Instance, cfg.Bng.Subscribers[1].Instance = "a", "a"
		if _, err := st.Plan(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{"pinned": cfg}}); err == nil ||
			!strings.Contains(err.Error(), `budget exhausted: instance "a" has maxSubscribers 2`) {
			t.Fatalf("three pinned to a budget of 2: %v", err)
		}
	})
}
