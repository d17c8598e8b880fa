package apispec

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"testing"

	"edgeplane/control/internal/steer"
)

func TestDocumentIsValidOpenAPI(t *testing.T) {
	if err := Spec().Validate(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Problem", "IntentId", "Intent", "IntentRequest", "AltNode", "AltNodes", "OverloadRequest"} {
		if Schema(name) == nil {
			t.Errorf("no schema %s", name)
		}
	}
}

func accepts(name string, v any) bool { return CheckNamed(name, v) == nil }

// TestIntentIDIsOneURLSegment: every id the document accepts can be put
// in /v1/intents/{id} as it is and comes back unchanged (no escaping, no
// dot segment for a client or the server's path cleaning to remove), and
// every such id of the allowed characters is accepted.
func TestIntentIDIsOneURLSegment(t *testing.T) {
	const alphabet = "aZ09._-/%~ \n"
	var ids []string
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		if prefix != "" {
			ids = append(ids, prefix)
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			walk(prefix+string(c), n-1)
		}
	}
	walk("", 3)
	ids = append(ids, "", strings.Repeat("a", 64), strings.Repeat("a", 65))
	for _, id := range ids {
		addressable := id != "" && len(id) <= 64 && url.PathEscape(id) == id && !strings.ContainsAny(id, "~%") &&
			path.Clean("/v1/intents/"+id) == "/v1/intents/"+id && id[0] != '.'
		if got := accepts("IntentId", id); got != addressable {
			t.Errorf("IntentId %q: schema accepts=%v, addressable as one path segment=%v", id, got, addressable)
		}
	}
	for _, id := range []string{".", ".."} {
		if accepts("IntentId", id) {
			t.Errorf("IntentId %q accepted", id)
		}
	}
}

// TestNumberPatternsMatchTheirRanges: the string forms of ports and CPUs
// accept exactly the decimal numbers the agent can use (steer.MaxCPUs),
// written without leading zeros, and their integer forms the same range.
func TestNumberPatternsMatchTheirRanges(t *testing.T) {
	for _, c := range []struct {
		str, val string
		lo, hi   int
	}{
		{"PortString", "PortValue", 1, 65535},
		{"CPUString", "CPUValue", 0, steer.MaxCPUs - 1},
	} {
		for n := -2; n <= 70000; n++ {
			want := n >= c.lo && n <= c.hi
			if got := accepts(c.str, strconv.Itoa(n)); got != want {
				t.Errorf("%s %d: accepted=%v, want %v", c.str, n, got, want)
			}
			if got := accepts(c.val, float64(n)); got != want {
				t.Errorf("%s %d (number): accepted=%v, want %v", c.val, n, got, want)
			}
		}
		for _, s := range []string{"01", "+1", " 1", "1 ", "0x1", "1.0", ""} {
			if accepts(c.str, s) {
				t.Errorf("%s %q accepted", c.str, s)
			}
		}
	}
	if max := Schema("TrafficRule").Properties["x-edgeplane-cpu"].Value.Max; max == nil || int(*max) != steer.MaxCPUs-1 {
		t.Errorf("x-edgeplane-cpu maximum %v, the data plane has %d CPUs", max, steer.MaxCPUs)
	}
	if max := Schema("AltNodes").Properties["altNodes"].Value.MaxItems; max == nil || int(*max) != steer.MaxAlt {
		t.Errorf("altNodes maxItems %v, the data plane has %d slots", max, steer.MaxAlt)
	}
}

