package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"edgeplane/control/internal/apispec"
)

// raw sends one request and returns the answer with its decoded body.
func raw(t *testing.T, srv *httptest.Server, method, path, ctype, body string) (*http.Response, any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			v = string(b)
		}
	}
	return resp, v
}

func isProblem(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("%d answered %q, want application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := apispec.CheckResponse(apispec.Schema("Problem"), v); err != nil {
		t.Errorf("%d body %v is not a Problem: %v", resp.StatusCode, v, err)
	}
	if m, _ := v.(map[string]any); m != nil && m["status"] != float64(resp.StatusCode) {
		t.Errorf("body status %v, answered %d", m["status"], resp.StatusCode)
	}
}

const dppDoc = `{"intentId": %q, "Resources": [{"dstPort": "%d"}], "Action": {"actionName": "PRIO_QUEUE"}}`

// TestIntentIDsDotAndDotDotRefused: "." and ".." passed the old id grammar
// but no URL can name them (clients and servers remove dot segments), so
// such an intent could be neither read nor deleted.
func TestIntentIDsDotAndDotDotRefused(t *testing.T) {
	srv := newServer(t)
	for _, doc := range []string{
		`{"intentId": ".", "Resources": [{"dstPort": "5004"}], "Action": {"actionName": "PRIO_QUEUE"}}`,
		`{"intentId": "..", "Resources": [{"dstPort": "5004"}], "Action": {"actionName": "PRIO_QUEUE"}}`,
		`{"intentId": ".hidden", "Resources": [{"dstPort": "5004"}], "Action": {"actionName": "PRIO_QUEUE"}}`,
		`{"trafficRuleId": "..", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5004"]}], "action": "PASSTHROUGH"}`,
		`{"intents": [{"trafficRuleId": ".", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5004"]}], "action": "PASSTHROUGH"}]}`,
	} {
		resp, v := raw(t, srv, "POST", "/v1/intents", "application/json", doc)
		if resp.StatusCode != 400 || !strings.Contains(v.(map[string]any)["error"].(string), "not starting with a dot") {
			t.Errorf("%s: %d %v, want 400 naming the id grammar", doc, resp.StatusCode, v)
		}
	}
	if n := count(t, srv); n != 0 {
		t.Errorf("%d intents applied", n)
	}
	for i, id := range []string{"a.b", "a..b", "x-1_2.3"} {
		doc := fmt.Sprintf(dppDoc, id, 5001+i)
		if code, m := do(t, srv, "POST", "/v1/intents", doc); code != 201 {
			t.Fatalf("%s: %d %v", id, code, m)
		}
		if code, m := do(t, srv, "GET", "/v1/intents/"+id, ""); code != 200 || m["id"] != id {
			t.Errorf("GET %s: %d %v", id, code, m)
		}
		if code, _ := do(t, srv, "DELETE", "/v1/intents/"+id, ""); code != 204 {
			t.Errorf("DELETE %s: %d", id, code)
		}
	}
}

// TestAltNodesFieldRequired: {} and {"altNodes": null} used to answer 200
// and clear every alternative node; clearing is an explicit empty list.
func TestAltNodesFieldRequired(t *testing.T) {
	srv := newServer(t)
	one := `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv4": "198.18.0.9"}]}`
	if code, m := do(t, srv, "PUT", "/v1/alt-nodes", one); code != 200 {
		t.Fatalf("%d %v", code, m)
	}
	for _, body := range []string{`{}`, `{"altNodes": null}`, `null`, `[]`, `{"altnodes": []}`, `{"AltNodes": []}`} {
		code, m := do(t, srv, "PUT", "/v1/alt-nodes", body)
		if code != 400 || m["error"] == nil {
			t.Errorf("PUT %s: %d %v, want 400", body, code, m)
		}
		if _, m := do(t, srv, "GET", "/v1/alt-nodes", ""); len(m["altNodes"].([]any)) != 1 {
			t.Fatalf("PUT %s changed the nodes: %v", body, m)
		}
	}
	if code, m := do(t, srv, "PUT", "/v1/alt-nodes", `{"altNodes": []}`); code != 200 || len(m["altNodes"].([]any)) != 0 {
		t.Errorf("explicit empty list: %d %v", code, m)
	}
}

