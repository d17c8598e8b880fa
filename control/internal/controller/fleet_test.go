package controller_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/etcdtest"
	"edgeplane/control/model"
)

func TestFleetReportShowsEachNodesConvergence(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t, etcdtest.Embedded(t))
	st := controller.NewStore(cli)
	route := func(p string) model.NodeConfig {
		return model.NodeConfig{ApiVersion: "edgeplane/v1",
			Router: &model.RouterConfig{Routes: []model.Route{{Prefix: p, Via: "198.18.1.2"}}}}
	}
	a, err := st.Apply(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{
		"edge1": route("198.18.64.0/24"), "edge2": route("198.18.65.0/24"), "edge3": route("198.18.66.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	// edge2 changes again: its agent, still at the first revision, has
	// not converged to it.
	b, err := st.Apply(ctx, model.ChangeRequest{Nodes: map[string]model.NodeConfig{
		"edge1": route("198.18.64.0/24"), "edge2": route("198.18.67.0/24"), "edge3": route("198.18.66.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	// The agents' reports as they write them (edge3's agent is silent).
	for node, rev := range map[string]int64{"edge1": a.Revision, "edge2": a.Revision} {
		v, _ := json.Marshal(model.NodeStatus{Node: node, ObservedRevision: rev, Converged: true,
			Resyncs: map[string]int64{"start": 1}, Updated: time.Now().UTC()})
		if _, err := cli.Put(ctx, controller.StatusKey(node), string(v)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := st.Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Type != "fleet" || rep.Revision != b.Revision || len(rep.Nodes) != 3 || rep.Converged != 1 {
		t.Fatalf("report %+v", rep)
	}
	want := []controller.FleetNode{
		{Node: "edge1", DesiredRevision: a.Revision, ObservedRevision: a.Revision, Reporting: true, Converged: true},
		{Node: "edge2", DesiredRevision: b.Revision, ObservedRevision: a.Revision, Reporting: true},
		{Node: "edge3", DesiredRevision: a.Revision},
	}
	for i, w := range want {
		got := rep.Nodes[i]
		got.Updated = nil
		if got != w {
			t.Fatalf("node %d: %+v, want %+v", i, got, w)
		}
	}
}
