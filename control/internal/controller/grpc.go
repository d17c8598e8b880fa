package controller

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"edgeplane/control/internal/apispec"
	"edgeplane/control/model"
	"edgeplane/control/model/pb"
)

// The gRPC northbound (model/edgeplane.proto): the same operations on the
// same Store as the REST one. A request message becomes the JSON of its
// schema (field JSON names are the schema's properties) and is checked
// against openapi.yaml like a REST body before anything looks at it; an
// answer is the model's JSON read into the message. It is served on the
// REST listener (HTTP/2, content type application/grpc), behind the same
// token, audit log and recovery (api.Protect).

type grpcServer struct {
	pb.UnimplementedControllerServer
	st *Store
}

// GRPC is the controller's gRPC service on st.
func GRPC(st *Store) *grpc.Server {
	s := grpc.NewServer(grpc.MaxRecvMsgSize(MaxBody), grpc.MaxSendMsgSize(MaxBody))
	pb.RegisterControllerServer(s, &grpcServer{st: st})
	return s
}

// withGRPC sends gRPC requests (HTTP/2, application/grpc) to g and the
// rest to h.
func withGRPC(g *grpc.Server, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			g.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Protocols are the northbound server's: HTTP/1.1 for REST, HTTP/2
// without TLS (prior knowledge, as gRPC clients speak it) for gRPC.
func Protocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}

// fromProto decodes m as the schema named: its populated fields as JSON
// (numbers as numbers, where protojson would quote 64-bit ones), and the
// zero of a field proto3 cannot tell from absent when the schema requires
// it (a rollback to revision 0), checked against the document, into v.
func fromProto(m proto.Message, schema string, v any) error {
	doc := messageJSON(m.ProtoReflect(), model.Schema(schema))
	if err := model.CheckJSON(schema, doc); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	b, _ := json.Marshal(doc)
	if err := json.Unmarshal(b, v); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return nil
}

func messageJSON(m protoreflect.Message, s *openapi3.Schema) map[string]any {
	out := map[string]any{}
	prop := func(name string) *openapi3.Schema {
		if s != nil && s.Properties[name] != nil {
			return s.Properties[name].Value
		}
		return nil
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := prop(fd.JSONName())
		switch {
		case fd.IsList():
			var item *openapi3.Schema
			if p != nil && p.Items != nil {
				item = p.Items.Value
			}
			l := v.List()
			a := make([]any, l.Len())
			for i := range a {
				a[i] = valueJSON(fd, l.Get(i), item)
			}
			out[fd.JSONName()] = a
		case fd.IsMap():
			var val *openapi3.Schema
			if p != nil && p.AdditionalProperties.Schema != nil {
				val = p.AdditionalProperties.Schema.Value
			}
			mm := map[string]any{}
			v.Map().Range(func(k protoreflect.MapKey, x protoreflect.Value) bool {
				mm[k.String()] = valueJSON(fd.MapValue(), x, val)
				return true
			})
			out[fd.JSONName()] = mm
		default:
			out[fd.JSONName()] = valueJSON(fd, v, p)
		}
		return true
	})
	if s != nil {
		fields := m.Descriptor().Fields()
		for _, name := range s.Required {
			fd := fields.ByJSONName(name)
			if _, set := out[name]; !set && fd != nil && !fd.HasPresence() && fd.Kind() != protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() {
				out[name] = m.Get(fd).Interface()
			}
		}
	}
	return out
}

func valueJSON(fd protoreflect.FieldDescriptor, v protoreflect.Value, s *openapi3.Schema) any {
	if fd.Kind() == protoreflect.MessageKind {
		return messageJSON(v.Message(), s)
	}
	return v.Interface() // string, bool, int32/int64 (JSON numbers), ...
}

// toProto reads the model's JSON of v into a new message.
func toProto[M proto.Message](v any, m M) (M, error) {
	b, err := json.Marshal(v)
	if err == nil {
		err = protojson.Unmarshal(b, m)
	}
	if err != nil {
		slog.Error("grpc: answer does not fit its message", "err", err)
		return m, status.Error(codes.Internal, "answer encoding: "+err.Error())
	}
	return m, nil
}

