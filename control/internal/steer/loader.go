package steer

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Options for Load.
type Options struct {
	// PinDir is a bpffs directory for the maps and the XDP link. Maps
	// pinned there by an earlier run are reused, so a restarted agent
	// keeps the rules, the counters and the attached program. Empty: no
	// pinning (tests, benchmarks).
	PinDir string
	// PrioSlots overrides prio_map's size (STEER_PRIO_SLOTS, a power of
	// two, at least 2); 0 keeps it.
	PrioSlots uint32
	// CPUQueue is the cpumap queue length per CPU; 0 means 2048 frames,
	// enough for a veth NAPI budget of 64 many times over.
	CPUQueue uint32
	// GeneralParseOnly loads the program without its fast parse of the
	// common tunnel stacks (xdp/steer/steer.bpf.c, parse_fast): every
	// packet then takes the general parse. For the test that checks the
	// two decide alike, and for measuring what the fast parse saves.
	GeneralParseOnly bool
}

// Dataplane is the loaded program and its maps.
type Dataplane struct {
	mu     sync.Mutex        // serialises read-modify-write of node_map
	rmu    sync.Mutex        // guards where
	where  map[uint32]uint32 // flow hash -> prio_map slot of its rule
	objs   steerObjects
	spec   *ebpf.CollectionSpec
	Names  Names
	ncpu   int // possible CPUs: the length of every per-CPU value
	opts   Options
	link   link.Link
	Reused bool // the maps came from pins of an earlier run
}

const linkPin = "xdp_link"

