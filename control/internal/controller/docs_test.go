package controller_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"edgeplane/control/internal/api"
)

// TestDocsExamples runs docs/control.md's requests in order against the
// controller (embedded etcd) and compares each answer with the one the
// page shows.
func TestDocsExamples(t *testing.T) {
	b, err := os.ReadFile("../../../docs/control.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)<!-- test: control-(request|answer) ([a-z-]+) -->\\s*```[a-z]*\\n(.*?)```")
	reqs := map[string]string{}
	answers := map[string]string{}
	var order []string
	for _, m := range block.FindAllStringSubmatch(string(b), -1) {
		if m[1] == "request" {
			reqs[m[2]] = m[3]
			order = append(order, m[2])
		} else {
			answers[m[2]] = m[3]
		}
	}
	if len(order) < 4 {
		t.Fatalf("found %d examples in docs/control.md", len(order))
	}
	c, _ := start(t, api.Options{})
	for _, name := range order {
		head, body, _ := strings.Cut(reqs[name], "\n\n")
		method, path, _ := strings.Cut(strings.TrimSpace(head), " ")
		var got any
		c.do(method, path, body, &got)
		var want any
		if err := json.Unmarshal([]byte(answers[name]), &want); err != nil {
			t.Fatalf("%s: the page's answer is not JSON: %v", name, err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("%s: %s %s answered\n%s\nthe page says\n%s", name, method, path, g, w)
		}
	}
}
