package dptelemetry_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptelemetry"
	"edgeplane/control/internal/dptest"
)

// The port's MAC: the punt pair's far end, which the port polls under
// fast_path = tc, carries it as the wire would.
const routerMAC = "02:00:00:00:01:01"

// routerNetns is a network namespace of the test's own, removed by its
// cleanup, with a veth pair wire <-> host and, for the tc fast path, the
// punt pair punt (near end) <-> poll (the far end the DPDK port polls).
func routerNetns(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("ep-kind-%d", os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run("-n", ns, "link", "add", "wire", "address", routerMAC, "type", "veth", "peer", "name", "host")
	run("-n", ns, "link", "add", "punt", "type", "veth", "peer", "name", "poll", "address", routerMAC)
	for _, dev := range []string{"lo", "wire", "host", "punt", "poll"} {
		run("-n", ns, "link", "set", dev, "up")
	}
	return ns
}

// kindSeries is what the collector exports as edgeplane_dp_xdp_fast_kind
// for a router started with [router] fast_path = fastPath on one port.
func kindSeries(t *testing.T, fastPath string) string {
	t.Helper()
	ns := routerNetns(t)
	device, port := "net_af_xdp0,iface=wire", ""
	if fastPath == "tc" {
		device, port = "net_af_packet0,iface=poll", "fast_path_wire = wire\nfast_path_punt = punt\n"
	}
	b := dptest.StartIn(t, ns, fmt.Sprintf(`[port pa]
device = %s
ipv4 = 198.18.0.1/24
%s[worker w0]
pipeline = router
rx = pa
lcore = 1
[router]
fast_path = %s
`, device, port, fastPath))
	c := dpctl.New(b.Socket, dpctl.Options{})
	t.Cleanup(func() { c.Close() })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(dptelemetry.New(map[string]*dpctl.Client{"r": c}, 2*time.Second))
	var out strings.Builder
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "edgeplane_dp_xdp_fast_kind" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Fprintf(&out, "%s %g\n", strings.Join(labels, ","), m.GetGauge().GetValue())
		}
	}
	return out.String()
}

// TestCollectorExportsTheKindOfFastPathTheRouterRuns starts the real
// router in a namespace of the test's with each [router] fast_path: the
// one series edgeplane_dp_xdp_fast_kind names the kind xdp-fast reports
// (xdp: xdp/fwd/fwd.bpf.c through net_af_xdp; tc: xdp/fwd/tcfwd.bpf.c on
// the wire device), and there is none with the fast path off.
func TestCollectorExportsTheKindOfFastPathTheRouterRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts edgeplane-dp")
	}
	if os.Geteuid() != 0 {
		t.Skip("network namespaces and BPF need root")
	}
	for _, c := range []struct{ fastPath, want string }{
		{"xdp", "dp=r,kind=xdp 1\n"},
		{"tc", "dp=r,kind=tc 1\n"},
		{"off", ""},
	} {
		t.Run(c.fastPath, func(t *testing.T) {
			if got := kindSeries(t, c.fastPath); got != c.want {
				t.Errorf("edgeplane_dp_xdp_fast_kind: %q, want %q", got, c.want)
			}
		})
	}
}
