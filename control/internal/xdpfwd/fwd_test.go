package xdpfwd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"regexp"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// The kernel runs the real program on crafted frames (BPF_PROG_TEST_RUN);
// the tests assert its verdict, the bytes it leaves and the one counter it
// moves. Root is required. A punted frame's verdict is XDP_PASS: the
// program redirects into xsks_map with XDP_PASS as the fallback, and no
// socket is in the map here, so the result is the fallback (the PMD's
// default program behaves the same way).

var (
	portMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a} // the rx port's own MAC
	hostMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01} // the sender
	nhMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b} // the next hop
	outMAC  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0c} // the egress port's MAC
	src     = net.IPv4(198, 18, 0, 2)
	routed  = net.IPv4(198, 18, 100, 7)
	src6    = net.ParseIP("2001:db8:0:1::2")
	routed6 = net.ParseIP("2001:db8:100::7")
)

// The kernel's enum xdp_action.
const (
	xdpPass     = 2
	xdpRedirect = 4
)

const (
	nhRouted   = 5 // resolved next hop, on port 1
	nhOffPort  = 6 // resolved, on port 7: not in the devmap
	nhSmallMTU = 7 // resolved, MTU 100
	outPort    = 1
)

// progMaps are the maps of fwd.h both programs read (the XDP program's and
// the tc programs'), and the port map that differs: the devmap, or
// fwd_tc_ports (port -> ifindex). The tests write them alike, with the
// XDP object's generated types: the layouts are fwd.h's in both objects.
type progMaps struct {
	cfg, route4, route6, nexthops, ports, counters *ebpf.Map
	names                                          []string // fwd_counters' names, in order
}

// populate writes the tables every test starts from: the port enabled,
// the routes below (one per punt reason a route can give), their next
// hops, and port 1 in the port map.
func (f *progMaps) populate(t testing.TB) {
	t.Helper()
	f.setCfg(t, 1, 1)
	// Port 1 sends on lo: any device with an ifindex will do for a devmap
	// entry; BPF_PROG_TEST_RUN returns the verdict without sending.
	if err := f.ports.Put(uint32(outPort), uint32(1)); err != nil {
		t.Fatal(err)
	}
	f.route(t, "198.18.100.0/24", nhRouted)
	f.route(t, "198.18.1.1/32", 0) // our own address (EP_FIB_NH_LOCAL)
	f.route(t, "198.18.2.0/24", 1) // connected, host unresolved (EP_FIB_NH_GLEAN)
	f.route(t, "198.18.3.0/24", nhOffPort)
	f.route(t, "198.18.4.0/24", nhSmallMTU)
	f.route(t, "2001:db8:100::/48", nhRouted)
	f.route(t, "2001:db8:0:1::1/128", 0)
	f.route(t, "2001:db8:300::/48", nhOffPort)
	f.nexthop(t, nhRouted, outPort, 1500)
	f.nexthop(t, nhOffPort, 7, 1500)
	f.nexthop(t, nhSmallMTU, outPort, 100)
}

// fixture is the XDP program with its maps.
type fixture struct {
	progMaps
	objs fwdObjects
}

func load(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{}
	o := &f.objs
	f.progMaps = loadPopulated(t, loadFwd, o, o.Close, func() progMaps {
		return progMaps{o.FwdCfgMap, o.FwdRoute4, o.FwdRoute6, o.FwdNexthops, o.FwdTxPorts, o.FwdCounters, nil}
	})
	return f
}

// loadPopulated loads a program's object into objs (loadObjects) and
// returns its maps (maps, read once loaded) with the tables populated.
func loadPopulated(t testing.TB, spec func() (*ebpf.CollectionSpec, error), objs any, close func() error, maps func() progMaps) progMaps {
	t.Helper()
	names := loadObjects(t, spec, objs, close)
	m := maps()
	m.names = names
	m.populate(t)
	return m
}

func (f *progMaps) setCfg(t testing.TB, enabled, aclEmpty uint8) {
	t.Helper()
	var c fwdFwdCfg
	copy(c.Mac[:], portMAC)
	c.Enabled, c.AclEmpty = enabled, aclEmpty
	if err := f.cfg.Put(uint32(0), c); err != nil {
		t.Fatal(err)
	}
}

