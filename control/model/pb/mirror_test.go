package pb_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"edgeplane/control/model"
	"edgeplane/control/model/pb"
)

// TestProtoMirrorsTheOpenAPIDocument keeps edgeplane.proto and
// openapi.yaml from drifting: every message named like a schema has
// exactly its properties (as JSON names) with compatible types, the only
// other messages are the RPCs' request wrappers, and the RPCs are the
// document's operations (operationId, capitalised).
func TestProtoMirrorsTheOpenAPIDocument(t *testing.T) {
	fd := pb.File_edgeplane_proto
	schemas := model.Spec().Components.Schemas
	for i := 0; i < fd.Messages().Len(); i++ {
		m := fd.Messages().Get(i)
		name := string(m.Name())
		ref, ok := schemas[name]
		if !ok {
			if !strings.HasSuffix(name, "Request") {
				t.Errorf("message %s is not a schema of openapi.yaml", name)
			}
			continue
		}
		s := ref.Value
		var props, fields []string
		for p := range s.Properties {
			props = append(props, p)
		}
		for j := 0; j < m.Fields().Len(); j++ {
			f := m.Fields().Get(j)
			fields = append(fields, f.JSONName())
			if p := s.Properties[f.JSONName()]; p != nil {
				if why := mismatch(f, p); why != "" {
					t.Errorf("%s.%s: %s", name, f.JSONName(), why)
				}
			}
		}
		sort.Strings(props)
		sort.Strings(fields)
		if !slices.Equal(props, fields) {
			t.Errorf("%s: fields %v, schema properties %v", name, fields, props)
		}
	}
	var ops, rpcs []string
	for _, item := range model.Spec().Paths.Map() {
		for _, op := range item.Operations() {
			ops = append(ops, strings.ToUpper(op.OperationID[:1])+op.OperationID[1:])
		}
	}
	svc := fd.Services().Get(0)
	for i := 0; i < svc.Methods().Len(); i++ {
		rpcs = append(rpcs, string(svc.Methods().Get(i).Name()))
	}
	sort.Strings(ops)
	sort.Strings(rpcs)
	if !slices.Equal(ops, rpcs) {
		t.Errorf("RPCs %v, operations %v", rpcs, ops)
	}
}

func mismatch(f protoreflect.FieldDescriptor, ref *openapi3.SchemaRef) string {
	s := ref.Value
	switch {
	case f.IsMap():
		if !s.Type.Is("object") || s.AdditionalProperties.Schema == nil {
			return "a map, the schema's is not an object of named values"
		}
		return mismatch(f.MapValue(), s.AdditionalProperties.Schema)
	case f.IsList():
		if !s.Type.Is("array") {
			return "repeated, the schema's is not an array"
		}
		return kind(f, s.Items)
	}
	return kind(f, ref)
}

// kind compares one value: a message with the schema it is named after,
// a scalar with the schema's type (64-bit where the schema allows more
// than 32 bits).
func kind(f protoreflect.FieldDescriptor, ref *openapi3.SchemaRef) string {
	s := ref.Value
	switch f.Kind() {
	case protoreflect.MessageKind:
		if !strings.HasSuffix(ref.Ref, "/"+string(f.Message().Name())) {
			return "message " + string(f.Message().Name()) + ", schema " + ref.Ref
		}
	case protoreflect.StringKind:
		if !s.Type.Is("string") {
			return "string, schema " + s.Type.Slice()[0]
		}
	case protoreflect.BoolKind:
		if !s.Type.Is("boolean") {
			return "bool, schema not boolean"
		}
	case protoreflect.Int32Kind:
		if !s.Type.Is("integer") || s.Format == "int64" || s.Max != nil && *s.Max > 1<<31-1 {
			return "int32, the schema's integer needs 64 bits"
		}
	case protoreflect.Int64Kind:
		if !s.Type.Is("integer") {
			return "int64, schema not integer"
		}
	default:
		return "kind " + f.Kind().String() + " has no schema type"
	}
	return ""
}