// ipv6Texts writes an IPv6 address the ways RFC 4291 section 2.2 allows:
// full, without leading zeros, each run of zero groups compressed, upper
// case, and with the last 32 bits dotted.
func ipv6Texts(a netip.Addr) []string {
	b := a.As16()
	var g [8]uint16
	for i := range g {
		g[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	join := func(gs []uint16, full bool) []string {
		var out []string
		for _, x := range gs {
			if full {
				out = append(out, fmt.Sprintf("%04x", x))
			} else {
				out = append(out, fmt.Sprintf("%x", x))
			}
		}
		return out
	}
	var texts []string
	for _, full := range []bool{true, false} {
		texts = append(texts, strings.Join(join(g[:], full), ":"))
		for i := 0; i < 8; i++ {
			for j := i + 1; j <= 8 && g[j-1] == 0; j++ {
				texts = append(texts, strings.Join(join(g[:i], full), ":")+"::"+strings.Join(join(g[j:], full), ":"))
			}
		}
		dotted := fmt.Sprintf("%d.%d.%d.%d", b[12], b[13], b[14], b[15])
		texts = append(texts, strings.Join(join(g[:6], full), ":")+":"+dotted)
		for i := 0; i < 6; i++ {
			for j := i + 1; j <= 6 && g[j-1] == 0; j++ {
				head := strings.Join(join(g[:i], full), ":")
				tail := strings.Join(join(g[j:6], full), ":")
				if tail != "" {
					tail += ":"
				}
				texts = append(texts, head+"::"+tail+dotted)
			}
		}
	}
	for _, s := range texts[:len(texts):len(texts)] {
		texts = append(texts, strings.ToUpper(s))
	}
	return texts
}

// TestAltNodeIPv6AsTheDataPlaneStoresIt: the data plane keeps no
// IPv4-mapped or unspecified IPv6 address for a node (steer.SetAltNodes
// drops the first, and neither is a destination), so the document refuses
// both in every text form, and nothing else.
func TestAltNodeIPv6AsTheDataPlaneStoresIt(t *testing.T) {
	addrs := []string{"::", "::1", "::ffff:0.0.0.0", "::ffff:198.18.0.3", "::ffff:0:0", "::ffff:1:2", "::ffff:ffff:ffff",
		"::ffff", "::ffff:1", "::fffe:1:2", "0:0:0:1:0:ffff:1:2", "ffff::", "ffff::1:2", "1::ffff:1:2", "::1:ffff:1:2",
		"::ffff:0:1:2", "2001:db8::3", "2001:db8::ffff:1:2", "fe80::1", "::198.18.0.3", "64:ff9b::198.18.0.3"}
	n := 0
	for _, s := range addrs {
		a := netip.MustParseAddr(s)
		want := !a.Is4In6() && !a.IsUnspecified()
		for _, text := range ipv6Texts(a) {
			if p, err := netip.ParseAddr(text); err != nil || p != a {
				t.Fatalf("test generator: %q is not %s (%v)", text, a, err)
			}
			node := map[string]any{"mac": "02:00:00:00:00:03", "ipv6": text}
			if got := accepts("AltNode", node); got != want {
				t.Errorf("AltNode ipv6 %q (%s): accepted=%v, want %v", text, a, got, want)
			}
			n++
		}
	}
	t.Logf("%d texts of %d addresses", n, len(addrs))
	for _, s := range []string{"0.0.0.0", "198.18.0.3"} {
		want := s != "0.0.0.0"
		if got := accepts("AltNode", map[string]any{"mac": "02:00:00:00:00:03", "ipv4": s}); got != want {
			t.Errorf("AltNode ipv4 %q: accepted=%v, want %v", s, got, want)
		}
	}
	for _, s := range []string{"fe80::1%eth0", "198.18.0.3", "2001:db8::g"} {
		if accepts("AltNode", map[string]any{"mac": "02:00:00:00:00:03", "ipv6": s}) {
			t.Errorf("AltNode ipv6 %q accepted", s)
		}
	}
}

// TestRefusalsNameTheField: the reason says where and what, in the
// request's own terms.
func TestRefusalsNameTheField(t *testing.T) {
	for _, c := range []struct{ schema, doc, want string }{
		{"AltNodes", `{}`, "altNodes: required, missing"},
		{"AltNodes", `{"altNodes": null}`, "altNodes: must not be null"},
		{"AltNodes", `{"altNodes": [{"mac": ""}]}`, `altNodes[0].mac: want a unicast Ethernet address, six colon-separated hex octets, got ""`},
		{"AltNodes", `{"altNodes": [{"mac": "02:00:00:00:00:01"}]}`, "altNodes[0]: want an alternative node, a MAC and at least one of ipv4 and ipv6"},
		{"AltNodes", `{"altNodes": [{"mac": "02:00:00:00:00:01", "ipv4": "198.18.0.1", "x": 1}]}`, `altNodes[0]: property "x" is unsupported`},
		{"OverloadRequest", `{"mode": "maybe"}`, `mode: value is not one of the allowed values ["auto","off","host","all"], got "maybe"`},
		{"IntentRequest", `{"trafficRuleId": "", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"]}], "action": "PASSTHROUGH"}`, `trafficRuleId: want 1-64 of A-Z a-z 0-9 . _ -, not starting with a dot, got ""`},
		{"IntentRequest", `{"intents": [{"Resources": [{"srcIP": "x"}], "Action": {"actionName": "PRIO_QUEUE"}}]}`, `intents[0].Resources[0].srcIP: want an IPv4 address`},
		{"IntentRequest", `[]`, "want a JSON object: DPPnAppIntent {Resources, Action, ...} or TrafficRule"},
		{"IntentRequest", `{"foo": 1}`, "matches none of the accepted documents"},
	} {
		v, err := Decode([]byte(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		err = CheckNamed(c.schema, v)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %s:\n got %v\nwant %s...", c.schema, c.doc, err, c.want)
		}
	}
	long := `{"altNodes": [{"mac": "` + strings.Repeat("x", 1000) + `"}]}`
	v, _ := Decode([]byte(long))
	if err := CheckNamed("AltNodes", v); err == nil || len(err.Error()) > 200 {
		t.Errorf("a long refused value is echoed whole: %d bytes", len(err.Error()))
	}
}
