// Command pfcp-cp-sim is a BNG control plane for tests and benchmarks
// (internal/pfcp/cpsim): it drives a PFCP user-plane function the way a
// TR-459 control plane does, or, as a peer, adds the same subscribers to
// edgeplane-dp through its control socket directly.
//
//	pfcp-cp-sim serve  --upf ADDR:PORT --local ADDR[:PORT]     JSON commands on stdin, answers on stdout
//	pfcp-cp-sim bench  --upf ADDR:PORT --local ADDR --sessions N [--window W]
//	pfcp-cp-sim direct --socket PATH --sessions N [--batch B] [--window W]
//	pfcp-cp-sim pfcpsim --upf ADDR --local ADDR --sessions N   omec-project's pfcpsim as the client
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "bench":
		err = bench(os.Args[2:])
	case "direct":
		err = direct(os.Args[2:])
	case "pfcpsim":
		err = runPfcpsim(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pfcp-cp-sim %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: pfcp-cp-sim serve|bench|direct|pfcpsim [flags]  (-h for flags)")
	os.Exit(2)
}