// route puts prefix -> next-hop index into the family's LPM trie.
func (f *progMaps) route(t testing.TB, prefix string, nh uint32) {
	t.Helper()
	_, n, err := net.ParseCIDR(prefix)
	if err != nil {
		t.Fatal(err)
	}
	ones, _ := n.Mask.Size()
	if v4 := n.IP.To4(); v4 != nil {
		err = f.route4.Put(fwdFwdLpm4Key{Prefixlen: uint32(ones), Addr: binary.NativeEndian.Uint32(v4)}, nh)
	} else {
		k := fwdFwdLpm6Key{Prefixlen: uint32(ones)}
		copy(k.Addr[:], n.IP.To16())
		err = f.route6.Put(k, nh)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (f *progMaps) nexthop(t testing.TB, idx uint32, port, mtu uint16) {
	t.Helper()
	v := fwdFwdNh{Port: port, Mtu: mtu, Valid: 1}
	copy(v.Eth[:6], nhMAC)
	copy(v.Eth[6:], outMAC)
	if err := f.nexthops.Put(idx, v); err != nil {
		t.Fatal(err)
	}
}

// loadObjects loads a program's collection into objs (skipping the test
// without root) and returns its counter names; close runs at cleanup.
func loadObjects(t testing.TB, spec func() (*ebpf.CollectionSpec, error), objs any, close func() error) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("BPF_PROG_TEST_RUN needs root")
	}
	s, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	names, err := CounterNames(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LoadAndAssign(objs, nil); err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { _ = close() })
	return names
}

// counterValues sums each counter of fwd_counters over the CPUs.
func counterValues(t testing.TB, m *ebpf.Map, names []string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for i, n := range names {
		var per []uint64
		if err := m.Lookup(uint32(i), &per); err != nil {
			t.Fatal(err)
		}
		for _, v := range per {
			out[n] += v
		}
	}
	return out
}

// runCounted runs prog once on frame: its verdict, the bytes it left and
// the counters of fwd_counters (m) it moved.
func runCounted(t *testing.T, prog *ebpf.Program, m *ebpf.Map, names []string, frame []byte) result {
	t.Helper()
	before := counterValues(t, m, names)
	out := make([]byte, len(frame)+256)
	opts := ebpf.RunOptions{Data: frame, DataOut: out, Repeat: 1}
	ret, err := prog.Run(&opts)
	if err != nil {
		t.Fatalf("test run: %v", err)
	}
	moved := map[string]uint64{}
	for k, v := range counterValues(t, m, names) {
		if v != before[k] {
			moved[k] = v - before[k]
		}
	}
	return result{ret: ret, out: out[:len(frame)], moved: moved}
}

type result struct {
	ret   uint32
	out   []byte
	moved map[string]uint64 // counters that changed, by how much
}

func (f *fixture) run(t *testing.T, frame []byte) result {
	t.Helper()
	return f.runProg(t, f.objs.XdpRouterFwd, frame)
}

// runProg runs prog, one of the programs reading these maps, on frame.
func (f *progMaps) runProg(t *testing.T, prog *ebpf.Program, frame []byte) result {
	t.Helper()
	return runCounted(t, prog, f.counters, f.names, frame)
}

type frameOpt struct {
	v6       bool // IPv6 (src6/routed6 by default), else IPv4
	dstMAC   net.HardwareAddr
	src, dst net.IP
	ttl      uint8 // TTL or hop limit; 0: 64
	options  bool  // IPv4 options
	badCsum  bool  // IPv4 header checksum off by one
	hbh      bool  // an IPv6 hop-by-hop header
	frag     bool  // an IPv6 fragment header
	payload  int
}