// TestDocumentAndServerAgree: what the old document allowed and the
// server refused (an empty trafficRuleId, an empty alternative node MAC),
// and what the server took that the document did not say (a trailing
// document, unknown fields, an IPv4-mapped or unspecified node address),
// is now refused by both, for the same reason.
func TestDocumentAndServerAgree(t *testing.T) {
	srv := newServer(t)
	cases := []struct{ name, method, path, body, reason string }{
		{"empty-trafficRuleId", "POST", "/v1/intents", `{"trafficRuleId": "", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"]}], "action": "PASSTHROUGH"}`, "trafficRuleId"},
		{"empty-alt-mac", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "", "ipv4": "198.18.0.9"}]}`, "altNodes[0].mac"},
		{"multicast-alt-mac", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "01:00:5e:00:00:01", "ipv4": "198.18.0.9"}]}`, "altNodes[0].mac"},
		{"dashed-alt-mac", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "02-00-00-00-00-09", "ipv4": "198.18.0.9"}]}`, "altNodes[0].mac"},
		{"mapped-alt-ipv6", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv6": "::ffff:198.18.0.9"}]}`, "altNodes[0].ipv6"},
		{"unspecified-alt-ipv4", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv4": "0.0.0.0"}]}`, "altNodes[0].ipv4"},
		{"unknown-alt-field", "PUT", "/v1/alt-nodes", `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv4": "198.18.0.9", "vlan": 5}]}`, `"vlan" is unsupported`},
		{"unknown-overload-field", "PUT", "/v1/overload", `{"mode": "host", "x": 1}`, `"x" is unsupported`},
		{"overload-null", "PUT", "/v1/overload", `{"mode": null}`, "mode"},
		{"overload-case", "PUT", "/v1/overload", `{"Mode": "host"}`, `"Mode" is unsupported`},
		{"trailing-document", "PUT", "/v1/overload", `{"mode": "host"} {"mode": "all"}`, "not a JSON object"},
		{"unknown-dppnapp-field", "POST", "/v1/intents", `{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}, "Extra": 1}`, `"Extra" is unsupported`},
		{"unknown-mec-filter-field", "POST", "/v1/intents", `{"trafficRuleId": "x", "filterType": "FLOW", "trafficFilter": [{"dstPort": ["5"], "qCI": 1}], "action": "PASSTHROUGH"}`, `"qCI" is unsupported`},
		{"unknown-batch-field", "POST", "/v1/intents", `{"intents": [{"Resources": [{"dstPort": "5"}], "Action": {"actionName": "PRIO_QUEUE"}}], "atomic": true}`, `"atomic" is unsupported`},
		{"padded-port", "POST", "/v1/intents", `{"Resources": [{"dstPort": " 5004"}], "Action": {"actionName": "PRIO_QUEUE"}}`, "dstPort"},
		{"empty-batch", "POST", "/v1/intents", `{"intents": []}`, "intents"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := apispec.Operation(c.method, strings.Replace(c.path, "/v1/intents/x", "/v1/intents/{id}", 1))
			v, derr := apispec.Decode([]byte(c.body))
			if derr == nil && apispec.Check(apispec.RequestSchema(op), v) == nil {
				t.Errorf("the document accepts %s", c.body)
			}
			resp, got := raw(t, srv, c.method, c.path, "application/json", c.body)
			isProblem(t, resp, got)
			if resp.StatusCode != 400 || !strings.Contains(got.(map[string]any)["error"].(string), c.reason) {
				t.Errorf("%d %v, want 400 naming %s", resp.StatusCode, got, c.reason)
			}
		})
	}
	if n := count(t, srv); n != 0 {
		t.Errorf("%d intents applied by refused documents", n)
	}
	_, m := do(t, srv, "GET", "/v1/alt-nodes", "")
	if len(m["altNodes"].([]any)) != 0 {
		t.Errorf("refused alternative nodes applied: %v", m)
	}
}

// TestErrorsAreJSONProblems: every error the handlers answer is an
// application/json Problem, including the mux's 404 and 405, and each is
// listed in the document where the operation exists.
func TestErrorsAreJSONProblems(t *testing.T) {
	srv := newServer(t)
	big := `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv4": "198.18.0.9", "x": "` + strings.Repeat("a", MaxBody) + `"}]}`
	cases := []struct {
		name, method, path, ctype, body string
		code                            int
		op                              string // the document's operation, "" for none
	}{
		{"unknown-path", "GET", "/v2/intents", "", "", 404, ""},
		{"root", "GET", "/", "", "", 404, ""},
		{"trailing-slash", "GET", "/v1/intents/", "", "", 404, ""},
		{"no-such-intent", "GET", "/v1/intents/nope", "", "", 404, "GET /v1/intents/{id}"},
		{"id-outside-grammar", "DELETE", "/v1/intents/a%20b", "", "", 404, "DELETE /v1/intents/{id}"},
		{"id-too-long", "GET", "/v1/intents/" + strings.Repeat("a", 65), "", "", 404, "GET /v1/intents/{id}"},
		{"method-not-allowed", "PATCH", "/v1/stats", "", "", 405, ""},
		{"trace", "TRACE", "/v1/overload", "", "", 405, ""},
		{"delete-collection", "DELETE", "/v1/intents", "", "", 405, ""},
		{"no-content-type", "PUT", "/v1/overload", "", `{"mode": "off"}`, 415, "PUT /v1/overload"},
		{"form-content-type", "POST", "/v1/intents", "application/x-www-form-urlencoded", `{}`, 415, "POST /v1/intents"},
		{"text-content-type", "PUT", "/v1/alt-nodes", "text/plain", `{"altNodes": []}`, 415, "PUT /v1/alt-nodes"},
		{"too-large", "PUT", "/v1/alt-nodes", "application/json", big, 413, "PUT /v1/alt-nodes"},
		{"not-json", "POST", "/v1/intents", "application/json; charset=utf-8", `{{`, 400, "POST /v1/intents"},
		{"empty-body", "PUT", "/v1/overload", "application/json", ``, 400, "PUT /v1/overload"},
	}
	// Sent as written: Go's client would clean the path itself. The mux
	// would redirect to the cleaned path; the API answers 404.
	for _, p := range []string{"/v1/intents/../stats", "/v1/intents/.", "/v1//stats"} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		var v any
		json.Unmarshal(b, &v)
		if resp.StatusCode != 404 {
			t.Errorf("GET %s: %d %s, want 404", p, resp.StatusCode, b)
		}
		isProblem(t, resp, v)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, v := raw(t, srv, c.method, c.path, c.ctype, c.body)
			if resp.StatusCode != c.code {
				t.Fatalf("%d %v, want %d", resp.StatusCode, v, c.code)
			}
			isProblem(t, resp, v)
			if c.code == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
			if c.op != "" {
				method, path, _ := strings.Cut(c.op, " ")
				if _, ok := apispec.ResponseSchema(apispec.Operation(method, path), c.code, "application/json"); !ok {
					t.Errorf("openapi.yaml does not list %d for %s", c.code, c.op)
				}
			}
		})
	}
}

