package model_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestGeneratedTypesAreCurrent regenerates types.gen.go with the pinned
// oapi-codegen (control/go.mod's tool block) and compares: the Go types
// cannot drift from openapi.yaml.
func TestGeneratedTypesAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator")
	}
	out, err := exec.Command("go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "openapi.yaml").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("oapi-codegen: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	have, err := os.ReadFile("types.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, have) {
		t.Fatal("types.gen.go differs from what openapi.yaml generates: run `go generate ./model` in control/")
	}
}

// TestGeneratedProtoIsCurrent regenerates model/pb from edgeplane.proto
// (cmd/proto-gen: protocompile and the pinned protoc-gen-go,
// protoc-gen-go-grpc) into a temporary directory and compares.
func TestGeneratedProtoIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generators")
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "run", "../cmd/proto-gen", "-out", dir, "edgeplane.proto").CombinedOutput(); err != nil {
		t.Fatalf("proto-gen: %v\n%s", err, out)
	}
	for _, f := range []string{"edgeplane.pb.go", "edgeplane_grpc.pb.go"} {
		want, _ := os.ReadFile(dir + "/" + f)
		have, err := os.ReadFile("pb/" + f)
		if err != nil || !bytes.Equal(want, have) {
			t.Fatalf("pb/%s differs from what edgeplane.proto generates: run `go generate ./model` in control/", f)
		}
	}
}