// ipFrame is an Ethernet/IP/UDP frame from the sender to the port.
func ipFrame(t testing.TB, o frameOpt) []byte {
	t.Helper()
	if o.dstMAC == nil {
		o.dstMAC = portMAC
	}
	if o.src == nil {
		o.src = map[bool]net.IP{false: src, true: src6}[o.v6]
	}
	if o.dst == nil {
		o.dst = map[bool]net.IP{false: routed, true: routed6}[o.v6]
	}
	if o.ttl == 0 {
		o.ttl = 64
	}
	eth := &layers.Ethernet{SrcMAC: hostMAC, DstMAC: o.dstMAC, EthernetType: layers.EthernetTypeIPv4}
	udp := &layers.UDP{SrcPort: 1024, DstPort: 9}
	var l3 []gopacket.SerializableLayer
	if o.v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: o.ttl, NextHeader: layers.IPProtocolUDP, SrcIP: o.src, DstIP: o.dst}
		_ = udp.SetNetworkLayerForChecksum(ip)
		l3 = append(l3, ip)
		if o.hbh {
			ip.NextHeader = layers.IPProtocolIPv6HopByHop
			hbh := &layers.IPv6HopByHop{}
			hbh.NextHeader = layers.IPProtocolUDP
			hbh.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionLength: 4, OptionData: make([]byte, 4)}}
			l3 = append(l3, hbh)
		}
		if o.frag {
			ip.NextHeader = layers.IPProtocolIPv6Fragment
			l3 = append(l3, &layers.IPv6Fragment{NextHeader: layers.IPProtocolUDP, Identification: 7})
		}
	} else {
		ip := &layers.IPv4{Version: 4, TTL: o.ttl, Protocol: layers.IPProtocolUDP, SrcIP: o.src, DstIP: o.dst, Id: 0x1234}
		if o.options {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}
		_ = udp.SetNetworkLayerForChecksum(ip)
		l3 = append(l3, ip)
	}
	ls := append(append([]gopacket.SerializableLayer{eth}, l3...), udp, gopacket.Payload(make([]byte, 18+o.payload)))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if o.badCsum {
		b[14+10] ^= 0x01
	}
	return b
}

// ipv4HeaderSum is RFC 1071's sum of a 20-byte header with the checksum
// field zeroed, complemented: the full recompute the fast path's
// incremental update must equal.
func ipv4HeaderSum(h []byte) uint16 {
	var s uint32
	for i := 0; i < 20; i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// checkForwarded asserts that r is frame in forwarded with verdict want:
// both MACs the next hop's (nhMAC, outMAC), or with keepMACs unchanged
// (the tc neigh ending leaves them to the kernel); the TTL or hop limit
// one less, the IPv4 checksum what a full recompute gives (so the
// incremental update is checked against RFC 1071's sum); no other byte
// changed; only `forwarded` counted, once.
func checkForwarded(t *testing.T, name string, in []byte, r result, want uint32, keepMACs bool) {
	t.Helper()
	if r.ret != want {
		t.Fatalf("%s: verdict %d, want %d", name, r.ret, want)
	}
	// The frame expected: in with the MACs, the TTL and (IPv4) the
	// checksum as the program must leave them.
	exp := bytes.Clone(in)
	if !keepMACs {
		copy(exp[0:6], nhMAC)
		copy(exp[6:12], outMAC)
	}
	if binary.BigEndian.Uint16(in[12:]) == uint16(layers.EthernetTypeIPv6) {
		exp[14+7]-- // the hop limit; no header checksum
	} else {
		exp[14+8]-- // the TTL; the checksum at 14+10
		binary.BigEndian.PutUint16(exp[14+10:], ipv4HeaderSum(exp[14:34]))
	}
	if !bytes.Equal(r.out, exp) {
		t.Errorf("%s: forwarded frame\n got %x\nwant %x", name, r.out, exp)
	}
	if len(r.moved) != 1 || r.moved["forwarded"] != 1 {
		t.Errorf("%s: counters moved %v, want forwarded 1", name, r.moved)
	}
}

func TestForwardedFrameHasTTLDecrementedChecksumUpdatedAndMACsRewritten(t *testing.T) {
	f := load(t)
	for _, ttl := range []uint8{64, 2, 255} {
		in := ipFrame(t, frameOpt{ttl: ttl})
		checkForwarded(t, fmt.Sprintf("ttl %d", ttl), in, f.run(t, in), xdpRedirect, false)
	}
}

func TestForwardedIPv6FrameHasHopLimitDecrementedAndMACsRewritten(t *testing.T) {
	f := load(t)
	in := ipFrame(t, frameOpt{v6: true, ttl: 64})
	checkForwarded(t, "ipv6", in, f.run(t, in), xdpRedirect, false)
}

func TestForwardedFrameGoesToTheNextHopsPort(t *testing.T) {
	f := load(t)
	// The next hop's port leaves the devmap: the same frame is punted.
	if r := f.run(t, ipFrame(t, frameOpt{})); r.ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", r.ret)
	}
	if err := f.objs.FwdTxPorts.Delete(uint32(outPort)); err != nil {
		t.Fatal(err)
	}
	r := f.run(t, ipFrame(t, frameOpt{}))
	if r.ret != xdpPass || r.moved["punt_port"] != 1 {
		t.Fatalf("without the port: verdict %d, counters %v, want XDP_PASS, punt_port 1", r.ret, r.moved)
	}
}

