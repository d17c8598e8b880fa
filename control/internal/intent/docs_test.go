package intent

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var fenceRE = regexp.MustCompile("(?s)```json (intent|refused (\\d{3}))\n(.*?)```")

// TestDocExamples applies docs/xdp-steering.md's examples in order, as the
// README examples of a CoreDNS plugin are run: every "json intent" block is
// accepted, every "json refused NNN" block refused with that status.
func TestDocExamples(t *testing.T) {
	md, err := os.ReadFile("../../../docs/xdp-steering.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenceRE.FindAllStringSubmatch(string(md), -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d examples in docs/xdp-steering.md", len(blocks))
	}
	d := loadDP(t, 0)
	e := NewEngine(d, "eth0", nil)
	for i, b := range blocks {
		var ins []Intent
		var perr error
		var batch struct {
			Intents []json.RawMessage `json:"intents"`
		}
		docs := []json.RawMessage{json.RawMessage(b[3])}
		if strings.Contains(b[3], `"intents"`) && json.Unmarshal([]byte(b[3]), &batch) == nil {
			docs = batch.Intents
		}
		for _, doc := range docs {
			in, err := Parse(doc)
			if err != nil {
				perr = err
				break
			}
			ins = append(ins, in)
		}
		if perr == nil {
			perr = e.Apply(ins)
		}
		if b[1] == "intent" {
			if perr != nil {
				t.Errorf("example %d refused: %v\n%s", i, perr, b[3])
			}
			continue
		}
		want, _ := strconv.Atoi(b[2])
		if got := status(perr); got != want {
			t.Errorf("example %d: status %d (%v), the doc says %d\n%s", i, got, perr, want, b[3])
		}
	}
	if n := len(e.List()); n != 4 {
		t.Errorf("%d intents applied by the examples, want 4", n)
	}
}
