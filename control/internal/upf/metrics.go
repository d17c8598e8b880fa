package upf

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are what the function counts; read by the Prometheus collector
// (edgeplane_upf_*) and by tests.
type counters struct {
	rx, tx        [256]atomic.Uint64 // messages by type
	causes        [256]atomic.Uint64 // answers by cause
	malformed     [8]atomic.Uint64   // by wire.Problem
	dupInFlight   atomic.Uint64      // retransmissions dropped: the answer is coming
	dupAnswered   atomic.Uint64      // retransmissions answered from the cache
	seqReused     atomic.Uint64      // new requests under a number the cache held (a restarted peer)
	ignoredIEs    atomic.Uint64      // unknown IEs skipped (TS 29.244 7.6)
	unassociated  atomic.Uint64      // requests from a peer without an association
	unassocMuted  atomic.Uint64      // of those, not answered (rate limit)
	unknownType   atomic.Uint64      // messages of a type not in TS 29.244
	lateResponses atomic.Uint64      // responses to nothing we sent
	panics        atomic.Uint64      // decoder panics caught (a request answered "System failure")
	congestion    atomic.Uint64      // requests refused: queue full
	established   atomic.Uint64
	modified      atomic.Uint64
	deleted       atomic.Uint64 // Session Deletion Requests applied
	unknownToCP   atomic.Uint64 // sessions deleted because the CP answered a report "Session context not found"
	purged        atomic.Uint64 // sessions removed with their association
	dpBatches     atomic.Uint64
	dpRetries     atomic.Uint64 // operations sent again (a batch failed elsewhere)
	dpFailures    atomic.Uint64 // operations the data plane refused
	dpRestarts    atomic.Uint64 // data-plane restarts seen (sessions replayed)
	replayed      atomic.Uint64 // subscribers added again after a restart
	orphans       atomic.Uint64 // subscribers in the data plane no session knew (removed)
	reports       atomic.Uint64 // Session Report Requests sent
	reportsLost   atomic.Uint64 // ... not answered after N1 retransmissions
	cpRestarts    atomic.Uint64 // control-plane restarts seen (new Recovery Time Stamp)
	cpLost        atomic.Uint64 // control planes whose heartbeats stopped
	hbSent        atomic.Uint64
	hbMissed      atomic.Uint64
	storeErrors   atomic.Uint64
}

// Counters is a snapshot for tests and the agent's status.
type Counters struct {
	Rx, Tx, Causes                   map[int]uint64
	Malformed                        map[int]uint64
	DupInFlight, DupAnswered         uint64
	SeqReused                        uint64
	IgnoredIEs, Unassociated, Muted  uint64
	UnknownType, LateResponses       uint64
	Panics, Congestion               uint64
	Established, Modified, Deleted   uint64
	Purged, UnknownToCP              uint64
	DPBatches, DPRetries, DPFailures uint64
	DPRestarts, Replayed, Orphans    uint64
	Reports, ReportsLost             uint64
	CPRestarts, CPLost               uint64
	HeartbeatsSent, HeartbeatsMissed uint64
	StoreErrors                      uint64
	Sessions, Subscribers            int
}

func nz(a []atomic.Uint64) map[int]uint64 {
	m := map[int]uint64{}
	for i := range a {
		if v := a[i].Load(); v != 0 {
			m[i] = v
		}
	}
	return m
}

// Counters returns the current counts.
func (u *UPF) Counters() Counters {
	c := &u.c
	s, subs := u.st.Sessions()
	return Counters{Rx: nz(c.rx[:]), Tx: nz(c.tx[:]), Causes: nz(c.causes[:]), Malformed: nz(c.malformed[:]),
		DupInFlight: c.dupInFlight.Load(), DupAnswered: c.dupAnswered.Load(), SeqReused: c.seqReused.Load(), IgnoredIEs: c.ignoredIEs.Load(),
		Unassociated: c.unassociated.Load(), Muted: c.unassocMuted.Load(), UnknownType: c.unknownType.Load(),
		LateResponses: c.lateResponses.Load(), Panics: c.panics.Load(), Congestion: c.congestion.Load(),
		Established: c.established.Load(), Modified: c.modified.Load(), Deleted: c.deleted.Load(),
		Purged: c.purged.Load(), UnknownToCP: c.unknownToCP.Load(), DPBatches: c.dpBatches.Load(), DPRetries: c.dpRetries.Load(),
		DPFailures: c.dpFailures.Load(), DPRestarts: c.dpRestarts.Load(), Replayed: c.replayed.Load(),
		Orphans: c.orphans.Load(), Reports: c.reports.Load(), ReportsLost: c.reportsLost.Load(),
		CPRestarts: c.cpRestarts.Load(), CPLost: c.cpLost.Load(), HeartbeatsSent: c.hbSent.Load(),
		HeartbeatsMissed: c.hbMissed.Load(), StoreErrors: c.storeErrors.Load(), Sessions: s, Subscribers: subs}
}

