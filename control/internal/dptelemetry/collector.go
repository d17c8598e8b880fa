// Package dptelemetry exports edgeplane-dp's counters in Prometheus form.
// Each scrape asks every data plane's control socket for `stats`,
// `stages`, `drops` and `xdp-fast` (four pipelined requests, one round
// trip) and turns the answers into metrics: nothing is cached, so a scrape shows
// what the data plane counted at that moment, and a data plane that does
// not answer is edgeplane_dp_up 0 with nothing else.
//
// Drop reasons are the data plane's own list (dataplane/engine/
// drop_reasons.def, as `drops` names every reason, zeros included): the
// label values come from the one list and cannot drift from the C side.
package dptelemetry

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"edgeplane/control/internal/dpctl"
)

// Collector is a prometheus.Collector over named data planes.
type Collector struct {
	planes  map[string]*dpctl.Client
	timeout time.Duration
}

// New collects from planes (name -> control-socket client); a scrape
// waits at most timeout for each.
func New(planes map[string]*dpctl.Client, timeout time.Duration) *Collector {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Collector{planes: planes, timeout: timeout}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("edgeplane_dp_"+name, help, append([]string{"dp"}, labels...), nil)
}

var (
	dUp       = desc("up", "1 when the data plane's control socket answered this scrape.")
	dUptime   = desc("uptime_seconds", "Seconds since the data plane started.")
	dTSC      = desc("tsc_hertz", "The TSC rate cycles are counted in.")
	dBusy     = desc("worker_busy_cycles_total", "TSC cycles a worker spent on polls that returned packets.", "worker", "pipeline")
	dIdle     = desc("worker_idle_cycles_total", "TSC cycles a worker spent on empty polls.", "worker", "pipeline")
	dSleep    = desc("worker_sleep_cycles_total", "TSC cycles a worker slept (power-aware polling).", "worker", "pipeline")
	dPolls    = desc("worker_polls_total", "Receive polls of a worker.", "worker", "pipeline")
	dEmpty    = desc("worker_empty_polls_total", "Receive polls that returned no packet.", "worker", "pipeline")
	dWRx      = desc("worker_rx_packets_total", "Packets a worker received.", "worker", "pipeline")
	dWTx      = desc("worker_tx_packets_total", "Packets a worker sent.", "worker", "pipeline")
	dStagePk  = desc("stage_packets_total", "Packets through a stage, by what happened to them (in, out: to the next stage, tx: sent, consumed, dropped).", "worker", "stage", "direction")
	dStageCy  = desc("stage_cycles_total", "TSC cycles spent in a stage.", "worker", "stage")
	dStageCpp = desc("stage_cycles_per_packet", "A stage's cycles per packet since start (cycles_total / packets in).", "worker", "stage")
	dStageCl  = desc("stage_calls_total", "Calls of a stage (bursts).", "worker", "stage")
	dStageDr  = desc("stage_drops_total", "Packets a stage dropped, by reason.", "worker", "stage", "reason")
	dDrops    = desc("drops_total", "Packets dropped, by reason, over every worker and stage; every reason of the data plane's list is present.", "reason")
	dPortPk   = desc("port_packets_total", "Packets of a port (ethdev counters), by direction.", "port", "direction")
	dPortBy   = desc("port_bytes_total", "Bytes of a port, by direction.", "port", "direction")
	dPortErr  = desc("port_errors_total", "Port errors (ethdev imissed, ierrors, oerrors, rx_nombuf), by kind.", "port", "kind")
	dLink     = desc("port_link_up", "1 when the port's link is up.", "port")
	dXDPFast  = desc("xdp_fast_packets_total", "Frames the router's XDP fast path saw on a port, by what it did (forwarded, or punt_<reason> to the full pipeline; xdp/fwd/fwd_reasons.def).", "port", "result")
	dXDPSyncs = desc("xdp_fast_syncs_total", "The control path's attempts to write a port's XDP fast-path maps, by result (ok; failed: the port punts every frame and retries with a growing wait; xdp-fast's last_error says why).", "port", "result")
	dXDPSyncd = desc("xdp_fast_synced", "1 when a port's XDP fast-path maps hold the router's tables, 0 while every frame goes to the full pipeline.", "port")
	dXDPKind  = desc("xdp_fast_kind", "1 for the kind of fast path the router runs: xdp (xdp/fwd/fwd.bpf.c on the ports' devices) or tc (xdp/fwd/tcfwd.bpf.c on the wire devices, [router] fast_path = tc); the xdp_fast_* series are its counters.", "kind")
)

