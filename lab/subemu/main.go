// Command subemu is the lab's subscriber emulator: N PPPoE or IPoE
// subscribers on one interface (untagged, one VLAN each, or QinQ), brought
// up at a set rate, holding their sessions (answering LCP echoes,
// renewing leases), carrying traffic, and reporting set-up rate,
// per-subscriber results and its own CPU cost (the ceiling of its rate).
//
//	subemu -iface eth0 -mode pppoe -n 1000 -encap qinq -svlan 100 -cvlan 1 -per-s 1000 -auth chap -ipv6
//	subemu reflect -listen 198.18.1.2:9000
//
// It is written from the RFCs (PPPoE RFC 2516, PPP RFC 1661, PAP RFC 1334,
// CHAP RFC 1994, IPCP RFC 1332/1877, IPv6CP RFC 5072, DHCP RFC 2131,
// DHCPv6 RFC 8415, ND RFC 4861) and shares no code with the control plane
// it tests.  With -hold it then reads commands on stdin, one a line, and
// answers each with a JSON line:
//
//	status                        counts
//	sessions [FROM TO]            per-subscriber results
//	echo off|on FROM TO           stop/resume answering LCP echoes
//	down FROM TO                  end sessions from the client side (PADT, RELEASE)
//	up FROM TO                    start them again
//	traffic PPS SECONDS DST:PORT [SIZE]   per-subscriber UDP to a reflector
//	quit                          end every session and exit
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type config struct {
	iface       string
	mode        string
	n           int
	encap       string
	svlan       int
	cvlan       int
	perS        int
	auth        string
	user        string
	password    string
	service     string
	ipv6        bool
	opt82       bool
	rate        float64
	outstanding int
	rto         time.Duration
	retries     int
	timeout     time.Duration
	hold        bool
	loops       int
	macBase     mac
	trafficPort uint16
	perSession  bool
}

func (c *config) authProto() uint16 {
	if c.auth == "pap" {
		return pPAP
	}
	return pCHAP
}

func (c *config) userOf(i int) string {
	if strings.Contains(c.user, "%") {
		return fmt.Sprintf(c.user, i)
	}
	return c.user
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "reflect" {
		fs := flag.NewFlagSet("reflect", flag.ExitOnError)
		addr := fs.String("listen", "0.0.0.0:9000", "address:port")
		fs.Parse(os.Args[2:])
		if err := reflect(*addr); err != nil {
			fmt.Fprintln(os.Stderr, "subemu reflect:", err)
			os.Exit(1)
		}
		return
	}
	c := &config{}
	fs := flag.NewFlagSet("subemu", flag.ExitOnError)
	fs.StringVar(&c.iface, "iface", "eth0", "interface")
	fs.StringVar(&c.mode, "mode", "pppoe", "pppoe or ipoe")
	fs.IntVar(&c.n, "n", 1, "subscribers")
	fs.StringVar(&c.encap, "encap", "qinq", "untagged, vlan (one VLAN per subscriber from -cvlan) or qinq")
	fs.IntVar(&c.svlan, "svlan", 100, "first S-tag (qinq)")
	fs.IntVar(&c.cvlan, "cvlan", 1, "first C-tag (qinq) or VLAN (vlan)")
	fs.IntVar(&c.perS, "per-s", 4000, "subscribers per S-tag (qinq)")
	fs.StringVar(&c.auth, "auth", "chap", "pap or chap")
	fs.StringVar(&c.user, "user", "user%d", "user name (%d: the subscriber's index)")
	fs.StringVar(&c.password, "password", "secret", "password")
	fs.StringVar(&c.service, "service", "", "PPPoE Service-Name")
	fs.BoolVar(&c.ipv6, "ipv6", false, "IPv6: IPv6CP, RA and DHCPv6-PD (pppoe); DHCPv6 IA_NA and IA_PD (ipoe)")
	fs.BoolVar(&c.opt82, "opt82", false, "DHCPv4 messages carry option 82 (an access node's circuit and remote id)")
	fs.Float64Var(&c.rate, "rate", 0, "new subscribers per second (0: as fast as -outstanding allows)")
	fs.IntVar(&c.outstanding, "outstanding", 1000, "subscribers in set-up at once")
	fs.DurationVar(&c.rto, "rto", time.Second, "retransmission timeout")
	fs.IntVar(&c.retries, "retries", 5, "retransmissions before a subscriber fails")
	fs.DurationVar(&c.timeout, "timeout", 120*time.Second, "time the whole set-up may take")
	fs.BoolVar(&c.hold, "hold", false, "keep the sessions and read commands on stdin")
	fs.IntVar(&c.loops, "loops", 2, "event loops")
	macBase := fs.String("mac-base", "02:ee:00:00:00:00", "MAC of subscriber 0 (the others follow)")
	port := fs.Uint("traffic-port", 9001, "our UDP port for traffic")
	fs.BoolVar(&c.perSession, "per-session", false, "print per-subscriber results after the set-up")
	fs.Parse(os.Args[1:])
	hw, err := net.ParseMAC(*macBase)
	if err != nil || len(hw) != 6 {
		fatal("-mac-base: %v", err)
	}
	copy(c.macBase[:], hw)
	c.trafficPort = uint16(*port)
	if c.mode != "pppoe" && c.mode != "ipoe" {
		fatal("-mode pppoe or ipoe")
	}
	if c.encap != "untagged" && c.encap != "vlan" && c.encap != "qinq" {
		fatal("-encap untagged, vlan or qinq")
	}
	if c.loops < 1 {
		c.loops = 1
	}
	lk, err := openLink(c.iface)
	if err != nil {
		fatal("%s: %v", c.iface, err)
	}
	e := newEmu(c, lk)
	run(e)
}

