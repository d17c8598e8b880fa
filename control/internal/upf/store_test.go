package upf

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"edgeplane/control/internal/pfcp/wire"

	bolt "go.etcd.io/bbolt"
)

// The store's tests use two kinds of records: a new session as its
// establishment (raw: here a text naming its control-plane SEID, read
// back by storedCP) and a changed one as its model.

var storeT0 = time.Unix(1795000000, 0)

func rawRecord(seid uint64) record {
	s := newSession(seid, storeT0)
	s.SubID = uint32(seid)
	return record{s: s, raw: []byte("cp-seid=" + strconv.FormatUint(seid*10, 10))}
}

func modelRecord(seid, cpSEID uint64) record {
	s := newSession(seid, storeT0)
	s.CPSEID, s.CPNode = cpSEID, "cp.test"
	return record{s: s}
}

func storedCP(raw []byte, now time.Time) (*Session, error) {
	var cp uint64
	if _, err := fmt.Sscanf(string(raw), "cp-seid=%d", &cp); err != nil {
		return nil, err
	}
	s := newSession(0, now)
	s.CPSEID = cp
	return s, nil
}

// storedSessions reads a store back as SEID -> control-plane SEID.
func storedSessions(t *testing.T, st *Store) map[uint64]uint64 {
	t.Helper()
	ss, err := st.Sessions(storedCP)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[uint64]uint64, len(ss))
	for _, s := range ss {
		if _, dup := out[s.SEID]; dup {
			t.Fatalf("session %d read twice", s.SEID)
		}
		out[s.SEID] = s.CPSEID
	}
	return out
}

