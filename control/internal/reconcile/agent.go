package reconcile

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/nodereport"
	"edgeplane/control/model"
)

// AgentConfig is one node agent.
type AgentConfig struct {
	Node   string
	Etcd   *clientv3.Client
	Planes Planes
	// Check is how often each data plane's uptime is read: a restart is
	// noticed within it (default 1 s).
	Check time.Duration
	// Resync is how often a full pass runs with nothing else to prompt it:
	// drift from someone else's change to a table is fixed within it
	// (default 30 s).
	Resync time.Duration
	// StatusTTL is the lease of the agent's status key: a silent agent's
	// report disappears after it (default 15 s).
	StatusTTL time.Duration
	Registry  *prometheus.Registry
	// Events, when set, gets one JSON line per pass (PassEvent).
	Events io.Writer
}

// PassEvent is the JSON line (type "pass") written to AgentConfig.Events
// after every reconciliation pass: what prompted it, the revision it
// reconciled to, what it changed and what it could not fix.
type PassEvent struct {
	Time      time.Time      `json:"time"`
	Type      string         `json:"type"` // "pass"
	Node      string         `json:"node"`
	Reason    string         `json:"reason"` // start, desired, restart, periodic, retry
	Revision  int64          `json:"revision"`
	Converged bool           `json:"converged"`
	Changes   map[string]int `json:"changes"` // "subscriber add": n, ...
	Drift     []Drift        `json:"drift,omitempty"`
	TookMs    float64        `json:"tookMs"`
}

// Agent watches its node's desired configuration and reconciles.
type Agent struct {
	c AgentConfig

	mu          sync.Mutex
	desired     *model.NodeDesired // nil: the node has no configuration
	haveDesired bool
	refused     *Drift // the stored configuration the model refused, if the last one was
	// applied is the configuration the last pass converged on (nil: none,
	// or the last pass left drift): a change from it is sent incrementally.
	applied *model.NodeDesired
	status  model.NodeStatus

	kick  chan string
	pubMu sync.Mutex // one status write at a time
	lease clientv3.LeaseID

	resyncs  *prometheus.CounterVec
	changes  *prometheus.CounterVec
	drift    prometheus.Gauge
	observed prometheus.Gauge
	wanted   prometheus.Gauge
	passDur  prometheus.Histogram
}

// NewAgent registers the agent's metrics.
func NewAgent(c AgentConfig) *Agent {
	if c.Check <= 0 {
		c.Check = time.Second
	}
	if c.Resync <= 0 {
		c.Resync = 30 * time.Second
	}
	if c.StatusTTL <= 0 {
		c.StatusTTL = 15 * time.Second
	}
	a := &Agent{c: c, kick: make(chan string, 1),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_agent_resyncs_total",
			Help: "Reconciliation passes (a full comparison of the data planes with the desired state), by what prompted them."}, []string{"reason"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_agent_changes_total",
			Help: "Data-plane objects changed by reconciliation, by kind and operation."}, []string{"kind", "op"}),
		drift: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgeplane_agent_drift_objects",
			Help: "Objects the last pass found different and could not fix."}),
		observed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgeplane_agent_observed_revision",
			Help: "The desired-state revision the node last converged to."}),
		wanted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgeplane_agent_desired_revision",
			Help: "The revision of the node's desired configuration."}),
		passDur: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "edgeplane_agent_pass_duration_seconds",
			Help: "Time of one reconciliation pass.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
	}
	for _, r := range []string{"start", "desired", "restart", "periodic", "retry"} {
		a.resyncs.WithLabelValues(r)
	}
	a.status = model.NodeStatus{Node: c.Node, Resyncs: map[string]int64{}, Changes: map[string]int64{}}
	if c.Registry != nil {
		c.Registry.MustRegister(a.resyncs, a.changes, a.drift, a.observed, a.wanted, a.passDur)
	}
	return a
}

// Status is the agent's last report.
func (a *Agent) Status() model.NodeStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.status
	st.Resyncs = clone(st.Resyncs)
	st.Changes = clone(st.Changes)
	return st
}

