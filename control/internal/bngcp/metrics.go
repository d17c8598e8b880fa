package bngcp

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"edgeplane/control/internal/bngcp/aaa"
)

// Metrics is the control plane's Prometheus registry (a private one, not
// the default): per-protocol event counters (the one list in
// counters.go), sessions by type and state, set-up time, terminations by
// cause, pool use, and what other parts register (RADIUS, PFCP).
type Metrics struct {
	Registry   *prometheus.Registry
	srv        *Server
	created    *prometheus.CounterVec
	terminated *prometheus.CounterVec
	setup      *prometheus.HistogramVec
	active     [3]atomic.Int64 // by aaa.Service
	upNow      [3]atomic.Int64
}

var (
	descEvents = prometheus.NewDesc("edgeplane_bngcp_protocol_events_total",
		"Control-plane protocol events (frames received and sent, errors, decisions) by protocol.",
		[]string{"protocol", "event"}, nil)
	descSessions = prometheus.NewDesc("edgeplane_bngcp_sessions",
		"Subscriber sessions by type and whether they are up.", []string{"type", "state"}, nil)
	descPool = prometheus.NewDesc("edgeplane_bngcp_pool_entries",
		"Address pool entries (IPv4 addresses, IPv6 blocks): size and in use.", []string{"pool", "family", "state"}, nil)
)

func newMetrics(s *Server) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), srv: s,
		created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_bngcp_sessions_created_total",
			Help: "Sessions started (discovery answered, first DHCP message)."}, []string{"type"}),
		terminated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_bngcp_sessions_terminated_total",
			Help: "Sessions ended, by cause."}, []string{"type", "cause"}),
		setup: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "edgeplane_bngcp_session_setup_seconds",
			Help:    "Time from a session's first frame to the user plane forwarding it.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"type"}),
	}
	m.Registry.MustRegister(m, m.created, m.terminated, m.setup)
	return m
}

func (m *Metrics) createdSession(k aaa.Service) {
	m.created.WithLabelValues(k.String()).Inc()
	m.active[k].Add(1)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- descEvents
	ch <- descSessions
	ch <- descPool
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for i, d := range counterDefs {
		ch <- prometheus.MustNewConstMetric(descEvents, prometheus.CounterValue, float64(m.srv.ctr.v[i].Load()),
			d.proto, d.event)
	}
	for _, k := range []aaa.Service{aaa.PPPoE, aaa.IPoE} {
		up := m.upNow[k].Load()
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(up), k.String(), "up")
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(m.active[k].Load()-up),
			k.String(), "setup")
	}
	for name, p := range m.srv.pools4 {
		st := p.Stats()
		ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(st.Size), name, "ipv4", "size")
		ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(st.InUse), name, "ipv4", "in_use")
	}
	for name, p := range m.srv.pools6 {
		st := p.Stats()
		ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(st.Size), name, "ipv6", "size")
		ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(st.InUse), name, "ipv6", "in_use")
	}
}

func (m *Metrics) up(k aaa.Service, took time.Duration) {
	m.upNow[k].Add(1)
	m.setup.WithLabelValues(k.String()).Observe(took.Seconds())
}

// terminated counts a session's end; wasUp says whether it had come up.
func (m *Metrics) ended(k aaa.Service, cause int, wasUp bool) {
	m.terminated.WithLabelValues(k.String(), causeText(cause)).Inc()
	m.active[k].Add(-1)
	if wasUp {
		m.upNow[k].Add(-1)
	}
}
