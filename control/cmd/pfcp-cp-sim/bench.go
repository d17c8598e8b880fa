package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/cpsim"
	"edgeplane/control/internal/pfcp/wire"
)

// benchSub is subscriber i of a benchmark: QinQ (100 + i/4000).(1 + i%4000),
// a MAC, one IPv4 address in 198.18.0.0/15, a /56 in 2001:db8::/32, one
// of four rate tiers (shared profiles, as service tiers are).
func benchSub(i int) cpsim.Subscriber {
	tier := uint64(i%4+1) * 10000
	return cpsim.Subscriber{CPSEID: uint64(i + 1), STag: 100 + uint16(i/4000), CTag: 1 + uint16(i%4000),
		MAC:   net.HardwareAddr{2, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)},
		IPv4:  netip.AddrFrom4([4]byte{198, 18 + byte(i>>16&1), byte(i >> 8), byte(i)}),
		IPv6:  netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 16), byte(i >> 8), byte(i)}), 56),
		ULMBR: tier, DLMBR: 2 * tier}
}

// result is what bench and direct print.
type result struct {
	Sessions int            `json:"sessions"`
	Seconds  float64        `json:"seconds"`
	PerS     float64        `json:"per_s"`
	P50MS    float64        `json:"p50_ms"`
	P99MS    float64        `json:"p99_ms"`
	Causes   map[string]int `json:"causes,omitempty"`
	Batches  int            `json:"batches,omitempty"`
	// CPUS is this client's CPU time (user + system, every thread) over
	// the timed part: what the load generator itself cost.
	CPUS    float64 `json:"cpu_s"`
	TableUS int64   `json:"table_us,omitempty"`
}

// cpuSeconds is this process's CPU time so far, user + system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	k := int(float64(len(d)-1) * p)
	return float64(d[k]) / float64(time.Millisecond)
}

