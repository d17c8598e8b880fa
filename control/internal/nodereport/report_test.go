package nodereport_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"edgeplane/control/internal/nodereport"
	"edgeplane/control/model"
)

// dpMetrics are the exporter's series (control/internal/dptelemetry's
// names and labels) for one data plane, set by the test.
type dpMetrics struct {
	up, uptime, desired *prometheus.GaugeVec
	rx, tx, drops       *prometheus.GaugeVec
	busy, idle          *prometheus.GaugeVec
}

func newRegistry(t *testing.T) (*prometheus.Registry, *dpMetrics) {
	g := func(name string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: name}, labels)
	}
	m := &dpMetrics{
		up: g("edgeplane_dp_up", "dp"), uptime: g("edgeplane_dp_uptime_seconds", "dp"),
		desired: g("edgeplane_agent_desired_revision"),
		rx:      g("edgeplane_dp_worker_rx_packets_total", "dp", "worker", "pipeline"),
		tx:      g("edgeplane_dp_worker_tx_packets_total", "dp", "worker", "pipeline"),
		drops:   g("edgeplane_dp_drops_total", "dp", "reason"),
		busy:    g("edgeplane_dp_worker_busy_cycles_total", "dp", "worker", "pipeline"),
		idle:    g("edgeplane_dp_worker_idle_cycles_total", "dp", "worker", "pipeline"),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.up, m.uptime, m.desired, m.rx, m.tx, m.drops, m.busy, m.idle)
	return reg, m
}

func (m *dpMetrics) set(uptime, rx, tx, deny, busy, idle float64) {
	m.up.WithLabelValues("router").Set(1)
	m.uptime.WithLabelValues("router").Set(uptime)
	m.desired.WithLabelValues().Set(7)
	m.rx.WithLabelValues("router", "w0", "router").Set(rx)
	m.tx.WithLabelValues("router", "w0", "router").Set(tx)
	m.drops.WithLabelValues("router", "acl_deny").Set(deny)
	m.drops.WithLabelValues("router", "no_route").Set(0)
	m.busy.WithLabelValues("router", "w0", "router").Set(busy)
	m.idle.WithLabelValues("router", "w0", "router").Set(idle)
}

func reporter(reg *prometheus.Registry, out *bytes.Buffer) *nodereport.Reporter {
	return &nodereport.Reporter{Node: "edge1", Gatherer: reg, Out: out, Interval: time.Second,
		Status: func() model.NodeStatus {
			return model.NodeStatus{Node: "edge1", ObservedRevision: 7, Converged: true, Resyncs: map[string]int64{"start": 1}}
		}}
}

func TestReportRatesAreDeltasOverThePeriod(t *testing.T) {
	reg, m := newRegistry(t)
	var out bytes.Buffer
	r := reporter(reg, &out)
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	m.set(10, 100, 90, 5, 100, 300)
	first := r.Next(t0)
	if len(first.DataPlanes) != 1 || first.DataPlanes[0].RxPPS != nil || first.PeriodS != 0 {
		t.Fatalf("first report: %+v (no rates without an earlier sample)", first)
	}
	if d := first.DataPlanes[0]; d.RxPackets != 100 || d.Drops["acl_deny"] != 5 || len(d.Drops) != 1 {
		t.Fatalf("first report's totals: %+v (zero reasons left out)", d)
	}
	m.set(20, 1100, 1090, 15, 400, 400)
	rep := r.Next(t0.Add(10 * time.Second))
	d := rep.DataPlanes[0]
	if rep.PeriodS != 10 || d.RxPPS == nil || *d.RxPPS != 100 || *d.TxPPS != 100 {
		t.Fatalf("rates: period %v, %+v", rep.PeriodS, d)
	}
	if d.PeriodDrops["acl_deny"] != 10 || d.BusyPct["w0"] != 75 {
		t.Fatalf("period drops %v, busy %v; want acl_deny 10, w0 75%%", d.PeriodDrops, d.BusyPct)
	}
	if rep.DesiredRevision != 7 || rep.ObservedRevision != 7 || !rep.Converged || rep.Resyncs["start"] != 1 {
		t.Fatalf("node part: %+v", rep)
	}
}

func TestReportHasNoRatesAcrossADataPlaneRestart(t *testing.T) {
	reg, m := newRegistry(t)
	var out bytes.Buffer
	r := reporter(reg, &out)
	t0 := time.Now()
	m.set(100, 5000, 5000, 0, 1, 1)
	r.Next(t0)
	m.set(2, 30, 30, 0, 1, 1) // a new run: counters started again
	d := r.Next(t0.Add(10 * time.Second)).DataPlanes[0]
	if d.RxPPS != nil || d.PeriodDrops != nil || d.RxPackets != 30 {
		t.Fatalf("rates across a restart: %+v", d)
	}
}

func TestWriteLineIsOneJSONLine(t *testing.T) {
	reg, m := newRegistry(t)
	var out bytes.Buffer
	m.set(1, 1, 1, 1, 1, 1)
	if err := nodereport.WriteLine(&out, reporter(reg, &out).Next(time.Now())); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %q", len(lines), out.String())
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &v); err != nil || v["type"] != "report" || v["node"] != "edge1" {
		t.Fatalf("line %s: %v", lines[0], err)
	}
}
