package etcdtest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortsAreDistinctAndBindable: every port of one call differs
// from the others, and each can be listened on once the call returns.
func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	ports := FreePorts(t, 64)
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d given twice in %v", p, ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}
