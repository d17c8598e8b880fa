package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"edgeplane/control/internal/api"
	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/nodereport"
)

// runController is `edgeplane controller`: the desired state of every node
// in etcd (embedded by default), its REST northbound (docs/control.md).
func runController(args []string) error {
	fs := flag.NewFlagSet("controller", flag.ExitOnError)
	var lc api.ListenConfig
	var ef etcdFlags
	fs.StringVar(&lc.Addr, "listen", "unix:/run/edgeplane/controller.sock", "northbound: unix:/path (mode 0660) or tcp:host:port (needs --api-token-file or mutual TLS)")
	fs.StringVar(&lc.Group, "api-group", "", "group (name or gid) of the API socket")
	fs.StringVar(&lc.TokenFile, "api-token-file", "", "file holding the bearer token every request must carry")
	fs.StringVar(&lc.CertFile, "api-tls-cert", "", "TLS certificate of a tcp: listener (PEM)")
	fs.StringVar(&lc.KeyFile, "api-tls-key", "", "its private key (PEM)")
	fs.StringVar(&lc.ClientCAFile, "api-client-ca", "", "CA certificates (PEM) a client certificate must be signed by: mutual TLS")
	fs.BoolVar(&lc.InsecureLoopback, "api-insecure-loopback", false, "allow a tcp: listener on a loopback address without authentication (tests only)")
	readTimeout := fs.Duration("api-read-timeout", 30*time.Second, "time a client has to send a whole request")
	ef.register(fs, "external etcd cluster, comma-separated client URLs (default: the embedded member)")
	var emb controller.EmbeddedConfig
	fs.StringVar(&emb.Dir, "data-dir", "/var/lib/edgeplane/controller", "embedded etcd's data directory")
	fs.StringVar(&emb.ClientURL, "etcd-listen", "http://127.0.0.1:2379", "embedded etcd's client URL (the node agents' --etcd-endpoints)")
	fs.StringVar(&emb.PeerURL, "etcd-peer", "http://127.0.0.1:2380", "embedded etcd's peer URL")
	report := fs.String("report", "", "fleet reports as JSON lines (every node's desired and observed revision): a file, - for stdout, empty for none")
	reportInterval := fs.Duration("report-interval", 10*time.Second, "fleet report period")
	fs.Parse(args)

	ep, err := api.Listen(lc)
	if err != nil {
		return err
	}
	defer ep.Listener.Close()
	if ef.endpoints == "" {
		e, err := controller.StartEmbedded(emb)
		if err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
		defer e.Close()
		ef.endpoints = emb.ClientURL
	}
	cli, err := ef.client()
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()

	store := controller.NewStore(cli)
	srv := api.NewServer(controller.Handler(store, ep.Options), *readTimeout)
	srv.Protocols = controller.Protocols()
	go func() {
		if err := srv.Serve(ep.Listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("northbound", "err", err)
		}
	}()
	slog.Info("controller listening", "on", ep.Desc, "etcd", ef.endpoints)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *report != "" && *reportInterval > 0 {
		out := os.Stdout
		if *report != "-" {
			f, err := os.OpenFile(*report, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return fmt.Errorf("--report: %w", err)
			}
			defer f.Close()
			out = f
		}
		go fleetReports(ctx, store, out, *reportInterval)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

// fleetReports writes a FleetReport every interval until ctx ends.
func fleetReports(ctx context.Context, store *controller.Store, out io.Writer, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, interval)
		rep, err := store.Fleet(rctx)
		cancel()
		if err != nil {
			slog.Warn("fleet report: etcd read failed", "err", err)
			continue
		}
		if err := nodereport.WriteLine(out, rep); err != nil {
			slog.Warn("fleet report not written", "err", err)
		}
	}
}
