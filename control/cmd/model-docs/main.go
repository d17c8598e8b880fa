// Command model-docs writes the configuration model's reference into
// docs/control.md, between model.RefBegin and model.RefEnd, from
// control/model/openapi.yaml (`make gen-control`).
package main

import (
	"fmt"
	"os"

	"edgeplane/control/model"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: model-docs docs/control.md")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := model.Splice(string(b))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if out != string(b) {
		if err := os.WriteFile(os.Args[1], []byte(out), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
