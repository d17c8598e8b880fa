// Package agent is the node agent: it loads and attaches the steering
// program, owns the intent engine, turns measured CPU load into the
// overload state, and reports statistics. Its methods are the business
// functions the REST API calls; handlers never touch the maps.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"edgeplane/control/internal/apispec"
	"edgeplane/control/internal/intent"
	"edgeplane/control/internal/load"
	"edgeplane/control/internal/ntuple"
	"edgeplane/control/internal/steer"
)

// Config is the agent's command line.
type Config struct {
	Iface          string
	Mode           string // XDP attach mode: auto, native, generic
	BPFFS          string // bpffs mount; pins go to <BPFFS>/edgeplane/<Iface>
	StateDir       string // intents.json and overload mode; default /run/edgeplane/<Iface>
	AltNodes       []steer.AltNode
	Overload       string // auto, on, off; "" keeps the stored mode (default auto)
	High, Low      float64
	LoadInterval   time.Duration
	ReportInterval time.Duration
	ReportFile     string // "-" for stdout, "" for none
	PrioSlots      uint32
	NoAttach       bool   // load and serve without attaching (API tests)
	ProcStat       string // CPU times source; /proc/stat when empty (tests)
}

// Agent is a running node agent.
type Agent struct {
	cfg      Config
	dp       *steer.Dataplane
	eng      *intent.Engine
	attached string

	mu      sync.Mutex
	mode    string // overload mode
	monitor load.Monitor
	sampler load.Sampler
	loads   []float64
	host    bool
	cpus    []bool
	Metrics *Metrics
}

// Start loads, attaches and restores state. Close releases handles; the
// program stays attached (pinned) for the next agent.
func Start(cfg Config) (*Agent, error) {
	if cfg.Iface == "" {
		return nil, errors.New("no interface (--iface)")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join("/run/edgeplane", cfg.Iface)
	}
	pin := ""
	if cfg.BPFFS != "" {
		if err := ensureBPFFS(cfg.BPFFS); err != nil {
			return nil, err
		}
		pin = filepath.Join(cfg.BPFFS, "edgeplane", cfg.Iface)
	}
	dp, err := steer.Load(steer.Options{PinDir: pin, PrioSlots: cfg.PrioSlots})
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, dp: dp, monitor: load.Monitor{High: cfg.High, Low: cfg.Low},
		sampler: load.Sampler{Path: cfg.ProcStat}}
	store := &intent.Store{Path: filepath.Join(cfg.StateDir, "intents.json")}
	a.eng = intent.NewEngine(dp, cfg.Iface, store)
	if !cfg.NoAttach {
		a.eng.SetNIC(ntuple.New(cfg.Iface))
	}
	stored, nicLoc, err := store.Load()
	if err != nil {
		dp.Close()
		return nil, fmt.Errorf("stored intents: %w", err)
	}
	if err := a.eng.Restore(stored, nicLoc); err != nil {
		dp.Close()
		return nil, fmt.Errorf("restore intents: %w", err)
	}
	if cfg.AltNodes != nil {
		if err := dp.SetAltNodes(cfg.AltNodes); err != nil {
			dp.Close()
			return nil, err
		}
	}
	a.mode = cfg.Overload
	if a.mode == "" {
		a.mode = a.storedMode()
	}
	if err := a.SetOverloadMode(a.mode); err != nil {
		dp.Close()
		return nil, err
	}
	a.attached = "detached"
	if !cfg.NoAttach {
		if a.attached, err = dp.Attach(cfg.Iface, cfg.Mode); err != nil {
			dp.Close()
			return nil, err
		}
	}
	a.Metrics = newMetrics(a)
	slog.Info("xdp steering attached", "iface", cfg.Iface, "mode", a.attached, "pins", pin,
		"reused_maps", dp.Reused, "intents", len(stored))
	return a, nil
}

// ensureBPFFS mounts bpffs at dir unless one is there (`ip netns exec`
// remounts /sys, hiding /sys/fs/bpf).
func ensureBPFFS(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if isBPFFS(dir) {
		return nil
	}
	if err := mountBPFFS(dir); err != nil {
		return fmt.Errorf("mount bpffs at %s: %w", dir, err)
	}
	slog.Warn("mounted a new bpffs; pins there live only as long as this mount namespace", "dir", dir)
	return nil
}

// Close releases the agent's handles; the pinned program keeps running.
func (a *Agent) Close() error { return a.dp.Close() }

