// Command edgeplane is the node agent and its tools.
//
//	edgeplane agent --iface eth0 [--listen unix:/run/edgeplane/eth0.sock] [--api-group edgeplane]
//	                [--listen tcp:HOST:PORT --api-token-file FILE | --api-tls-cert ... --api-client-ca ...]
//	                [--alt-node MAC,IPv4,IPv6 ...]
//	edgeplane agent --node NAME --etcd-endpoints URL[,URL] --dp-socket /run/edgeplane/dp.sock [--metrics HOST:PORT]
//	                (with or without --iface: reconciliation from the desired state, docs/control.md)
//	edgeplane detach --iface eth0 [--bpffs /sys/fs/bpf]
//	edgeplane controller [--listen unix:/run/edgeplane/controller.sock | tcp:HOST:PORT --api-token-file FILE]
//	                     [--data-dir DIR --etcd-listen URL | --etcd-endpoints URL,...]
//	edgeplane upf --listen ADDR:8805 --dp-socket /run/edgeplane/bng.sock [--state-dir DIR]
//	              [--logical-port NAME ...] [--punt-iface IF] [--associate CP:8805 ...] [--metrics HOST:PORT]
//	edgeplane bng-cp -c /etc/edgeplane/bng-cp.yaml [--check]
//	edgeplane bng [--api unix:/run/edgeplane/bng-cp.sock] sessions|show|clear|profile|stats|counters
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"edgeplane/control/internal/agent"
	"edgeplane/control/internal/api"
	"edgeplane/control/internal/steer"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "agent":
		err = runAgent(os.Args[2:])
	case "detach":
		err = runDetach(os.Args[2:])
	case "upf":
		err = runUPF(os.Args[2:])
	case "controller":
		err = runController(os.Args[2:])
	case "bng-cp":
		err = runBNGCP(os.Args[2:])
	case "bng":
		err = runBNG(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "edgeplane %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: edgeplane agent|detach|upf|controller|bng-cp|bng [flags]  (-h for flags)")
	os.Exit(2)
}

type altFlags []agent.AltNodeDoc

func (a *altFlags) String() string { return fmt.Sprint(*a) }
func (a *altFlags) Set(s string) error {
	f := strings.Split(s, ",")
	d := agent.AltNodeDoc{MAC: f[0]}
	for _, x := range f[1:] {
		if strings.Contains(x, ":") {
			d.IPv6 = x
		} else {
			d.IPv4 = x
		}
	}
	*a = append(*a, d)
	return nil
}