// to6 builds an IPv6 frame to dst.
func to6(dst string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return ipFrame(t, frameOpt{v6: true, dst: net.ParseIP(dst)}) }
}

// puntCase is a frame the fast path must not forward, after setup (nil:
// the populated tables), and the one counter it moves.
type puntCase struct {
	name   string
	frame  func(t *testing.T) []byte
	setup  func(t *testing.T, f *progMaps)
	reason string
}

// puntCases covers every punt reason of fwd_reasons.def: both programs
// run the one check chain of fwd_common.h, so each case punts in both.
func puntCases() []puntCase {
	arp := func(t *testing.T) []byte {
		buf := gopacket.NewSerializeBuffer()
		err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
			&layers.Ethernet{SrcMAC: hostMAC, DstMAC: portMAC, EthernetType: layers.EthernetTypeARP},
			&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
				HwAddressSize: 6, ProtAddressSize: 4, Operation: layers.ARPRequest,
				SourceHwAddress: hostMAC, SourceProtAddress: src.To4(),
				DstHwAddress: make([]byte, 6), DstProtAddress: net.IPv4(198, 18, 0, 1).To4()})
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	vlan := func(t *testing.T) []byte {
		b := ipFrame(t, frameOpt{})
		tagged := append([]byte{}, b[:12]...)
		tagged = append(tagged, 0x81, 0x00, 0x00, 0x0a)
		return append(tagged, b[12:]...)
	}
	return []puntCase{
		{"disabled", func(t *testing.T) []byte { return ipFrame(t, frameOpt{}) },
			func(t *testing.T, f *progMaps) { f.setCfg(t, 0, 1) }, "punt_disabled"},
		{"router-has-acl-rules", func(t *testing.T) []byte { return ipFrame(t, frameOpt{}) },
			func(t *testing.T, f *progMaps) { f.setCfg(t, 1, 0) }, "punt_acl"},
		{"other-unicast-mac", func(t *testing.T) []byte {
			return ipFrame(t, frameOpt{dstMAC: net.HardwareAddr{0x02, 9, 9, 9, 9, 9}})
		}, nil, "punt_l2"},
		{"broadcast", func(t *testing.T) []byte {
			return ipFrame(t, frameOpt{dstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}})
		}, nil, "punt_l2"},
		{"vlan-tagged", vlan, nil, "punt_l2"},
		{"arp", arp, nil, "punt_not_ip"},
		{"ipv4-options", func(t *testing.T) []byte { return ipFrame(t, frameOpt{options: true}) }, nil, "punt_ip_header"},
		{"ipv4-bad-checksum", func(t *testing.T) []byte { return ipFrame(t, frameOpt{badCsum: true}) }, nil, "punt_ip_header"},
		{"ttl-1", func(t *testing.T) []byte { return ipFrame(t, frameOpt{ttl: 1}) }, nil, "punt_ttl"},
		{"martian-source", func(t *testing.T) []byte { return ipFrame(t, frameOpt{src: net.IPv4(127, 0, 0, 1)}) }, nil, "punt_martian"},
		{"martian-destination", func(t *testing.T) []byte { return ipFrame(t, frameOpt{dst: net.IPv4(224, 0, 0, 5)}) }, nil, "punt_martian"},
		{"to-our-address", func(t *testing.T) []byte { return ipFrame(t, frameOpt{dst: net.IPv4(198, 18, 1, 1)}) }, nil, "punt_local"},
		{"no-route", func(t *testing.T) []byte { return ipFrame(t, frameOpt{dst: net.IPv4(198, 19, 0, 1)}) }, nil, "punt_no_route"},
		{"connected-host-unresolved", func(t *testing.T) []byte { return ipFrame(t, frameOpt{dst: net.IPv4(198, 18, 2, 9)}) }, nil, "punt_nexthop"},
		{"next-hop-removed", func(t *testing.T) []byte { return ipFrame(t, frameOpt{}) },
			func(t *testing.T, f *progMaps) {
				if err := f.nexthops.Put(uint32(nhRouted), fwdFwdNh{}); err != nil {
					t.Fatal(err)
				}
			}, "punt_nexthop"},
		{"egress-port-not-in-devmap", func(t *testing.T) []byte { return ipFrame(t, frameOpt{dst: net.IPv4(198, 18, 3, 9)}) }, nil, "punt_port"},
		{"ipv6-hop-limit-1", func(t *testing.T) []byte { return ipFrame(t, frameOpt{v6: true, ttl: 1}) }, nil, "punt_ttl"},
		{"ipv6-hop-by-hop", func(t *testing.T) []byte { return ipFrame(t, frameOpt{v6: true, hbh: true}) }, nil, "punt_ip_header"},
		{"ipv6-fragment-header", func(t *testing.T) []byte { return ipFrame(t, frameOpt{v6: true, frag: true}) }, nil, "punt_ip_header"},
		{"ipv6-link-local-destination", to6("fe80::1"), nil, "punt_martian"},
		{"ipv6-multicast-destination", to6("ff02::1:ff00:1"), nil, "punt_martian"},
		{"ipv6-to-our-address", to6("2001:db8:0:1::1"), nil, "punt_local"},
		{"ipv6-no-route", to6("2001:db8:200::1"), nil, "punt_no_route"},
		// The port step comes before the frame is touched: a port without a
		// slot leaves it unchanged, to the socket.
		{"ipv6-egress-port-not-in-devmap", to6("2001:db8:300::9"), nil, "punt_port"},
		{"larger-than-egress-mtu", func(t *testing.T) []byte {
			return ipFrame(t, frameOpt{dst: net.IPv4(198, 18, 4, 9), payload: 100})
		}, nil, "punt_mtu"},
	}
}

