package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stat writes a /proc/stat with each CPU's cumulative busy (softirq) and
// idle jiffies.
func stat(t *testing.T, path string, cpus [][2]uint64) {
	var b strings.Builder
	b.WriteString("cpu  0 0 0 0 0 0 0 0\n")
	for i, c := range cpus {
		fmt.Fprintf(&b, "cpu%d 0 0 0 %d 0 0 %d 0\n", i, c[1], c[0])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAutoOverloadFollowsLoad drives the agent's auto mode with synthetic
// CPU times and reads the state back from the real node_map.
func TestAutoOverloadFollowsLoad(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for BPF maps")
	}
	dir := t.TempDir()
	ps := filepath.Join(dir, "stat")
	stat(t, ps, [][2]uint64{{0, 0}, {0, 0}})
	a, err := Start(Config{Iface: "eth0", NoAttach: true, StateDir: dir, Overload: "auto",
		High: 0.9, Low: 0.5, LoadInterval: time.Second, ProcStat: ps})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	steps := []struct {
		name       string
		busy, idle [2]uint64 // per CPU, added this sample
		host       bool
		cpus       []int
	}{
		{"idle", [2]uint64{10, 10}, [2]uint64{90, 90}, false, []int{}},
		{"cpu1-saturated", [2]uint64{10, 100}, [2]uint64{90, 0}, false, []int{1}},
		{"both-saturated", [2]uint64{95, 100}, [2]uint64{5, 0}, true, []int{0, 1}},
		{"between-thresholds-holds", [2]uint64{70, 70}, [2]uint64{30, 30}, true, []int{0, 1}},
		{"below-low-clears", [2]uint64{40, 40}, [2]uint64{60, 60}, false, []int{}},
	}
	cum := [][2]uint64{{0, 0}, {0, 0}}
	if err := a.sampleLoad(); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		for c := range cum {
			cum[c][0] += s.busy[c]
			cum[c][1] += s.idle[c]
		}
		stat(t, ps, cum)
		if err := a.sampleLoad(); err != nil {
			t.Fatal(err)
		}
		st, err := a.Overload()
		if err != nil {
			t.Fatal(err)
		}
		if st.Host != s.host || fmt.Sprint(st.CPUs) != fmt.Sprint(s.cpus) {
			t.Errorf("%s: node_map says host %v cpus %v, want %v %v (loads %v)", s.name, st.Host, st.CPUs, s.host, s.cpus, st.Loads)
		}
	}
	// A forced mode is not overridden by samples.
	if err := a.SetOverloadMode("off"); err != nil {
		t.Fatal(err)
	}
	for c := range cum {
		cum[c][0] += 1000
	}
	stat(t, ps, cum)
	a.sampleLoad()
	if st, _ := a.Overload(); st.Host || len(st.CPUs) != 0 {
		t.Errorf("mode off overridden by a sample: %+v", st)
	}
}
