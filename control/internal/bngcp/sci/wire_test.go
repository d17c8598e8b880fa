package sci_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"edgeplane/control/internal/bngcp/frame"
)

// A wire: a veth pair, the data plane's port on one end (net_af_packet),
// the test's raw packet socket on the other.  Root only (veths, packet
// sockets); removed by the test's cleanup.
type wire struct {
	dpIf, hostIf string
	fd           int
}

func newWire(t *testing.T, name string) *wire {
	t.Helper()
	w := &wire{dpIf: fmt.Sprintf("%s0-%d", name, os.Getpid()%100000), hostIf: fmt.Sprintf("%s1-%d", name, os.Getpid()%100000), fd: -1}
	run := func(args ...string) {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	run("ip", "link", "add", w.dpIf, "type", "veth", "peer", "name", w.hostIf)
	t.Cleanup(func() { exec.Command("ip", "link", "del", w.dpIf).Run() })
	for _, i := range []string{w.dpIf, w.hostIf} {
		// No IPv6 link-local chatter on the wire: only the test's frames.
		run("sysctl", "-qw", "net.ipv6.conf."+i+".disable_ipv6=1")
		run("ip", "link", "set", i, "up")
	}
	ifi, err := net.InterfaceByName(w.hostIf)
	if err != nil {
		t.Fatal(err)
	}
	all := int(htons(unix.ETH_P_ALL))
	if w.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, all); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(w.fd) })
	if err := unix.Bind(w.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(w.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return w
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// device is the data plane's DPDK device for this wire's end.
func (w *wire) device(n int) string { return fmt.Sprintf("net_af_packet%d,iface=%s", n, w.dpIf) }

// exchange sends f into the data plane (again every 200 ms: the data
// plane's port may still be starting) until a frame carrying marker comes
// out of other, and returns that frame.
func exchange(t *testing.T, in, out *wire, f, marker []byte) []byte {
	t.Helper()
	buf := make([]byte, 2048)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := unix.Write(in.fd, f); err != nil {
			t.Fatal(err)
		}
		for until := time.Now().Add(200 * time.Millisecond); time.Now().Before(until); {
			n, from, err := unix.Recvfrom(out.fd, buf, 0)
			if err != nil {
				break // receive timeout: send again
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			if bytes.Contains(buf[:n], marker) {
				return append([]byte(nil), buf[:n]...)
			}
		}
	}
	t.Fatalf("no frame with %q came out of %s", marker, out.hostIf)
	return nil
}

// udpFrame is an untagged Ethernet frame carrying an IPv4 UDP datagram.
func udpFrame(t *testing.T, to, from frame.MAC, src, dst netip.Addr, payload []byte) []byte {
	t.Helper()
	f := frame.Append(nil, to, from, frame.Line{}, 0x0800)
	f, err := frame.AppendUDP(f, src, dst, 4000, 5000, 64, payload)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ipv4Of is the IPv4 source and destination of an untagged frame.
func ipv4Of(f []byte) (src, dst netip.Addr) {
	if len(f) < 34 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14] != 0x45 {
		return
	}
	return netip.AddrFrom4([4]byte(f[26:30])), netip.AddrFrom4([4]byte(f[30:34]))
}

// drops is the data plane's drop counters by reason.
func (r *rig) drops(ctx context.Context) (map[string]uint64, error) {
	var res struct {
		Drops map[string]uint64 `json:"drops"`
	}
	err := r.dpc.Cmd(ctx, "drops", nil, &res)
	return res.Drops, err
}
