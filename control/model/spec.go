// Package model is edgeplane's configuration model: one node's desired
// state (NodeConfig: router, BNG, UDP termination, XDP steering) and the
// controller's requests and answers. openapi.yaml is its one source: the
// Go types in types.gen.go are generated from it (go generate, the pinned
// oapi-codegen), the controller checks every request against its schemas,
// and Validate adds what a schema cannot say. The data-plane forms of the
// objects (the ACL rule text, a route's canonical prefix) are here too, so
// the controller's plan and the agent's reconciliation compare the same
// strings.
package model

import (
	_ "embed"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"edgeplane/control/internal/apispec"
)

// Document is the OpenAPI 3 document, as the controller serves it at GET
// /openapi.yaml.
//
//go:embed openapi.yaml
var Document []byte

var doc = load()

// The document's string formats, defined as the model parses them
// (net/netip); kin-openapi validates only the formats it is given.
func defineFormats() {
	def := func(name string, f func(string) error) {
		openapi3.DefineStringFormatValidator(name, openapi3.NewCallbackValidator(f))
	}
	def("ip", func(s string) error {
		if a, err := netip.ParseAddr(s); err != nil || a.Zone() != "" || a.Is4In6() {
			return errors.New("not an IPv4 or IPv6 address")
		}
		return nil
	})
	def("cidr", func(s string) error {
		_, err := ParsePrefix(s)
		return err
	})
	def("cidr-or-ipv4", func(s string) error {
		p, err := parseV4OrPrefix(s)
		if err == nil && !p.Addr().Is4() {
			err = errors.New("not IPv4")
		}
		return err
	})
	def("ip-or-any", func(s string) error {
		if s == "any" {
			return nil
		}
		if a, err := netip.ParseAddr(s); err != nil || a.Zone() != "" {
			return errors.New("not an address or any")
		}
		return nil
	})
}

func load() *openapi3.T {
	defineFormats()
	return apispec.Load(Document, "model")
}

// Spec is the parsed document.
func Spec() *openapi3.T { return doc }

// Schema is components.schemas[name]; a name the document lacks is a
// programming error.
func Schema(name string) *openapi3.Schema { return apispec.SchemaIn(doc, name) }

// Operation is the operation at method and path template, or nil.
func Operation(method, path string) *openapi3.Operation {
	return apispec.OperationIn(doc, method, path)
}

// CheckJSON validates a decoded JSON value (encoding/json into any)
// against components.schemas[name]; the error names the field.
func CheckJSON(name string, v any) error { return apispec.Check(Schema(name), v) }

// ParsePrefix parses an address/length prefix with no host bits set, the
// form the data plane lists it in.
func ParsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, errors.New("not an address/length prefix")
	}
	if p.Addr().Zone() != "" || p.Addr().Is4In6() {
		return p, errors.New("an IPv4-mapped or zoned address is not a prefix here")
	}
	if m := p.Masked(); m != p {
		return p, fmt.Errorf("host bits set (the prefix is %s)", m)
	}
	return p, nil
}

// parseV4OrPrefix reads "a.b.c.d" as a /32 and "a.b.c.d/len" as a prefix.
func parseV4OrPrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, errors.New("not an address")
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return ParsePrefix(s)
}