// Describe sends every descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dUp, dUptime, dTSC, dBusy, dIdle, dSleep, dPolls, dEmpty, dWRx, dWTx,
		dStagePk, dStageCy, dStageCpp, dStageCl, dStageDr, dDrops, dPortPk, dPortBy, dPortErr, dLink, dXDPFast, dXDPSyncs, dXDPSyncd, dXDPKind} {
		ch <- d
	}
}

type stats struct {
	UptimeS float64 `json:"uptime_s"`
	TSCHz   float64 `json:"tsc_hz"`
	Ports   []struct {
		Name  string `json:"name"`
		Stats struct {
			IPackets float64 `json:"ipackets"`
			OPackets float64 `json:"opackets"`
			IBytes   float64 `json:"ibytes"`
			OBytes   float64 `json:"obytes"`
			IMissed  float64 `json:"imissed"`
			IErrors  float64 `json:"ierrors"`
			OErrors  float64 `json:"oerrors"`
			RxNoMbuf float64 `json:"rx_nombuf"`
		} `json:"stats"`
		LinkUp bool `json:"link_up"`
	} `json:"ports"`
	Workers []struct {
		Name        string  `json:"name"`
		Pipeline    string  `json:"pipeline"`
		BusyCycles  float64 `json:"busy_cycles"`
		IdleCycles  float64 `json:"idle_cycles"`
		SleepCycles float64 `json:"sleep_cycles"`
		Polls       float64 `json:"polls"`
		EmptyPolls  float64 `json:"empty_polls"`
		RxPkts      float64 `json:"rx_pkts"`
		TxPkts      float64 `json:"tx_pkts"`
	} `json:"workers"`
}

// xdpFast is `xdp-fast`: the router's XDP fast path, when it runs.
type xdpFast struct {
	Active bool   `json:"active"`
	Kind   string `json:"kind"`
	Ports  []struct {
		Port         string             `json:"port"`
		Counters     map[string]float64 `json:"counters"`
		Synced       bool               `json:"synced"`
		SyncAttempts float64            `json:"sync_attempts"`
		SyncFailures float64            `json:"sync_failures"`
	} `json:"ports"`
}

type stages struct {
	Workers []struct {
		Name   string `json:"name"`
		Stages []struct {
			Name         string             `json:"name"`
			Calls        float64            `json:"calls"`
			PktsIn       float64            `json:"pkts_in"`
			PktsOut      float64            `json:"pkts_out"`
			PktsTx       float64            `json:"pkts_tx"`
			PktsConsumed float64            `json:"pkts_consumed"`
			PktsDropped  float64            `json:"pkts_dropped"`
			Cycles       float64            `json:"cycles"`
			CyclesPerPkt float64            `json:"cycles_per_pkt"`
			Drops        map[string]float64 `json:"drops"`
		} `json:"stages"`
	} `json:"workers"`
}

// Collect scrapes every data plane.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	names := make([]string, 0, len(c.planes))
	for n := range c.planes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c.collect(ch, n, c.planes[n])
	}
}

