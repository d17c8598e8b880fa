package controller_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"edgeplane/control/internal/api"
	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/etcdtest"
	"edgeplane/control/model/pb"
)

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

// grpcClients serves the controller's Handler (REST and gRPC on one
// listener, HTTP/2 without TLS) behind a token, and dials it with grpc-go
// twice: with the token and with a wrong one.
func grpcClients(t *testing.T) (good, wrong pb.ControllerClient) {
	t.Helper()
	st := controller.NewStore(etcdtest.Client(t, etcdtest.Embedded(t)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := api.NewServer(controller.Handler(st, api.Options{Token: []byte("t0ken-of-the-test")}), 0)
	srv.Protocols = controller.Protocols()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dial := func(token string) pb.ControllerClient {
		conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(bearer(token)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return pb.NewControllerClient(conn)
	}
	return dial("t0ken-of-the-test"), dial("not-the-token")
}

// TestGRPCNorthboundDoesWhatRESTDoes: apply, plan, get, status, revisions,
// rollback and watch through a real grpc-go client on the REST listener;
// the answers are the REST ones as messages, a refused change names its
// field, a wrong token is refused.
func TestGRPCNorthboundDoesWhatRESTDoes(t *testing.T) {
	c, wrong := grpcClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node := &pb.NodeConfig{ApiVersion: "edgeplane/v1",
		Bng: &pb.BNGConfig{
			Policers: []*pb.Policer{{Name: "gold-up", Mode: "rfc2698", Cir: 10000000, Cbs: 65536, Pir: 300000000000, Pbs: 131072}},
			Subscribers: []*pb.Subscriber{{Id: 1, STag: 100, CTag: 200, Mac: "02:00:00:10:00:00",
				Ipv4: []string{"198.18.200.10"}, Policer: "gold-up"}}},
		Steering: &pb.SteeringConfig{Intents: []*pb.SteeringIntent{{Name: "voice", Teid: proto.Int64(0),
			Proto: proto.String("udp"), DstPort: proto.Int32(5060)}}}}

	if _, err := wrong.GetState(ctx, &pb.GetStateRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong token: %v", err)
	}
	w, err := c.Watch(ctx, &pb.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := w.Recv(); err != nil || ev.Kind != "synced" {
		t.Fatalf("watch's first event %v %v, want synced", ev, err)
	}

	p, err := c.Plan(ctx, &pb.ChangeRequest{Nodes: map[string]*pb.NodeConfig{"edge1": node}})
	if err != nil || p.Nodes[0].Counts["add"] != 6 {
		t.Fatalf("plan %v %v", p, err)
	}
	a, err := c.Apply(ctx, &pb.ChangeRequest{Nodes: map[string]*pb.NodeConfig{"edge1": node}, Comment: "first"})
	if err != nil || a.Revision != 1 {
		t.Fatalf("apply %v %v", a, err)
	}
	if ev, err := w.Recv(); err != nil || ev.Kind != "put" || ev.Node != "edge1" || ev.Config.Bng.Policers[0].Pir != 300000000000 {
		t.Fatalf("watch event %v %v", ev, err)
	}
	d, err := c.GetNode(ctx, &pb.GetNodeRequest{Node: "edge1"})
	// A 64-bit rate, an explicit zero (teid 0) and a subscriber come back as sent.
	if err != nil || d.Revision != 1 || d.Config.Steering.Intents[0].Teid == nil || *d.Config.Steering.Intents[0].Teid != 0 ||
		!proto.Equal(d.Config, node) {
		t.Fatalf("node %v %v", d, err)
	}

	bad := proto.Clone(node).(*pb.NodeConfig)
	bad.Bng.Subscribers[0].Policer = "silver"
	_, err = c.Apply(ctx, &pb.ChangeRequest{Nodes: map[string]*pb.NodeConfig{"edge1": bad}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "nodes.edge1.bng.subscribers[0].policer") {
		t.Fatalf("refused change: %v", err)
	}
	bad = proto.Clone(node).(*pb.NodeConfig)
	bad.Bng.Subscribers[0].STag = 5000
	_, err = c.Apply(ctx, &pb.ChangeRequest{Nodes: map[string]*pb.NodeConfig{"edge1": bad}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "sTag") {
		t.Fatalf("schema refusal: %v", err)
	}
	if _, err := c.Apply(ctx, &pb.ChangeRequest{Nodes: map[string]*pb.NodeConfig{"edge1": node}, ExpectedRevision: proto.Int64(0)}); status.Code(err) != codes.Aborted {
		t.Fatalf("stale expectedRevision: %v", err)
	}
	if _, err := c.GetNodeStatus(ctx, &pb.GetNodeStatusRequest{Node: "edge1"}); status.Code(err) != codes.NotFound {
		t.Fatalf("status of a node no agent reports: %v", err)
	}

	r, err := c.Rollback(ctx, &pb.RollbackRequest{Revision: 0, Comment: "undo"})
	if err != nil || r.Revision != 2 || r.Plan.Nodes[0].Counts["remove"] != 6 {
		t.Fatalf("rollback %v %v", r, err)
	}
	l, err := c.ListRevisions(ctx, &pb.ListRevisionsRequest{})
	if err != nil || l.Current != 2 || len(l.Revisions) != 2 || l.Revisions[0].RollbackOf == nil || l.Revisions[1].Comment != "first" {
		t.Fatalf("revisions %v %v", l, err)
	}
	s, err := c.GetState(ctx, &pb.GetStateRequest{})
	if err != nil || s.Revision != 2 || len(s.Nodes) != 0 {
		t.Fatalf("state %v %v", s, err)
	}
}