// Collector exports the counters as edgeplane_upf_* metrics.
func (u *UPF) Collector() prometheus.Collector { return &collector{u: u} }

type collector struct{ u *UPF }

var (
	descRx       = prometheus.NewDesc("edgeplane_upf_messages_received_total", "PFCP messages received, by type.", []string{"type"}, nil)
	descTx       = prometheus.NewDesc("edgeplane_upf_messages_sent_total", "PFCP messages sent, by type.", []string{"type"}, nil)
	descCause    = prometheus.NewDesc("edgeplane_upf_answers_total", "PFCP answers sent, by cause.", []string{"cause"}, nil)
	descBad      = prometheus.NewDesc("edgeplane_upf_malformed_total", "Datagrams discarded or refused for their framing.", []string{"problem"}, nil)
	descEvents   = prometheus.NewDesc("edgeplane_upf_events_total", "Events of the PFCP user-plane function, by kind.", []string{"event"}, nil)
	descSessions = prometheus.NewDesc("edgeplane_upf_sessions", "PFCP sessions.", nil, nil)
	descSubs     = prometheus.NewDesc("edgeplane_upf_subscribers", "Sessions with a subscriber in the data plane.", nil, nil)
	descAssoc    = prometheus.NewDesc("edgeplane_upf_associations", "PFCP associations.", nil, nil)
	descCPR      = prometheus.NewDesc("edgeplane_upf_redirect_frames_total",
		"Control packet redirect (TR-459): frames by direction and outcome.", []string{"direction", "outcome"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRx, descTx, descCause, descBad, descEvents, descSessions, descSubs, descAssoc, descCPR} {
		ch <- d
	}
}

var problemNames = []string{"none", "short", "version", "header_length", "ie_length", "nesting"}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	k := c.u.Counters()
	cnt := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	for t, v := range k.Rx {
		cnt(descRx, v, strconv.Itoa(t))
	}
	for t, v := range k.Tx {
		cnt(descTx, v, strconv.Itoa(t))
	}
	for t, v := range k.Causes {
		cnt(descCause, v, strconv.Itoa(t))
	}
	for p, v := range k.Malformed {
		name := strconv.Itoa(p)
		if p < len(problemNames) {
			name = problemNames[p]
		}
		cnt(descBad, v, name)
	}
	for name, v := range map[string]uint64{
		"duplicate_in_flight": k.DupInFlight, "duplicate_answered": k.DupAnswered,
		"sequence_reused": k.SeqReused,
		"ignored_ie":      k.IgnoredIEs, "unassociated": k.Unassociated, "unassociated_muted": k.Muted,
		"unknown_message_type": k.UnknownType, "late_response": k.LateResponses, "decoder_panic": k.Panics,
		"congestion": k.Congestion, "established": k.Established, "modified": k.Modified,
		"deleted": k.Deleted, "purged": k.Purged, "deleted_unknown_to_cp": k.UnknownToCP, "dp_batch": k.DPBatches, "dp_retry": k.DPRetries,
		"dp_failure": k.DPFailures, "dp_restart": k.DPRestarts, "replayed": k.Replayed,
		"orphan_removed": k.Orphans, "report": k.Reports, "report_lost": k.ReportsLost,
		"cp_restart": k.CPRestarts, "cp_lost": k.CPLost, "heartbeat_sent": k.HeartbeatsSent,
		"heartbeat_missed": k.HeartbeatsMissed, "store_error": k.StoreErrors,
	} {
		cnt(descEvents, v, name)
	}
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(k.Sessions))
	ch <- prometheus.MustNewConstMetric(descSubs, prometheus.GaugeValue, float64(k.Subscribers))
	ch <- prometheus.MustNewConstMetric(descAssoc, prometheus.GaugeValue, float64(c.u.nodes.count()))
	r := c.u.CPRStats()
	for _, x := range []struct {
		dir, outcome string
		v            uint64
	}{{"to_cp", "sent", r.Up}, {"to_cp", "no_rule", r.UpNoRule}, {"to_cp", "unparsable", r.UpBad},
		{"to_subscriber", "sent", r.Down}, {"to_subscriber", "unknown_teid", r.DownNoTEID},
		{"to_subscriber", "unparsable", r.DownBad}, {"echo", "answered", r.Echo}, {"both", "send_error", r.SendErrors}} {
		cnt(descCPR, x.v, x.dir, x.outcome)
	}
}