func clone(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (a *Agent) prompt(reason string) {
	select {
	case a.kick <- reason:
	default: // a pass is already due; it reads the latest state
	}
}

// Run reconciles until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	go a.watch(ctx)
	go a.report(ctx)
	check := time.NewTicker(a.c.Check)
	defer check.Stop()
	resync := time.NewTicker(a.c.Resync)
	defer resync.Stop()
	boots := map[uptimer]uptimeReading{}
	var retry <-chan time.Time
	backoff := time.Second
	for {
		reason := ""
		select {
		case <-ctx.Done():
			return nil
		case reason = <-a.kick:
		case <-resync.C:
			reason = "periodic"
		case <-retry:
			reason = "retry"
		case <-check.C:
			if a.restarted(ctx, boots) {
				reason = "restart"
			}
		}
		if reason == "" {
			continue
		}
		a.mu.Lock()
		d, have := a.desired, a.haveDesired
		a.mu.Unlock()
		if !have {
			continue // the first read of the desired state has not come
		}
		if reason == "restart" {
			slog.Info("data plane restarted: full pass", "node", a.c.Node)
		} else if a.restarted(ctx, boots) {
			// The pass's data planes are the baseline a later restart is
			// told from (one that restarts right after is not missed); one
			// that restarted since the last pass needs the full pass.
			reason = "restart"
		}
		if a.pass(ctx, reason, d) {
			retry, backoff = nil, time.Second
		} else {
			retry = time.After(backoff)
			backoff = min(2*backoff, 10*time.Second)
		}
	}
}

// restarted reads every data plane's uptime: a restart shows as an
// uptime that went backwards or a start time that moved (by more than the
// reads' own jitter), and a data plane that answers again after not
// answering is treated as restarted.
func (a *Agent) restarted(ctx context.Context, last map[uptimer]uptimeReading) bool {
	any := false
	for _, dp := range a.c.Planes.distinct() {
		cctx, cancel := context.WithTimeout(ctx, a.c.Check)
		up, err := dp.Uptime(cctx)
		cancel()
		prev, seen := last[dp]
		if err != nil {
			last[dp] = uptimeReading{down: true}
			continue
		}
		now := float64(time.Now().UnixNano()) / 1e9
		cur := uptimeReading{up: up, boot: now - up}
		last[dp] = cur
		if seen && (prev.down || up < prev.up || math.Abs(cur.boot-prev.boot) > 0.5) {
			any = true
		}
	}
	return any
}

type uptimeReading struct {
	up, boot float64
	down     bool
}

func (a *Agent) pass(ctx context.Context, reason string, d *model.NodeDesired) bool {
	start := time.Now()
	a.resyncs.WithLabelValues(reason).Inc()
	var res Result
	var rev int64
	a.mu.Lock()
	prev := a.applied
	a.mu.Unlock()
	if d != nil {
		if reason == "desired" && prev != nil {
			res = Incremental(ctx, a.c.Planes, &prev.Config, &d.Config)
		} else {
			res = Pass(ctx, a.c.Planes, &d.Config)
		}
		rev = d.Revision
	} else {
		res = Result{Changes: map[string]int{}}
	}
	a.passDur.Observe(time.Since(start).Seconds())
	for k, n := range res.Changes {
		kind, op := splitKindOp(k)
		a.changes.WithLabelValues(kind, op).Add(float64(n))
	}
	a.drift.Set(float64(len(res.Drift)))
	a.wanted.Set(float64(rev))
	a.mu.Lock()
	a.status.Resyncs[reason]++
	for k, n := range res.Changes {
		a.status.Changes[k] += int64(n)
	}
	a.status.Drift = res.Drift
	if a.refused != nil {
		a.status.Drift = append(a.status.Drift, *a.refused)
	}
	a.status.Converged = len(a.status.Drift) == 0
	if res.Converged() {
		a.status.ObservedRevision = rev
		a.observed.Set(float64(rev))
		a.applied = d
	} else {
		a.applied = nil
	}
	a.status.Updated = time.Now().UTC()
	ev := PassEvent{Time: a.status.Updated, Type: "pass", Node: a.c.Node, Reason: reason, Revision: rev,
		Converged: a.status.Converged, Changes: res.Changes, Drift: a.status.Drift,
		TookMs: float64(time.Since(start).Microseconds()) / 1000}
	a.mu.Unlock()
	if a.c.Events != nil {
		if err := nodereport.WriteLine(a.c.Events, ev); err != nil {
			slog.Warn("pass event not written", "err", err)
		}
	}
	if len(res.Changes) > 0 || !res.Converged() {
		slog.Info("reconciled", "node", a.c.Node, "reason", reason, "revision", rev, "changes", res.Changes,
			"drift", len(res.Drift), "took", time.Since(start).Round(time.Millisecond))
	}
	for _, dr := range res.Drift {
		slog.Warn("drift", "node", a.c.Node, "kind", dr.Kind, "key", dr.Key, "err", dr.Error)
	}
	go a.publish(ctx, false)
	return res.Converged()
}

