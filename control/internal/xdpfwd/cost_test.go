package xdpfwd

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"edgeplane/control/internal/steer"
)

// What the router's program costs a forwarded frame, against the floor of
// any XDP forwarder (xdp/fwd_min: one array lookup, the MAC rewrite,
// bpf_redirect_map()) and a no-op program (xdp/noop), as the steering
// program's benchmark (control/cmd/xdp-steer-bench) measures: every
// variant in each round, interleaved, the medians over rounds, and the
// cost above the no-op program.
//
//	cd control && go test -run '^$' -bench ProgramCost -benchtime 12x ./internal/xdpfwd
//
// One iteration is one round (-benchtime 12x: 12 rounds). In a round each
// variant runs costRuns BPF_PROG_TEST_RUN calls of costRepeat repeats on
// the same buffer: the router's program forwards the frame again at every
// repeat (its next hop's destination MAC is the port's own, TTL 255 goes
// down to 5), so each repeat is a forwarded frame. The kernel's ns per
// repeat, averaged over the round's calls, is the round's sample. No
// threshold: the figures are reported, not judged
// (docs/benchmarks/rfc2544-router-fast-paths.md, "What is left of our
// process, and the program's own cost").
//
// The tc program (tc_router_fwd_peer, the same check chain) is timed in
// the same rounds on the same frames (tc-ipv4, tc-ipv6): its test run
// builds an skb, so it has no floor here and only its ns per repeat is
// reported, for A/B runs of its own.

const (
	costRepeat = 250 // the frame's TTL 255 stays above 1 for every repeat
	costRuns   = 10
)

type costVariant struct {
	name  string
	prog  *ebpf.Program
	frame []byte
	want  uint32 // the verdict of every repeat: the path timed is the one named
}

// costVariants loads the programs with the maps each one's forwarded path
// reads: the fixture of the program's tests (the XDP and the tc program
// alike), with the next hop's MAC the port's own; the floor's one next hop
// and devmap slot (lo).
func costVariants(tb testing.TB) []costVariant {
	tb.Helper()
	f := load(tb)
	// The rewritten frame is addressed to the port again: it is forwarded
	// at the next repeat too.
	v := fwdFwdNh{Port: outPort, Mtu: 1500, Valid: 1}
	copy(v.Eth[:6], portMAC)
	copy(v.Eth[6:], outMAC)
	if err := f.objs.FwdNexthops.Put(uint32(nhRouted), v); err != nil {
		tb.Fatal(err)
	}
	tc := loadTC(tb)
	if err := tc.nexthops.Put(uint32(nhRouted), v); err != nil {
		tb.Fatal(err)
	}
	var m fwdMinObjects
	if err := loadFwdMinObjects(&m, nil); err != nil {
		tb.Fatalf("load fwd_min: %v", err)
	}
	tb.Cleanup(func() { m.Close() })
	nh := fwdMinFwdMinNh{Port: outPort}
	copy(nh.Eth[:6], nhMAC)
	copy(nh.Eth[6:], outMAC)
	if err := m.FwdMinNhMap.Put(uint32(0), nh); err != nil {
		tb.Fatal(err)
	}
	if err := m.FwdMinTx.Put(uint32(outPort), uint32(1)); err != nil {
		tb.Fatal(err)
	}
	noop, err := steer.LoadNoop()
	if err != nil {
		tb.Fatalf("load noop: %v", err)
	}
	tb.Cleanup(func() { noop.Close() })
	in4 := ipFrame(tb, frameOpt{ttl: 255})
	in6 := ipFrame(tb, frameOpt{v6: true, ttl: 255})
	return []costVariant{
		{"noop", noop, in4, xdpPass},
		{"fwd-ipv4", f.objs.XdpRouterFwd, in4, xdpRedirect},
		{"min-ipv4", m.XdpFwdMin, in4, xdpRedirect},
		{"fwd-ipv6", f.objs.XdpRouterFwd, in6, xdpRedirect},
		{"min-ipv6", m.XdpFwdMin, in6, xdpRedirect},
		{"tc-ipv4", tc.objs.TcRouterFwdPeer, in4, tcActRedirect},
		{"tc-ipv6", tc.objs.TcRouterFwdPeer, in6, tcActRedirect},
	}
}

// costRound runs every variant once, in order, and adds its mean ns per
// repeat to samples.
func costRound(vs []costVariant, repeat, runs int, samples map[string][]float64) error {
	for _, v := range vs {
		var sum time.Duration
		for i := 0; i < runs; i++ {
			ret, per, err := v.prog.Benchmark(v.frame, repeat, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			if ret != v.want {
				return fmt.Errorf("%s: verdict %d, want %d: the benchmark would time another path", v.name, ret, v.want)
			}
			sum += per
		}
		samples[v.name] = append(samples[v.name], float64(sum)/float64(runs)/float64(time.Nanosecond))
	}
	return nil
}

func BenchmarkProgramCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("BPF_PROG_TEST_RUN needs root")
	}
	vs := costVariants(b)
	samples := map[string][]float64{}
	b.ResetTimer()
	for r := 0; r < b.N; r++ {
		order := vs
		if r%2 == 1 { // the order reversed every other round
			order = slices.Clone(vs)
			slices.Reverse(order)
		}
		if err := costRound(order, costRepeat, costRuns, samples); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	floor := median(samples["noop"])
	for _, v := range vs {
		ns := median(samples[v.name])
		b.ReportMetric(ns, v.name+"-ns/op")
		// The tc program's test run builds an skb: the XDP no-op is not its
		// floor, so only its own figure is reported.
		if v.name != "noop" && !strings.HasPrefix(v.name, "tc-") {
			b.ReportMetric(ns-floor, v.name+"-above-noop-ns/op")
		}
	}
	// Per round, ours over the floor: the ratio the neighbours' load moves
	// least, since both ran within the same round.
	for _, fam := range []string{"ipv4", "ipv6"} {
		var rs []float64
		for i := range samples["noop"] {
			rs = append(rs, samples["fwd-"+fam][i]/samples["min-"+fam][i])
		}
		b.ReportMetric(median(rs), "fwd/min-"+fam)
	}
	b.ReportMetric(0, "ns/op") // a round's wall time says nothing here
}

// The benchmark times what it names: both programs forward the IPv4 and
// the IPv6 frame at every repeat (the router's program until the TTL runs
// out), the no-op passes it. A fixture that punted after the first repeat
// (a next hop's MAC not the port's) would time the punt path instead.
func TestProgramCostVariantsForwardAtEveryRepeat(t *testing.T) {
	vs := costVariants(t)
	samples := map[string][]float64{}
	if err := costRound(vs, costRepeat, 1, samples); err != nil {
		t.Fatal(err)
	}
	// One repeat past the TTL: the router's program must stop forwarding
	// (punt_ttl), so the verdict above is the last repeat's, not the first.
	for _, v := range vs {
		want := map[string]uint32{"fwd-ipv4": xdpPass, "fwd-ipv6": xdpPass, "tc-ipv4": tcActOK, "tc-ipv6": tcActOK}
		punted, ok := want[v.name]
		if !ok {
			continue
		}
		ret, _, err := v.prog.Benchmark(v.frame, 255, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ret != punted {
			t.Errorf("%s: verdict %d after 255 repeats, want %d, the punt (TTL exhausted)", v.name, ret, punted)
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
