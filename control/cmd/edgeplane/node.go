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
	"slices"
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
	node                          string
	etcd                          etcdFlags
	dpSocket, router, udp, subIDs string
	bng, cmts                     []string
	metrics                       string
	check, resync                 time.Duration
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
	fs.Func("cmts-socket", "a vCMTS edgeplane-dp: repeat it (or separate by commas) for several; each service group of the cmts section is reconciled on the one that has it (default --dp-socket)",
		socketList(&n.cmts))
	fs.Func("bng-socket", "a vBNG edgeplane-dp, each getting the whole bng section: repeat it (or separate by commas) for a split uplink/downlink pair (default --dp-socket)",
		socketList(&n.bng))
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
		return reconcile.DP{C: clients[path], Label: dpName(path)}
	}
	p := reconcile.Planes{Router: plane(n.router), UDP: plane(n.udp), Steering: steering}
	for _, path := range n.bng {
		if dp := plane(path); !slices.Contains(p.BNG, dp) {
			p.BNG = append(p.BNG, dp)
		}
	}
	if len(n.bng) == 0 {
		if dp := plane(""); dp != nil {
			p.BNG = []reconcile.DataPlane{dp}
		}
	}
	for _, path := range n.cmts {
		if dp := plane(path).(reconcile.DP); !slices.Contains(p.CMTS, reconcile.CMTS(dp)) {
			p.CMTS = append(p.CMTS, dp)
		}
	}
	if len(n.cmts) == 0 {
		if dp := plane(""); dp != nil {
			p.CMTS = []reconcile.CMTS{dp.(reconcile.DP)}
		}
	}
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
		if named[dpName(path)] != nil {
			return nil, fmt.Errorf("two data planes named %q in metrics and drift: give their control sockets different file names", dpName(path))
		}
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

// socketList is a flag that may be repeated and may name several
// sockets, comma-separated.
func socketList(into *[]string) func(string) error {
	return func(v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				return errors.New("empty socket path")
			}
			*into = append(*into, s)
		}
		return nil
	}
}

// dpName labels a data plane in metrics: its socket's file name without
// .sock (/run/edgeplane/bng.sock -> bng).
func dpName(path string) string {
	base := path[strings.LastIndex(path, "/")+1:]
	return strings.TrimSuffix(base, ".sock")
}
