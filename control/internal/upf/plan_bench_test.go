package upf

import (
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/cpsim"
)

// BenchmarkEstablishmentCPU is the function's own work for an
// establishment, without sockets or a data plane: framing, the duplicate
// cache, decoding, the session model, translation, reservations (the
// reader's path), the data plane's sub-add-bulk line for a batch of 736
// (what the bench's batches hold), the commit with the store's write and
// the encoded answers; the clock is read once for every readBatch
// requests, as the reader does for the datagrams of a recvmmsg.  The table fills as in `make bench BENCH=pfcp`
// (subscribers of pfcp-cp-sim's bench layout, one after the other); run
// it with -benchtime 65536x for the bench's 64K.  A profile of it
// (-cpuprofile) is the function's profile less the system calls.
func BenchmarkEstablishmentCPU(b *testing.B) {
	cp := netip.MustParseAddr("127.0.0.1")
	peer := netip.AddrPortFrom(cp, 9) // discard: the answers go nowhere
	node := ie.NewNodeIDHeuristic("bench.cp")
	dir := b.TempDir()
	u, err := New(Config{Listen: netip.AddrPortFrom(cp, 0), GTPU: netip.AddrPortFrom(cp, 0),
		DPSocket: filepath.Join(dir, "no-data-plane.sock"), StateDir: dir, SubIDHi: uint32(max(b.N, 1))})
	if err != nil {
		b.Fatal(err)
	}
	defer u.Close()
	enc := func(m message.Message) []byte {
		buf := make([]byte, m.MarshalLen())
		if err := m.MarshalTo(buf); err != nil {
			b.Fatal(err)
		}
		return buf
	}
	u.datagram(enc(message.NewAssociationSetupRequest(1, node, ie.NewRecoveryTimeStamp(time.Unix(1e9, 0)))), peer)
	reqs := make([][]byte, b.N)
	for i := range reqs {
		tier := uint64(i%4+1) * 10000
		s := cpsim.Subscriber{CPSEID: uint64(i + 1), STag: 100 + uint16(i/4000), CTag: 1 + uint16(i%4000),
			MAC:   net.HardwareAddr{2, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)},
			IPv4:  netip.AddrFrom4([4]byte{198, 18 + byte(i>>16&1), byte(i >> 8), byte(i)}),
			IPv6:  netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 16), byte(i >> 8), byte(i)}), 56),
			ULMBR: tier, DLMBR: 2 * tier}
		reqs[i] = enc(message.NewSessionEstablishmentRequest(0, 0, 0, uint32(i+2), 0,
			append([]*ie.IE{node, ie.NewFSEID(s.CPSEID, cp.AsSlice(), nil)}, s.Establishment()...)...))
	}
	const batch = 736
	ops := make([]*op, 0, batch)
	var sc finishScratch // the completer's
	commit := func() {
		subs := make([]dpctl.Subscriber, 0, len(ops))
		for _, o := range ops {
			if o.add != nil {
				subs = append(subs, *o.add)
			}
		}
		_ = dpctl.SubAddBulkLine(subs)
		u.finishWith(ops, &sc)
		ops = ops[:0]
	}
	b.ReportAllocs()
	runtime.GC() // the requests' encoding is not the function's garbage
	cpu0 := processCPU()
	b.ResetTimer()
	var at time.Time
	for i := range reqs {
		if i%readBatch == 0 {
			at = u.now() // the reader's one clock read a recvmmsg
		}
		u.datagramAt(reqs[i], peer, at)
		select {
		case o := <-u.applyCh:
			ops = append(ops, o)
		default:
			b.Fatalf("request %d: not planned (%+v)", i, u.Counters())
		}
		if len(ops) == batch {
			commit()
		}
	}
	commit()
	b.StopTimer()
	// The process's CPU time (every thread: the collector's too) says
	// more than the wall time on cores shared with other work.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	if k := u.Counters(); k.Established != uint64(b.N) {
		b.Fatalf("%d established of %d", k.Established, b.N)
	}
}

// processCPU is this process's CPU time so far (user + system), ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
