package agent

import (
	"log/slog"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is the agent's private Prometheus registry (not the default one):
// the counters are read from the maps at scrape time, so a scrape costs one
// per-CPU map lookup plus one per prioritised flow.
type Metrics struct {
	Registry *prometheus.Registry
	APIDur   *prometheus.HistogramVec
}

type collector struct {
	a                                  *Agent
	pkts, bytes, path, drops           *prometheus.Desc
	flowPkts, flowBytes, over, cpuLoad *prometheus.Desc
	intents                            *prometheus.Desc
}

func newMetrics(a *Agent) *Metrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("edgeplane_xdp_"+name, help, labels, nil)
	}
	c := &collector{
		a:         a,
		pkts:      d("packets_total", "Packets by XDP verdict.", "verdict"),
		bytes:     d("bytes_total", "Bytes by XDP verdict.", "verdict"),
		path:      d("path_packets_total", "Packets by steering path (why the verdict).", "path"),
		drops:     d("drops_total", "Dropped packets by reason.", "reason"),
		flowPkts:  d("flow_packets_total", "Packets of a prioritised flow.", "intent", "flow_hash"),
		flowBytes: d("flow_bytes_total", "Bytes of a prioritised flow.", "intent", "flow_hash"),
		over:      d("overloaded", "1 while the host is in overload (non-prioritised traffic offloaded)."),
		cpuLoad:   d("cpu_load_ratio", "Busy fraction of a CPU over the last sample.", "cpu"),
		intents:   d("intents", "Intents applied."),
	}
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.APIDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "edgeplane_xdp_api_request_duration_seconds",
		Help:    "Northbound API request latency, including map writes.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8),
	}, []string{"method", "code"})
	m.Registry.MustRegister(c, m.APIDur)
	return m
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pkts, c.bytes, c.path, c.drops, c.flowPkts, c.flowBytes, c.over, c.cpuLoad, c.intents} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.a.Stats()
	if err != nil {
		slog.Error("metrics: read stats", "err", err)
		return
	}
	cnt := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	for _, n := range c.a.dp.Names.Verdicts {
		cnt(c.pkts, st.Counters.Verdicts[n].Packets, n)
		cnt(c.bytes, st.Counters.Verdicts[n].Bytes, n)
	}
	for _, n := range c.a.dp.Names.Paths {
		cnt(c.path, st.Counters.Paths[n].Packets, n)
	}
	for _, n := range c.a.dp.Names.Drops {
		cnt(c.drops, st.Counters.Drops[n].Packets, n)
	}
	for _, f := range st.Flows {
		cnt(c.flowPkts, f.Packets, f.Intent, f.FlowHash)
		cnt(c.flowBytes, f.Bytes, f.Intent, f.FlowHash)
	}
	over := 0.0
	if st.Overload.Host {
		over = 1
	}
	ch <- prometheus.MustNewConstMetric(c.over, prometheus.GaugeValue, over)
	for cpu, l := range st.Overload.Loads {
		ch <- prometheus.MustNewConstMetric(c.cpuLoad, prometheus.GaugeValue, l, strconv.Itoa(cpu))
	}
	ch <- prometheus.MustNewConstMetric(c.intents, prometheus.GaugeValue, float64(len(c.a.eng.List())))
}
