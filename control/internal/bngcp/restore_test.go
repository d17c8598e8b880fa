package bngcp

import (
	"strings"
	"testing"
	"time"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
)

// heldUP is a user plane that keeps each deletion's answer until the
// test gives it: a control plane can stop between asking and hearing.
type heldUP struct {
	noUserPlane
	deletes []uint64
	answers []func(aaa.Usage, error)
}

func (u *heldUP) Delete(_ *SessionSpec, seid uint64, done func(aaa.Usage, error)) {
	u.deletes = append(u.deletes, seid)
	u.answers = append(u.answers, done)
}

// storeRig is a one-shard server on a session store in dir, driven
// synchronously (the shard's goroutine is not running).
func storeRig(t *testing.T, dir string, up UserPlane) (*Server, *Store) {
	t.Helper()
	cfg, err := ParseConfig([]byte(fuzzConfig))
	if err != nil {
		t.Fatal(err)
	}
	users := &aaa.Local{}
	if err := users.Read(strings.NewReader("user0 secret profile=p10\n"), "test"); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, Deps{Access: &recorder{}, Auth: users, UP: up, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return srv, st
}

func settleShard(sh *shard) {
	for len(sh.in) > 0 {
		sh.handle(<-sh.in)
	}
}

func storedRecords(t *testing.T, dir string) []record {
	t.Helper()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.load()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A control plane stopped while the user plane was deleting a session
// (the subscriber sent PADT, the Session Deletion Request was out): the
// next process must finish that deletion, with its accounting stop, and
// not bring the session back as up (it would re-establish on the user
// plane a subscriber who has left).
func TestAStopDuringADeletionIsFinishedNotRestoredAfterTheRestart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	up1 := &heldUP{}
	srv, st := storeRig(t, dir, up1)
	sh, port := srv.shards[0], srv.ports["access"]
	rec := record{ID: 42, Kind: aaa.PPPoE, User: "user0", Profile: "p10", UpSEID: 9001, Created: now, UpAt: now,
		Circuit: frame.Circuit{Port: "access", Line: frame.Line{STag: 100, CTag: 7}, MAC: frame.MAC{2, 0xee, 0, 0, 0, 7}},
		SID:     5, Magic: 1, PeerMagic: 2, NCP6: true, LocalID: 1, PeerID: 2}
	s := sh.restoreOne(port, &rec)
	if s == nil || s.state != stUp {
		t.Fatalf("an up record restores as up: %+v", s)
	}
	sh.terminate(s, causeUserRequest)
	if len(up1.deletes) != 1 || up1.deletes[0] != 9001 {
		t.Fatalf("deletion asked of the user plane: %v", up1.deletes)
	}
	st.Close() // stops before the answer: its writes reach the file

	recs := storedRecords(t, dir)
	if len(recs) != 1 || !recs[0].Ending || recs[0].TermCause != causeUserRequest {
		t.Fatalf("the record says the session was ending: %+v", recs)
	}

	up2 := &heldUP{}
	srv2, st2 := storeRig(t, dir, up2)
	sh2, port2 := srv2.shards[0], srv2.ports["access"]
	s2 := sh2.restoreOne(port2, &recs[0])
	if s2 == nil || s2.state != stTerminating || !s2.endPending {
		t.Fatalf("restored as ending: %+v", s2)
	}
	if _, found := sh2.ppp[pppKey{"access", 5}]; found {
		t.Fatal("no frame may reach a session that is being deleted")
	}
	if port2.sids.take(5) {
		t.Fatal("the PPPoE session id stays taken until the user plane has deleted the session")
	}
	if srv2.sessions.Load() != 1 {
		t.Fatalf("sessions: %d", srv2.sessions.Load())
	}
	// The user plane associates: the deletion is asked again, once.
	sh2.each(func(x *session) { sh2.resumeEnd(x) })
	sh2.each(func(x *session) { sh2.resumeEnd(x) })
	if len(up2.deletes) != 1 || up2.deletes[0] != 9001 || srv2.ctr.v[cRestoreEnding].Load() != 1 {
		t.Fatalf("deletions asked after the restart: %v", up2.deletes)
	}
	up2.answers[0](aaa.Usage{InOctets: 100}, nil)
	settleShard(sh2)
	if len(sh2.all) != 0 || srv2.sessions.Load() != 0 {
		t.Fatalf("the session is gone once deleted: %d left", len(sh2.all))
	}
	if srv2.ctr.v[cAcctStop].Load() != 1 {
		t.Fatal("the deletion ends with an accounting stop")
	}
	if !port2.sids.take(5) {
		t.Fatal("the PPPoE session id is free again")
	}
	st2.Close()
	if recs := storedRecords(t, dir); len(recs) != 0 {
		t.Fatalf("no record is left: %+v", recs)
	}
}

// Without a user plane to program (direct mode) the deletion a restart
// finds pending completes at once.
func TestAnEndingRecordWithoutAUserPlaneEndsAtRestore(t *testing.T) {
	dir := t.TempDir()
	srv, st := storeRig(t, dir, nil)
	defer st.Close()
	sh, port := srv.shards[0], srv.ports["access"]
	now := time.Now()
	rec := record{ID: 43, Kind: aaa.IPoE, UpSEID: 43, Created: now, UpAt: now, Ending: true,
		Circuit: frame.Circuit{Port: "access", Line: frame.Line{STag: 100, CTag: 8}, MAC: frame.MAC{2, 0xee, 0, 0, 0, 8}}}
	if s := sh.restoreOne(port, &rec); s == nil {
		t.Fatal("an ending record is taken")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sh.all) > 0 && time.Now().Before(deadline) {
		select {
		case ev := <-sh.in:
			sh.handle(ev)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if len(sh.all) != 0 || len(sh.lines) != 0 {
		t.Fatalf("left: %d sessions, %d lines", len(sh.all), len(sh.lines))
	}
}
