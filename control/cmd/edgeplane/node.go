package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptelemetry"
	"edgeplane/control/internal/nodereport"
	"edgeplane/control/internal/reconcile"
)

// nodeFlags are the agent's node-agent flags: its part of the desired
// state, the data planes that realise it, its metrics.
type nodeFlags struct {
	node                               string
	etcd                               etcdFlags
	dpSocket, router, bng, udp, subIDs string
	metrics                            string
	check, resync                      time.Duration
	// report, reportInterval: the agent's --report and --report-interval
	// (shared with the XDP function): JSON lines of passes and periodic
	// reports (control/internal/nodereport).
	report         string
	reportInterval time.Duration
}

func (n *nodeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.node, "node", "", "this node's name in the desired state: reconcile its data planes from etcd (docs/control.md)")
	n.etcd.register(fs, "etcd client URLs, comma-separated (the controller's --etcd-listen, or the external cluster)")
	fs.StringVar(&n.dpSocket, "dp-socket", "", "edgeplane-dp control socket serving every section (router, bng, udpTermination)")
	fs.StringVar(&n.router, "router-socket", "", "the router's edgeplane-dp (default --dp-socket)")
	fs.StringVar(&n.bng, "bng-socket", "", "the BNG's edgeplane-dp (default --dp-socket)")
	fs.StringVar(&n.udp, "udp-socket", "", "the UDP host stack's edgeplane-dp (default --dp-socket)")
	fs.StringVar(&n.subIDs, "sub-ids", "", "BNG subscriber ids the desired state owns, lo-hi (default all; leave a PFCP user plane's --sub-ids out)")
	fs.StringVar(&n.metrics, "metrics", "", "serve Prometheus /metrics (reconciliation and every data plane's counters) on HOST:PORT")
	fs.DurationVar(&n.check, "dp-check", time.Second, "how often each data plane's uptime is read (a restart is noticed within it)")
	fs.DurationVar(&n.resync, "resync", 30*time.Second, "full comparison with the desired state at least this often")
}

// start builds the node agent; run reconciles until ctx ends.
// steering is the XDP function the agent runs (--iface), or nil.
func (n *nodeFlags) start(steering reconcile.Steering) (run func(ctx context.Context) error, err error) {
	if n.etcd.endpoints == "" {
		return nil, errors.New("--node needs --etcd-endpoints")
	}
	clients := map[string]*dpctl.Client{}
	plane := func(path string) reconcile.DataPlane {
		if path == "" {
			path = n.dpSocket
		}
		if path == "" {
			return nil
		}
		if clients[path] == nil {
			clients[path] = dpctl.New(path, dpctl.Options{})
		}
		return reconcile.DP{C: clients[path]}
	}
	p := reconcile.Planes{Router: plane(n.router), BNG: plane(n.bng), UDP: plane(n.udp), Steering: steering}
	if n.subIDs != "" {
		lo, hi, ok := strings.Cut(n.subIDs, "-")
		l, e1 := strconv.ParseUint(lo, 10, 32)
		h, e2 := strconv.ParseUint(hi, 10, 32)
		if !ok || e1 != nil || e2 != nil || l == 0 || l > h {
			return nil, fmt.Errorf("--sub-ids %q: want lo-hi, 1 <= lo <= hi", n.subIDs)
		}
		p.SubIDLo, p.SubIDHi = uint32(l), uint32(h)
	}
	cli, err := n.etcd.client()
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	named := map[string]*dpctl.Client{}
	for path, c := range clients {
		named[dpName(path)] = c
	}
	reg.MustRegister(dptelemetry.New(named, 2*time.Second))
	var events io.Writer
	switch n.report {
	case "":
	case "-":
		events = os.Stdout
	default:
		f, err := os.OpenFile(n.report, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			cli.Close()
			return nil, fmt.Errorf("--report: %w", err)
		}
		events = f
	}
	agent := reconcile.NewAgent(reconcile.AgentConfig{Node: n.node, Etcd: cli, Planes: p, Check: n.check, Resync: n.resync, Registry: reg,
		Events: events})
	var srv *http.Server
	if n.metrics != "" {
		ln, err := net.Listen("tcp", n.metrics)
		if err != nil {
			cli.Close()
			return nil, fmt.Errorf("--metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		slog.Info("metrics listening", "on", ln.Addr().String())
	}
	return func(ctx context.Context) error {
		defer cli.Close()
		if srv != nil {
			defer srv.Close()
		}
		slog.Info("node agent", "node", n.node, "etcd", n.etcd.endpoints)
		if events != nil && n.reportInterval > 0 {
			rep := &nodereport.Reporter{Node: n.node, Gatherer: reg, Status: agent.Status, Out: events, Interval: n.reportInterval}
			go rep.Run(ctx)
		}
		return agent.Run(ctx)
	}, nil
}

// dpName labels a data plane in metrics: its socket's file name without
// .sock (/run/edgeplane/bng.sock -> bng).
func dpName(path string) string {
	base := path[strings.LastIndex(path, "/")+1:]
	return strings.TrimSuffix(base, ".sock")
}
