// Command edgeplane is the node agent and its tools.
//
//	edgeplane agent --iface eth0 [--listen 127.0.0.1:9180] [--alt-node MAC,IPv4,IPv6 ...]
//	edgeplane detach --iface eth0 [--bpffs /sys/fs/bpf]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
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
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "edgeplane %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: edgeplane agent|detach [flags]  (-h for flags)")
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
	var alts altFlags
	fs.StringVar(&cfg.Iface, "iface", "", "interface to attach the XDP program to")
	fs.StringVar(&cfg.Mode, "xdp-mode", "auto", "native, generic, or auto (native, falling back to generic)")
	fs.StringVar(&cfg.BPFFS, "bpffs", "/sys/fs/bpf", "bpffs mount for pinned maps (mounted if absent)")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "intents and overload mode (default /run/edgeplane/<iface>)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:9180", "REST API and /metrics: host:port or unix:/path")
	fs.Var(&alts, "alt-node", "alternative node MAC,IPv4[,IPv6] (repeatable; replaces the pinned list)")
	fs.StringVar(&cfg.Overload, "overload", "", "auto, off, host (offload non-prioritised) or all (CPUs too) (default: the stored mode, else auto)")
	fs.Float64Var(&cfg.High, "load-high", 0.90, "CPU busy fraction entering overload")
	fs.Float64Var(&cfg.Low, "load-low", 0.75, "CPU busy fraction leaving overload")
	fs.DurationVar(&cfg.LoadInterval, "load-interval", time.Second, "CPU load sampling period")
	fs.DurationVar(&cfg.ReportInterval, "report-interval", 10*time.Second, "statistics report period")
	fs.StringVar(&cfg.ReportFile, "report", "", "statistics reports as JSON lines: a file, - for stdout, empty for none")
	prioSlots := fs.Uint("prio-slots", 0, "prio_map slots, a power of two (0: the program's 16384)")
	fs.Parse(args)
	cfg.PrioSlots = uint32(*prioSlots)
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
	a, err := agent.Start(cfg)
	if err != nil {
		return err
	}
	defer a.Close()

	var ln net.Listener
	if path, ok := strings.CutPrefix(cfg.Listen, "unix:"); ok {
		os.Remove(path)
		ln, err = net.Listen("unix", path)
	} else {
		ln, err = net.Listen("tcp", cfg.Listen)
	}
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api.Handler(a), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("api", "err", err)
		}
	}()
	slog.Info("api listening", "addr", cfg.Listen)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
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
