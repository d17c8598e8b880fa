package controller_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"edgeplane/control/internal/api"
	"edgeplane/control/internal/apispec"
	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/etcdtest"
	"edgeplane/control/model"
)

type client struct {
	t     *testing.T
	url   string
	token string
}

func start(t *testing.T, o api.Options) (*client, *controller.Store) {
	t.Helper()
	st := controller.NewStore(etcdtest.Client(t, etcdtest.Embedded(t)))
	srv := httptest.NewServer(controller.Handler(st, o))
	t.Cleanup(srv.Close)
	return &client{t: t, url: srv.URL}, st
}

// do sends a request and checks the answer against the document: a status
// the operation lists, a body its schema accepts.
func (c *client) do(method, path, body string, out any) int {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	tmpl := path
	if i := strings.Index(tmpl, "?"); i >= 0 {
		tmpl = tmpl[:i]
	}
	if strings.HasPrefix(tmpl, "/v1/nodes/") {
		tmpl = "/v1/nodes/{node}" + map[bool]string{true: "/status"}[strings.HasSuffix(tmpl, "/status")]
	}
	if op := model.Operation(method, tmpl); op != nil {
		s, ok := apispec.ResponseSchema(op, resp.StatusCode, "application/json")
		if !ok {
			c.t.Fatalf("%s %s: status %d is not in the document: %s", method, path, resp.StatusCode, b)
		}
		v, err := apispec.Decode(b)
		if err != nil {
			c.t.Fatalf("%s %s: answer is not JSON: %s", method, path, b)
		}
		if err := apispec.CheckResponse(s, v); err != nil {
			c.t.Fatalf("%s %s: answer refused by the document: %v\n%s", method, path, err, b)
		}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

const nodeA1 = `{"apiVersion": "edgeplane/v1", "router": {"routes": [{"prefix": "198.18.5.0/24", "via": "198.18.1.2"}]}}`
const nodeA2 = `{"apiVersion": "edgeplane/v1", "router": {"routes": [{"prefix": "198.18.5.0/24", "via": "198.18.1.3"}, {"prefix": "198.18.6.0/24", "via": "198.18.1.2"}]}}`
const nodeB = `{"apiVersion": "edgeplane/v1", "bng": {"subscribers": [{"id": 1, "vlan": 10, "ipv4": ["198.18.100.10"]}]}}`

func TestPlanApplyRollbackThroughTheAPI(t *testing.T) {
	c, _ := start(t, api.Options{})
	var a model.Applied
	if code := c.do("POST", "/v1/apply", `{"nodes": {"a": `+nodeA1+`}, "comment": "first"}`, &a); code != 200 || a.Revision != 1 {
		t.Fatalf("apply: %d %+v", code, a)
	}

	// A plan says what would change, per node, and stores nothing.
	var p model.Plan
	change := `{"nodes": {"a": ` + nodeA2 + `, "b": ` + nodeB + `}}`
	if code := c.do("POST", "/v1/plan", change, &p); code != 200 {
		t.Fatal(code)
	}
	got := fmt.Sprint(p.Nodes)
	want := "[{[{router 198.18.5.0/24 route update} {router 198.18.6.0/24 route add}] map[add:1 update:1] [] a [] false} " +
		"{[{ node add} {bng section add} {1 subscriber add}] map[add:3] [] b [] false}]"
	if p.BaseRevision != 1 || got != want {
		t.Fatalf("plan on %d:\n%s\nwant\n%s", p.BaseRevision, got, want)
	}
	var st model.DesiredState
	c.do("GET", "/v1/state", "", &st)
	if st.Revision != 1 || len(st.Nodes) != 1 {
		t.Fatalf("a plan changed the state: %+v", st)
	}

	// Both nodes in one revision.
	if code := c.do("POST", "/v1/apply", change, &a); code != 200 || a.Revision != 2 || len(a.Plan.Nodes) != 2 {
		t.Fatalf("apply: %d %+v", code, a)
	}
	var nd model.NodeDesired
	c.do("GET", "/v1/nodes/b", "", &nd)
	if nd.Revision != 2 || len(nd.Config.Bng.Subscribers) != 1 {
		t.Fatalf("node b: %+v", nd)
	}
	// The same change again changes nothing and makes no revision.
	if c.do("POST", "/v1/apply", change, &a); a.Revision != 2 || len(a.Plan.Nodes) != 0 {
		t.Fatalf("no-op apply: %+v", a)
	}

	// Rollback to 1: b goes, a gets its first routes back, as revision 3.
	if code := c.do("POST", "/v1/rollback", `{"revision": 1, "comment": "undo"}`, &a); code != 200 || a.Revision != 3 {
		t.Fatalf("rollback: %d %+v", code, a)
	}
	c.do("GET", "/v1/state", "", &st)
	if st.Revision != 3 || len(st.Nodes) != 1 || st.Nodes["a"].Router.Routes[0].Via != "198.18.1.2" {
		t.Fatalf("after rollback: %+v", st)
	}
	var revs model.RevisionList
	c.do("GET", "/v1/revisions", "", &revs)
	if revs.Current != 3 || len(revs.Revisions) != 3 || *revs.Revisions[0].RollbackOf != 1 || revs.Revisions[2].Comment != "first" {
		t.Fatalf("revisions: %+v", revs)
	}
	// Rollback to 0 empties the state; to a revision that never was: 404.
	if code := c.do("POST", "/v1/rollback", `{"revision": 0}`, &a); code != 200 {
		t.Fatal(code)
	}
	var empty model.DesiredState
	if c.do("GET", "/v1/state", "", &empty); len(empty.Nodes) != 0 || empty.Revision != 4 {
		t.Fatalf("rollback to 0: %+v", empty)
	}
	if code := c.do("POST", "/v1/rollback", `{"revision": 99}`, nil); code != 404 {
		t.Fatalf("rollback to 99: %d", code)
	}
}

func TestBadNodeRefusesTheWholeChange(t *testing.T) {
	c, _ := start(t, api.Options{})
	bad := strings.Replace(nodeB, `"vlan": 10`, `"vlan": 10, "sTag": 5, "cTag": 6`, 1)
	var pr model.Problem
	code := c.do("POST", "/v1/apply", `{"nodes": {"a": `+nodeA1+`, "b": `+bad+`}}`, &pr)
	if code != 400 || !strings.Contains(pr.Error, "nodes.b.bng.subscribers[0].vlan") {
		t.Fatalf("%d %+v", code, pr)
	}
	var st model.DesiredState
	if c.do("GET", "/v1/state", "", &st); st.Revision != 0 || len(st.Nodes) != 0 {
		t.Fatalf("a refused change stored something: %+v", st)
	}
	for _, c2 := range []struct{ name, body, want string }{
		{"schema: unknown field", `{"nodes": {"a": ` + nodeA1 + `}, "force": true}`, `"force" is unsupported`},
		{"schema: route prefix", `{"nodes": {"a": {"apiVersion": "edgeplane/v1", "router": {"routes": [{"prefix": "x", "via": "198.18.1.1"}]}}}}`, "nodes.a.router.routes[0].prefix"},
		{"node name not a DNS label", `{"nodes": {"Node_A": ` + nodeA1 + `}}`, "not a node name"},
		{"remove of an unknown node", `{"remove": ["zz"]}`, `no node "zz"`},
	} {
		if code := c.do("POST", "/v1/apply", c2.body, &pr); code != 400 || !strings.Contains(pr.Error, c2.want) {
			t.Errorf("%s: %d %q, want 400 containing %q", c2.name, code, pr.Error, c2.want)
		}
	}
}

func TestExpectedRevisionConflict(t *testing.T) {
	c, _ := start(t, api.Options{})
	c.do("POST", "/v1/apply", `{"nodes": {"a": `+nodeA1+`}}`, nil)
	var pr model.Problem
	if code := c.do("POST", "/v1/apply", `{"expectedRevision": 0, "nodes": {"a": `+nodeA2+`}}`, &pr); code != 409 {
		t.Fatalf("%d %+v", code, pr)
	}
	if code := c.do("POST", "/v1/apply", `{"expectedRevision": 1, "nodes": {"a": `+nodeA2+`}}`, nil); code != 200 {
		t.Fatal(code)
	}
}

func TestWatchStreamsStateThenChanges(t *testing.T) {
	c, _ := start(t, api.Options{})
	c.do("POST", "/v1/apply", `{"nodes": {"a": `+nodeA1+`}}`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/v1/watch", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	next := func() model.WatchEvent {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		v, _ := apispec.Decode(lines.Bytes())
		if err := apispec.CheckResponse(model.Schema("WatchEvent"), v); err != nil {
			t.Fatalf("%s: %v", lines.Bytes(), err)
		}
		var ev model.WatchEvent
		json.Unmarshal(lines.Bytes(), &ev)
		return ev
	}
	if ev := next(); ev.Kind != "state" || ev.Node != "a" || ev.Revision != 1 {
		t.Fatalf("%+v", ev)
	}
	if ev := next(); ev.Kind != "synced" || ev.Revision != 1 {
		t.Fatalf("%+v", ev)
	}
	c.do("POST", "/v1/apply", `{"nodes": {"b": `+nodeB+`}, "remove": ["a"]}`, nil)
	seen := map[string]model.WatchEvent{}
	for range 2 {
		ev := next()
		seen[ev.Node] = ev
	}
	if seen["a"].Kind != "remove" || seen["a"].Revision != 2 || seen["b"].Kind != "put" || seen["b"].Revision != 2 {
		t.Fatalf("%+v", seen)
	}
}

func TestTokenIsRequiredAndErrorsAreJSON(t *testing.T) {
	tok := "0123456789abcdefghijklmnop"
	c, _ := start(t, api.Options{Token: []byte(tok)})
	var pr model.Problem
	if code := c.do("GET", "/v1/state", "", &pr); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	c.token = "wrong-token-wrong-token"
	if code := c.do("GET", "/v1/state", "", &pr); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	c.token = tok
	if code := c.do("GET", "/v1/state", "", nil); code != 200 {
		t.Fatalf("token: %d", code)
	}
	if code := c.do("GET", "/v1/nodes/Bad_Name", "", &pr); code != 404 {
		t.Fatalf("bad node name: %d", code)
	}
	if code := c.do("GET", "/v1/nodes/nosuch/status", "", &pr); code != 404 || !strings.Contains(pr.Error, "no agent") {
		t.Fatalf("status of an unknown node: %d %+v", code, pr)
	}
	if code := c.do("DELETE", "/v1/apply", "", &pr); code != 405 {
		t.Fatalf("DELETE /v1/apply: %d", code)
	}
	if code := c.do("GET", "/v2/state", "", &pr); code != 404 {
		t.Fatalf("unknown path: %d", code)
	}
	req, _ := http.NewRequest("POST", c.url+"/v1/apply", bytes.NewReader([]byte(`{}`)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Fatalf("text/plain body: %d", resp.StatusCode)
	}
}
