// Command proto-gen generates Go from a .proto without protoc: the file is
// compiled by protocompile (a pure-Go protobuf compiler) and handed, as
// the CodeGeneratorRequest protoc would send, to protoc-gen-go and
// protoc-gen-go-grpc (run as `go tool`, pinned in control/go.mod); their
// files are written under -out.
//
//	go run ./cmd/proto-gen -out model/pb model/edgeplane.proto
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

func main() {
	out := flag.String("out", ".", "directory the generated files go to")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: proto-gen -out DIR FILE.proto")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "proto-gen:", err)
		os.Exit(1)
	}
}

func run(file, out string) error {
	dir, name := filepath.Split(file)
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{dir}}),
		SourceInfoMode: protocompile.SourceInfoStandard}
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		return err
	}
	fd := protodesc.ToFileDescriptorProto(files[0])
	// Imports first, as protoc sends them.
	var all []*descriptorpb.FileDescriptorProto
	for i := 0; i < files[0].Imports().Len(); i++ {
		all = append(all, protodesc.ToFileDescriptorProto(files[0].Imports().Get(i).FileDescriptor))
	}
	all = append(all, fd)
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: []string{name}, Parameter: proto.String("paths=source_relative"),
		ProtoFile: all, CompilerVersion: &pluginpb.Version{Major: proto.Int32(3), Minor: proto.Int32(21)}}
	in, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	for _, plugin := range []string{"protoc-gen-go", "protoc-gen-go-grpc"} {
		cmd := exec.Command("go", "tool", plugin)
		cmd.Stdin, cmd.Stderr = bytes.NewReader(in), os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s: %w", plugin, err)
		}
		var res pluginpb.CodeGeneratorResponse
		if err := proto.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("%s: %w", plugin, err)
		}
		if res.Error != nil {
			return fmt.Errorf("%s: %s", plugin, res.GetError())
		}
		for _, f := range res.File {
			if err := os.WriteFile(filepath.Join(out, f.GetName()), []byte(f.GetContent()), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