// grpcError is a store error's status (the REST answer's, as a code).
func grpcError(err error) error {
	switch {
	case errors.Is(err, ErrBadChange):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrConflict):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrCompacted):
		return status.Error(codes.OutOfRange, err.Error())
	}
	return status.Error(codes.Unavailable, "the desired state store (etcd) did not answer: "+err.Error())
}

// checkNode refuses a node name outside the grammar (it names nothing),
// as the REST path parameter's check does.
func checkNode(n string) error {
	if err := apispec.Check(model.Schema("NodeName"), n); err != nil {
		return status.Errorf(codes.NotFound, "no node %q: %v", n, err)
	}
	return nil
}

func (g *grpcServer) GetState(ctx context.Context, _ *pb.GetStateRequest) (*pb.DesiredState, error) {
	st, err := g.st.State(ctx)
	if err != nil {
		return nil, grpcError(err)
	}
	return toProto(st, &pb.DesiredState{})
}

func (g *grpcServer) GetNode(ctx context.Context, r *pb.GetNodeRequest) (*pb.NodeDesired, error) {
	if err := checkNode(r.Node); err != nil {
		return nil, err
	}
	d, err := g.st.Node(ctx, r.Node)
	if err != nil {
		return nil, grpcError(err)
	}
	return toProto(d, &pb.NodeDesired{})
}

func (g *grpcServer) GetNodeStatus(ctx context.Context, r *pb.GetNodeStatusRequest) (*pb.NodeStatus, error) {
	if err := checkNode(r.Node); err != nil {
		return nil, err
	}
	st, err := g.st.Status(ctx, r.Node)
	if err != nil {
		return nil, grpcError(err)
	}
	return toProto(st, &pb.NodeStatus{})
}

func (g *grpcServer) Plan(ctx context.Context, r *pb.ChangeRequest) (*pb.Plan, error) {
	var req model.ChangeRequest
	if err := fromProto(r, "ChangeRequest", &req); err != nil {
		return nil, err
	}
	p, err := g.st.Plan(ctx, req)
	if err != nil {
		return nil, grpcError(err)
	}
	return toProto(p, &pb.Plan{})
}

func (g *grpcServer) Apply(ctx context.Context, r *pb.ChangeRequest) (*pb.Applied, error) {
	var req model.ChangeRequest
	if err := fromProto(r, "ChangeRequest", &req); err != nil {
		return nil, err
	}
	a, err := g.st.Apply(ctx, req)
	if err != nil {
		return nil, grpcError(err)
	}
	return toProto(a, &pb.Applied{})
}

func (g *grpcServer) Rollback(ctx context.Context, r *pb.RollbackRequest) (*pb.Applied, error) {
	var req model.RollbackRequest
	if err := fromProto(r, "RollbackRequest", &req); err != nil {
		return nil, err
	}
	a, err := g.st.Rollback(ctx, req)
	if err != nil {
		return nil, grpcError(err)
	}
	return toProto(a, &pb.Applied{})
}

func (g *grpcServer) ListRevisions(ctx context.Context, r *pb.ListRevisionsRequest) (*pb.RevisionList, error) {
	if r.Limit != nil && *r.Limit < 0 {
		return nil, status.Error(codes.InvalidArgument, "limit: want a count")
	}
	l, err := g.st.Revisions(ctx, r.GetLimit())
	if err != nil {
		return nil, grpcError(err)
	}
	return toProto(l, &pb.RevisionList{})
}

func (g *grpcServer) Watch(_ *pb.WatchRequest, stream grpc.ServerStreamingServer[pb.WatchEvent]) error {
	err := g.st.Watch(stream.Context(), func(ev model.WatchEvent) error {
		m, err := toProto(ev, &pb.WatchEvent{})
		if err != nil {
			return err
		}
		return stream.Send(m)
	})
	if err != nil && stream.Context().Err() == nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return grpcError(err)
	}
	return nil
}