func (c *Collector) collect(ch chan<- prometheus.Metric, dp string, cl *dpctl.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var calls []*dpctl.Call
	for _, cmd := range []string{"stats", "stages", "drops", "xdp-fast"} {
		calls = append(calls, cl.Go(ctx, cmd, map[string]string{"cmd": cmd}))
	}
	var st stats
	var sg stages
	var dr struct {
		Drops map[string]float64 `json:"drops"`
	}
	for i, out := range []any{&st, &sg, &dr} {
		raw, err := calls[i].Wait(ctx)
		if err == nil {
			err = json.Unmarshal(raw, out)
		}
		if err != nil {
			slog.Warn("telemetry: data plane did not answer", "dp", dp, "cmd", calls[i].Cmd, "err", err)
			ch <- prometheus.MustNewConstMetric(dUp, prometheus.GaugeValue, 0, dp)
			return
		}
	}
	// Optional: a data plane without the command (an older build) still
	// exports the rest.
	var xf xdpFast
	if raw, err := calls[3].Wait(ctx); err == nil {
		_ = json.Unmarshal(raw, &xf)
	}
	g := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{dp}, l...)...)
	}
	k := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{dp}, l...)...)
	}
	g(dUp, 1)
	g(dUptime, st.UptimeS)
	g(dTSC, st.TSCHz)
	for _, w := range st.Workers {
		k(dBusy, w.BusyCycles, w.Name, w.Pipeline)
		k(dIdle, w.IdleCycles, w.Name, w.Pipeline)
		k(dSleep, w.SleepCycles, w.Name, w.Pipeline)
		k(dPolls, w.Polls, w.Name, w.Pipeline)
		k(dEmpty, w.EmptyPolls, w.Name, w.Pipeline)
		k(dWRx, w.RxPkts, w.Name, w.Pipeline)
		k(dWTx, w.TxPkts, w.Name, w.Pipeline)
	}
	for _, w := range sg.Workers {
		for _, s := range w.Stages {
			k(dStagePk, s.PktsIn, w.Name, s.Name, "in")
			k(dStagePk, s.PktsOut, w.Name, s.Name, "out")
			k(dStagePk, s.PktsTx, w.Name, s.Name, "tx")
			k(dStagePk, s.PktsConsumed, w.Name, s.Name, "consumed")
			k(dStagePk, s.PktsDropped, w.Name, s.Name, "dropped")
			k(dStageCy, s.Cycles, w.Name, s.Name)
			k(dStageCl, s.Calls, w.Name, s.Name)
			g(dStageCpp, s.CyclesPerPkt, w.Name, s.Name)
			for r, n := range s.Drops {
				k(dStageDr, n, w.Name, s.Name, r)
			}
		}
	}
	for r, n := range dr.Drops {
		k(dDrops, n, r)
	}
	for _, p := range st.Ports {
		s := p.Stats
		k(dPortPk, s.IPackets, p.Name, "rx")
		k(dPortPk, s.OPackets, p.Name, "tx")
		k(dPortBy, s.IBytes, p.Name, "rx")
		k(dPortBy, s.OBytes, p.Name, "tx")
		k(dPortErr, s.IMissed, p.Name, "rx_missed")
		k(dPortErr, s.IErrors, p.Name, "rx_errors")
		k(dPortErr, s.OErrors, p.Name, "tx_errors")
		k(dPortErr, s.RxNoMbuf, p.Name, "rx_nombuf")
		link := 0.0
		if p.LinkUp {
			link = 1
		}
		g(dLink, link, p.Name)
	}
	for _, p := range xf.Ports {
		for r, n := range p.Counters {
			k(dXDPFast, n, p.Port, r)
		}
		k(dXDPSyncs, p.SyncAttempts-p.SyncFailures, p.Port, "ok")
		k(dXDPSyncs, p.SyncFailures, p.Port, "failed")
		synced := 0.0
		if p.Synced {
			synced = 1
		}
		g(dXDPSyncd, synced, p.Port)
	}
	if xf.Active {
		kind := xf.Kind
		if kind == "" {
			kind = "xdp" // a data plane from before fast_path = tc
		}
		g(dXDPKind, 1, kind)
	}
}
