// Package etcdtest starts real etcd for Go tests: the controller's
// embedded member (go.etcd.io/etcd/server/v3/embed), on loopback ports
// the kernel picked, in the test's temporary directory.
package etcdtest

import (
	"fmt"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"edgeplane/control/internal/controller"
)

// FreePorts is n distinct loopback TCP ports nothing listens on (a race
// with other processes is possible and harmless: a start then fails
// loudly).  Each listener stays open until all n are chosen: a port
// closed at once is free again, and the kernel may hand it out for the
// next bind (a three-member cluster was once given the same peer port
// twice and failed with "has duplicate url").
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Embedded starts the controller's embedded etcd and returns its client
// endpoint; the test's cleanup stops it.
func Embedded(t testing.TB) string {
	t.Helper()
	ports := FreePorts(t, 2)
	ep := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	e, err := controller.StartEmbedded(controller.EmbeddedConfig{
		Dir: t.TempDir(), ClientURL: ep, PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		QuotaBytes: 1 << 30, Quiet: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return ep
}

// Client is a client of endpoints, closed by the test's cleanup.
func Client(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second,
		MaxCallSendMsgSize: controller.MaxRequestBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
