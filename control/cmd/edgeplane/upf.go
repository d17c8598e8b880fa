package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"edgeplane/control/internal/upf"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// runUPF is `edgeplane upf`: the PFCP user-plane function of the vBNG
// (docs/cups.md).
func runUPF(args []string) error {
	fs := flag.NewFlagSet("upf", flag.ExitOnError)
	var cfg upf.Config
	var ports, nis, assoc listFlag
	listen := fs.String("listen", "0.0.0.0:8805", "PFCP address (UDP)")
	gtpu := fs.String("gtpu", "", "control packet redirect GTP-U address (default: the PFCP address, port 2152)")
	fs.StringVar(&cfg.NodeID, "node-id", "", "our Node ID: an address or a name (default: the PFCP address)")
	fs.StringVar(&cfg.DPSocket, "dp-socket", "/run/edgeplane/bng.sock", "edgeplane-dp's control socket")
	fs.StringVar(&cfg.StateDir, "state-dir", "/var/lib/edgeplane/upf", "session store directory")
	fs.StringVar(&cfg.PuntIface, "punt-iface", "", "interface meeting the data plane's control port (punted frames in, frames to subscribers out); empty: no redirect")
	fs.Var(&ports, "logical-port", "TR-459 logical port served (repeatable; the first is the default; default access)")
	fs.Var(&nis, "network-instance", "network instance of the core side accepted (repeatable; default: any)")
	fs.Var(&assoc, "associate", "control plane to set up an association with, ADDR:PORT (repeatable)")
	subIDs := fs.String("sub-ids", "1-65536", "data-plane subscriber ids this function owns (lo-hi)")
	fs.IntVar(&cfg.MaxProfiles, "max-profiles", 128, "policer and pipe profiles it may create, each")
	fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", 10*time.Second, "heartbeats to each control plane")
	fs.DurationVar(&cfg.T1, "t1", 3*time.Second, "retransmission timer of our requests (TS 29.244 T1)")
	fs.IntVar(&cfg.N1, "n1", 3, "retransmissions before a peer is given up (N1)")
	fs.StringVar(&cfg.OnCPRestart, "on-cp-restart", "purge", "sessions of a restarted control plane: purge or keep")
	fs.StringVar(&cfg.OnCPLost, "on-cp-lost", "keep", "sessions of a control plane whose heartbeats stop: keep or purge")
	fs.IntVar(&cfg.BatchMax, "batch", 2048, "session changes per data-plane batch")
	fs.IntVar(&cfg.QueueLen, "queue", 32768, "changes waiting before 'PFCP entity in congestion'")
	fs.IntVar(&cfg.Pipeline, "pipeline", 2, "batches in flight to the data plane")
	fs.IntVar(&cfg.Decoders, "decoders", 0, "goroutines decoding and planning session requests, a session always on the same one (0: one a CPU, at most 8)")
	fs.DurationVar(&cfg.URRPoll, "urr-poll", time.Second, "counter polling for usage reports")
	fs.BoolVar(&cfg.Sync, "sync", false, "fsync the session store at every batch")
	fs.Float64Var(&cfg.UnassocRate, "unassoc-rate", 100, "answers per second to peers without an association (the rest are counted, not answered)")
	metrics := fs.String("metrics", "", "serve Prometheus /metrics on HOST:PORT")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (runtime/pprof) to FILE until exit")
	memProfile := fs.String("memprofile", "", "write a heap profile (runtime/pprof: what is live, what was allocated) to FILE at exit")
	fs.Parse(args)
	var err error
	if cfg.Listen, err = netip.ParseAddrPort(*listen); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if *gtpu != "" {
		if cfg.GTPU, err = netip.ParseAddrPort(*gtpu); err != nil {
			return fmt.Errorf("--gtpu: %w", err)
		}
	}
	for _, a := range assoc {
		p, err := netip.ParseAddrPort(a)
		if err != nil {
			return fmt.Errorf("--associate %q: %w", a, err)
		}
		cfg.Associate = append(cfg.Associate, p)
	}
	cfg.Ports, cfg.NetworkInstances = ports, nis
	lo, hi, ok := strings.Cut(*subIDs, "-")
	l, err1 := strconv.ParseUint(lo, 10, 32)
	h, err2 := strconv.ParseUint(hi, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("--sub-ids %q: want lo-hi", *subIDs)
	}
	cfg.SubIDLo, cfg.SubIDHi = uint32(l), uint32(h)

	// The function allocates per request and keeps little: a garbage
	// collection every 4x growth of the heap rather than 2x halved its
	// collection cost at 10,000 establishments a second (GOGC overrides).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *memProfile != "" {
		defer func() {
			f, err := os.Create(*memProfile)
			if err != nil {
				slog.Error("--memprofile", "err", err)
				return
			}
			defer f.Close()
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				slog.Error("--memprofile", "err", err)
			}
		}()
	}
	u, err := upf.New(cfg)
	if err != nil {
		return err
	}
	defer u.Close()
	if *metrics != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(u.Collector())
		ln, err := net.Listen("tcp", *metrics)
		if err != nil {
			return fmt.Errorf("--metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Error("metrics", "err", err)
			}
		}()
		defer srv.Close()
	}
	c := u.Config()
	slog.Info("pfcp user-plane function", "listen", u.Addr(), "node_id", c.NodeID, "gtpu", c.GTPU,
		"dp", c.DPSocket, "state", c.StateDir, "ports", c.Ports, "punt", c.PuntIface)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return u.Run(ctx)
}
