// Package nodereport writes the node agent's periodic reports as JSON
// lines: every period, one line that says where the node is (desired and
// observed revision, converged or not, drift, resyncs and changes so far)
// and, per data plane, what it forwarded and dropped over the period.
//
// The figures come from the agent's own Prometheus registry, the one its
// /metrics serves: a report and a scrape cannot disagree, and a counter
// added to the exporter is not a second thing to keep in step here. Rates
// are deltas between two reports divided by the time between them; a
// data plane whose uptime went backwards (a restart) or that did not
// answer has no rates in that report, only its totals.
//
// The line formats (and the reconciliation events the agent writes to the
// same stream, type "pass") are described in docs/control.md.
package nodereport

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"edgeplane/control/model"
)

// Report is one periodic line (type "report").
type Report struct {
	Time             time.Time        `json:"time"`
	Type             string           `json:"type"` // "report"
	Node             string           `json:"node"`
	PeriodS          float64          `json:"periodS"` // seconds since the previous report (0 in the first)
	DesiredRevision  int64            `json:"desiredRevision"`
	ObservedRevision int64            `json:"observedRevision"`
	Converged        bool             `json:"converged"`
	Drift            int              `json:"drift"`
	Resyncs          map[string]int64 `json:"resyncs"`
	Changes          map[string]int64 `json:"changes"`
	DataPlanes       []DataPlane      `json:"dataPlanes"`
}

// DataPlane is one edgeplane-dp's part of a report. Totals are since the
// data plane started; the rates and period drops are over the report's
// period and absent when there is no earlier sample of the same run.
type DataPlane struct {
	Name        string             `json:"dp"`
	Up          bool               `json:"up"`
	UptimeS     float64            `json:"uptimeS,omitempty"`
	RxPackets   uint64             `json:"rxPackets"`
	TxPackets   uint64             `json:"txPackets"`
	Drops       map[string]int64   `json:"drops"` // totals, reasons with a non-zero count
	RxPPS       *float64           `json:"rxPps,omitempty"`
	TxPPS       *float64           `json:"txPps,omitempty"`
	PeriodDrops map[string]int64   `json:"periodDrops,omitempty"` // drops in the period, by reason
	BusyPct     map[string]float64 `json:"busyPct,omitempty"`     // per worker: busy cycles over all cycles in the period
}

// Reporter writes a Report every Interval until its context ends.
type Reporter struct {
	Node     string
	Gatherer prometheus.Gatherer
	Status   func() model.NodeStatus
	Out      io.Writer
	Interval time.Duration

	prev map[string]sample
	at   time.Time
}

// sample is what one data plane's counters were at one report.
type sample struct {
	up        bool
	uptime    float64
	rx, tx    uint64
	drops     map[string]int64
	busy, all map[string]float64 // per worker: busy cycles, busy+idle+sleep cycles
}

// Run reports every Interval until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if err := WriteLine(r.Out, r.Next(now)); err != nil {
				slog.Warn("report not written", "err", err)
			}
		}
	}
}

// WriteLine writes v as one JSON line in one write (lines from several
// goroutines to one file do not interleave).
func WriteLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Next gathers the registry and builds the report at now.
func (r *Reporter) Next(now time.Time) Report {
	st := r.Status()
	rep := Report{Time: now.UTC(), Type: "report", Node: r.Node, ObservedRevision: st.ObservedRevision,
		Converged: st.Converged, Drift: len(st.Drift), Resyncs: st.Resyncs, Changes: st.Changes,
		DataPlanes: []DataPlane{}}
	if rep.Changes == nil {
		rep.Changes = map[string]int64{}
	}
	if !r.at.IsZero() {
		rep.PeriodS = now.Sub(r.at).Seconds()
	}
	mfs, err := r.Gatherer.Gather()
	if err != nil {
		// A partial gather still has what it could read.
		slog.Warn("report: gather", "err", err)
	}
	cur := map[string]sample{}
	get := func(dp string) sample {
		s, ok := cur[dp]
		if !ok {
			s = sample{drops: map[string]int64{}, busy: map[string]float64{}, all: map[string]float64{}}
		}
		return s
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			// Counters and gauges: the other has a zero value.
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
			if mf.GetName() == "edgeplane_agent_desired_revision" {
				rep.DesiredRevision = int64(v)
				continue
			}
			dp, ok := l["dp"]
			if !ok {
				continue
			}
			s := get(dp)
			switch mf.GetName() {
			case "edgeplane_dp_up":
				s.up = v == 1
			case "edgeplane_dp_uptime_seconds":
				s.uptime = v
			case "edgeplane_dp_worker_rx_packets_total":
				s.rx += uint64(v)
			case "edgeplane_dp_worker_tx_packets_total":
				s.tx += uint64(v)
			case "edgeplane_dp_drops_total":
				if v > 0 {
					s.drops[l["reason"]] = int64(v)
				}
			case "edgeplane_dp_worker_busy_cycles_total":
				s.busy[l["worker"]] += v
				s.all[l["worker"]] += v
			case "edgeplane_dp_worker_idle_cycles_total", "edgeplane_dp_worker_sleep_cycles_total":
				s.all[l["worker"]] += v
			default:
				continue
			}
			cur[dp] = s
		}
	}
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := cur[n]
		d := DataPlane{Name: n, Up: s.up, UptimeS: s.uptime, RxPackets: s.rx, TxPackets: s.tx, Drops: s.drops}
		p, ok := r.prev[n]
		// Rates only between two samples of the same run of the data plane.
		if ok && s.up && p.up && s.uptime >= p.uptime && rep.PeriodS > 0 && s.rx >= p.rx && s.tx >= p.tx {
			rx := float64(s.rx-p.rx) / rep.PeriodS
			tx := float64(s.tx-p.tx) / rep.PeriodS
			d.RxPPS, d.TxPPS = &rx, &tx
			d.PeriodDrops = map[string]int64{}
			for reason, v := range s.drops {
				if dv := v - p.drops[reason]; dv > 0 {
					d.PeriodDrops[reason] = dv
				}
			}
			d.BusyPct = map[string]float64{}
			for w, all := range s.all {
				if da := all - p.all[w]; da > 0 {
					d.BusyPct[w] = 100 * (s.busy[w] - p.busy[w]) / da
				}
			}
		}
		rep.DataPlanes = append(rep.DataPlanes, d)
	}
	r.prev, r.at = cur, now
	return rep
}
