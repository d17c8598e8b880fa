// Package apispec is the agent API's contract: the OpenAPI document and the
// validation derived from it. The document is the one source of the API's
// syntax (types, required fields, patterns, enums, lengths, unknown
// fields): the REST handlers check every request body and path parameter
// against it, and the intent and alternative-node parsers check their
// documents against the same schemas, so the server cannot accept what the
// document refuses. The semantics a schema cannot state (a VNI above 2^24 -
// 1, a field given twice, a flow hash that does not match) stay in those
// parsers; the tests check the constants they share with the document.
package apispec

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Document is the OpenAPI 3 document, as served at GET /openapi.yaml.
//
//go:embed openapi.yaml
var Document []byte

var doc = load()

// The document's string formats, defined as the agent parses addresses
// (net/netip): kin-openapi validates only formats it is given.
func defineFormats() {
	openapi3.DefineStringFormatValidator("ipv4", openapi3.NewCallbackValidator(func(s string) error {
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			return errors.New("not an IPv4 address")
		}
		return nil
	}))
	openapi3.DefineStringFormatValidator("ipv6", openapi3.NewCallbackValidator(func(s string) error {
		if a, err := netip.ParseAddr(s); err != nil || !a.Is6() || a.Zone() != "" {
			return errors.New("not an IPv6 address without a zone")
		}
		return nil
	}))
}

func load() *openapi3.T {
	defineFormats()
	return Load(Document, "apispec")
}

// Load parses and validates an embedded OpenAPI document (this package's
// or the configuration model's); an invalid one is a programming error,
// reported with who's name.
func Load(data []byte, who string) *openapi3.T {
	l := openapi3.NewLoader()
	d, err := l.LoadFromData(data)
	if err == nil {
		err = d.Validate(l.Context)
	}
	if err != nil {
		panic(fmt.Sprintf("%s: openapi.yaml: %v", who, err))
	}
	return d
}

// Spec returns the parsed document (tests walk it).
func Spec() *openapi3.T { return doc }

// Schema returns components.schemas[name]; a name the document lacks is a
// programming error.
func Schema(name string) *openapi3.Schema { return SchemaIn(doc, name) }

// SchemaIn is Schema in another document.
func SchemaIn(doc *openapi3.T, name string) *openapi3.Schema {
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		panic("openapi.yaml: no schema " + name)
	}
	return ref.Value
}

// Operation returns the operation at method and path template ("GET",
// "/v1/intents/{id}"), or nil.
func Operation(method, path string) *openapi3.Operation { return OperationIn(doc, method, path) }

// OperationIn is Operation in another document (the controller's).
func OperationIn(doc *openapi3.T, method, path string) *openapi3.Operation {
	item := doc.Paths.Find(path)
	if item == nil {
		return nil
	}
	return item.GetOperation(strings.ToUpper(method))
}

// RequestSchema is op's application/json request body schema, or nil.
func RequestSchema(op *openapi3.Operation) *openapi3.Schema {
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}

// PathParameters are op's path parameters (and its path item's), by name.
func PathParameters(path string, op *openapi3.Operation) map[string]*openapi3.Schema {
	return PathParametersIn(doc, path, op)
}

// PathParametersIn is PathParameters in another document.
func PathParametersIn(doc *openapi3.T, path string, op *openapi3.Operation) map[string]*openapi3.Schema {
	out := map[string]*openapi3.Schema{}
	var params openapi3.Parameters
	if item := doc.Paths.Find(path); item != nil {
		params = append(params, item.Parameters...)
	}
	if op != nil {
		params = append(params, op.Parameters...)
	}
	for _, p := range params {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath && p.Value.Schema != nil {
			out[p.Value.Name] = p.Value.Schema.Value
		}
	}
	return out
}

// Invalid is a value the document refuses: where, and why.
type Invalid struct {
	Path   string // "altNodes[0].mac"; empty for the whole value
	Reason string
}

