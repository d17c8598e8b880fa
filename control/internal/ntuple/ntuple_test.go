package ntuple

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"edgeplane/control/internal/steer"
)

func TestArgs(t *testing.T) {
	src := netip.MustParseAddr("198.18.10.1")
	cases := []struct {
		name string
		k    steer.Key
		f    steer.Fields
		q    uint32
		want string // "" when refused
	}{
		{"udp4-src-dport", steer.Key{Src: src, DstPort: 5004, Proto: 17}, steer.FieldSrc | steer.FieldDstPort | steer.FieldProto, 1,
			"-N eth0 flow-type udp4 src-ip 198.18.10.1 dst-port 5004 action 1"},
		{"tcp6-dst", steer.Key{Dst: netip.MustParseAddr("2001:db8::9"), Proto: 6}, steer.FieldDst | steer.FieldProto, 0,
			"-N eth0 flow-type tcp6 dst-ip6 2001:db8::9 action 0"},
		{"tunnel-id", steer.Key{VNI: 5, Proto: 17}, steer.FieldVNI | steer.FieldProto, 1, ""},
		{"no-queue", steer.Key{Proto: 17, DstPort: 1}, steer.FieldProto | steer.FieldDstPort, steer.NoCPU, ""},
		{"no-protocol", steer.Key{DstPort: 1}, steer.FieldDstPort, 1, ""},
		{"sctp", steer.Key{Proto: 132}, steer.FieldProto, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args, err := Args("eth0", c.k, c.f, c.q)
			got := strings.Join(args, " ")
			if c.want == "" {
				if err == nil {
					t.Fatalf("expressed as %q; want refused", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q (%v), want %q", got, err, c.want)
			}
		})
	}
}

func TestAddDeleteWithFakeEthtool(t *testing.T) {
	var calls []string
	n := &NIC{Iface: "eth0", Run: func(a ...string) (string, error) {
		calls = append(calls, strings.Join(a, " "))
		if a[0] == "-k" {
			return "ntuple-filters: on\n", nil
		}
		return "Added rule with ID 1023\n", nil
	}}
	if !n.Supported() {
		t.Fatal("not supported")
	}
	loc, err := n.Add(steer.Key{DstPort: 53, Proto: 17}, steer.FieldDstPort|steer.FieldProto, 1)
	if err != nil || loc != 1023 {
		t.Fatalf("add: %d %v", loc, err)
	}
	if err := n.Delete(loc); err != nil {
		t.Fatal(err)
	}
	if calls[len(calls)-1] != "-N eth0 delete 1023" {
		t.Errorf("calls %q", calls)
	}
}

// TestVethIsUnsupported asks the real ethtool about a real veth, in a
// namespace of its own.
func TestVethIsUnsupported(t *testing.T) {
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("no ethtool")
	}
	ns := fmt.Sprintf("epnt-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("cannot create a namespace: %s", out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "-n", ns, "link", "add", "vnta", "type", "veth", "peer", "name", "vntb").CombinedOutput(); err != nil {
		t.Fatalf("veth: %s", out)
	}
	n := &NIC{Iface: "vnta", Run: func(a ...string) (string, error) {
		out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "ethtool"}, a...)...).CombinedOutput()
		return string(out), err
	}}
	if n.Supported() {
		t.Error("veth reported ntuple support")
	}
	if _, err := n.Add(steer.Key{DstPort: 53, Proto: 17}, steer.FieldDstPort|steer.FieldProto, 0); err == nil {
		t.Error("ethtool -N on a veth succeeded")
	}
}