func fatal(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "subemu: "+f+"\n", a...)
	os.Exit(2)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func out(v any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func run(e *emu) {
	var wg sync.WaitGroup
	go e.lk.recvLoop(&e.stop, e.dispatch)
	for _, lp := range e.loops {
		wg.Add(1)
		go lp.run(&wg)
	}
	cpu0 := cpuSeconds()
	e.start = time.Now()
	e.startRange(0, e.cfg.n, e.cfg.rate, e.cfg.outstanding)
	deadline := e.start.Add(e.cfg.timeout)
	for time.Now().Before(deadline) && int(e.upN.Load()+e.failN.Load()) < e.cfg.n {
		time.Sleep(5 * time.Millisecond)
	}
	e.setupReport(cpuSeconds() - cpu0)
	if e.cfg.perSession {
		out(map[string]any{"event": "sessions", "sessions": e.sessions(0, e.cfg.n)})
	}
	if e.cfg.hold {
		e.commands()
	}
	e.each(0, e.cfg.n, func(lp *loop, s *sess) {
		if s.st != stIdle && s.st != stDown {
			lp.down(s)
		}
	})
	time.Sleep(200 * time.Millisecond)
	e.stop.Store(true)
	wg.Wait()
}

// startRange begins subscribers [from, to) at rate per second with at
// most outstanding in set-up at once.
func (e *emu) startRange(from, to int, rate float64, outstanding int) {
	next := time.Now()
	for i := from; i < to; i++ {
		for int(e.begun.Load()-e.upN.Load()-e.failN.Load()) >= outstanding && outstanding > 0 {
			time.Sleep(200 * time.Microsecond)
		}
		if rate > 0 {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(time.Duration(float64(time.Second) / rate))
		}
		s := e.subs[i]
		lp := e.loopOf(s)
		lp.post(func() { lp.begin(s) })
	}
}

func (e *emu) each(from, to int, fn func(*loop, *sess)) {
	var wg sync.WaitGroup
	for i := from; i < to && i < len(e.subs); i++ {
		s := e.subs[i]
		lp := e.loopOf(s)
		wg.Add(1)
		lp.post(func() { fn(lp, s); wg.Done() })
	}
	wg.Wait()
}

func pct(d []float64, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// setupReport prints the set-up's figures.
func (e *emu) setupReport(cpu float64) {
	var ms []float64
	var last time.Time
	fails := map[string]int{}
	phases := map[string][]float64{} // a phase's duration, each subscriber up
	e.each(0, e.cfg.n, func(_ *loop, s *sess) {})
	for _, s := range e.subs {
		switch s.st {
		case stUp:
			ms = append(ms, float64(s.tUp.Sub(s.t0).Microseconds())/1000)
			end := s.tUp
			for st := stNetwork; st > stIdle; st-- {
				if !s.tIn[st].IsZero() {
					phases[stateNames[st]] = append(phases[stateNames[st]], float64(end.Sub(s.tIn[st]).Microseconds())/1000)
					end = s.tIn[st]
				}
			}
			if s.tUp.After(last) {
				last = s.tUp
			}
		case stFailed, stDown:
			fails[s.fail]++
		default:
			fails["unfinished: "+stateNames[s.st]]++
		}
	}
	sort.Float64s(ms)
	phaseP50 := map[string]float64{}
	for k, v := range phases {
		sort.Float64s(v)
		phaseP50[k] = pct(v, .5)
	}
	elapsed := last.Sub(e.start).Seconds()
	r := map[string]any{"event": "setup", "mode": e.cfg.mode, "encap": e.cfg.encap, "requested": e.cfg.n,
		"up": len(ms), "failed": e.cfg.n - len(ms), "elapsed_s": elapsed, "cpu_s": cpu,
		"rx_frames": e.lk.rx.Load(), "tx_frames": e.lk.tx.Load(), "tx_errors": e.lk.txErr.Load(), "retransmits": e.retx.Load(), "rx_dropped": e.lk.dropped(),
		"setup_ms":     map[string]float64{"p50": pct(ms, .5), "p90": pct(ms, .9), "p99": pct(ms, .99), "max": pct(ms, 1)},
		"phase_ms_p50": phaseP50, "failures": fails}
	if elapsed > 0 {
		r["rate_per_s"] = float64(len(ms)) / elapsed
	}
	if cpu > 0 {
		// What one core of this machine would sustain for the emulator
		// alone: its own ceiling, reported beside the server's figure.
		r["ceiling_per_cpu_s"] = float64(len(ms)) / cpu
	}
	out(r)
}

type sessOut struct {
	I       int     `json:"i"`
	MAC     string  `json:"mac"`
	S       uint16  `json:"s_tag,omitempty"`
	C       uint16  `json:"c_tag,omitempty"`
	State   string  `json:"state"`
	SID     uint16  `json:"pppoe_session,omitempty"`
	IPv4    string  `json:"ipv4,omitempty"`
	IPv6    string  `json:"ipv6,omitempty"`
	PD      string  `json:"pd,omitempty"`
	SetupMS float64 `json:"setup_ms,omitempty"`
	Tx      uint64  `json:"tx"`
	Rx      uint64  `json:"rx"`
	RxBytes uint64  `json:"rx_bytes"`
	EchoRx  uint64  `json:"echo_rx"`
	Opt82   bool    `json:"opt82_echoed,omitempty"`
	Fail    string  `json:"fail,omitempty"`
}

func (e *emu) sessions(from, to int) []sessOut {
	var res []sessOut
	var mu sync.Mutex
	e.each(from, to, func(_ *loop, s *sess) {
		o := sessOut{I: s.i, MAC: net.HardwareAddr(s.mac[:]).String(), S: s.l.s, C: s.l.c, State: stateNames[s.st],
			SID: s.sid, Tx: s.txPkts, Rx: s.rxPkts, RxBytes: s.rxBytes, EchoRx: s.echoRx, Opt82: s.opt82, Fail: s.fail}
		if s.v4.IsValid() {
			o.IPv4 = s.v4.String()
		}
		switch {
		case s.na.IsValid():
			o.IPv6 = s.na.String()
		case s.slaac.IsValid():
			o.IPv6 = s.slaac.String()
		}
		if s.pd.IsValid() {
			o.PD = s.pd.String()
		}
		if s.st == stUp {
			o.SetupMS = float64(s.tUp.Sub(s.t0).Microseconds()) / 1000
		}
		mu.Lock()
		res = append(res, o)
		mu.Unlock()
	})
	sort.Slice(res, func(a, b int) bool { return res[a].I < res[b].I })
	return res
}

func (e *emu) commands() {
	sc := bufio.NewScanner(os.Stdin)
	out(map[string]any{"event": "ready"})
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		rng := func(a, b int) (int, int, bool) {
			if len(f) < b+1 {
				return 0, e.cfg.n, true
			}
			x, err1 := strconv.Atoi(f[a])
			y, err2 := strconv.Atoi(f[b])
			return x, min(y, e.cfg.n), err1 == nil && err2 == nil && x <= y
		}
		switch f[0] {
		case "status":
			out(map[string]any{"event": "status", "up": e.upN.Load(), "failed": e.failN.Load(),
				"rx_frames": e.lk.rx.Load(), "tx_frames": e.lk.tx.Load(), "unknown_rx": e.unknownRx.Load()})
		case "sessions":
			a, b, ok := rng(1, 2)
			if !ok {
				out(map[string]any{"event": "error", "error": "sessions [FROM TO]"})
				continue
			}
			out(map[string]any{"event": "sessions", "sessions": e.sessions(a, b)})
		case "echo":
			a, b, ok := rng(2, 3)
			if len(f) < 2 || !ok {
				out(map[string]any{"event": "error", "error": "echo on|off FROM TO"})
				continue
			}
			off := f[1] == "off"
			e.each(a, b, func(_ *loop, s *sess) { s.echoOff = off })
			out(map[string]any{"event": "echo", "off": off, "from": a, "to": b})
		case "down":
			a, b, ok := rng(1, 2)
			if !ok {
				out(map[string]any{"event": "error", "error": "down FROM TO"})
				continue
			}
			e.each(a, b, func(lp *loop, s *sess) { lp.down(s); s.flaps++ })
			out(map[string]any{"event": "down", "from": a, "to": b})
		case "up":
			a, b, ok := rng(1, 2)
			if !ok {
				out(map[string]any{"event": "error", "error": "up FROM TO"})
				continue
			}
			e.failN.Store(0)
			before := e.upN.Load()
			t0 := time.Now()
			e.startRange(a, b, 0, e.cfg.outstanding)
			want := before + int64(b-a)
			deadline := time.Now().Add(e.cfg.timeout)
			for time.Now().Before(deadline) && e.upN.Load()+e.failN.Load() < want {
				time.Sleep(5 * time.Millisecond)
			}
			out(map[string]any{"event": "up", "from": a, "to": b, "up": e.upN.Load(), "failed": e.failN.Load(),
				"elapsed_s": time.Since(t0).Seconds()})
		case "traffic":
			if len(f) < 4 {
				out(map[string]any{"event": "error", "error": "traffic PPS SECONDS DST:PORT [SIZE]"})
				continue
			}
			pps, _ := strconv.ParseFloat(f[1], 64)
			secs, _ := strconv.ParseFloat(f[2], 64)
			dst, err := netip.ParseAddrPort(f[3])
			size := 64
			if len(f) > 4 {
				size, _ = strconv.Atoi(f[4])
			}
			if err != nil || pps <= 0 || secs <= 0 {
				out(map[string]any{"event": "error", "error": "traffic PPS SECONDS DST:PORT [SIZE]"})
				continue
			}
			// The counts of this command alone (the sessions' own go on).
			var tx0, rx0, tx, rx atomic.Uint64
			e.each(0, e.cfg.n, func(_ *loop, s *sess) { tx0.Add(s.txPkts); rx0.Add(s.rxPkts) })
			t := &traffic{pps: pps, until: time.Now().Add(time.Duration(secs * float64(time.Second))), dst: dst, size: size}
			e.traffic.Store(t)
			time.Sleep(time.Until(t.until) + 500*time.Millisecond)
			e.each(0, e.cfg.n, func(_ *loop, s *sess) { tx.Add(s.txPkts); rx.Add(s.rxPkts) })
			out(map[string]any{"event": "traffic", "tx": tx.Load() - tx0.Load(), "rx": rx.Load() - rx0.Load()})
		case "quit":
			out(map[string]any{"event": "quit"})
			return
		default:
			out(map[string]any{"event": "error", "error": "unknown command " + f[0]})
		}
	}
}