func (e *Invalid) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Decode parses a JSON document as the schemas see it: one value, nothing
// after it.
func Decode(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Check validates v (a value as encoding/json decodes into any) against s.
// The error is an *Invalid naming the field in the request's own terms.
func Check(s *openapi3.Schema, v any) error {
	err := s.VisitJSON(v, openapi3.VisitAsRequest(), openapi3.EnableFormatValidation())
	if err == nil {
		return nil
	}
	return explain(s, v, err, nil)
}

// CheckResponse validates an answer the agent sent (tests).
func CheckResponse(s *openapi3.Schema, v any) error {
	err := s.VisitJSON(v, openapi3.VisitAsResponse(), openapi3.EnableFormatValidation())
	if err == nil {
		return nil
	}
	return explain(s, v, err, nil)
}

// ResponseSchema is the schema of op's answer with status code and media
// type mt; ok is false when the document does not list that answer.
func ResponseSchema(op *openapi3.Operation, code int, mt string) (s *openapi3.Schema, ok bool) {
	r := op.Responses.Status(code)
	if r == nil || r.Value == nil {
		return nil, false
	}
	if len(r.Value.Content) == 0 {
		return nil, mt == ""
	}
	c := r.Value.Content.Get(mt)
	if c == nil {
		return nil, false
	}
	if c.Schema == nil {
		return nil, true
	}
	return c.Schema.Value, true
}

// CheckNamed validates v against components.schemas[name].
func CheckNamed(name string, v any) error { return Check(Schema(name), v) }

// explain turns a kin-openapi error into an *Invalid. A oneOf that no
// branch matches is explained by the branch the value was meant for, the
// one whose required properties it has (a DPPnApp intent has Resources, a MEC
// TrafficRule trafficRuleId, a batch intents).
func explain(root *openapi3.Schema, v any, err error, prefix []string) error {
	var se *openapi3.SchemaError
	if !errors.As(err, &se) {
		return &Invalid{Path: joinPath(prefix), Reason: err.Error()}
	}
	path := append(append([]string(nil), prefix...), se.JSONPointer()...)
	s := se.Schema
	switch se.SchemaField {
	case "oneOf":
		if obj, ok := se.Value.(map[string]any); ok && s != nil {
			if b := branchFor(s.OneOf, obj); b != nil {
				if berr := b.VisitJSON(obj, openapi3.VisitAsRequest(), openapi3.EnableFormatValidation()); berr != nil {
					return explain(b, obj, berr, path)
				}
			}
			return &Invalid{Path: joinPath(path), Reason: "matches none of the accepted documents: " + alternatives(s.OneOf)}
		}
		if s != nil && objects(s.OneOf) {
			return &Invalid{Path: joinPath(path), Reason: "want a JSON object: " + alternatives(s.OneOf)}
		}
		return &Invalid{Path: joinPath(path), Reason: want(s, se.Value, "")}
	case "anyOf":
		// Report a bad property before the alternatives the object fails
		// as a whole (an alternative node's empty MAC before its missing
		// address).
		if obj, ok := se.Value.(map[string]any); ok && s != nil {
			bare := *s
			bare.AnyOf = nil
			if berr := bare.VisitJSON(obj, openapi3.VisitAsRequest(), openapi3.EnableFormatValidation()); berr != nil {
				return explain(&bare, obj, berr, path)
			}
		}
		return &Invalid{Path: joinPath(path), Reason: want(s, se.Value, se.Reason)}
	case "pattern", "format", "not":
		return &Invalid{Path: joinPath(path), Reason: want(s, se.Value, se.Reason)}
	case "required":
		return &Invalid{Path: joinPath(path), Reason: "required, missing"}
	case "nullable":
		return &Invalid{Path: joinPath(path), Reason: "must not be null"}
	}
	reason := se.Reason
	if reason == "" {
		reason = "does not match " + se.SchemaField
	}
	if s != nil && s.Description != "" {
		reason += " (" + firstParagraph(s.Description) + ")"
	}
	if scalar(se.Value) {
		reason += ", got " + quote(se.Value)
	}
	return &Invalid{Path: joinPath(path), Reason: reason}
}

// branchFor picks the one branch whose required properties obj has.
func branchFor(branches openapi3.SchemaRefs, obj map[string]any) *openapi3.Schema {
	var found *openapi3.Schema
	for _, b := range branches {
		if b.Value == nil || len(b.Value.Required) == 0 {
			continue
		}
		all := true
		for _, r := range b.Value.Required {
			if _, ok := obj[r]; !ok {
				all = false
			}
		}
		if all {
			if found != nil {
				return nil
			}
			found = b.Value
		}
	}
	return found
}

func objects(branches openapi3.SchemaRefs) bool {
	for _, b := range branches {
		if b.Value == nil || !b.Value.Type.Is("object") {
			return false
		}
	}
	return true
}

func alternatives(branches openapi3.SchemaRefs) string {
	var names []string
	for _, b := range branches {
		n := b.Ref[strings.LastIndex(b.Ref, "/")+1:]
		if b.Value != nil && len(b.Value.Required) > 0 {
			n += " {" + strings.Join(b.Value.Required, ", ") + ", ...}"
		}
		names = append(names, n)
	}
	return strings.Join(names, " or ")
}

// want says what a value should have been: the schema's description when
// it has one, else the validator's reason.
func want(s *openapi3.Schema, v any, reason string) string {
	w := reason
	if s != nil && s.Description != "" {
		w = "want " + firstParagraph(s.Description)
	} else if w == "" && s != nil {
		var alts []string
		for _, b := range append(s.OneOf, s.AnyOf...) {
			if b.Value != nil {
				alts = append(alts, describe(b))
			}
		}
		w = "want " + strings.Join(alts, " or ")
	}
	if scalar(v) {
		w += ", got " + quote(v)
	}
	return strings.Join(strings.Fields(w), " ")
}

func describe(ref *openapi3.SchemaRef) string {
	s := ref.Value
	switch {
	case s.Description != "":
		return firstParagraph(s.Description)
	case ref.Ref != "":
		return "a " + ref.Ref[strings.LastIndex(ref.Ref, "/")+1:]
	}
	t := "a value"
	if s.Type != nil && len(s.Type.Slice()) > 0 {
		t = s.Type.Slice()[0]
		t = map[bool]string{true: "an ", false: "a "}[strings.ContainsAny(t[:1], "aeiou")] + t
	}
	switch {
	case s.Pattern != "":
		t += " matching " + s.Pattern
	case s.Min != nil && s.Max != nil:
		t += fmt.Sprintf(" %g..%g", *s.Min, *s.Max)
	}
	return t
}

// firstParagraph is a description's first paragraph, starting lower case
// (it follows "want").
func firstParagraph(d string) string {
	d = strings.TrimSpace(strings.SplitN(d, "\n\n", 2)[0])
	return strings.ToLower(d[:1]) + d[1:]
}

func scalar(v any) bool {
	switch v.(type) {
	case string, float64, bool, nil, json.Number:
		return true
	}
	return false
}

// quote shows a refused value, cut to 64 bytes: the reason echoes what
// was sent without echoing a megabyte of it.
func quote(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 64 {
		return string(b[:61]) + "..."
	}
	return string(b)
}

func joinPath(p []string) string {
	var sb strings.Builder
	for _, seg := range p {
		if seg != "" && strings.Trim(seg, "0123456789") == "" {
			sb.WriteString("[" + seg + "]")
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(seg)
	}
	return sb.String()
}
