package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"edgeplane/control/internal/controller"
	"edgeplane/control/internal/etcdtest"
	"edgeplane/control/model"
)

// member is one Debian etcd-server process.
type member struct {
	name, client, peer, dir, log string
	cluster                      string
	cmd                          *exec.Cmd
	done                         chan struct{}
}

func (m *member) start(t *testing.T) {
	t.Helper()
	out, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command("etcd", "--name", m.name, "--data-dir", m.dir,
		"--listen-client-urls", m.client, "--advertise-client-urls", m.client,
		"--listen-peer-urls", m.peer, "--initial-advertise-peer-urls", m.peer,
		"--initial-cluster", m.cluster, "--initial-cluster-state", "new", "--initial-cluster-token", "edgeplane-test",
		// The limits the desired state needs (controller.MaxRequestBytes, MaxTxnOps).
		"--max-request-bytes", fmt.Sprint(controller.MaxRequestBytes), "--max-txn-ops", fmt.Sprint(controller.MaxTxnOps),
		"--logger", "zap", "--log-outputs", "stderr")
	m.cmd.Stdout, m.cmd.Stderr = out, out
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.done = make(chan struct{})
	go func(c *exec.Cmd, d chan struct{}) { c.Wait(); out.Close(); close(d) }(m.cmd, m.done)
}

func (m *member) kill() {
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
	}
}

// cluster starts three members of Debian's etcd-server on loopback ports.
func cluster(t *testing.T) []*member {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatal("etcd (Debian's etcd-server) is not installed: run scripts/setup")
	}
	dir := t.TempDir()
	var ms []*member
	var peers []string
	ports := etcdtest.FreePorts(t, 6) // distinct: a client and a peer port a member
	for i := 1; i <= 3; i++ {
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(dir, fmt.Sprintf("m%d", i)),
			log:    filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
			client: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i-2]),
			peer:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i-1])}
		ms = append(ms, m)
		peers = append(peers, m.name+"="+m.peer)
	}
	for _, m := range ms {
		m.cluster = strings.Join(peers, ",")
		m.start(t)
		t.Cleanup(m.kill)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range ms {
				b, _ := os.ReadFile(m.log)
				t.Logf("%s log (tail):\n%s", m.name, tail(string(b), 2000))
			}
		}
	})
	return ms
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func routesConfig(n int) model.NodeConfig {
	return model.NodeConfig{ApiVersion: model.Edgeplanev1, Router: &model.RouterConfig{Routes: []model.Route{
		{Prefix: fmt.Sprintf("198.18.%d.0/24", n%256), Via: "198.18.1.2"}}}}
}

// TestThreeMemberClusterLosesNoApplyWhenAMemberStops applies revisions
// over a three-member cluster of Debian's etcd-server and kills one member
// (SIGKILL) in the middle: every apply the controller answered is in the
// state and its history, the survivors keep serving, and the member
// brought back catches up to the same state.
func TestThreeMemberClusterLosesNoApplyWhenAMemberStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd processes")
	}
	ms := cluster(t)
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.client)
	}
	cli := etcdtest.Client(t, eps...)
	st := controller.NewStore(cli)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// Wait for a leader.
	for {
		if _, err := st.State(ctx); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	const total = 60
	applied := map[int64]int{} // revision -> the n its config carries
	// The member to kill is the leader (the hardest case: an election
	// happens while applies go on).
	victim := 0
	for i, m := range ms {
		if sr, err := cli.Status(ctx, m.client); err == nil && sr.Leader == sr.Header.MemberId {
			victim = i
		}
	}
	killed := make(chan struct{})
	for n := 0; n < total; n++ {
		if n == total/3 {
			go func() { ms[victim].kill(); close(killed) }() // while the next applies are in flight
		}
		req := model.ChangeRequest{Nodes: map[string]model.NodeConfig{"a": routesConfig(n), "b": routesConfig(n + 1)}}
		var a model.Applied
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			// An apply whose answer was lost may or may not have been
			// stored: the retry is planned on the state it finds, and a
			// stored one makes the retry a no-op (same revision).
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			a, err = st.Apply(actx, req)
			acancel()
			if err == nil || errors.Is(err, controller.ErrBadChange) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("apply %d: %v", n, err)
		}
		applied[a.Revision] = n
	}
	<-killed
	if len(applied) != total {
		t.Fatalf("%d distinct revisions for %d applies", len(applied), total)
	}
	state, err := st.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := state.Nodes["a"].Router.Routes[0].Prefix; got != fmt.Sprintf("198.18.%d.0/24", total-1) {
		t.Fatalf("node a's route %s after the last apply", got)
	}
	revs, err := st.Revisions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, r := range revs.Revisions {
		have[r.Revision] = true
	}
	for rev, n := range applied {
		if !have[rev] {
			t.Fatalf("revision %d (apply %d) answered but not in the history", rev, n)
		}
	}
	// Every answered revision's state is readable (what a rollback reads):
	// roll back to the one of apply 10 and check it.
	var rev10 int64
	for rev, n := range applied {
		if n == 10 {
			rev10 = rev
		}
	}
	if _, err := st.Rollback(ctx, model.RollbackRequest{Revision: rev10}); err != nil {
		t.Fatal(err)
	}
	state, _ = st.State(ctx)
	if got := state.Nodes["b"].Router.Routes[0].Prefix; got != "198.18.11.0/24" {
		t.Fatalf("rollback to revision %d: node b's route %s", rev10, got)
	}

	// The killed member comes back and catches up.
	ms[victim].start(t)
	one := controller.NewStore(etcdtest.Client(t, ms[victim].client))
	var last model.DesiredState
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if last, err = one.State(ctx); err == nil && last.Revision == state.Revision {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if last.Revision != state.Revision {
		t.Fatalf("restarted member at revision %d (err %v), the cluster at %d", last.Revision, err, state.Revision)
	}
}
