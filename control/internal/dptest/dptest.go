// Package dptest starts the real edgeplane-dp for Go tests: a vBNG on
// net_null ports (no traffic; no-rx=1), its control socket in the test's
// temporary directory.  The binary is $EDGEPLANE_DP or build/dp/edgeplane-dp
// under the repository root (`make build-dp`).
package dptest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binary is the edgeplane-dp the tests run.
func Binary() string {
	if p := os.Getenv("EDGEPLANE_DP"); p != "" {
		return p
	}
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "build", "dp", "edgeplane-dp")
}

// BNG is a running edgeplane-dp with the BNG pipelines.
type BNG struct {
	Socket string
	Config string
	Netns  string // the network namespace it runs in ("": the test's own)
	cmd    *exec.Cmd
	out    *os.File
	t      testing.TB
	exited chan struct{}
}

// Options of the instance.
type Options struct {
	MaxSubscribers int    // default 4096
	Extra          string // more [bng] lines
	// DPDK devices of the access and core ports; default net_null (no
	// packets).  Tests that move packets give net_af_packet devices on
	// veths they create.
	AccessDevice, CoreDevice string
}

// StartBNG starts edgeplane-dp and waits for its control socket; the test's
// cleanup stops it.
func StartBNG(t testing.TB, o Options) *BNG {
	t.Helper()
	if o.MaxSubscribers == 0 {
		o.MaxSubscribers = 4096
	}
	// A pipe per subscriber (rte_sched wants a power of two); queues of
	// 16 packets keep rte_sched's queue memory at 1 KiB a pipe.
	pipes := 64
	for pipes < o.MaxSubscribers {
		pipes *= 2
	}
	if o.AccessDevice == "" {
		o.AccessDevice = "net_null0,no-rx=1"
	}
	if o.CoreDevice == "" {
		o.CoreDevice = "net_null1,no-rx=1"
	}
	return Start(t, fmt.Sprintf(`[port access]
device = %s
mac = 02:00:00:00:01:01
ipv4 = 198.18.100.1/24
[port core]
device = %s
mac = 02:00:00:00:02:01
ipv4 = 198.18.1.1/24
[worker up]
pipeline = bng-uplink
rx = access
[worker down]
pipeline = bng-downlink
rx = core
[bng]
access_port = access
core_port = core
max_subscribers = %d
neighbor = 198.18.1.2 02:00:00:00:02:02
route = 0.0.0.0/1 via 198.18.1.2
route = 128.0.0.0/1 via 198.18.1.2
hqos_port_rate = 10G
hqos_qsize = 16
subport = 0 rate=10G pipes=%d
%s
`, o.AccessDevice, o.CoreDevice, o.MaxSubscribers, pipes, o.Extra))
}

// StartCMTS starts a vCMTS: service group sg0 on net_null ports (two
// bonding groups, 256 CM ids), a downstream and an upstream worker.
func StartCMTS(t testing.TB) *BNG {
	t.Helper()
	return Start(t, `[port rpd]
device = net_null0,no-rx=1
mac = 02:00:00:00:0a:01
ipv4 = 198.18.10.1/24
[port net]
device = net_null1,no-rx=1
mac = 02:00:00:00:0b:01
ipv4 = 198.18.11.1/24
[worker ds]
pipeline = cmts-ds
rx = net
[worker us]
pipeline = cmts-us
rx = rpd
[cmts]
crypto_sessions = 1024
[cmts sg0]
rpd_port = rpd
net_port = net
cmts_ip = 198.18.10.1
rpd_ip = 198.18.10.2
rpd_mac = 02:00:00:00:0a:02
max_cms = 256
channel = 0 ofdm rate=1.89G session=0x1000 flow=0
channel = 1 scqam rate=42.24M session=0x1001
bonding_group = 0 0
bonding_group = 1 1
us_channel = 0 session=0x2000
filter = 1 10 deny proto=17 dport=137-139
`)
}

// Start runs edgeplane-dp with these sections after its [eal] and
// [engine] ones and waits for its control socket; the test's cleanup
// stops it.
func Start(t testing.TB, sections string) *BNG {
	t.Helper()
	return StartIn(t, "", sections)
}

// StartIn is Start in the named network namespace (`ip netns exec`, which
// execs edgeplane-dp itself: Kill and Stop signal the data plane); the
// control socket is a path, reachable from the test's namespace.
func StartIn(t testing.TB, netns, sections string) *BNG {
	t.Helper()
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (run `make build-dp`)", bin, err)
	}
	dir := t.TempDir()
	b := &BNG{Socket: filepath.Join(dir, "dp.sock"), Config: filepath.Join(dir, "dp.conf"), t: t,
		Netns: netns, exited: make(chan struct{})}
	// Ordinary memory (these tests move few packets, if any) and no telemetry
	// socket: DPDK's telemetry start-up connects to the default
	// /var/run/dpdk/rte/dpdk_telemetry.v2 to see whether another process
	// owns it, and blocks while that process is stopped (benchmarks
	// SIGSTOP their data planes): starts took two minutes.
	conf := fmt.Sprintf(`[eal]
args = --no-telemetry
[engine]
ctl_socket = %s
memory = no-huge
%s`, b.Socket, sections)
	if err := os.WriteFile(b.Config, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	b.start()
	t.Cleanup(b.Stop)
	return b
}

func (b *BNG) start() {
	b.t.Helper()
	out, err := os.CreateTemp(filepath.Dir(b.Config), "dp-out-")
	if err != nil {
		b.t.Fatal(err)
	}
	b.out = out
	b.exited = make(chan struct{})
	b.cmd = exec.Command(Binary(), "-c", b.Config)
	if b.Netns != "" {
		b.cmd = exec.Command("ip", "netns", "exec", b.Netns, Binary(), "-c", b.Config)
	}
	b.cmd.Stdout, b.cmd.Stderr = out, out
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(b.cmd, b.exited)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-b.exited:
			b.t.Fatalf("edgeplane-dp exited at start:\n%s", b.Output())
		default:
		}
		if c, err := net.Dial("unix", b.Socket); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("edgeplane-dp: no control socket after 60 s:\n%s", b.Output())
}

// Output is what the process printed so far.
func (b *BNG) Output() string {
	data, _ := os.ReadFile(b.out.Name())
	return strings.TrimSpace(string(data))
}

// Kill stops the process with SIGKILL (a crash) and waits for it.
func (b *BNG) Kill() {
	if b.cmd != nil && b.cmd.Process != nil {
		b.cmd.Process.Signal(syscall.SIGKILL)
		<-b.exited
	}
}

// Restart starts the same configuration again (after Kill).
func (b *BNG) Restart() {
	b.t.Helper()
	b.Kill()
	os.Remove(b.Socket)
	b.start()
}

// Pid of the running process.
func (b *BNG) Pid() int { return b.cmd.Process.Pid }

// Stop ends the process (SIGTERM, then SIGKILL after 10 s).
func (b *BNG) Stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	select {
	case <-b.exited:
		return
	default:
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Signal(syscall.SIGKILL)
		<-b.exited
	}
}