// uptimer is any data plane: what tells its restarts.
type uptimer interface {
	Uptime(ctx context.Context) (float64, error)
}

// distinct is each data plane once (one edgeplane-dp may serve several
// sections).
func (p Planes) distinct() []uptimer {
	var out []uptimer
	for _, dp := range append([]DataPlane{p.Router, p.UDP}, p.BNG...) {
		if dp != nil && !slices.Contains(out, uptimer(dp)) {
			out = append(out, dp)
		}
	}
	for _, c := range p.CMTS {
		if !slices.Contains(out, uptimer(c)) {
			out = append(out, c)
		}
	}
	return out
}

func splitKindOp(k string) (string, string) {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == ' ' {
			return k[:i], k[i+1:]
		}
	}
	return k, ""
}

// watch keeps a.desired current: a read, then etcd's watch from the next
// revision; a broken or compacted watch starts over with a read (the
// read is the level, the watch only an early prompt).
func (a *Agent) watch(ctx context.Context) {
	key := controller.DesiredKey(a.c.Node)
	first := true
	for ctx.Err() == nil {
		resp, err := a.c.Etcd.Get(ctx, key)
		if err != nil {
			slog.Warn("desired state: etcd read failed; keeping the last state", "err", err)
			sleep(ctx, 2*time.Second)
			continue
		}
		if len(resp.Kvs) == 0 {
			a.set(nil)
		} else {
			a.set(resp.Kvs[0].Value)
		}
		if first {
			a.prompt("start")
			first = false
		} else {
			a.prompt("desired")
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range a.c.Etcd.Watch(wctx, key, clientv3.WithRev(resp.Header.Revision+1)) {
			if wr.Err() != nil {
				slog.Warn("desired state: watch ended", "err", wr.Err())
				break
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					a.set(nil)
				} else {
					a.set(ev.Kv.Value)
				}
			}
			a.prompt("desired")
		}
		cancel()
		sleep(ctx, 500*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// set takes a desired/<node> value (nil: the key is gone). A value that
// does not decode or validate is refused whole: the agent keeps
// reconciling to the last good one and reports it as drift.
func (a *Agent) set(v []byte) {
	var d *model.NodeDesired
	if v != nil {
		d = new(model.NodeDesired)
		err := json.Unmarshal(v, d)
		if err == nil {
			err = d.Config.Validate()
		}
		if err != nil {
			slog.Error("desired state refused; keeping the last one", "node", a.c.Node, "err", err)
			a.mu.Lock()
			a.refused = &Drift{Kind: "node", Key: a.c.Node, Error: "desired configuration refused: " + err.Error()}
			a.mu.Unlock()
			return
		}
	}
	a.mu.Lock()
	a.desired, a.haveDesired, a.refused = d, true, nil
	a.mu.Unlock()
}

// report keeps the status key alive under a lease; publish writes it.
func (a *Agent) report(ctx context.Context) {
	t := time.NewTicker(a.c.StatusTTL / 3)
	defer t.Stop()
	for {
		a.publish(ctx, true)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Agent) publish(ctx context.Context, keepAlive bool) {
	a.pubMu.Lock()
	defer a.pubMu.Unlock()
	st := a.Status()
	if st.Updated.IsZero() {
		return // no pass yet: nothing to say
	}
	b, _ := json.Marshal(st)
	cctx, cancel := context.WithTimeout(ctx, a.c.StatusTTL/3)
	defer cancel()
	a.mu.Lock()
	lease := a.lease
	a.mu.Unlock()
	grant := func() clientv3.LeaseID {
		g, err := a.c.Etcd.Grant(cctx, int64(a.c.StatusTTL/time.Second))
		if err != nil {
			return 0
		}
		return g.ID
	}
	// The periodic report keeps the lease alive; a pass's report is one
	// put (one etcd round trip on the path of every change), with a new
	// lease only when the old one is gone.
	if lease != 0 && keepAlive {
		if _, err := a.c.Etcd.KeepAliveOnce(cctx, lease); err != nil {
			lease = 0
		}
	}
	if lease == 0 {
		if lease = grant(); lease == 0 {
			return
		}
	}
	key := controller.StatusKey(a.c.Node)
	if _, err := a.c.Etcd.Put(cctx, key, string(b), clientv3.WithLease(lease)); err != nil {
		if lease = grant(); lease != 0 {
			if _, err := a.c.Etcd.Put(cctx, key, string(b), clientv3.WithLease(lease)); err != nil {
				lease = 0
			}
		}
	}
	a.mu.Lock()
	a.lease = lease
	a.mu.Unlock()
}
