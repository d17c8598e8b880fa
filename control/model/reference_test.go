package model_test

import (
	"os"
	"testing"

	"edgeplane/control/model"
)

// TestDocsReferenceIsCurrent: docs/control.md's model reference is what
// openapi.yaml generates (`make gen-control`).
func TestDocsReferenceIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../../docs/control.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := model.Splice(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(b) {
		t.Fatal("docs/control.md's model reference differs from openapi.yaml: run `make gen-control`")
	}
}
