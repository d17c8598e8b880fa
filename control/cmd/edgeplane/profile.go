package main

import (
	"os"
	"runtime/pprof"
)

// startCPUProfile writes a CPU profile (runtime/pprof) to path until the
// returned function is called ("" : no profile, a no-op).  Used by the
// long-running functions' --cpuprofile to see where time goes under a
// benchmark (`go tool pprof FILE`).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
