package model_test

import (
	"encoding/json"
	"strings"
	"testing"

	"edgeplane/control/model"
)

// good is a node using every section; each bad case below changes one
// field of it.
const good = `{
  "apiVersion": "edgeplane/v1",
  "router": {
    "routes": [{"prefix": "198.18.5.0/24", "via": "198.18.1.2"}, {"prefix": "2001:db8:5::/48", "via": "2001:db8:1::2"}],
    "acl": {"default": "permit", "rules": [
      {"action": "deny", "proto": "tcp", "dst": "198.18.10.0/24", "dport": "22"},
      {"action": "permit", "proto": "udp", "src": "2001:db8:0:1::/64", "dport": "5000-5999"}]}
  },
  "bng": {
    "routes": [{"prefix": "0.0.0.0/0", "via": "198.18.1.2"}],
    "acl": {"default": "permit", "rules": [{"action": "deny", "proto": "udp", "dport": "5201"}]},
    "policers": [{"name": "p20", "mode": "rfc2698", "cir": 10000000, "cbs": 65536, "pir": 20000000, "pbs": 131072}],
    "pipes": [{"name": "d50", "rate": 50000000}],
    "subscribers": [
      {"id": 1, "sTag": 100, "cTag": 200, "mac": "02:00:00:10:00:00", "ipv4": ["198.18.100.10"], "ipv6": "2001:db8:100::/56", "policer": "p20", "pipe": "d50"},
      {"id": 2, "vlan": 300, "pppoe": 7, "mac": "02:00:00:10:00:01", "ipv4": ["198.18.100.16/30"]}]
  },
  "udpTermination": {"terminate": [{"address": "198.18.2.1", "ports": "5000-5099"}, {"address": "any", "ports": "9"}]},
  "steering": {"intents": [{"name": "voice", "teid": 4096, "proto": "udp", "dstPort": 5060, "cpu": 1}]},
  "cmts": {"serviceGroups": [{"name": "sg0",
    "filters": [{"group": 1, "order": 10, "action": "deny", "proto": "udp", "dport": "1900"}],
    "modems": [
      {"id": 1, "mac": "02:00:00:30:00:01", "cpe": ["198.18.64.2@02:00:00:31:00:01", "2001:db8:64::2"], "bondingGroup": 0,
       "filterGroups": [1], "sids": [1, 2], "privacy": {"said": 8193, "kseq": 1, "key": "000102030405060708090a0b0c0d0e0f", "iv": "0f0e0d0c0b0a09080706050403020100"},
       "serviceFlows": [{"sf": 0, "rate": 100000000}, {"sf": 1, "rate": 5000000, "burst": 3044, "prio": 5}],
       "classifiers": [{"cls": 0, "sf": 1, "prio": 64, "proto": "udp", "dport": "5060", "tos": "184-191"}]},
      {"id": 2, "mac": "02:00:00:30:00:02", "cpe": ["198.18.64.3"], "bondingGroup": 1, "sids": [3]}]}]}
}`

func TestGoodConfigIsAccepted(t *testing.T) {
	if _, err := model.DecodeNodeConfig([]byte(good)); err != nil {
		t.Fatal(err)
	}
}

// edit applies f to the good document decoded as generic JSON.
func edit(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(good), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ := json.Marshal(m)
	return b
}

