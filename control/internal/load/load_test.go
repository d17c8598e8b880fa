package load

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHysteresis(t *testing.T) {
	h := Hysteresis{High: 0.9, Low: 0.7}
	steps := []struct {
		in   float64
		want bool
	}{{0.5, false}, {0.89, false}, {0.9, true}, {0.8, true}, {0.71, true}, {0.7, false}, {0.85, false}, {0.95, true}}
	for i, s := range steps {
		if got := h.Update(s.in); got != s.want {
			t.Fatalf("step %d: load %.2f -> %v, want %v", i, s.in, got, s.want)
		}
	}
}

func TestMonitorHostAndCPUs(t *testing.T) {
	m := Monitor{High: 0.9, Low: 0.5}
	host, cpus := m.Step([]float64{1.0, 0.2})
	if host || !cpus[0] || cpus[1] {
		t.Fatalf("one busy CPU: host %v cpus %v", host, cpus)
	}
	host, _ = m.Step([]float64{0.95, 0.9})
	if !host {
		t.Fatal("both CPUs busy: host not overloaded")
	}
	host, cpus = m.Step([]float64{0.6, 0.6})
	if !host || !cpus[0] {
		t.Fatal("0.6 is between the thresholds: state must hold")
	}
	host, _ = m.Step([]float64{0.4, 0.4})
	if host {
		t.Fatal("below Low: host still overloaded")
	}
}

func TestSamplerFromProcStat(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "stat")
	write := func(s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	//        user nice system idle iowait irq softirq steal
	write("cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0\ncpu1 0 0 0 200 0 0 0 0\n")
	s := Sampler{Path: p}
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	// cpu0: +90 softirq, +10 idle -> 0.9; cpu1: +50 iowait, +50 idle -> 0.
	write("cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 0 110 0 0 90 0\ncpu1 0 0 0 250 50 0 0 0\n")
	loads, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if len(loads) != 2 || loads[0] != 0.9 || loads[1] != 0 {
		t.Fatalf("loads %v, want [0.9 0]", loads)
	}
	if _, err := (&Sampler{}).Sample(); err != nil {
		t.Fatalf("real /proc/stat: %v", err)
	}
}
