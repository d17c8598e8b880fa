package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"gopkg.in/yaml.v3"

	"edgeplane/control/internal/agent"
	"edgeplane/control/internal/apispec"
)

// The API runs against a real agent with real maps, loaded but not
// attached (the integration tests attach it to veth).
func newAgent(t *testing.T) *agent.Agent {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for BPF maps")
	}
	a, err := agent.Start(agent.Config{Iface: "eth0", NoAttach: true, StateDir: t.TempDir(),
		Overload: "off", High: 0.9, Low: 0.75, LoadInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// newServer serves the API the way the agent does (NewServer's limits and
// timeouts) on a loopback port.
func newServer(t *testing.T) *httptest.Server {
	return serve(t, Handler(newAgent(t), Options{}), DefaultReadTimeout)
}

func serve(t *testing.T, h http.Handler, readTimeout time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	cfg := NewServer(h, readTimeout)
	cfg.ErrorLog = nil
	srv.Config = cfg
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func count(t *testing.T, srv *httptest.Server) int {
	_, m := do(t, srv, "GET", "/v1/intents", "")
	return len(m["intents"].([]any))
}

const dppIntent = `{"intentId": "dpp-1", "Resources": [
  {"resourceId": "F8A4C949", "encapsulationID1": "4450", "encapsulationType1": "vxlan"},
  {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
  {"resourceId": "5A07C587", "srcIP": "198.18.10.1", "dstPort": "5004"}],
 "Action": {"actionType": "INSERT", "actionName": "PRIO_QUEUE", "rx_queue": "0"},
 "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}]}`

func TestIntentLifecycle(t *testing.T) {
	srv := newServer(t)
	code, m := do(t, srv, "POST", "/v1/intents", dppIntent)
	if code != 201 {
		t.Fatalf("apply: %d %v", code, m)
	}
	rules := m["intents"].([]any)[0].(map[string]any)["rules"].([]any)
	if h := rules[0].(map[string]any)["flowHash"].(string); !regexp.MustCompile(`^[0-9A-F]{8}$`).MatchString(h) {
		t.Errorf("flowHash %q", h)
	}
	if code, _ := do(t, srv, "GET", "/v1/intents/dpp-1", ""); code != 200 {
		t.Errorf("get: %d", code)
	}
	code, st := do(t, srv, "GET", "/v1/stats", "")
	if code != 200 || len(st["flows"].([]any)) != 1 || st["counters"].(map[string]any)["paths"] == nil {
		t.Errorf("stats: %d %v", code, st)
	}
	if code, _ := do(t, srv, "DELETE", "/v1/intents/dpp-1", ""); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if code, m := do(t, srv, "DELETE", "/v1/intents/dpp-1", ""); code != 404 || m["error"] == nil {
		t.Errorf("delete again: %d %v", code, m)
	}
}

func TestRefusalsChangeNothing(t *testing.T) {
	srv := newServer(t)
	if code, m := do(t, srv, "POST", "/v1/intents", dppIntent); code != 201 {
		t.Fatalf("apply: %d %v", code, m)
	}
	good := `{"intentId": "ok", "Resources": [{"dstPort": "9"}], "Action": {"actionName": "PRIO_QUEUE"}}`
	cases := []struct {
		name, method, path, body string
		code                     int
	}{
		{"garbage", "POST", "/v1/intents", "{{", 400},
		{"empty-batch", "POST", "/v1/intents", `{"intents": []}`, 400},
		{"batch-with-one-bad", "POST", "/v1/intents", `{"intents": [` + good + `, {"Resources": [{"dstPort": "70000"}], "Action": {"actionName": "PRIO_QUEUE"}}]}`, 400},
		{"batch-with-conflict", "POST", "/v1/intents", `{"intents": [` + good + `, ` + dppIntent + `]}`, 409},
		{"too-large", "POST", "/v1/intents", `{"x": "` + strings.Repeat("a", 2<<20) + `"}`, 413},
		{"overload-bad-mode", "PUT", "/v1/overload", `{"mode": "maybe"}`, 400},
		{"overload-unknown-field", "PUT", "/v1/overload", `{"mode": "host", "x": 1}`, 400},
		{"alt-multicast-mac", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "01:00:5e:00:00:01", "ipv4": "198.18.0.9"}]}`, 400},
		{"alt-no-address", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "02:00:00:00:00:09"}]}`, 400},
		{"alt-v6-in-v4", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv4": "2001:db8::1"}]}`, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, m := do(t, srv, c.method, c.path, c.body)
			if code != c.code || m["error"] == nil || m["error"] == "" {
				t.Fatalf("%d %v, want %d with a reason", code, m, c.code)
			}
			if n := count(t, srv); n != 1 {
				t.Errorf("%d intents after a refusal, want 1", n)
			}
		})
	}
	_, m := do(t, srv, "GET", "/v1/alt-nodes", "")
	if len(m["altNodes"].([]any)) != 0 {
		t.Errorf("refused alt-node lists were applied: %v", m)
	}
}

func TestOverloadAndAltNodes(t *testing.T) {
	srv := newServer(t)
	code, m := do(t, srv, "PUT", "/v1/overload", `{"mode": "host"}`)
	if code != 200 || m["hostOverloaded"] != true || m["mode"] != "host" {
		t.Errorf("overload on: %d %v", code, m)
	}
	code, m = do(t, srv, "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv4": "198.18.0.9", "ipv6": "2001:db8::9"}]}`)
	nodes, _ := m["altNodes"].([]any)
	if code != 200 || len(nodes) != 1 || nodes[0].(map[string]any)["ipv6"] != "2001:db8::9" {
		t.Errorf("alt nodes: %d %v", code, m)
	}
}

// TestMetricsLint runs promlint (as CoreDNS's metric_naming_test does) on a
// real scrape, after traffic-free use of every metric family.
func TestMetricsLint(t *testing.T) {
	srv := newServer(t)
	do(t, srv, "POST", "/v1/intents", dppIntent)
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	problems, err := promlint.New(bytes.NewReader(b)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, want := range []string{`edgeplane_xdp_packets_total{verdict="redirect"}`, `edgeplane_xdp_drops_total{reason="bad_gtp_ext"}`,
		`edgeplane_xdp_path_packets_total{path="offload"}`, `edgeplane_xdp_flow_packets_total{flow_hash=`,
		`edgeplane_xdp_api_request_duration_seconds_bucket`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(string(b), "# TYPE edgeplane_xdp_api_request_duration_seconds summary") {
		t.Error("summary; want histograms")
	}
}

// TestOpenAPIDocumentsEveryRoute: every operation in the document is
// served (Handler panics on a route the document lacks, so the other way
// round holds by construction).
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(apispec.Document, &doc); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t)
	var ops []string
	for p, m := range doc.Paths {
		for method := range m {
			if method != "parameters" {
				ops = append(ops, strings.ToUpper(method)+" "+p)
			}
		}
	}
	sort.Strings(ops)
	if len(ops) != 11 {
		t.Errorf("openapi.yaml has %d operations: %v", len(ops), ops)
	}
	for _, op := range ops {
		method, path, _ := strings.Cut(op, " ")
		path = strings.Replace(path, "{id}", "no-such-intent", 1)
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound && !strings.Contains(op, "{id}") {
			t.Errorf("%s: %d, the handler does not serve it", op, resp.StatusCode)
		}
	}
}