func obj(m map[string]any, path ...any) map[string]any {
	var cur any = m
	for _, p := range path {
		switch k := p.(type) {
		case string:
			cur = cur.(map[string]any)[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur.(map[string]any)
}

func TestBadInputsAreRefusedByField(t *testing.T) {
	set := func(v any, path ...any) func(map[string]any) {
		return func(m map[string]any) { obj(m, path[:len(path)-1]...)[path[len(path)-1].(string)] = v }
	}
	route := func(sec string, i int) []any { return []any{sec, "routes", i} }
	sub := func(i int) []any { return []any{"bng", "subscribers", i} }
	rule := func(sec string, i int) []any { return []any{sec, "acl", "rules", i} }
	with := func(p []any, k string) []any { return append(append([]any{}, p...), k) }
	inst := func(name, dp, pool string) map[string]any {
		return map[string]any{"name": name, "dataPlanes": []any{dp}, "ipv4Pool": []any{pool}, "maxSubscribers": 10}
	}
	instances := func(in ...map[string]any) []any {
		out := []any{}
		for _, i := range in {
			out = append(out, i)
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    func(map[string]any)
		path string // the refusal names this field
		why  string // and says this
	}{
		{"apiVersion unknown", set("edgeplane/v2", "apiVersion"), "apiVersion", "edgeplane/v1"},
		{"apiVersion missing", func(m map[string]any) { delete(m, "apiVersion") }, "apiVersion", "required"},
		{"unknown section", set(map[string]any{}, "vcmts"), "", `"vcmts" is unsupported`},
		{"route prefix not a prefix", set("198.18.5.0", with(route("router", 0), "prefix")...), "router.routes[0].prefix", "address/length"},
		{"route prefix host bits", set("198.18.5.1/24", with(route("router", 0), "prefix")...), "router.routes[0].prefix", "host bits set"},
		{"route prefix length 33", set("198.18.5.0/33", with(route("router", 0), "prefix")...), "router.routes[0].prefix", "address/length"},
		{"route via not an address", set("gw1", with(route("router", 0), "via")...), "router.routes[0].via", "address"},
		{"route via other family", set("2001:db8::1", with(route("router", 0), "via")...), "router.routes[0].via", "family"},
		{"route via multicast", set("224.0.0.1", with(route("router", 0), "via")...), "router.routes[0].via", "unicast"},
		{"route duplicate prefix", set("198.18.5.0/24", with(route("router", 1), "prefix")...), "router.routes[1].via", "family"},
		{"route unknown field", set(1, with(route("bng", 0), "metric")...), "bng.routes[0]", `"metric" is unsupported`},
		{"acl default unknown", set("drop", "router", "acl", "default"), "router.acl.default", "permit"},
		{"acl action unknown", set("reject", with(rule("router", 0), "action")...), "router.acl.rules[0].action", "permit"},
		{"acl proto name unknown", set("sctp", with(rule("router", 0), "proto")...), "router.acl.rules[0].proto", "tcp"},
		{"acl proto number 256", set("256", with(rule("router", 0), "proto")...), "router.acl.rules[0].proto", "0-255"},
		{"acl dport above 65535", set("65536", with(rule("router", 0), "dport")...), "router.acl.rules[0].dport", "0-65535"},
		{"acl dport range reversed", set("6000-5000", with(rule("router", 1), "dport")...), "router.acl.rules[1].dport", "low end above"},
		{"acl dport without tcp/udp", set("icmp", with(rule("router", 0), "proto")...), "router.acl.rules[0].dport", "tcp or udp"},
		{"acl src /0", set("0.0.0.0/0", with(rule("router", 0), "src")...), "router.acl.rules[0].src", "leave src out"},
		{"acl src and dst families", set("198.18.0.0/16", with(rule("router", 1), "dst")...), "router.acl.rules[1].dst", "different families"},
		{"acl icmp with IPv6", func(m map[string]any) {
			r := obj(m, rule("router", 1)...)
			r["proto"] = "icmp"
			delete(r, "dport")
		}, "router.acl.rules[1].proto", "icmpv6"},
		{"policer mode unknown", set("srtcm", "bng", "policers", 0, "mode"), "bng.policers[0].mode", "rfc2698"},
		{"policer cir zero", set(0, "bng", "policers", 0, "cir"), "bng.policers[0].cir", "at least 1"},
		{"policer pir below cir", set(1000, "bng", "policers", 0, "pir"), "bng.policers[0].pir", "below cir"},
		{"policer rfc2698 without pbs", func(m map[string]any) { delete(obj(m, "bng", "policers", 0), "pbs") }, "bng.policers[0]", "needs pir and pbs"},
		{"policer named none", set("none", "bng", "policers", 0, "name"), "bng.policers[0].name", "no policer"},
		{"policer name with space", set("p 20", "bng", "policers", 0, "name"), "bng.policers[0].name", "letters"},
		{"pipe named default", set("default", "bng", "pipes", 0, "name"), "bng.pipes[0].name", "data plane's own"},
		{"pipe rate too low", set(100, "bng", "pipes", 0, "rate"), "bng.pipes[0].rate", "at least 8000"},
		{"subscriber id zero", set(0, with(sub(0), "id")...), "bng.subscribers[0].id", "at least 1"},
		{"subscriber id duplicate", set(1, with(sub(1), "id")...), "bng.subscribers[1].id", "also subscribers[0]"},
		{"subscriber sTag 4095", set(4095, with(sub(0), "sTag")...), "bng.subscribers[0].sTag", "at most 4094"},
		{"subscriber sTag without cTag", func(m map[string]any) { delete(obj(m, sub(0)...), "cTag") }, "bng.subscribers[0]", "go together"},
		{"subscriber vlan and qinq", set(5, with(sub(0), "vlan")...), "bng.subscribers[0].vlan", "not both"},
		{"subscriber no access key", func(m map[string]any) {
			s := obj(m, sub(0)...)
			delete(s, "sTag")
			delete(s, "cTag")
			delete(s, "mac")
		}, "bng.subscribers[0]", "no access key"},
		{"subscriber untagged IPoE same MAC", func(m map[string]any) {
			for _, i := range []int{0, 1} {
				s := obj(m, sub(i)...)
				for _, k := range []string{"sTag", "cTag", "vlan", "pppoe"} {
					delete(s, k)
				}
				s["mac"] = "02:00:00:10:00:0A"
			}
		}, "bng.subscribers[1]", "access key untagged mac 02:00:00:10:00:0a"},
		{"subscriber pppoe 65535", set(65535, with(sub(1), "pppoe")...), "bng.subscribers[1].pppoe", "at most 65534"},
		{"subscriber pppoe without mac", func(m map[string]any) { delete(obj(m, sub(1)...), "mac") }, "bng.subscribers[1].mac", "required with pppoe"},
		{"subscriber mac malformed", set("02:00:00:10:00", with(sub(0), "mac")...), "bng.subscribers[0].mac", "hex octets"},
		{"subscriber mac multicast", set("01:00:5e:00:00:01", with(sub(0), "mac")...), "bng.subscribers[0].mac", "multicast"},
		{"subscriber same access key", func(m map[string]any) {
			s := obj(m, sub(1)...)
			delete(s, "vlan")
			delete(s, "pppoe")
			s["sTag"], s["cTag"] = 100, 200
		}, "bng.subscribers[1]", "access key qinq 100.200"},
		{"subscriber ipv4 five addresses", set([]any{"198.18.101.1", "198.18.101.2", "198.18.101.3", "198.18.101.4", "198.18.101.5"}, with(sub(0), "ipv4")...), "bng.subscribers[0].ipv4", "maximum"},
		{"subscriber ipv4 not IPv4", set([]any{"2001:db8::1"}, with(sub(0), "ipv4")...), "bng.subscribers[0].ipv4[0]", "not IPv4"},
		{"subscriber ipv4 overlap", set([]any{"198.18.100.17"}, with(sub(0), "ipv4")...), "bng.subscribers[1].ipv4[0]", "overlaps"},
		{"subscriber ipv6 /65", set("2001:db8:100::/65", with(sub(0), "ipv6")...), "bng.subscribers[0].ipv6", "/16 to /64"},
		{"subscriber ipv6 is IPv4", set("198.18.0.0/16", with(sub(0), "ipv6")...), "bng.subscribers[0].ipv6", "/16 to /64"},
		{"subscriber policer undefined", set("p99", with(sub(0), "policer")...), "bng.subscribers[0].policer", "no policer"},
		{"subscriber pipe undefined", set("d99", with(sub(0), "pipe")...), "bng.subscribers[0].pipe", "no pipe"},
		{"instance name duplicate", set(instances(inst("a", "bng-a", "198.18.100.0/24"), inst("a", "bng-b", "198.18.101.0/24")), "bng", "instances"), "bng.instances[1].name", "also instances[0]"},
		{"instance data plane in two", set(instances(inst("a", "bng-a", "198.18.100.0/24"), inst("b", "bng-a", "198.18.101.0/24")), "bng", "instances"), "bng.instances[1].dataPlanes[0]", "also serves"},
		{"instance pools overlap", set(instances(inst("a", "bng-a", "198.18.0.0/16"), inst("b", "bng-b", "198.18.101.0/24")), "bng", "instances"), "bng.instances[1].ipv4Pool[0]", "overlaps"},
		{"instance ipv4 pool of IPv6", set(instances(inst("a", "bng-a", "2001:db8::/32")), "bng", "instances"), "bng.instances[0].ipv4Pool[0]", "not an IPv4"},
		{"instance pool host bits", set(instances(inst("a", "bng-a", "198.18.100.1/24")), "bng", "instances"), "bng.instances[0].ipv4Pool[0]", "host bits"},
		{"instance budget 0", set(instances(map[string]any{"name": "a", "dataPlanes": []any{"bng-a"}, "maxSubscribers": 0}), "bng", "instances"), "bng.instances[0].maxSubscribers", "at least 1"},
		{"instance subport budgeted twice", set(instances(map[string]any{"name": "a", "dataPlanes": []any{"bng-a"}, "maxSubscribers": 10,
			"subports": []any{map[string]any{"subport": 0, "maxSubscribers": 5}, map[string]any{"subport": 0, "maxSubscribers": 5}}}), "bng", "instances"),
			"bng.instances[0].subports[1].subport", "two budgets"},
		{"subscriber on a subport its instance does not budget", func(m map[string]any) {
			set(instances(map[string]any{"name": "a", "dataPlanes": []any{"bng-a"}, "maxSubscribers": 10,
				"subports": []any{map[string]any{"subport": 1, "maxSubscribers": 5}}}), "bng", "instances")(m)
			set("a", with(sub(0), "instance")...)(m)
		}, "bng.subscribers[0].instance", `subport 0 has no budget on instance "a"`},
		{"subscriber instance undefined", func(m map[string]any) {
			set(instances(inst("a", "bng-a", "198.18.100.0/24")), "bng", "instances")(m)
			set("b", with(sub(0), "instance")...)(m)
		}, "bng.subscribers[0].instance", `no instance "b"`},
		{"subscriber outside its instance's pool", func(m map[string]any) {
			set(instances(inst("a", "bng-a", "198.18.100.0/24"), inst("b", "bng-b", "198.18.101.0/24")), "bng", "instances")(m)
			set("b", with(sub(0), "instance")...)(m)
		}, "bng.subscribers[0].instance", "outside instance \"b\"'s pool"},
		{"subscriber subport 16", set(16, with(sub(0), "subport")...), "bng.subscribers[0].subport", "at most 15"},
		{"terminate address not an address", set("host1", "udpTermination", "terminate", 0, "address"), "udpTermination.terminate[0].address", "address"},
		{"terminate ports reversed", set("6000-5000", "udpTermination", "terminate", 0, "ports"), "udpTermination.terminate[0].ports", "low end above"},
		{"terminate duplicate", func(m map[string]any) {
			obj(m, "udpTermination", "terminate", 1)["address"] = "198.18.2.1"
			obj(m, "udpTermination", "terminate", 1)["ports"] = "5000-5099"
		}, "udpTermination.terminate[1]", "same rule as terminate[0]"},
		{"terminate ports word", set("all", "udpTermination", "terminate", 0, "ports"), "udpTermination.terminate[0].ports", "any"},
		{"intent vni above 24 bits", set(1<<24, "steering", "intents", 0, "vni"), "steering.intents[0].vni", "got 16777216"},
		{"intent cpu 128", set(128, "steering", "intents", 0, "cpu"), "steering.intents[0].cpu", "at most 127"},
		{"intent no flow field", func(m map[string]any) {
			i := obj(m, "steering", "intents", 0)
			delete(i, "teid")
			delete(i, "dstPort")
		}, "steering.intents[0]", "every flow"},
		{"intent port without proto", func(m map[string]any) { delete(obj(m, "steering", "intents", 0), "proto") }, "steering.intents[0].proto", "srcPort or dstPort"},
		{"intent srcIp malformed", set("10.0.0.256", "steering", "intents", 0, "srcIp"), "steering.intents[0].srcIp", "address"},
		{"cmts service group name too long", set("sg-with-a-name-of-25-chars", "cmts", "serviceGroups", 0, "name"), "cmts.serviceGroups[0].name", "at most 24 characters"},
		{"cmts filter group 64", set(64, "cmts", "serviceGroups", 0, "filters", 0, "group"), "cmts.serviceGroups[0].filters[0].group", "at most 63"},
		{"cmts filter dport without tcp/udp", set("icmp", "cmts", "serviceGroups", 0, "filters", 0, "proto"), "cmts.serviceGroups[0].filters[0].dport", "tcp or udp"},
		{"cmts modem duplicate id", set(1, "cmts", "serviceGroups", 0, "modems", 1, "id"), "cmts.serviceGroups[0].modems[1].id", "modems[0]'s id"},
		{"cmts modem mac multicast", set("03:00:00:30:00:02", "cmts", "serviceGroups", 0, "modems", 1, "mac"), "cmts.serviceGroups[0].modems[1].mac", "unicast"},
		{"cmts modem without bonding group", func(m map[string]any) { delete(obj(m, "cmts", "serviceGroups", 0, "modems", 1), "bondingGroup") }, "cmts.serviceGroups[0].modems[1].bondingGroup", "required"},
		{"cmts cpe shared by two modems", set([]any{"198.18.64.2"}, "cmts", "serviceGroups", 0, "modems", 1, "cpe"), "cmts.serviceGroups[0].modems[1].cpe[0]", "modems[0]'s CPE"},
		{"cmts cpe not an address", set([]any{"198.18.64"}, "cmts", "serviceGroups", 0, "modems", 1, "cpe"), "cmts.serviceGroups[0].modems[1].cpe[0]", "address"},
		{"cmts sid shared by two modems", set([]any{2}, "cmts", "serviceGroups", 0, "modems", 1, "sids"), "cmts.serviceGroups[0].modems[1].sids[0]", "modems[0]'s"},
		{"cmts sid 16383", set([]any{16383}, "cmts", "serviceGroups", 0, "modems", 1, "sids"), "cmts.serviceGroups[0].modems[1].sids[0]", "at most 16382"},
		{"cmts same filter group twice", set([]any{1, 1}, "cmts", "serviceGroups", 0, "modems", 0, "filterGroups"), "cmts.serviceGroups[0].modems[0].filterGroups[1]", "twice"},
		{"cmts key not 128 bits", set("0001", "cmts", "serviceGroups", 0, "modems", 0, "privacy", "key"), "cmts.serviceGroups[0].modems[0].privacy.key", "32 hex digits"},
		{"cmts sf burst below MULPI's 1522", set(1000, "cmts", "serviceGroups", 0, "modems", 0, "serviceFlows", 1, "burst"), "cmts.serviceGroups[0].modems[0].serviceFlows[1].burst", "at least 1522"},
		{"cmts sf defined twice", set(0, "cmts", "serviceGroups", 0, "modems", 0, "serviceFlows", 1, "sf"), "cmts.serviceGroups[0].modems[0].serviceFlows[1].sf", "twice"},
		{"cmts classifier names an undefined sf", set(2, "cmts", "serviceGroups", 0, "modems", 0, "classifiers", 0, "sf"), "cmts.serviceGroups[0].modems[0].classifiers[0].sf", "no SF 2"},
		{"cmts classifier tos range reversed", set("191-184", "cmts", "serviceGroups", 0, "modems", 0, "classifiers", 0, "tos"), "cmts.serviceGroups[0].modems[0].classifiers[0].tos", "low end above"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := model.DecodeNodeConfig(edit(t, c.f))
			if err == nil {
				t.Fatal("accepted")
			}
			inv, ok := err.(*model.Invalid)
			if !ok {
				t.Fatalf("%T %v, want *model.Invalid", err, err)
			}
			if inv.Path != c.path || !strings.Contains(inv.Reason, c.why) {
				t.Fatalf("got %q: %q; want path %q, reason containing %q", inv.Path, inv.Reason, c.path, c.why)
			}
		})
	}
}

func TestCMTSMatchIsTheDataPlanesCanonicalForm(t *testing.T) {
	for _, c := range []struct {
		m    model.CMTSMatch
		want string
	}{
		{model.CMTSMatch{Proto: "udp", Dport: "5060", Tos: "184-191"}, "proto=17 dport=5060-5060 tos=184-191"},
		{model.CMTSMatch{Proto: "6", Src: "198.18.64.0/24", Sport: "0-65535", Tos: "0-255"}, "proto=6 src=198.18.64.0/24"},
		{model.CMTSMatch{Dst: "2001:db8:0:0::/64"}, "dst=2001:db8::/64"},
	} {
		if got := c.m.Canonical(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
}

func TestACLRuleTextIsTheDataPlanesCanonicalForm(t *testing.T) {
	for _, c := range []struct {
		r    model.ACLRule
		want string
	}{
		{model.ACLRule{Action: "deny", Proto: "tcp", Dst: "198.18.10.0/24", Dport: "22"}, "deny proto tcp dst 198.18.10.0/24 dport 22"},
		{model.ACLRule{Action: "permit", Proto: "17", Sport: "0-65535", Dport: "5000-5999"}, "permit proto udp dport 5000-5999"},
		{model.ACLRule{Action: "permit", Proto: "47", Src: "2001:db8::/32"}, "permit proto 47 src 2001:db8::/32"},
		{model.ACLRule{Action: "deny"}, "deny"},
		{model.ACLRule{Action: "deny", Proto: "udp", Dport: "53-53"}, "deny proto udp dport 53"},
	} {
		if got := c.r.Text(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.r, got, c.want)
		}
	}
}