// Run samples load and writes reports until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	loadT := time.NewTicker(a.cfg.LoadInterval)
	defer loadT.Stop()
	var report <-chan time.Time
	var out *os.File
	if a.cfg.ReportFile != "" && a.cfg.ReportInterval > 0 {
		if a.cfg.ReportFile == "-" {
			out = os.Stdout
		} else {
			f, err := os.OpenFile(a.cfg.ReportFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			out = f
		}
		t := time.NewTicker(a.cfg.ReportInterval)
		defer t.Stop()
		report = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-loadT.C:
			if err := a.sampleLoad(); err != nil {
				slog.Error("load sample", "err", err)
			}
		case <-report:
			st, err := a.Stats()
			if err != nil {
				slog.Error("stats", "err", err)
				continue
			}
			b, _ := json.Marshal(st)
			fmt.Fprintf(out, "%s\n", b)
		}
	}
}

func (a *Agent) sampleLoad() error {
	loads, err := a.sampler.Sample()
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loads = loads
	host, cpus := a.monitor.Step(loads)
	if a.mode != "auto" {
		return nil
	}
	if host != a.host || !equalBools(cpus, a.cpus) {
		slog.Info("overload state", "host", host, "cpus", cpus, "loads", loads)
	}
	return a.writeOverloadLocked(host, cpus)
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (a *Agent) writeOverloadLocked(host bool, cpus []bool) error {
	if err := a.dp.SetOverload(host, cpus); err != nil {
		return err
	}
	a.host, a.cpus = host, cpus
	return nil
}

func (a *Agent) modePath() string { return filepath.Join(a.cfg.StateDir, "overload-mode") }

func (a *Agent) storedMode() string {
	b, err := os.ReadFile(a.modePath())
	if err != nil {
		return "auto"
	}
	return strings.TrimSpace(string(b))
}

// SetOverloadMode: "auto" follows measured load; "off" forces no overload;
// "host" forces the host into overload (non-prioritised traffic offloaded,
// prioritised traffic kept); "all" also marks every CPU overloaded, so
// prioritised traffic overflows to the alternative nodes as well.
func (a *Agent) SetOverloadMode(mode string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var err error
	switch mode {
	case "auto":
		host, cpus := a.monitor.Step(a.loads)
		err = a.writeOverloadLocked(host, cpus)
	case "host":
		err = a.writeOverloadLocked(true, nil)
	case "all":
		cpus := make([]bool, steer.MaxCPUs)
		for i := range cpus {
			cpus[i] = true
		}
		err = a.writeOverloadLocked(true, cpus)
	case "off":
		err = a.writeOverloadLocked(false, nil)
	default:
		return &intent.Error{Status: 400, Msg: fmt.Sprintf("overload mode %q: want auto, off, host or all", mode)}
	}
	if err != nil {
		return err
	}
	a.mode = mode
	os.MkdirAll(a.cfg.StateDir, 0o700)
	return os.WriteFile(a.modePath(), []byte(mode+"\n"), 0o600)
}

// OverloadState is what GET /v1/overload answers.
type OverloadState struct {
	Mode  string    `json:"mode"`
	Host  bool      `json:"hostOverloaded"`
	CPUs  []int     `json:"overloadedCpus"`
	Loads []float64 `json:"cpuLoad"`
	High  float64   `json:"high"`
	Low   float64   `json:"low"`
}

// Overload reads the state the program sees.
func (a *Agent) Overload() (OverloadState, error) {
	host, cpus, err := a.dp.Overload()
	if err != nil {
		return OverloadState{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return OverloadState{Mode: a.mode, Host: host, CPUs: cpus, Loads: append([]float64{}, a.loads...),
		High: a.cfg.High, Low: a.cfg.Low}, nil
}

// ApplyIntents parses and applies documents as one change.
func (a *Agent) ApplyIntents(docs []json.RawMessage) ([]intent.View, error) {
	var ins []intent.Intent
	for i, d := range docs {
		in, err := intent.Parse(d)
		if err != nil {
			if len(docs) > 1 {
				return nil, &intent.Error{Status: 400, Msg: fmt.Sprintf("intents[%d]: %v", i, err)}
			}
			return nil, err
		}
		ins = append(ins, in)
	}
	if err := a.eng.Apply(ins); err != nil {
		return nil, err
	}
	var out []intent.View
	for _, in := range ins {
		v, err := a.eng.Get(in.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// DeleteIntent removes one intent.
func (a *Agent) DeleteIntent(id string) error { return a.eng.Delete(id) }

// Intents lists the intents with their flows' counters.
func (a *Agent) Intents() []intent.View { return a.eng.List() }

// Intent returns one.
func (a *Agent) Intent(id string) (intent.View, error) { return a.eng.Get(id) }

// AltNodeDoc is an alternative node as the API writes it.
type AltNodeDoc struct {
	MAC  string `json:"mac"`
	IPv4 string `json:"ipv4,omitempty"`
	IPv6 string `json:"ipv6,omitempty"`
}

// ParseAltNode validates one alternative node against the API's AltNode
// schema (the --alt-node flag and PUT /v1/alt-nodes share the grammar),
// then reads it.
func ParseAltNode(d AltNodeDoc) (steer.AltNode, error) {
	bad := func(f string, a ...any) error { return &intent.Error{Status: 400, Msg: fmt.Sprintf(f, a...)} }
	doc := map[string]any{"mac": d.MAC}
	if d.IPv4 != "" {
		doc["ipv4"] = d.IPv4
	}
	if d.IPv6 != "" {
		doc["ipv6"] = d.IPv6
	}
	if err := apispec.CheckNamed("AltNode", doc); err != nil {
		return steer.AltNode{}, bad("alternative node: %v", err)
	}
	mac, err := net.ParseMAC(d.MAC)
	if err != nil || len(mac) != 6 || mac[0]&1 != 0 {
		return steer.AltNode{}, bad("alternative node MAC %q: want a unicast Ethernet address", d.MAC)
	}
	n := steer.AltNode{MAC: mac}
	if d.IPv4 != "" {
		if n.IPv4, err = netip.ParseAddr(d.IPv4); err != nil || !n.IPv4.Is4() {
			return n, bad("alternative node ipv4 %q is not an IPv4 address", d.IPv4)
		}
	}
	if d.IPv6 != "" {
		if n.IPv6, err = netip.ParseAddr(d.IPv6); err != nil || !n.IPv6.Is6() || n.IPv6.Is4In6() {
			return n, bad("alternative node ipv6 %q is not an IPv6 address", d.IPv6)
		}
	}
	return n, nil
}

// SetAltNodes replaces the alternative nodes (validated whole first).
func (a *Agent) SetAltNodes(docs []AltNodeDoc) error {
	if len(docs) > steer.MaxAlt {
		return &intent.Error{Status: 400, Msg: fmt.Sprintf("%d alternative nodes; at most %d", len(docs), steer.MaxAlt)}
	}
	nodes := []steer.AltNode{}
	for _, d := range docs {
		n, err := ParseAltNode(d)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	return a.dp.SetAltNodes(nodes)
}

// AltNodes reads them back.
func (a *Agent) AltNodes() ([]AltNodeDoc, error) {
	nodes, err := a.dp.AltNodes()
	if err != nil {
		return nil, err
	}
	out := []AltNodeDoc{}
	for _, n := range nodes {
		d := AltNodeDoc{MAC: n.MAC.String()}
		if n.IPv4.IsValid() {
			d.IPv4 = n.IPv4.String()
		}
		if n.IPv6.IsValid() {
			d.IPv6 = n.IPv6.String()
		}
		out = append(out, d)
	}
	return out, nil
}

// Stats is one statistics report (GET /v1/stats, one JSON line per report).
type Stats struct {
	Time      time.Time      `json:"time"`
	Interface string         `json:"interface"`
	XDPMode   string         `json:"xdpMode"`
	Counters  steer.Counters `json:"counters"`
	Overload  OverloadState  `json:"overload"`
	Flows     []FlowStats    `json:"flows"`
}

// FlowStats are one prioritised flow's counters.
type FlowStats struct {
	Intent   string `json:"intent"`
	FlowHash string `json:"flowHash"`
	Packets  uint64 `json:"packets"`
	Bytes    uint64 `json:"bytes"`
}

// Stats reads every counter.
func (a *Agent) Stats() (Stats, error) {
	c, err := a.dp.ReadCounters()
	if err != nil {
		return Stats{}, err
	}
	ov, err := a.Overload()
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Time: time.Now().UTC(), Interface: a.cfg.Iface, XDPMode: a.attached, Counters: c, Overload: ov, Flows: []FlowStats{}}
	for _, v := range a.eng.List() {
		for _, r := range v.Rules {
			st.Flows = append(st.Flows, FlowStats{v.ID, r.FlowHash, r.Packets, r.Bytes})
		}
	}
	return st, nil
}
