// Package intent turns northbound intents (the DPPnApp intent messages of
// the XDP steering paper, docs/xdp-steering.md, and
// ETSI MEC 011 TrafficRules) into steering rules, validates a whole change
// as a plan without side effects, and applies it to the XDP maps, rolling
// back on failure: an intent is applied whole or not at all.
package intent

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"edgeplane/control/internal/apispec"
	"edgeplane/control/internal/steer"
)

// Error is a refusal with the HTTP status the API answers with.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

func badRequest(format string, a ...any) error { return &Error{400, fmt.Sprintf(format, a...)} }
func conflict(format string, a ...any) error   { return &Error{409, fmt.Sprintf(format, a...)} }
func notFound(format string, a ...any) error   { return &Error{404, fmt.Sprintf(format, a...)} }

// Rule is one prioritised flow: the key fields it names and where its
// packets go.
type Rule struct {
	Resources []string  // resource ids (DPPnApp) or the filter index (MEC)
	Key       steer.Key // only the fields in Fields are set
	Fields    steer.Fields
	CPU       uint32 // target CPU, steer.NoCPU for none (XDP_PASS)
	Active    bool
}

// Hash is the prio_map key of the rule (the paper's flow_hash).
func (r Rule) Hash() uint32 { return steer.RuleHash(r.Key, r.Fields) }

// Intent is a parsed northbound document.
type Intent struct {
	ID        string          `json:"id"`
	Format    string          `json:"format"` // "dppnapp" or "mec011"
	Interface string          `json:"interfaceName,omitempty"`
	Rules     []Rule          `json:"-"`
	Doc       json.RawMessage `json:"document"` // as received
}

// value reads a JSON string or number as a string. A number is read as
// the schema reads it: 5004, 5004.0 and 5.004e3 are the integer 5004.
func value(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.TrimSpace(s), nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return n.String(), nil
	}
	return "", fmt.Errorf("%s is neither a string nor a number", string(raw))
}

func parseUint(s string, bits int, hexDefault bool) (uint64, error) {
	base := 10
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s, base = s[2:], 16
	} else if hexDefault {
		base = 16
	}
	return strconv.ParseUint(s, base, bits)
}

// setter applies one named field to a rule, refusing a second, different
// value for the same field.
type setter struct{ r *Rule }

func (s setter) set(f steer.Fields, what string, apply func()) error {
	before := s.r.Key
	apply()
	if s.r.Fields&f != 0 && before != s.r.Key {
		return badRequest("%s given twice with different values", what)
	}
	s.r.Fields |= f
	return nil
}

func (s setter) vni(v string) error {
	n, err := parseUint(v, 32, false)
	if err != nil || n == 0 || n > 0xffffff {
		return badRequest("VXLAN VNI %q: want 1..16777215 (24 bits, RFC 7348)", v)
	}
	return s.set(steer.FieldVNI, "VXLAN VNI", func() { s.r.Key.VNI = uint32(n) })
}

// teid reads a TEID as the paper writes it: hexadecimal ("8894D0D4"), or
// decimal when it came as a JSON number (jsonNumber).
func (s setter) teid(v string, jsonNumber bool) error {
	n, err := parseUint(v, 32, !jsonNumber)
	if err != nil || n == 0 {
		return badRequest("GTP-U TEID %q: want a non-zero 32-bit value, hexadecimal as in the DPPnApp intent (8894D0D4)", v)
	}
	return s.set(steer.FieldTEID, "GTP-U TEID", func() { s.r.Key.TEID = uint32(n) })
}

func (s setter) addr(v string, src bool) error {
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		return badRequest("address %q is not an IPv4 or IPv6 address", v)
	}
	a = a.Unmap()
	if src {
		return s.set(steer.FieldSrc, "source address", func() { s.r.Key.Src = a })
	}
	return s.set(steer.FieldDst, "destination address", func() { s.r.Key.Dst = a })
}

func (s setter) port(v string, src bool) error {
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil || n == 0 {
		return badRequest("port %q: want 1..65535", v)
	}
	if src {
		return s.set(steer.FieldSrcPort, "source port", func() { s.r.Key.SrcPort = uint16(n) })
	}
	return s.set(steer.FieldDstPort, "destination port", func() { s.r.Key.DstPort = uint16(n) })
}

func (s setter) proto(v string) error {
	var n uint64
	switch strings.ToLower(v) {
	case "udp":
		n = 17
	case "tcp":
		n = 6
	case "sctp":
		n = 132
	case "icmp":
		n = 1
	case "icmpv6", "ipv6-icmp":
		n = 58
	default:
		var err error
		if n, err = strconv.ParseUint(v, 10, 8); err != nil {
			return badRequest("protocol %q: want udp, tcp, sctp, icmp, icmpv6 or 0..255", v)
		}
	}
	return s.set(steer.FieldProto, "protocol", func() { s.r.Key.Proto = uint8(n) })
}

// cpu reads a target CPU or queue; "" means none.
func parseCPU(v string) (uint32, error) {
	if v == "" {
		return steer.NoCPU, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n >= steer.MaxCPUs {
		return 0, badRequest("target CPU/queue %q: want 0..%d", v, steer.MaxCPUs-1)
	}
	return uint32(n), nil
}

// Parse reads one intent document, in either format: a document with
// "Resources" is the DPPnApp intent message, one with "trafficRuleId" an
// ETSI MEC 011 TrafficRule. The document is first checked against the
// API's schema (apispec's Intent), then for what a schema cannot say.
func Parse(doc []byte) (Intent, error) {
	v, err := apispec.Decode(doc)
	if err != nil {
		return Intent{}, badRequest("intent is not a JSON object: %v", err)
	}
	if err := apispec.CheckNamed("Intent", v); err != nil {
		return Intent{}, badRequest("%v", err)
	}
	return parse(doc)
}

// parse is Parse without the schema: the stored documents of an earlier
// version are read with it (Store.Load), so that what was accepted then is
// not lost to a stricter schema now.
func parse(doc []byte) (Intent, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(doc, &probe); err != nil {
		return Intent{}, badRequest("intent is not a JSON object: %v", err)
	}
	var in Intent
	var err error
	switch {
	case probe["Resources"] != nil:
		in, err = parseDPPnApp(doc)
	case probe["trafficRuleId"] != nil:
		in, err = parseMEC(doc)
	default:
		return Intent{}, badRequest(`unknown intent format: want a DPPnApp intent {"Resources", "Action", "Params"} or a MEC 011 TrafficRule {"trafficRuleId", ...}`)
	}
	if err != nil {
		return Intent{}, err
	}
	if len(in.Rules) == 0 {
		return Intent{}, badRequest("intent %s names no flow", in.ID)
	}
	for i, r := range in.Rules {
		if r.Fields == 0 {
			return Intent{}, badRequest("intent %s rule %d names no flow field (vni, teid, addresses, ports, protocol)", in.ID, i)
		}
	}
	if in.ID == "" {
		in.ID = fmt.Sprintf("intent-%08x", in.Rules[0].Hash())
	}
	in.Doc = json.RawMessage(append([]byte(nil), doc...))
	return in, nil
}
