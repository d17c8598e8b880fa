package udpio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func listen(t *testing.T) *net.UDPConn {
	t.Helper()
	return listenOn(t, net.IPv4(127, 0, 0, 1))
}

func listenOn(t *testing.T, ip net.IP) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	t.Cleanup(func() { c.Close() })
	return c
}

// datagrams: runs of one size (coalesced by GSO), sizes that change in
// the middle, one too large to coalesce, an empty one.
func datagrams(to netip.AddrPort) []Datagram {
	var out []Datagram
	add := func(size int) {
		b := make([]byte, size)
		tag := fmt.Sprintf("#%d:", len(out))
		copy(b, tag)
		for i := len(tag); i < size; i++ {
			b[i] = byte(len(out) + i)
		}
		out = append(out, Datagram{to, b})
	}
	for i := 0; i < 150; i++ { // more than one GSO buffer's 64
		add(480)
	}
	add(300)
	add(480)
	add(2000) // above maxGSOSize: alone
	add(2000)
	add(0)
	for i := 0; i < 3; i++ {
		add(700)
	}
	return out
}

func receive(t *testing.T, r *Conn, want []Datagram) {
	t.Helper()
	var got [][]byte
	r.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for len(got) < len(want) {
		err := r.Read(func(b []byte, peer netip.AddrPort, trunc bool) {
			if trunc {
				t.Errorf("datagram %d truncated", len(got))
			}
			got = append(got, append([]byte(nil), b...))
		})
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), len(want), err)
		}
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i].B) {
			t.Fatalf("datagram %d: %d octets %q..., want %d octets %q...", i, len(got[i]),
				head(got[i]), len(want[i].B), head(want[i].B))
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 8)] }

func TestWriteCoalescedReadApartKeepsEveryDatagramAndItsOrder(t *testing.T) {
	rc, sc := listen(t), listen(t)
	r, s := New(rc, 16), New(sc, 16)
	want := datagrams(rc.LocalAddr().(*net.UDPAddr).AddrPort())
	if err := s.Write(want); err != nil {
		t.Fatal(err)
	}
	receive(t, r, want)
	if !r.GRO() || s.noGSO.Load() || r.Coalesced == 0 {
		t.Fatalf("loopback: GRO %v, GSO refused %v, coalesced buffers %d", r.GRO(), s.noGSO.Load(), r.Coalesced)
	}
}

// PFCP over IPv6: the same offloads (x/net's ipv6 batch calls).
func TestIPv6CoalescedKeepsEveryDatagram(t *testing.T) {
	rc, sc := listenOn(t, net.IPv6loopback), listenOn(t, net.IPv6loopback)
	r, s := New(rc, 16), New(sc, 16)
	want := datagrams(rc.LocalAddr().(*net.UDPAddr).AddrPort())
	if err := s.Write(want); err != nil {
		t.Fatal(err)
	}
	receive(t, r, want)
	if r.Coalesced == 0 {
		t.Fatalf("IPv6 loopback: no coalesced buffer (GRO %v, GSO refused %v)", r.GRO(), s.noGSO.Load())
	}
}

func TestReceiverWithoutGROGetsTheDatagramsOneByOne(t *testing.T) {
	rc, sc := listen(t), listen(t)
	r, s := New(rc, 16), New(sc, 16)
	// A receiver that did not ask for GRO: the kernel cuts the sender's
	// GSO buffers before the socket queue.
	raw, _ := rc.SyscallConn()
	raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 0) })
	r.gro = false
	want := datagrams(rc.LocalAddr().(*net.UDPAddr).AddrPort())
	if err := s.Write(want); err != nil {
		t.Fatal(err)
	}
	receive(t, r, want)
	if r.Coalesced != 0 {
		t.Fatalf("%d coalesced buffers without GRO", r.Coalesced)
	}
}

func TestWithoutGSOTheSameDatagramsGoOneByOne(t *testing.T) {
	rc, sc := listen(t), listen(t)
	r, s := New(rc, 16), New(sc, 16)
	s.noGSO.Store(true)
	want := datagrams(rc.LocalAddr().(*net.UDPAddr).AddrPort())
	if err := s.Write(want); err != nil {
		t.Fatal(err)
	}
	receive(t, r, want)
}

// A GSO buffer the kernel refuses (here: more datagrams than
// UDP_MAX_SEGMENTS) turns GSO off, and its datagrams go one by one.
func TestRefusedGSOFallsBackToOneByOne(t *testing.T) {
	rc, sc := listen(t), listen(t)
	r, s := New(rc, 64), New(sc, 64)
	defer func(n int) { maxSegments = n }(maxSegments)
	maxSegments = 300 // above the kernel's 64 or 128
	to := rc.LocalAddr().(*net.UDPAddr).AddrPort()
	var want []Datagram
	for i := 0; i < 300; i++ {
		want = append(want, Datagram{to, []byte(fmt.Sprintf("%03d", i))})
	}
	if err := s.Write(want); err != nil {
		t.Fatal(err)
	}
	if !s.noGSO.Load() {
		t.Fatal("a GSO buffer of 300 datagrams was accepted: the kernel allows more than 300 segments")
	}
	receive(t, r, want)
}

func TestGROSizeReadsTheControlMessage(t *testing.T) {
	b := make([]byte, unix.CmsgSpace(4))
	copy(b, segmentCmsg(0)) // header layout; then a 4-octet UDP_GRO payload
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Type = unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], 512)
	if got := groSize(b); got != 512 {
		t.Fatalf("groSize = %d, want 512", got)
	}
	if got := groSize(nil); got != 0 {
		t.Fatalf("groSize(nil) = %d", got)
	}
	if got := groSize([]byte{1, 2, 3}); got != 0 {
		t.Fatalf("groSize(short) = %d", got)
	}
}

// BenchmarkWrite64: what 64 requests of 500 octets cost the sender and
// the receiver together (on loopback the sender's call runs the
// receiver's UDP path), with and without the offloads.
func BenchmarkWrite64(b *testing.B) {
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("offloads=%v", !off), func(b *testing.B) {
			rc, _ := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			sc, _ := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			defer rc.Close()
			defer sc.Close()
			rc.SetReadBuffer(16 << 20)
			r, s := New(rc, 64), New(sc, 64)
			s.noGSO.Store(off)
			if off {
				raw, _ := rc.SyscallConn()
				raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 0) })
			}
			to := rc.LocalAddr().(*net.UDPAddr).AddrPort()
			out := make([]Datagram, 64)
			for i := range out {
				out[i] = Datagram{to, make([]byte, 500)}
			}
			done := make(chan struct{})
			go func() {
				n := 0
				for n < b.N*64 {
					if r.Read(func([]byte, netip.AddrPort, bool) { n++ }) != nil {
						break
					}
				}
				close(done)
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Write(out)
			}
			<-done
		})
	}
}