// Load loads the steering program and creates (or reopens) its maps.
func Load(opts Options) (*Dataplane, error) {
	spec, err := loadSteer()
	if err != nil {
		return nil, err
	}
	names, err := loadNames(spec)
	if err != nil {
		return nil, err
	}
	if n := opts.PrioSlots; n != 0 {
		if n < 2 || n&(n-1) != 0 {
			return nil, fmt.Errorf("prio_map slots %d: want a power of two, at least 2", n)
		}
		spec.Maps["prio_map"].MaxEntries = n
	}
	// The program indexes prio_map with this mask (a load-time constant).
	if err := spec.Variables["prio_set_mask"].Set(spec.Maps["prio_map"].MaxEntries - 2); err != nil {
		return nil, fmt.Errorf("prio_set_mask: %w", err)
	}
	if opts.GeneralParseOnly {
		if err := spec.Variables["fast_parse"].Set(uint32(0)); err != nil {
			return nil, fmt.Errorf("fast_parse: %w", err)
		}
	}
	if opts.CPUQueue == 0 {
		opts.CPUQueue = 2048
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	d := &Dataplane{spec: spec, Names: names, ncpu: ncpu, opts: opts}
	var copts ebpf.CollectionOptions
	if opts.PinDir != "" {
		if err := os.MkdirAll(opts.PinDir, 0o700); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(opts.PinDir, "prio_map")); err == nil {
			d.Reused = true
		}
		copts.Maps.PinPath = opts.PinDir
	} else {
		for _, m := range spec.Maps {
			m.Pinning = ebpf.PinNone
		}
	}
	if err := spec.LoadAndAssign(&d.objs, &copts); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("verifier: %+v", ve)
		}
		if errors.Is(err, ebpf.ErrMapIncompatible) {
			return nil, fmt.Errorf("maps pinned in %s are from another build (%w); run `edgeplane detach` first", opts.PinDir, err)
		}
		return nil, err
	}
	if err := d.initCPUMap(); err != nil {
		d.objs.Close()
		return nil, err
	}
	if _, err := d.scanRules(); err != nil {
		d.objs.Close()
		return nil, err
	}
	return d, nil
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, err
		}
		z := a
		if found {
			if z, err = strconv.Atoi(hi); err != nil {
				return nil, err
			}
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// initCPUMap gives every online CPU a cpumap entry. An entry that exists
// (maps reused from pins) is left alone: replacing it would restart that
// CPU's kthread under traffic.
func (d *Dataplane) initCPUMap() error {
	cpus, err := onlineCPUs()
	if err != nil {
		return err
	}
	for _, c := range cpus {
		if c >= MaxCPUs {
			break
		}
		var v steerBpfCpumapVal
		if err := d.objs.CpuMap.Lookup(uint32(c), &v); err == nil && v.Qsize != 0 {
			continue
		}
		v = steerBpfCpumapVal{Qsize: d.opts.CPUQueue}
		v.BpfProg.Fd = -1
		if err := d.objs.CpuMap.Update(uint32(c), &v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("cpumap entry for CPU %d: %w", c, err)
		}
	}
	return nil
}

// CPUs returns the CPUs a rule may target (those with a cpumap entry).
func (d *Dataplane) CPUs() []int {
	var out []int
	for c := 0; c < MaxCPUs && c < d.ncpu; c++ {
		var v steerBpfCpumapVal
		if err := d.objs.CpuMap.Lookup(uint32(c), &v); err == nil && v.Qsize != 0 {
			out = append(out, c)
		}
	}
	return out
}

// Program is the steering program (for BPF_PROG_TEST_RUN).
func (d *Dataplane) Program() *ebpf.Program { return d.objs.XdpSteer }

// Attach attaches the program to ifname. mode is "native", "generic" or
// "auto" (native, else generic with a warning). With a PinDir, a link pinned
// by an earlier run on the same interface is updated in place: the new
// program replaces the old atomically and no packet sees neither. It returns
// the mode in effect ("native", "generic" or "updated").
func (d *Dataplane) Attach(ifname, mode string) (string, error) {
	iface, err := net.InterfaceByName(ifname)
	if err != nil {
		return "", err
	}
	pin := ""
	if d.opts.PinDir != "" {
		pin = filepath.Join(d.opts.PinDir, linkPin)
		if l, err := link.LoadPinnedLink(pin, nil); err == nil {
			info, ierr := l.Info()
			if ierr == nil && info.XDP() != nil && int(info.XDP().Ifindex) == iface.Index {
				if err := l.Update(d.objs.XdpSteer); err == nil {
					d.link = l
					return "updated", nil
				}
			}
			// A link for another (or a vanished) interface: replace it.
			l.Unpin()
			l.Close()
		}
	}
	try := func(flags link.XDPAttachFlags) (link.Link, error) {
		return link.AttachXDP(link.XDPOptions{Program: d.objs.XdpSteer, Interface: iface.Index, Flags: flags})
	}
	var l link.Link
	got := mode
	switch mode {
	case "native":
		l, err = try(link.XDPDriverMode)
	case "generic":
		l, err = try(link.XDPGenericMode)
	case "auto", "":
		got = "native"
		l, err = try(link.XDPDriverMode)
		if err != nil {
			slog.Warn("native XDP attach failed, falling back to generic mode (slower: runs after skb allocation)",
				"iface", ifname, "err", err)
			got = "generic"
			l, err = try(link.XDPGenericMode)
		}
	default:
		return "", fmt.Errorf("unknown XDP mode %q (native, generic, auto)", mode)
	}
	if err != nil {
		return "", fmt.Errorf("attach XDP to %s: %w", ifname, err)
	}
	if pin != "" {
		if err := l.Pin(pin); err != nil {
			l.Close()
			return "", fmt.Errorf("pin link: %w", err)
		}
	}
	d.link = l
	return got, nil
}

// Close releases the agent's handles. Pinned maps and a pinned link stay:
// the program keeps running until Detach.
func (d *Dataplane) Close() error {
	if d.link != nil {
		d.link.Close()
	}
	return d.objs.Close()
}

// Detach removes the program from its interface and deletes the pins.
func Detach(pinDir string) error {
	pin := filepath.Join(pinDir, linkPin)
	if l, err := link.LoadPinnedLink(pin, nil); err == nil {
		l.Unpin()
		l.Close() // last reference: the program is detached
	}
	entries, err := os.ReadDir(pinDir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		os.Remove(filepath.Join(pinDir, e.Name()))
	}
	return os.Remove(pinDir)
}

// LoadNoop loads the no-op XDP program (xdp/noop/noop.bpf.c), the floor the
// benchmark subtracts.
func LoadNoop() (*ebpf.Program, error) {
	var objs noopObjects
	if err := loadNoopObjects(&objs, nil); err != nil {
		return nil, err
	}
	return objs.XdpNoop, nil
}