// bench establishes sessions as fast as the function answers, with up to
// window requests outstanding; latency is request sent to answer received
// (the answer comes when the data plane's tables hold the subscriber).
// --fill sessions are established first and reported apart: the timed run
// then starts with that many installed.
func bench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	upAddr := fs.String("upf", "", "the function's PFCP address")
	local := fs.String("local", "127.0.0.1:0", "our PFCP address")
	fill := fs.Int("fill", 0, "sessions established before the timed run")
	n := fs.Int("sessions", 10000, "sessions established in the timed run")
	window := fs.Int("window", 4096, "requests outstanding at most")
	del := fs.Bool("delete", false, "delete the sessions afterwards (not timed)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (runtime/pprof) of the client to FILE")
	fs.Parse(args)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	up, err := netip.ParseAddrPort(*upAddr)
	if err != nil {
		return fmt.Errorf("--upf: %w", err)
	}
	loc, err := netip.ParseAddrPort(*local)
	if err != nil {
		return fmt.Errorf("--local: %w", err)
	}
	cp, err := cpsim.New(loc, up, "")
	if err != nil {
		return err
	}
	defer cp.Close()
	ctx := context.Background()
	a, err := cp.Associate(ctx)
	if err != nil {
		return err
	}
	if c := cpsim.Cause(a); c != ie.CauseRequestAccepted {
		return fmt.Errorf("association: cause %d", c)
	}
	cp.Raw = make(chan [][]byte, *window+64)
	out := map[string]result{}
	var seids []uint64
	if *fill > 0 {
		r, s, err := establishRun(cp, 0, *fill, *window)
		if err != nil {
			return err
		}
		out["fill"], seids = r, append(seids, s...)
	}
	r, s, err := establishRun(cp, *fill, *n, *window)
	if err != nil {
		return err
	}
	out["run"], seids = r, append(seids, s...)
	cp.Raw = nil
	if *del {
		for _, s := range seids {
			if s != 0 {
				cp.Delete(ctx, s)
			}
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// establishRun establishes subscribers offset..offset+n-1 and times it.
func establishRun(cp *cpsim.CP, offset, n, window int) (result, []uint64, error) {
	// Encoded before the clock starts: the control plane's own cost is
	// not the function's.  Sent in bursts of up to 64 per system call,
	// answers taken undecoded (sequence number and cause read in place).
	raw := make([][]byte, n)
	seqIdx := make(map[uint32]int, n)
	for i := range raw {
		s := benchSub(offset + i)
		m := cp.EstablishMsg(s.CPSEID, s.Establishment())
		b := make([]byte, m.MarshalLen())
		if err := m.MarshalTo(b); err != nil {
			return result{}, nil, err
		}
		raw[i] = b
		seqIdx[m.Sequence()] = i
	}
	sent := make([]time.Time, n)
	lats := make([]time.Duration, 0, n)
	causes := map[string]int{}
	var byCause [256]int
	seids := make([]uint64, n)
	// One timer for the whole run, reset only when the loop waits: a
	// time.After per answer was a timer (and its garbage) per session.
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	cpu0, start := cpuSeconds(), time.Now()
	next, got := 0, 0
	// Up to 64 requests per system call, and one such call for each
	// answer taken: the window opens as fast as answers come, without a
	// burst of its whole size into the function's socket buffer.
	calls := 1
	for got < n {
		for ; calls > 0 && next < n && next-got < window; calls-- {
			k := min(n-next, window-(next-got), 64)
			now := time.Now()
			for j := next; j < next+k; j++ {
				sent[j] = now
			}
			if err := cp.WriteBatch(raw[next : next+k]); err != nil {
				return result{}, nil, err
			}
			next += k
		}
		var bs [][]byte
		select {
		case bs = <-cp.Raw:
		default:
			idle.Reset(60 * time.Second)
			select {
			case bs = <-cp.Raw:
			case <-idle.C:
				causes["timeout"] += n - got
				got = n
				continue
			}
		}
		calls = max(1, len(bs))
		for _, b := range bs {
			seq, cause, seid, ok := answerFields(b)
			if !ok {
				continue
			}
			i, known := seqIdx[seq]
			if !known {
				continue
			}
			got++
			byCause[cause]++
			if cause == ie.CauseRequestAccepted {
				lats = append(lats, time.Since(sent[i]))
				seids[i] = seid
			}
		}
	}
	el, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	for c, k := range byCause {
		if k > 0 {
			causes[fmt.Sprint(c)] = k
		}
	}
	return result{Sessions: len(lats), Seconds: el, PerS: float64(len(lats)) / el,
		P50MS: percentile(lats, 0.5), P99MS: percentile(lats, 0.99), Causes: causes, CPUS: cpu}, seids, nil
}

// direct adds the same subscribers through edgeplane-dp's control socket
// (sub-add-bulk of batch subscribers, window requests pipelined): the
// peer of bench, the data plane's own rate for this work.  --fill and the
// timed run as in bench.
func direct(args []string) error {
	fs := flag.NewFlagSet("direct", flag.ExitOnError)
	sock := fs.String("socket", "", "edgeplane-dp's control socket")
	fill := fs.Int("fill", 0, "subscribers added before the timed run")
	n := fs.Int("sessions", 10000, "subscribers added in the timed run")
	idBase := fs.Int("id-base", 1, "subscriber id of the first")
	batch := fs.Int("batch", 1000, "subscribers per sub-add-bulk in the timed run (1: one sub-add each)")
	fillBatch := fs.Int("fill-batch", 1000, "subscribers per sub-add-bulk while filling")
	window := fs.Int("window", 2, "requests in flight")
	fs.Parse(args)
	c := dpctl.New(*sock, dpctl.Options{MaxInFlight: *window + 1})
	defer c.Close()
	ctx := context.Background()
	for t := 1; t <= 4; t++ {
		r := uint64(t) * 10000
		if err := c.PolicerAdd(ctx, dpctl.Policer{Name: fmt.Sprintf("direct-u%d", r), CIR: fmt.Sprint(r * 1000),
			CBS: "64K", PIR: fmt.Sprint(r * 1000), PBS: "64K"}); err != nil {
			return err
		}
		if err := c.PipeAdd(ctx, dpctl.Pipe{Name: fmt.Sprintf("direct-d%d", 2*r), Rate: fmt.Sprint(2 * r * 1000)}); err != nil {
			return err
		}
	}
	out := map[string]result{}
	if *fill > 0 {
		r, err := addRun(ctx, c, 0, *fill, *idBase, *fillBatch, 2)
		if err != nil {
			return err
		}
		out["fill"] = r
	}
	r, err := addRun(ctx, c, *fill, *n, *idBase, *batch, *window)
	if err != nil {
		return err
	}
	out["run"] = r
	return json.NewEncoder(os.Stdout).Encode(out)
}

func addRun(ctx context.Context, c *dpctl.Client, offset, n, idBase, batch, window int) (result, error) {
	subs := make([]dpctl.Subscriber, n)
	for i := range subs {
		s := benchSub(offset + i)
		subs[i] = dpctl.Subscriber{ID: uint32(idBase + offset + i), QinQ: fmt.Sprintf("%d.%d", s.STag, s.CTag),
			MAC: s.MAC.String(), IPv4: []string{s.IPv4.String()}, IPv6: s.IPv6.String(),
			Policer: fmt.Sprintf("direct-u%d", s.ULMBR), Pipe: fmt.Sprintf("direct-d%d", s.DLMBR)}
	}
	// Lines encoded before the clock starts, as bench's messages are.
	var lines [][]byte
	cmd := "sub-add-bulk"
	for off := 0; off < n; off += batch {
		if batch == 1 {
			cmd = "sub-add"
			lines = append(lines, append([]byte(`{"cmd":"sub-add",`), subs[off].AppendJSON(nil)[1:]...))
			continue
		}
		lines = append(lines, dpctl.SubAddBulkLine(subs[off:min(off+batch, n)]))
	}
	type sent struct {
		k  *dpctl.Call
		t0 time.Time
	}
	var lats []time.Duration
	var table int64
	inflight := make(chan sent, window)
	errc := make(chan error, 1)
	cpu0, start := cpuSeconds(), time.Now()
	go func() {
		for _, l := range lines {
			inflight <- sent{c.GoRaw(ctx, cmd, l), time.Now()}
		}
		close(inflight)
	}()
	go func() {
		for x := range inflight {
			raw, err := x.k.Wait(ctx)
			if err != nil {
				errc <- err
				return
			}
			lats = append(lats, time.Since(x.t0))
			var r dpctl.BulkResult
			json.Unmarshal(raw, &r)
			table += r.TableUS
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		return result{}, err
	}
	el, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	return result{Sessions: n, Seconds: el, PerS: float64(n) / el, P50MS: percentile(lats, 0.5),
		P99MS: percentile(lats, 0.99), Batches: len(lines), TableUS: table, CPUS: cpu}, nil
}

// answerFields reads an establishment answer's sequence number, cause and
// UP SEID (F-SEID) in place.
func answerFields(b []byte) (seq uint32, cause uint8, seid uint64, ok bool) {
	h, err := wire.ParseHeader(b)
	if err != nil || h.Type != message.MsgTypeSessionEstablishmentResponse || int(h.Length)+4 > len(b) {
		return 0, 0, 0, false
	}
	for p := b[h.HdrLen : int(h.Length)+4]; len(p) >= 4; {
		t, l := binary.BigEndian.Uint16(p), int(binary.BigEndian.Uint16(p[2:]))
		if 4+l > len(p) {
			break
		}
		v := p[4 : 4+l]
		switch {
		case t == ie.Cause && l >= 1:
			cause = v[0]
		case t == ie.FSEID && l >= 9:
			seid = binary.BigEndian.Uint64(v[1:])
		}
		p = p[4+l:]
	}
	return h.Sequence, cause, seid, true
}
