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
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"edgeplane/control/internal/api"
	"edgeplane/control/internal/bngcp"
	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/access"
)

// runBNGCP is `edgeplane bng-cp -c FILE`: the BNG control plane.
func runBNGCP(args []string) error {
	fs := flag.NewFlagSet("bng-cp", flag.ExitOnError)
	path := fs.String("c", "/etc/edgeplane/bng-cp.yaml", "configuration file (YAML)")
	check := fs.Bool("check", false, "check the configuration and exit")
	logLevel := fs.String("log", "info", "log level: debug, info, warn, error")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (runtime/pprof) to FILE until exit")
	fs.Parse(args)
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log %q: %w", *logLevel, err)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv})))
	cfg, err := bngcp.LoadConfig(*path)
	if err != nil {
		return err
	}
	auth, acct, closeAAA, radius, err := buildAAA(cfg)
	if err != nil {
		return err
	}
	defer closeAAA()
	if *check {
		// The server checks pools, profiles and names.
		_, err := bngcp.New(cfg, bngcp.Deps{Access: nullAccess{}, Auth: auth, Acct: acct})
		if err == nil {
			fmt.Println("configuration ok")
		}
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var store *bngcp.Store
	if cfg.StateDir != "" {
		if store, err = bngcp.OpenStore(cfg.StateDir); err != nil {
			return err
		}
		defer store.Close()
	}
	d := bngcp.Deps{Auth: auth, Acct: acct, Store: store}
	var sci *sciSide
	switch cfg.Access.Mode {
	case "direct":
		a, err := access.Open(cfg.Access.Iface, cfg.Ports[0].Name)
		if err != nil {
			return err
		}
		defer a.Close()
		d.Access = a
	case "cpr":
		if sci, err = newSCI(cfg, store); err != nil {
			return err
		}
		defer sci.close()
		d.Access, d.UP = sci.access, sci.up
	}
	srv, err := bngcp.New(cfg, d)
	if err != nil {
		return err
	}
	srv.Components = func() map[string]map[string]uint64 {
		out := map[string]map[string]uint64{}
		if radius != nil {
			out["radius"] = map[string]uint64{
				"access_requests": radius.AccessRequests.Load(), "access_accepts": radius.AccessAccepts.Load(),
				"access_rejects": radius.AccessRejects.Load(), "auth_timeouts": radius.AuthTimeouts.Load(),
				"acct_requests": radius.AcctRequests.Load(), "acct_responses": radius.AcctResponses.Load(),
				"acct_timeouts": radius.AcctTimeouts.Load(), "acct_dropped": radius.AcctDropped.Load()}
		}
		if sci != nil {
			out["pfcp"] = sci.stats()
		}
		return out
	}
	if sci != nil {
		sci.bind(srv)
	}
	if c := cfg.AAA.Radius; c.CoAListen != "" {
		var allowed []netip.Addr
		for _, a := range c.CoAClients {
			ad, err := netip.ParseAddr(a)
			if err != nil {
				return fmt.Errorf("coa_clients: %q: %w", a, err)
			}
			allowed = append(allowed, ad)
		}
		coa, err := aaa.ListenCoA(c.CoAListen, []byte(c.CoASecret), srv, allowed)
		if err != nil {
			return fmt.Errorf("coa listener %s: %w", c.CoAListen, err)
		}
		defer coa.Close()
		slog.Info("coa listening", "on", coa.Addr())
	}

	ep, err := api.Listen(api.ListenConfig{Addr: cfg.API.Listen, Group: cfg.API.Group, TokenFile: cfg.API.TokenFile,
		InsecureLoopback: isLoopbackTCP(cfg.API.Listen)})
	if err != nil {
		return err
	}
	defer ep.Listener.Close()
	h := bngcp.Handler(srv)
	if ep.Options.Token != nil {
		h = api.RequireToken(ep.Options.Token, h)
	}
	hs := api.NewServer(h, 0)
	go func() {
		if err := hs.Serve(ep.Listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("api", "err", err)
		}
	}()
	slog.Info("api listening", "on", ep.Desc)
	if cfg.API.Metrics != "" {
		l, err := net.Listen("tcp", cfg.API.Metrics)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		ms := api.NewServer(promhttp.HandlerFor(srv.Metrics().Registry, promhttp.HandlerOpts{}), 0)
		go ms.Serve(l)
		defer ms.Close()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if sci != nil {
		go sci.run(ctx)
	}
	slog.Info("bng control plane running", "mode", cfg.Access.Mode, "ports", len(cfg.Ports))
	err = srv.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	slog.Info("bng control plane stopping; sessions stay on the user plane for the next start")
	return err
}

func isLoopbackTCP(listen string) bool {
	if len(listen) > 4 && listen[:4] == "tcp:" {
		listen = listen[4:]
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

func buildAAA(cfg *bngcp.Config) (aaa.Authenticator, aaa.Accounter, func(), *aaa.Radius, error) {
	c := cfg.AAA
	switch c.Mode {
	case "radius":
		rc := aaa.RadiusConfig{NASIdentifier: c.Radius.NASIdentifier, Timeout: c.Radius.Timeout, Retry: c.Radius.Retry}
		if c.Radius.NASIP != "" {
			a, err := netip.ParseAddr(c.Radius.NASIP)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("nas_ip: %w", err)
			}
			rc.NASIP = a
		}
		for _, s := range c.Radius.Servers {
			rc.Servers = append(rc.Servers, aaa.RadiusServer{Auth: s.Auth, Acct: s.Acct, Secret: []byte(s.Secret)})
		}
		r, err := aaa.NewRadius(rc)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		return r, r, r.Close, r, nil
	default:
		l := &aaa.Local{AcceptUnknown: c.AcceptUnknown, DefaultProfile: c.DefaultProfile}
		if c.LocalFile != "" {
			var err error
			if l, err = aaa.LoadLocal(c.LocalFile); err != nil {
				return nil, nil, nil, nil, err
			}
			l.AcceptUnknown, l.DefaultProfile = c.AcceptUnknown, c.DefaultProfile
		}
		var acct aaa.Accounter = aaa.Discard{}
		closer := func() {}
		if c.AcctFile != "" {
			f, err := aaa.NewFileAccounter(c.AcctFile)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			acct, closer = f, func() { f.Close() }
		}
		return l, acct, closer, nil, nil
	}
}

// nullAccess stands in for the access side when only checking.
type nullAccess struct{}

func (nullAccess) Run(ctx context.Context, _ func(string, []byte)) error { <-ctx.Done(); return nil }
func (nullAccess) Send(out []bngcp.Out) int                              { return len(out) }