func openTestStore(t *testing.T, dir string) *Store {
	t.Helper()
	st, err := OpenStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func commitOrFail(t *testing.T, st *Store, puts []record, dels []uint64) {
	t.Helper()
	if err := st.Commit(puts, dels); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A store reopened reads what it held before it was closed: new
// sessions, changed ones (a model replacing an establishment), deleted
// ones gone; the log is compacted into the snapshot at open and a second
// reopen reads the same.
func TestStoreRestartReadsWhatItHeldBefore(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	commitOrFail(t, st, []record{rawRecord(1), rawRecord(2), rawRecord(3)}, nil)
	commitOrFail(t, st, []record{rawRecord(4), modelRecord(2, 777)}, []uint64{3})
	commitOrFail(t, st, nil, []uint64{99}) // deleting what is not there
	want := map[uint64]uint64{1: 10, 2: 777, 4: 40}
	if got := storedSessions(t, st); !maps.Equal(got, want) {
		t.Fatalf("before the restart: %v, want %v", got, want)
	}
	commitOrFail(t, st, []record{rawRecord(5)}, []uint64{1})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	want = map[uint64]uint64{2: 777, 4: 40, 5: 50}
	for i := range 2 {
		st = openTestStore(t, dir)
		if n := fileSize(t, filepath.Join(dir, logName)); n != 0 {
			t.Fatalf("reopen %d: the log holds %d octets after the compaction", i, n)
		}
		if got := storedSessions(t, st); !maps.Equal(got, want) {
			t.Fatalf("reopen %d: %v, want %v", i, got, want)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A crash part-way through an append leaves a torn frame at the log's
// end (cut anywhere, or written whole with a wrong octet): the store
// opens with the commits before it, none of the torn one's sessions (a
// commit is all or none), and the file truncated so that the next
// commit is read after a restart.
func TestStoreTornTailDropsTheWholeCommit(t *testing.T) {
	// The second commit's frame: head 8 octets, then its body.
	cuts := map[string]func(first, total int64) (int64, int){
		"one octet of its head":  func(f, _ int64) (int64, int) { return f + 1, -1 },
		"its head only":          func(f, _ int64) (int64, int) { return f + logFrameHead, -1 },
		"half its body":          func(f, n int64) (int64, int) { return f + logFrameHead + (n-f-logFrameHead)/2, -1 },
		"all but its last octet": func(_, n int64) (int64, int) { return n - 1, -1 },
		"whole, one octet wrong": func(f, n int64) (int64, int) { return n, int(f+n) / 2 },
	}
	for name, cut := range cuts {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			st := openTestStore(t, dir)
			commitOrFail(t, st, []record{rawRecord(1), rawRecord(2)}, nil)
			log := filepath.Join(dir, logName)
			first := fileSize(t, log)
			commitOrFail(t, st, []record{rawRecord(3), modelRecord(1, 555)}, []uint64{2})
			total := fileSize(t, log)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			size, flip := cut(first, total)
			if err := os.Truncate(log, size); err != nil {
				t.Fatal(err)
			}
			if flip >= 0 {
				b, err := os.ReadFile(log)
				if err != nil {
					t.Fatal(err)
				}
				b[flip] ^= 0x40
				if err := os.WriteFile(log, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			st = openTestStore(t, dir)
			if got, want := storedSessions(t, st), map[uint64]uint64{1: 10, 2: 20}; !maps.Equal(got, want) {
				t.Fatalf("after the torn commit: %v, want %v", got, want)
			}
			commitOrFail(t, st, []record{rawRecord(4)}, nil)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st = openTestStore(t, dir)
			defer st.Close()
			if got, want := storedSessions(t, st), map[uint64]uint64{1: 10, 2: 20, 4: 40}; !maps.Equal(got, want) {
				t.Fatalf("the commit after the torn one: %v, want %v", got, want)
			}
		})
	}
}

// A frame whose checksum holds but whose entries do not parse is not a
// crash's trace: the store refuses to open rather than guess.
func TestStoreRefusesACorruptFrameThatPassesItsChecksum(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	commitOrFail(t, st, []record{rawRecord(1)}, nil)
	if err := st.log.appendFrame(func(b []byte) ([]byte, error) { return append(b, 'X', 1, 2), nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := OpenStore(dir, false); err == nil {
		st.Close()
		t.Fatal("opened a store with a frame of unknown entries")
	}
}

// Compaction: a log past its size is renamed and compacted with the
// snapshot into a new one in the background while commits go on to a
// fresh log; the compacted file is removed, and the store reads the same
// before and after a restart.  A compaction a crash interrupted (the
// renamed log still there at open) is applied before the log that came
// after it.
func TestStoreCompactsTheLogInTheBackground(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	st.log.rotateAt = 4 << 10
	want := map[uint64]uint64{}
	for seid := uint64(1); seid <= 600; seid++ {
		dels := []uint64(nil)
		if seid%3 == 0 {
			dels = []uint64{seid - 1}
			delete(want, seid-1)
		}
		commitOrFail(t, st, []record{rawRecord(seid)}, dels)
		want[seid] = seid * 10
	}
	st.log.wait()
	if _, err := os.Stat(filepath.Join(dir, logOldName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the compacted log is still there: %v", err)
	}
	// The snapshot holds the compacted sessions before anything reads
	// them.
	snap := map[uint64][]byte{}
	if err := st.log.readFile(snapName, snap, true); err != nil || len(snap) == 0 {
		t.Fatalf("no session compacted into the snapshot in the background (%v)", err)
	}
	if got := storedSessions(t, st); !maps.Equal(got, want) {
		t.Fatalf("after the compactions: %d sessions, want %d", len(got), len(want))
	}
	// An interrupted compaction: .1 holds older records than the log,
	// and is applied first.  The log after it is made in another store.
	commitOrFail(t, st, []record{modelRecord(1000, 1)}, nil)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, logName), filepath.Join(dir, logOldName)); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	st = openTestStore(t, other)
	commitOrFail(t, st, []record{modelRecord(1000, 2)}, []uint64{600})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	newer, err := os.ReadFile(filepath.Join(other, logName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logName), newer, 0o600); err != nil {
		t.Fatal(err)
	}
	want[1000] = 2
	delete(want, 600)
	st = openTestStore(t, dir)
	defer st.Close()
	if got := storedSessions(t, st); !maps.Equal(got, want) {
		t.Fatalf("after a restart: %d sessions, want %d (session 1000: %d)", len(got), len(want), got[1000])
	}
}

// A process killed (SIGKILL) while it commits, and compacts, in a loop:
// the store opens with every commit the process reported done and
// whole commits only (each commit adds crashBatch sessions and deletes
// one of the commit before).
func TestStoreCrashDuringCommitsKeepsWholeCommits(t *testing.T) {
	if os.Getenv("UPF_STORE_CRASH_DIR") != "" {
		t.Skip("the child's side")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestStoreCrashChild$")
	cmd.Env = append(os.Environ(), "UPF_STORE_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once it has committed 300 batches (several compactions,
	// from 32 KiB a log): a line per commit, read until then.
	reported := -1
	lines := bufio.NewScanner(out)
	for lines.Scan() && reported < 300 {
		if n, err := strconv.Atoi(lines.Text()); err == nil {
			reported = n
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if reported < 300 {
		t.Fatalf("the child stopped after commit %d", reported)
	}
	st := openTestStore(t, dir)
	defer st.Close()
	got := storedSessions(t, st)
	commits := 0
	for got[crashSEID(commits, crashBatch-1)] != 0 {
		commits++
	}
	if commits <= reported {
		t.Fatalf("%d commits stored, %d reported done", commits, reported+1)
	}
	want := map[uint64]uint64{}
	for c := range commits {
		for i := range crashBatch {
			want[crashSEID(c, i)] = crashSEID(c, i) * 10
		}
		if c > 0 {
			delete(want, crashSEID(c-1, 0))
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%d sessions stored, %d in %d whole commits", len(got), len(want), commits)
	}
}

const crashBatch = 20

func crashSEID(commit, i int) uint64 { return uint64(commit*crashBatch + i + 1) }

// TestStoreCrashChild is the process the crash test kills.
func TestStoreCrashChild(t *testing.T) {
	dir := os.Getenv("UPF_STORE_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestStoreCrashDuringCommitsKeepsWholeCommits")
	}
	st := openTestStore(t, dir)
	st.log.rotateAt = 32 << 10
	w := bufio.NewWriter(os.Stdout)
	for c := 0; ; c++ {
		puts := make([]record, crashBatch)
		for i := range puts {
			puts[i] = rawRecord(crashSEID(c, i))
		}
		var dels []uint64
		if c > 0 {
			dels = []uint64{crashSEID(c-1, 0)}
		}
		commitOrFail(t, st, puts, dels)
		fmt.Fprintln(w, c)
		w.Flush()
	}
}

// BenchmarkStoreCommitAndCompact is the store's cost a session: b.N
// establishments' records (600 octets of IEs each, as the bench's) in
// commits of 736, then compacted (what the background does when the log
// passes 64 MiB or the snapshot's size, and a restart).  cpu-ns/op is the
// process's CPU time for both; compact-ns/op the compaction's share.
func BenchmarkStoreCommitAndCompact(b *testing.B) {
	st, err := OpenStore(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	raw := make([]byte, 600)
	recs := make([]record, b.N)
	for i := range recs {
		recs[i] = record{s: newSession(uint64(i+1), storeT0), raw: raw}
	}
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < len(recs); i += 736 {
		if err := st.Commit(recs[i:min(i+736, len(recs))], nil); err != nil {
			b.Fatal(err)
		}
	}
	cpu1 := processCPU()
	if err := st.log.compact(); err != nil {
		b.Fatal(err)
	}
	cpu2 := processCPU()
	b.StopTimer()
	b.ReportMetric(float64(cpu2-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(cpu2-cpu1)/float64(b.N), "compact-ns/op")
}

// A store of a previous version kept its sessions in the tree: the
// first open moves them into the snapshot (the tree's copy gone), and
// they read back the same.
func TestStoreMovesATreesSessionsIntoTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "upf.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, r := range []record{rawRecord(1), modelRecord(2, 222)} {
			v, _, err := r.appendTo(nil, nil)
			if err != nil {
				return err
			}
			if err := tx.Bucket(bSessions).Put(seidKey(r.s.SEID), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	st = openTestStore(t, dir)
	want := map[uint64]uint64{1: 10, 2: 222}
	if got := storedSessions(t, st); !maps.Equal(got, want) {
		t.Fatalf("after the move: %v, want %v", got, want)
	}
	left := -1
	st.db.View(func(tx *bolt.Tx) error { left = tx.Bucket(bSessions).Stats().KeyN; return nil })
	if left != 0 {
		t.Fatalf("%d sessions left in the tree", left)
	}
	commitOrFail(t, st, nil, []uint64{1})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openTestStore(t, dir)
	defer st.Close()
	if got := storedSessions(t, st); !maps.Equal(got, map[uint64]uint64{2: 222}) {
		t.Fatalf("after a deletion and a restart: %v", got)
	}
}

// A compaction that fails (here the snapshot cannot be written: a
// directory is in the way of its temporary file) stops compactions, not
// commits: they go on into the log, and the next start has every one.
func TestStoreCommitsGoOnWhenCompactionFails(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	st.log.rotateAt = 1 << 10
	if err := os.Mkdir(filepath.Join(dir, snapName+".tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]uint64{}
	for seid := uint64(1); seid <= 100; seid++ {
		commitOrFail(t, st, []record{rawRecord(seid)}, nil)
		want[seid] = seid * 10
	}
	st.log.wait()
	if st.log.compactErr == nil {
		t.Fatal("the compaction did not fail")
	}
	commitOrFail(t, st, []record{rawRecord(101)}, []uint64{1})
	want[101] = 1010
	delete(want, 1)
	if got := storedSessions(t, st); !maps.Equal(got, want) {
		t.Fatalf("after the failed compaction: %d sessions, want %d", len(got), len(want))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, snapName+".tmp")); err != nil {
		t.Fatal(err)
	}
	st = openTestStore(t, dir)
	defer st.Close()
	if got := storedSessions(t, st); !maps.Equal(got, want) {
		t.Fatalf("after a restart: %d sessions, want %d", len(got), len(want))
	}
}

// TestStoredFormAliasesOwnBytesAndCopiesTheReceiveBuffer: a new
// session's stored form is the request's own bytes when they are the
// function's copy (capacity clipped, so an append to it cannot reach
// the next message in the slab), and a copy when they are a receive
// buffer the next read overwrites.
func TestStoredFormAliasesOwnBytesAndCopiesTheReceiveBuffer(t *testing.T) {
	h := wire.Header{HdrLen: 16}
	slab := make([]byte, 0, 64)
	slab = append(slab, make([]byte, 16)...)
	slab = append(slab, "establishment IEs"...)
	msg := slab[:len(slab):len(slab)]
	slab = append(slab[:len(slab):cap(slab)], "next message"...)

	own := storedForm(msg, h, true)
	if string(own) != "establishment IEs" || cap(own) != len(own) {
		t.Fatalf("own: %q cap %d", own, cap(own))
	}
	if &own[0] != &msg[16] {
		t.Fatal("own bytes copied")
	}
	_ = append(own, 'X')
	if string(slab[len(msg):]) != "next message" {
		t.Fatalf("an append to the stored form reached the slab: %q", slab[len(msg):])
	}

	cp := storedForm(msg, h, false)
	copy(msg[16:], "overwritten by a read")
	if string(cp) != "establishment IEs" {
		t.Fatalf("receive buffer not copied: %q", cp)
	}
}