// TestSlowBodyAnswered408: a body that does not arrive within the read
// timeout is answered 408 (a Problem) and the connection closed; the old
// server had no read timeout and held such a request for as long as the
// client liked.
func TestSlowBodyAnswered408(t *testing.T) {
	srv := serve(t, Handler(newAgent(t), Options{}), 300*time.Millisecond)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang fails the test, not CI
	io.WriteString(c, "PUT /v1/overload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mode\":")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	var v any
	json.Unmarshal(b, &v)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("%d %s, want 408", resp.StatusCode, b)
	}
	isProblem(t, resp, v)
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("connection still open after the 408")
	}
}

// TestResponsesConformToDocument: the answers of a session that touches
// every operation validate against the document's schema for their status.
func TestResponsesConformToDocument(t *testing.T) {
	srv := newServer(t)
	steps := []struct{ method, path, op, body string }{
		{"PUT", "/v1/alt-nodes", "PUT /v1/alt-nodes", `{"altNodes": [{"mac": "02:00:00:00:00:09", "ipv4": "198.18.0.9", "ipv6": "2001:db8::9"}, {"mac": "02:00:00:00:00:0a", "ipv6": "2001:db8::a"}]}`},
		{"POST", "/v1/intents", "POST /v1/intents", dppIntent},
		{"POST", "/v1/intents", "POST /v1/intents", `{"intents": [{"trafficRuleId": "mec-1", "filterType": "FLOW", "trafficFilter": [{"srcAddress": ["2001:db8:10::7"], "dstPort": ["5004"], "protocol": ["udp"], "tag": ["vxlan:4451", "gtp:BEF0"]}], "action": "PASSTHROUGH", "state": "INACTIVE", "x-edgeplane-cpu": 1}]}`},
		{"POST", "/v1/intents", "POST /v1/intents", dppIntent},
		{"GET", "/v1/intents", "GET /v1/intents", ""},
		{"GET", "/v1/intents/dpp-1", "GET /v1/intents/{id}", ""},
		{"GET", "/v1/stats", "GET /v1/stats", ""},
		{"PUT", "/v1/overload", "PUT /v1/overload", `{"mode": "all"}`},
		{"GET", "/v1/overload", "GET /v1/overload", ""},
		{"GET", "/v1/alt-nodes", "GET /v1/alt-nodes", ""},
		{"DELETE", "/v1/intents/mec-1", "DELETE /v1/intents/{id}", ""},
		{"DELETE", "/v1/intents/mec-1", "DELETE /v1/intents/{id}", ""},
		{"GET", "/openapi.yaml", "GET /openapi.yaml", ""},
		{"GET", "/metrics", "GET /metrics", ""},
	}
	for _, s := range steps {
		resp, v := raw(t, srv, s.method, s.path, "application/json", s.body)
		method, path, _ := strings.Cut(s.op, " ")
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		schema, ok := apispec.ResponseSchema(apispec.Operation(method, path), resp.StatusCode, mt)
		if !ok {
			t.Errorf("%s %s: %d %q is not in the document", s.method, s.path, resp.StatusCode, mt)
			continue
		}
		if schema != nil && mt == "application/json" {
			if err := apispec.CheckResponse(schema, v); err != nil {
				t.Errorf("%s %s: %d answer does not match the document: %v\n%v", s.method, s.path, resp.StatusCode, err, v)
			}
		}
	}
}

// TestMetricsMethodLabelBounded: a client choosing the method does not
// choose the number of time series.
func TestMetricsMethodLabelBounded(t *testing.T) {
	srv := newServer(t)
	for _, m := range []string{"FOO1", "FOO2", "BREW"} {
		raw(t, srv, m, "/v1/stats", "", "")
	}
	_, text := raw(t, srv, "GET", "/metrics", "", "")
	s, _ := text.(string)
	if strings.Contains(s, "FOO1") || !strings.Contains(s, `method="other"`) {
		t.Errorf("method label not bounded:\n%s", s)
	}
}
