// Package load measures CPU load from /proc/stat and turns it into the
// overload state the XDP program reads, with hysteresis so that a load
// hovering at the threshold does not flip traffic between the host and the
// alternative nodes on every sample.
package load

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// times is one CPU's jiffies: busy and total.
type times struct{ busy, total uint64 }

// readStat parses the per-CPU lines of /proc/stat ("cpuN user nice system
// idle iowait irq softirq steal ..."). Idle time is idle + iowait; softirq,
// where XDP and the stack's receive path run, counts as busy.
func readStat(r io.Reader) (map[int]times, error) {
	out := map[int]times{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			return nil, fmt.Errorf("/proc/stat: %q", f[0])
		}
		var t times
		for i, s := range f[1:] {
			if i >= 8 { // guest time is already in user
				break
			}
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, err
			}
			t.total += v
			if i != 3 && i != 4 {
				t.busy += v
			}
		}
		out[n] = t
	}
	return out, sc.Err()
}

// Sampler returns each CPU's busy ratio since the previous sample.
type Sampler struct {
	Path string // /proc/stat unless set
	prev map[int]times
}

// Sample returns busy ratios (0..1) indexed by CPU number; the first call
// measures since boot.
func (s *Sampler) Sample() ([]float64, error) {
	path := s.Path
	if path == "" {
		path = "/proc/stat"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cur, err := readStat(f)
	if err != nil {
		return nil, err
	}
	n := 0
	for c := range cur {
		n = max(n, c+1)
	}
	loads := make([]float64, n)
	for c, t := range cur {
		p := s.prev[c]
		if t.total > p.total {
			loads[c] = float64(t.busy-p.busy) / float64(t.total-p.total)
		}
	}
	s.prev = cur
	return loads, nil
}

// Hysteresis is a two-threshold switch: it turns on at or above High and
// off at or below Low.
type Hysteresis struct {
	High, Low float64
	On        bool
}

// Update feeds one sample and returns the state.
func (h *Hysteresis) Update(v float64) bool {
	switch {
	case !h.On && v >= h.High:
		h.On = true
	case h.On && v <= h.Low:
		h.On = false
	}
	return h.On
}

// Monitor keeps one switch for the host (mean load) and one per CPU.
type Monitor struct {
	High, Low float64
	host      Hysteresis
	cpus      []Hysteresis
}

// Step turns a sample into overload flags.
func (m *Monitor) Step(loads []float64) (host bool, cpus []bool) {
	m.host.High, m.host.Low = m.High, m.Low
	for len(m.cpus) < len(loads) {
		m.cpus = append(m.cpus, Hysteresis{High: m.High, Low: m.Low})
	}
	sum := 0.0
	cpus = make([]bool, len(loads))
	for c, v := range loads {
		sum += v
		cpus[c] = m.cpus[c].Update(v)
	}
	if len(loads) > 0 {
		host = m.host.Update(sum / float64(len(loads)))
	}
	return host, cpus
}