func runAgent(args []string) error {
	fs := flag.NewFlagSet("agent", flag.ExitOnError)
	var cfg agent.Config
	var lc api.ListenConfig
	var alts altFlags
	var nf nodeFlags
	nf.register(fs)
	fs.StringVar(&cfg.Iface, "iface", "", "interface to attach the XDP program to")
	fs.StringVar(&cfg.Mode, "xdp-mode", "auto", "native, generic, or auto (native, falling back to generic)")
	fs.StringVar(&cfg.BPFFS, "bpffs", "/sys/fs/bpf", "bpffs mount for pinned maps (mounted if absent)")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "intents and overload mode (default /run/edgeplane/<iface>)")
	fs.StringVar(&lc.Addr, "listen", "", "REST API and /metrics: unix:/path (default unix:/run/edgeplane/<iface>.sock, mode 0660) or tcp:host:port (needs --api-token-file or mutual TLS)")
	fs.StringVar(&lc.Group, "api-group", "", "group (name or gid) of the API socket: its members may use the API (default: the agent's group)")
	fs.StringVar(&lc.TokenFile, "api-token-file", "", "file holding the bearer token every request must carry (required on tcp: unless mutual TLS)")
	fs.StringVar(&lc.CertFile, "api-tls-cert", "", "TLS certificate of a tcp: listener (PEM)")
	fs.StringVar(&lc.KeyFile, "api-tls-key", "", "its private key (PEM)")
	fs.StringVar(&lc.ClientCAFile, "api-client-ca", "", "CA certificates (PEM) a client certificate must be signed by: mutual TLS")
	fs.BoolVar(&lc.InsecureLoopback, "api-insecure-loopback", false, "allow a tcp: listener on a loopback address without authentication (tests only; logged as such)")
	readTimeout := fs.Duration("api-read-timeout", api.DefaultReadTimeout, "time a client has to send a whole request, body included (408 after)")
	fs.Var(&alts, "alt-node", "alternative node MAC,IPv4[,IPv6] (repeatable; replaces the pinned list)")
	fs.StringVar(&cfg.Overload, "overload", "", "auto, off, host (offload non-prioritised) or all (CPUs too) (default: the stored mode, else auto)")
	fs.Float64Var(&cfg.High, "load-high", 0.90, "CPU busy fraction entering overload")
	fs.Float64Var(&cfg.Low, "load-low", 0.75, "CPU busy fraction leaving overload")
	fs.DurationVar(&cfg.LoadInterval, "load-interval", time.Second, "CPU load sampling period")
	fs.DurationVar(&cfg.ReportInterval, "report-interval", 10*time.Second, "statistics report period")
	fs.StringVar(&cfg.ReportFile, "report", "", "reports as JSON lines (the XDP function's statistics; with --node, reconciliation passes and node reports): a file, - for stdout, empty for none")
	prioSlots := fs.Uint("prio-slots", 0, "prio_map slots, a power of two (0: the program's 16384)")
	fs.Parse(args)
	cfg.PrioSlots = uint32(*prioSlots)
	nf.report, nf.reportInterval = cfg.ReportFile, cfg.ReportInterval
	if cfg.Low > cfg.High {
		return errors.New("--load-low must not exceed --load-high")
	}
	if len(alts) > 0 {
		for _, d := range alts {
			n, err := agent.ParseAltNode(d)
			if err != nil {
				return err
			}
			cfg.AltNodes = append(cfg.AltNodes, n)
		}
	}
	if cfg.Iface == "" && nf.node == "" {
		return errors.New("--iface (the XDP function) or --node (reconciliation from the desired state) is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if cfg.Iface == "" {
		runNode, err := nf.start(nil) // the node agent alone
		if err != nil {
			return err
		}
		return runNode(ctx)
	}
	if lc.Addr == "" {
		lc.Addr = "unix:" + filepath.Join("/run/edgeplane", cfg.Iface+".sock")
	}
	// The listener first: a wrong --listen or --api-* flag fails before
	// the program is attached, and nothing else creates files yet while
	// the socket is bound under a tight umask.
	ep, err := api.Listen(lc)
	if err != nil {
		return err
	}
	defer ep.Listener.Close()
	a, err := agent.Start(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	if nf.node != "" {
		// The node agent reconciles this XDP function's intents too.
		runNode, err := nf.start(a)
		if err != nil {
			return err
		}
		go func() {
			if err := runNode(ctx); err != nil {
				slog.Error("node agent", "err", err)
			}
		}()
	}

	srv := api.NewServer(api.Handler(a, ep.Options), *readTimeout)
	go func() {
		if err := srv.Serve(ep.Listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("api", "err", err)
		}
	}()
	slog.Info("api listening", "on", ep.Desc, "read_timeout", srv.ReadTimeout)

	err = a.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	slog.Info("agent stopping; the program stays attached", "iface", cfg.Iface)
	return err
}

func runDetach(args []string) error {
	fs := flag.NewFlagSet("detach", flag.ExitOnError)
	iface := fs.String("iface", "", "interface")
	bpffs := fs.String("bpffs", "/sys/fs/bpf", "bpffs mount the agent pinned under")
	stateDir := fs.String("state-dir", "", "state directory to clear (default /run/edgeplane/<iface>)")
	fs.Parse(args)
	if *iface == "" {
		return errors.New("--iface is required")
	}
	if *stateDir == "" {
		*stateDir = filepath.Join("/run/edgeplane", *iface)
	}
	if err := steer.Detach(filepath.Join(*bpffs, "edgeplane", *iface)); err != nil {
		return err
	}
	return os.RemoveAll(*stateDir)
}
