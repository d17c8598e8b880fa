package intent

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"edgeplane/control/internal/steer"
)

const dppListing1 = `{
  "Resources": [
    {"resourceId": "F8A4C949", "encapsulationID1": "4450", "encapsulationType1": "vxlan"},
    {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
    {"resourceId": "5A07C587", "srcIP": "198.18.10.1", "dstPort": "5004"}
  ],
  "Action": {"actionType": "INSERT", "actionName": "PRIO_QUEUE", "rx_queue": "0"},
  "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}]
}`

const mecRule = `{"trafficRuleId": "tr-1", "filterType": "FLOW", "priority": 1,
  "trafficFilter": [{"srcAddress": ["198.18.10.1"], "dstPort": ["5004"], "tag": ["vxlan:4450", "gtp:8894D0D4"]}],
  "action": "PASSTHROUGH", "state": "ACTIVE", "x-edgeplane-cpu": 0}`

func TestDPPnAppAndMECAreTheSameRule(t *testing.T) {
	a, err := Parse([]byte(dppListing1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte(mecRule))
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := a.Rules[0], b.Rules[0]
	want := steer.Key{VNI: 4450, TEID: 0x8894d0d4, Src: netip.MustParseAddr("198.18.10.1"), DstPort: 5004}
	if ra.Key != want || ra.Fields != steer.FieldVNI|steer.FieldTEID|steer.FieldSrc|steer.FieldDstPort {
		t.Errorf("DPPnApp intent parsed to %v on %s", ra.Key, ra.Fields)
	}
	if ra.Key != rb.Key || ra.Fields != rb.Fields || ra.CPU != rb.CPU || ra.Hash() != rb.Hash() {
		t.Errorf("DPPnApp %v/%s/cpu %d and MEC %v/%s/cpu %d differ", ra.Key, ra.Fields, ra.CPU, rb.Key, rb.Fields, rb.CPU)
	}
	if a.Interface != "eth0" || a.Format != "dppnapp" || b.Format != "mec011" || b.ID != "tr-1" {
		t.Errorf("metadata: %+v %+v", a, b)
	}
	if !strings.HasPrefix(a.ID, "intent-") {
		t.Errorf("default id %q", a.ID)
	}
}

func TestFlowHashChecked(t *testing.T) {
	in, _ := Parse([]byte(dppListing1))
	h := FlowHashHex(in.Rules[0].Hash())
	good := strings.Replace(dppListing1, `"rx_queue": "0"`, `"rx_queue": "0", "flow_hash": "`+h+`"`, 1)
	if _, err := Parse([]byte(good)); err != nil {
		t.Errorf("matching flow_hash refused: %v", err)
	}
	bad := strings.Replace(dppListing1, `"rx_queue": "0"`, `"rx_queue": "0", "flow_hash": "E918D704"`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), h) {
		t.Errorf("wrong flow_hash: %v, want a refusal naming %s", err, h)
	}
}

