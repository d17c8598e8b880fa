package model

import (
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The model's reference in docs/control.md is written from openapi.yaml
// (control/cmd/model-docs, `make gen-control`) between these markers;
// TestDocsReferenceIsCurrent compares.
const (
	RefBegin = "<!-- model-reference: generated from control/model/openapi.yaml by `make gen-control` -->"
	RefEnd   = "<!-- model-reference: end -->"
)

// Reference is the Markdown reference of a node's configuration: one
// table per object, each field with its type, limits and description.
func Reference() string {
	var b strings.Builder
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		s := Schema(name)
		fmt.Fprintf(&b, "\n### %s\n\n", name)
		if s.Description != "" {
			fmt.Fprintf(&b, "%s.\n\n", strings.TrimSuffix(strings.TrimSpace(s.Description), "."))
		}
		b.WriteString("| field | type | required | |\n|---|---|---|---|\n")
		props := make([]string, 0, len(s.Properties))
		for p := range s.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		var next []string
		for _, p := range props {
			ref := s.Properties[p]
			typ, desc, child := describeField(ref)
			if child != "" {
				next = append(next, child)
			}
			req := ""
			for _, r := range s.Required {
				if r == p {
					req = "yes"
				}
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p, typ, req, desc)
		}
		for _, c := range next {
			walk(c)
		}
	}
	walk("NodeConfig")
	return b.String()
}

// Splice puts Reference between the markers of a document.
func Splice(doc string) (string, error) {
	i := strings.Index(doc, RefBegin)
	j := strings.Index(doc, RefEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q markers", RefBegin, RefEnd)
	}
	return doc[:i+len(RefBegin)] + "\n" + Reference() + "\n" + doc[j:], nil
}

func refName(r *openapi3.SchemaRef) string {
	if r == nil || r.Ref == "" {
		return ""
	}
	return r.Ref[strings.LastIndex(r.Ref, "/")+1:]
}

// describeField is a field's type (with its limits), description, and the
// object schema it names, if any.
func describeField(r *openapi3.SchemaRef) (typ, desc, child string) {
	s := r.Value
	name := refName(r)
	if s.Type.Is("object") && name != "" {
		return "[" + name + "](#" + strings.ToLower(name) + ")", oneLine(s.Description), name
	}
	if s.Type.Is("array") {
		it := s.Items
		t, d, c := describeField(it)
		lim := ""
		if s.MaxItems != nil {
			lim = fmt.Sprintf(", at most %d", *s.MaxItems)
		}
		if d == "" || c != "" {
			d = oneLine(s.Description)
		}
		return "list of " + t + lim, d, c
	}
	var t string
	switch {
	case len(s.Enum) > 0:
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
		t = strings.Join(vs, " or ")
	case s.Type.Is("integer"):
		t = "integer"
		if s.Min != nil && s.Max != nil {
			t += fmt.Sprintf(" %.0f..%.0f", *s.Min, *s.Max)
		}
	case s.Type.Is("string"):
		t = "string"
		if s.Format != "" {
			t += " (" + s.Format + ")"
		}
	default:
		t = strings.Join(s.Type.Slice(), ", ")
	}
	if name != "" && !s.Type.Is("object") {
		t += " (" + name + ")"
	}
	return t, oneLine(s.Description), ""
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", "\\|")
}