// checkPunts runs every punt case on a fresh copy of a program (load: the
// program and its populated maps): the frame leaves unchanged with verdict
// want and moves its reason's counter alone; every reason has a case.
func checkPunts(t *testing.T, load func(t *testing.T) (*ebpf.Program, *progMaps), want uint32) {
	seen := map[string]bool{}
	for _, c := range puntCases() {
		seen[c.reason] = true
		t.Run(c.name, func(t *testing.T) {
			prog, f := load(t)
			if c.setup != nil {
				c.setup(t, f)
			}
			in := c.frame(t)
			r := f.runProg(t, prog, in)
			if r.ret != want {
				t.Errorf("verdict %d, want %d (to the full pipeline)", r.ret, want)
			}
			if !bytes.Equal(r.out, in) {
				t.Errorf("punted frame changed:\n in %x\nout %x", in, r.out)
			}
			if len(r.moved) != 1 || r.moved[c.reason] != 1 {
				t.Errorf("counters moved %v, want only %s 1", r.moved, c.reason)
			}
		})
	}
	_, f := load(t)
	for _, n := range f.names {
		if n != "forwarded" && !seen[n] {
			t.Errorf("punt reason %s has no case", n)
		}
	}
}

func TestEachPuntReasonLeavesTheFrameUnchangedAndCountsItsReason(t *testing.T) {
	checkPunts(t, func(t *testing.T) (*ebpf.Program, *progMaps) {
		f := load(t)
		return f.objs.XdpRouterFwd, &f.progMaps
	}, xdpPass)
}

// The names the program's BTF gives are the .def's, in its order: the C
// side (edgeplane-dp's control socket) prints the .def's strings.
func TestCounterNamesAreTheOneListInOrder(t *testing.T) {
	spec, err := loadFwd()
	if err != nil {
		t.Fatal(err)
	}
	names, err := CounterNames(spec)
	if err != nil {
		t.Fatal(err)
	}
	def, err := os.ReadFile("../../../xdp/fwd/fwd_reasons.def")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^FWD_COUNTER\(\s*\w+,\s*"([a-z0-9_]+)"`).FindAllSubmatch(def, -1) {
		want = append(want, string(m[1]))
	}
	if len(want) == 0 || len(names) != len(want) {
		t.Fatalf("BTF names %v, .def names %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("counter %d: BTF %q, .def %q", i, names[i], want[i])
		}
	}
}