// TestMalformedRefused: every bad document gets a 400 naming the problem.
func TestMalformedRefused(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"not-json", `{"Resources": [`, "not a JSON object"},
		{"unknown-format", `{"foo": 1}`, "matches none of the accepted documents: DPPnAppIntent"},
		{"empty-resources", `{"Resources": [], "Action": {"actionName": "PRIO_QUEUE"}}`, "Resources: minimum number of items is 1"},
		{"unknown-resource-field", `{"Resources": [{"srcMac": "x"}], "Action": {"actionName": "PRIO_QUEUE"}}`, `unknown field "srcMac"`},
		{"vni-too-big", `{"Resources": [{"encapsulationID1": "700000445", "encapsulationType1": "vxlan"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "VNI"},
		{"teid-not-hex", `{"Resources": [{"encapsulationID1": "XYZ", "encapsulationType1": "gtp"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "TEID"},
		{"encap-type-unknown", `{"Resources": [{"encapsulationID1": "5", "encapsulationType1": "geneve"}], "Action": {"actionName": "PRIO_QUEUE"}}`, `"geneve" is not supported`},
		{"encap-id-without-type", `{"Resources": [{"encapsulationID1": "5"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "has no encapsulationType1"},
		{"bad-ip", `{"Resources": [{"srcIP": "198.18.0.300"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "srcIP: want an IPv4 address"},
		{"port-zero", `{"Resources": [{"dstPort": "0"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "port"},
		{"field-twice-differently", `{"Resources": [{"srcIP": "198.18.0.1"}, {"srcIP": "198.18.0.2"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "given twice"},
		{"no-flow-field", `{"Resources": [{"resourceId": "A"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "names no flow field"},
		{"unknown-action", `{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "DROP"}}`, `Action.actionName: value is not one of the allowed values ["PRIO_QUEUE"]`},
		{"delete-by-post", `{"Resources": [{"dstPort": "5"}], "Action": {"actionType": "DELETE", "actionName": "PRIO_QUEUE"}}`, "delete with DELETE /v1/intents/{id}"},
		{"cpu-out-of-range", `{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE", "rx_queue": "999"}}`, "Action.rx_queue: want a CPU, 0..127"},
		{"queue-and-cpu-disagree", `{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE", "rx_queue": "1", "cpu": "0"}}`, "disagree"},
		{"unknown-param", `{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}, "Params": [{"paramName": "mode", "paramValue": "x"}]}`, "Params[0].paramName"},
		{"bad-intent-id", `{"intentId": "a b", "Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "intentId: want 1-64"},
		{"intent-id-dot", `{"intentId": ".", "Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "not starting with a dot"},
		{"intent-id-dot-dot", `{"intentId": "..", "Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "not starting with a dot"},
		{"intent-id-empty", `{"intentId": "", "Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "intentId: want 1-64"},
		{"mec-rule-id-dot-dot", `{"trafficRuleId": "..", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"]}], "action": "PASSTHROUGH"}`, "trafficRuleId: want 1-64"},
		{"mec-rule-id-empty", `{"trafficRuleId": "", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"]}], "action": "PASSTHROUGH"}`, "trafficRuleId: want 1-64"},
		{"mec-empty-filter", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{}], "action": "PASSTHROUGH"}`, "trafficFilter[0]: there must be at least 1 properties"},
		{"mec-empty-port", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"dstPort": [""]}], "action": "PASSTHROUGH"}`, "trafficFilter[0].dstPort[0]: want a port"},
		{"not-an-object", `["Resources"]`, "want a JSON object"},
		{"trailing-garbage", `{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}} x`, "not a JSON object"},
		{"unknown-top-level", `{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}, "Extra": 1}`, `property "Extra" is unsupported`},
		{"mec-drop-action", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"]}], "action": "DROP"}`, `action: value is not one of the allowed values ["PASSTHROUGH"], got "DROP"`},
		{"mec-packet-filter", `{"trafficRuleId": "x", "filterType": "PACKET", "trafficFilter": [{"dstPort": ["5"]}], "action": "PASSTHROUGH"}`, "filterType"},
		{"mec-two-values", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5", "6"]}], "action": "PASSTHROUGH"}`, "trafficFilter[0].dstPort: maximum number of items is 1 (one value; use one trafficFilter per flow)"},
		{"mec-tunnel-address", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"srcTunnelAddress": ["198.18.0.1"]}], "action": "PASSTHROUGH"}`, `property "srcTunnelAddress" is unsupported (one flow, at most one value per field: use one trafficFilter per flow; name tunnels by tag (vxlan:<VNI>, gtp:<TEID>), outer tunnel filters`},
		{"mec-bad-tag", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"tag": ["geneve:5"]}], "action": "PASSTHROUGH"}`, "trafficFilter[0].tag[0]: want vxlan:<VNI"},
		{"mec-dst-interface", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"]}], "action": "PASSTHROUGH", "dstInterface": [{}]}`, "dstInterface"},
		{"mec-bad-state", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"]}], "action": "PASSTHROUGH", "state": "ON"}`, "state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			var ie *Error
			if !errors.As(err, &ie) || ie.Status != 400 {
				t.Fatalf("got %v, want a 400", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("reason %q does not mention %q", err, c.want)
			}
		})
	}
}

func loadDP(t *testing.T, maxFlows uint32) *steer.Dataplane {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for BPF maps")
	}
	d, err := steer.Load(steer.Options{PrioSlots: maxFlows})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mustParse(t *testing.T, doc string) Intent {
	t.Helper()
	in, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func port(id string, p string) string {
	return `{"intentId": "` + id + `", "Resources": [{"dstPort": "` + p + `"}], "Action": {"actionName": "PRIO_QUEUE"}}`
}

func status(err error) int {
	var ie *Error
	if errors.As(err, &ie) {
		return ie.Status
	}
	return 0
}

func TestApplyWholeOrNothing(t *testing.T) {
	d := loadDP(t, 2) // prio_map is one set of two slots: the third rule does not fit
	e := NewEngine(d, "eth0", nil)
	batch := []Intent{mustParse(t, port("a", "1")), mustParse(t, port("b", "2")), mustParse(t, port("c", "3"))}
	err := e.Apply(batch)
	if status(err) != 409 || !strings.Contains(err.Error(), "intent c") {
		t.Fatalf("apply of 3 into a map of 2: %v", err)
	}
	rules, _ := d.Rules()
	masks, _ := d.Masks()
	if len(rules) != 0 || masks != [steer.MaxMasks]steer.Fields{} || len(e.List()) != 0 {
		t.Fatalf("after rollback: %d rules, masks %v, %d intents", len(rules), masks, len(e.List()))
	}
	if err := e.Apply(batch[:2]); err != nil {
		t.Fatalf("two fit: %v", err)
	}
	if rules, _ := d.Rules(); len(rules) != 2 {
		t.Fatalf("%d rules", len(rules))
	}
}

func TestPlanRefusals(t *testing.T) {
	d := loadDP(t, 0)
	e := NewEngine(d, "eth0", nil)
	if err := e.Apply([]Intent{mustParse(t, dppListing1)}); err != nil {
		t.Fatal(err)
	}
	before, _ := d.Rules()
	cases := []struct {
		name   string
		doc    string
		status int
		want   string
	}{
		{"same-id-again", dppListing1, 409, "already exists"},
		{"overlapping-field-sets", `{"intentId": "o", "Resources": [{"encapsulationID1": "4450", "encapsulationType1": "vxlan"}], "Action": {"actionName": "PRIO_QUEUE"}}`, 409, "overlaps"},
		{"other-interface", `{"intentId": "i", "Resources": [{"dstPort": "9"}], "Action": {"actionName": "PRIO_QUEUE"}, "Params": [{"paramName": "interfaceName", "paramValue": "eth9"}]}`, 400, "this agent steers eth0"},
		{"cpu-not-online", `{"intentId": "c", "Resources": [{"dstPort": "9"}], "Action": {"actionName": "PRIO_QUEUE", "cpu": "127"}}`, 400, "no cpumap entry"},
		{"fifth-field-set", "", 409, "distinct field sets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ins []Intent
			if c.doc != "" {
				ins = []Intent{mustParse(t, c.doc)}
			} else {
				// 1 field set in use; 4 more distinct ones make 5.
				for i, r := range []string{`{"srcPort": "1"}`, `{"protocol": "udp"}`, `{"dstIP": "198.18.0.9"}`, `{"srcIP": "198.18.0.7", "srcPort": "2"}`} {
					ins = append(ins, mustParse(t, `{"intentId": "f`+string(rune('0'+i))+`", "Resources": [`+r+`], "Action": {"actionName": "PRIO_QUEUE"}}`))
				}
			}
			err := e.Apply(ins)
			if status(err) != c.status || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %d mentioning %q", err, c.status, c.want)
			}
			after, _ := d.Rules()
			if len(after) != len(before) || len(e.List()) != 1 {
				t.Errorf("a refused intent changed the maps: %d rules before, %d after", len(before), len(after))
			}
		})
	}
}

func TestDeleteFreesMaskAndRestoreAdopts(t *testing.T) {
	d := loadDP(t, 0)
	store := &Store{Path: filepath.Join(t.TempDir(), "intents.json")}
	e := NewEngine(d, "eth0", store)
	if err := e.Apply([]Intent{mustParse(t, dppListing1), mustParse(t, mecRule2)}); err != nil {
		t.Fatal(err)
	}
	// A "restarted" engine over the same maps adopts both intents.
	stored, nicLoc, err := store.Load()
	if err != nil || len(stored) != 2 {
		t.Fatalf("store: %v, %d intents", err, len(stored))
	}
	stale := steer.Key{DstPort: 777}
	if err := d.PutRule(steer.RuleHash(stale, steer.FieldDstPort), steer.Rule{Key: stale, Slot: 3, CPU: steer.NoCPU, Active: true}); err != nil {
		t.Fatal(err)
	}
	e2 := NewEngine(d, "eth0", store)
	if err := e2.Restore(stored, nicLoc); err != nil {
		t.Fatal(err)
	}
	if len(e2.List()) != 2 {
		t.Fatalf("restored %d intents", len(e2.List()))
	}
	if rules, _ := d.Rules(); len(rules) != 3 {
		t.Errorf("%d rules after restore, want 3 (the stale one removed)", len(rules))
	}
	for _, v := range e2.List() {
		if err := e2.Delete(v.ID); err != nil {
			t.Fatal(err)
		}
	}
	masks, _ := d.Masks()
	rules, _ := d.Rules()
	if len(rules) != 0 || masks != [steer.MaxMasks]steer.Fields{} {
		t.Errorf("after deleting all: %d rules, masks %v", len(rules), masks)
	}
	if err := e2.Delete("nope"); status(err) != 404 {
		t.Errorf("delete unknown: %v", err)
	}
}

const mecRule2 = `{"trafficRuleId": "tr-2", "filterType": "FLOW",
  "trafficFilter": [{"dstAddress": ["2001:db8:20::1"], "protocol": ["TCP"]}, {"dstAddress": ["2001:db8:20::2"], "protocol": ["TCP"]}],
  "action": "PASSTHROUGH", "state": "INACTIVE"}`

// fakeNIC records ntuple rules as a NIC with ntuple filters would.
type fakeNIC struct {
	rules map[int]string
	next  int
}

func (f *fakeNIC) Supported() bool { return true }
func (f *fakeNIC) Add(k steer.Key, fl steer.Fields, q uint32) (int, error) {
	if fl&(steer.FieldVNI|steer.FieldTEID) != 0 {
		return 0, errors.New("names a tunnel id")
	}
	f.next++
	f.rules[f.next] = k.String()
	return f.next, nil
}
func (f *fakeNIC) Delete(loc int) error { delete(f.rules, loc); return nil }

// TestNICRulesFollowIntents: an untunnelled rule with a queue gets a NIC
// rule, a tunnelled one a note; deleting the intent removes the NIC rule.
func TestNICRulesFollowIntents(t *testing.T) {
	d := loadDP(t, 0)
	nic := &fakeNIC{rules: map[int]string{}}
	e := NewEngine(d, "eth0", nil)
	e.SetNIC(nic)
	plain := `{"intentId": "p", "Resources": [{"dstPort": "53", "protocol": "udp"}], "Action": {"actionName": "PRIO_QUEUE", "rx_queue": "0"}}`
	if err := e.Apply([]Intent{mustParse(t, plain), mustParse(t, dppListing1)}); err != nil {
		t.Fatal(err)
	}
	if len(nic.rules) != 1 {
		t.Fatalf("NIC rules %v, want one", nic.rules)
	}
	p, _ := e.Get("p")
	if p.Rules[0].NICRule == nil {
		t.Error("no nicRule in the view")
	}
	for _, v := range e.List() {
		if v.ID != "p" && !strings.Contains(v.Rules[0].NICNote, "tunnel") {
			t.Errorf("tunnelled rule: note %q", v.Rules[0].NICNote)
		}
	}
	if err := e.Delete("p"); err != nil {
		t.Fatal(err)
	}
	if len(nic.rules) != 0 {
		t.Errorf("NIC rules left: %v", nic.rules)
	}
}
