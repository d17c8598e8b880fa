package upf

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// sessionLog is where committed sessions are kept: a commit is one
// append to a log, and the log is compacted into a snapshot of the live
// sessions now and then.  The associations and the meta data stay in
// bbolt (upf.db); sessions a previous version kept there are moved into
// the snapshot at the first open.
//
// Why not bbolt for the sessions: its commit of a batch of
// establishments walks the tree for each key, copies and splits the
// pages it touches and writes them, the branch pages and the meta page:
// 13 % of the function's CPU an establishment in the bench (`make bench
// BENCH=pfcp`), ~3 us a session whether a commit holds one batch of 736
// or all of 64K sessions (measured with this log in front of the tree,
// folded into it per batch or once).  Here a commit is one write(2) of
// the batch's records (~0.3 us a session) and compaction a sequential
// rewrite of the live records (~1-1.4 us a session appended:
// BenchmarkStoreCommitAndCompact).
//
// Files in the state directory, each a sequence of frames:
//
//	sessions.log    one frame per commit, appended
//	sessions.log.1  the log being compacted (renamed out of the way)
//	sessions.snap   every live session as of the last compaction, puts
//	                only, in SEID order; replaced whole (written to
//	                sessions.snap.tmp, synced, renamed)
//
//	frame: +----------+----------+------------------------------------+
//	       | len u32  | crc u32  | body: entries, len octets          |
//	       +----------+----------+------------------------------------+
//	entry: op (1: 'P' put, 'D' delete) | SEID u64 | (put) n u32, n octets
//
// the frame's fields little-endian, an entry's big-endian, crc32c
// (Castagnoli) of the body.  A log frame is the unit of atomicity, as
// the bbolt transaction was: a crash part-way through an append leaves a
// frame shorter than its length or failing its checksum, and opening the
// store drops it (and anything after it).  The commit's answers were not
// sent, so the control plane retransmits and nothing it has seen is
// lost.  A snapshot is never torn (renamed into place whole): a bad
// frame in it is an error.
//
// The sessions are the snapshot, then .1, then the log, the last entry
// of a SEID winning.  Compaction: when the log passes max(rotateAt, the
// snapshot's size) it is renamed .1 and a fresh one opened; a goroutine
// writes snapshot + .1 as a new snapshot and removes .1, while commits
// go on.  The threshold bounds the rewriting: a compaction rewrites at
// most about as many octets as were appended since the last one.  Open
// compacts whatever it finds.  Every step is idempotent: a crash after
// the new snapshot and before .1 or the log are gone applies their
// entries again to a snapshot that has them, with the same result.
type sessionLog struct {
	db       *bolt.DB
	dir      string
	sync     bool
	rotateAt int64 // logRotateSize; smaller in tests

	mu         sync.Mutex
	f          *os.File
	size       int64         // the log's
	snapSize   int64         // the snapshot's, when last written
	compacting bool          // a goroutine is compacting sessions.log.1
	done       chan struct{} // closed when that compaction ends
	buf        []byte        // the frame being built, reused
	err        error         // the log cannot take commits (a torn append not cut off, a failed fsync)
	compactErr error         // a compaction failed: no more until the next start
}

const (
	logName       = "sessions.log"
	logOldName    = "sessions.log.1"
	snapName      = "sessions.snap"
	logFrameHead  = 8
	logMaxFrame   = 1 << 30
	snapFrameSize = 1 << 20
	logRotateSize = 64 << 20 // ~100K establishments of ~600 octets
	opPut         = 'P'
	opDel         = 'D'
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// openSessionLog compacts what a previous run left (and sessions the
// tree holds) into the snapshot and opens an empty log.
func openSessionLog(db *bolt.DB, dir string, sync bool) (*sessionLog, error) {
	l := &sessionLog{db: db, dir: dir, sync: sync, rotateAt: logRotateSize}
	live, inTree, err := l.load(true)
	if err != nil {
		return nil, err
	}
	if l.snapSize, err = l.compacted(); err != nil {
		return nil, err
	}
	if l.snapSize < 0 || inTree > 0 {
		if err := l.writeSnapshot(live); err != nil {
			return nil, err
		}
	}
	if inTree > 0 {
		// Moved to the snapshot: the tree's copy goes (before any log
		// exists, so that an older copy there never meets a deletion
		// only the log knows).
		err := db.Update(func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bSessions); err != nil {
				return err
			}
			_, err := tx.CreateBucket(bSessions)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if err := os.Remove(filepath.Join(dir, logOldName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, logName), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, syncDir(dir, sync)
}

// appendFrame writes the commit's entries as one frame.  build appends
// the entries to its argument.
func (l *sessionLog) appendFrame(build func([]byte) ([]byte, error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	b, err := build(append(l.buf[:0], make([]byte, logFrameHead)...))
	if err != nil {
		return err
	}
	body := b[logFrameHead:]
	if len(body) > logMaxFrame {
		return fmt.Errorf("session store: a commit of %d octets", len(body))
	}
	sealFrame(b)
	if cap(b) <= 4<<20 {
		l.buf = b
	}
	if _, err := l.f.Write(b); err != nil {
		// A part of the frame may be in the file (a full disk): cut it
		// off, and this commit alone failed.  If that fails too, what
		// follows would be read as garbage after it, so the store takes
		// no more commits (the next open drops the torn frame).
		if terr := l.f.Truncate(l.size); terr != nil {
			l.err = fmt.Errorf("session store: %w", errors.Join(err, terr))
			return l.err
		}
		return fmt.Errorf("session store: %w", err)
	}
	if l.sync {
		// After a failed fsync the file's state on disk is unknown (the
		// kernel may have dropped the dirty pages): no more commits.
		if err := l.f.Sync(); err != nil {
			l.err = fmt.Errorf("session store: %w", err)
			return l.err
		}
	}
	l.size += int64(len(b))
	if l.size >= max(l.rotateAt, l.snapSize) && !l.compacting && l.compactErr == nil {
		// The commit is in the log whatever becomes of the rotation.
		if err := l.rotate(); err != nil {
			l.compactErr = err
			slog.Error("session store: compaction not started; the log grows until the next start", "err", err)
		}
	}
	return nil
}

// compacted is the snapshot's size when the snapshot alone holds the
// sessions (no .1, an empty log), else -1.
func (l *sessionLog) compacted() (int64, error) {
	sizes := [3]int64{}
	for i, name := range []string{snapName, logOldName, logName} {
		fi, err := os.Stat(filepath.Join(l.dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			sizes[i] = -1
		case err != nil:
			return 0, err
		default:
			sizes[i] = fi.Size()
		}
	}
	if sizes[0] < 0 || sizes[1] >= 0 || sizes[2] > 0 {
		return -1, nil
	}
	return sizes[0], nil
}

// rotate renames the log .1, opens a fresh one and compacts .1 into
// the snapshot in the background.  Called with mu held and no
// compaction running.
func (l *sessionLog) rotate() error {
	cur, old := filepath.Join(l.dir, logName), filepath.Join(l.dir, logOldName)
	if err := os.Rename(cur, old); err != nil {
		return err
	}
	f, err := os.OpenFile(cur, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err == nil {
		err = syncDir(l.dir, l.sync)
	}
	if err != nil {
		// Back as it was: the open file is the log again.
		if f != nil {
			f.Close()
		}
		return errors.Join(err, os.Rename(old, cur))
	}
	l.f.Close()
	l.f, l.size, l.compacting, l.done = f, 0, true, make(chan struct{})
	go func(done chan struct{}) {
		err := l.compactOld()
		l.mu.Lock()
		if err != nil {
			// .1 stays, and is applied at the next start; no rotation
			// until then (it would overwrite .1).  Commits go on.
			l.compactErr = err
			slog.Error("session store: compaction failed; the log grows until the next start", "err", err)
		}
		l.compacting = false
		l.mu.Unlock()
		close(done)
	}(l.done)
	return nil
}

// compactOld writes the snapshot and .1 as the new snapshot and removes
// .1.  Only one runs at a time, and nothing else writes those files
// meanwhile.
func (l *sessionLog) compactOld() error {
	live := map[uint64][]byte{}
	for _, name := range []string{snapName, logOldName} {
		if err := l.readFile(name, live, name == snapName); err != nil {
			return err
		}
	}
	if err := l.writeSnapshot(live); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(l.dir, logOldName)); err != nil {
		return err
	}
	return syncDir(l.dir, l.sync)
}

// compact compacts everything now: a running compaction is waited for,
// then the log is rotated and compacted here.
func (l *sessionLog) compact() error {
	l.lockIdle()
	if err := cmp.Or(l.err, l.compactErr); err != nil {
		l.mu.Unlock()
		return err
	}
	if err := l.rotate(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	l.wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.compactErr
}

// wait returns when no compaction runs.
func (l *sessionLog) wait() {
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (l *sessionLog) close() error {
	l.wait()
	return l.f.Close()
}

// sessions is every live session's record (snapshot, .1, log).
func (l *sessionLog) sessions() (map[uint64][]byte, error) {
	l.lockIdle()
	defer l.mu.Unlock()
	live, _, err := l.load(false)
	return live, err
}

// lockIdle takes mu with no compaction running (none starts while mu is
// held: rotate needs it).
func (l *sessionLog) lockIdle() {
	for {
		l.wait()
		l.mu.Lock()
		if !l.compacting {
			return
		}
		l.mu.Unlock()
	}
}

// load reads the sessions: the tree's (a previous version's store),
// the snapshot, .1, the log.  A torn frame ends .1 or the log (a crash
// during its append).
func (l *sessionLog) load(withTree bool) (map[uint64][]byte, int, error) {
	live := map[uint64][]byte{}
	inTree := 0
	if withTree {
		err := l.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bSessions).ForEach(func(k, v []byte) error {
				if len(k) != 8 || len(v) == 0 {
					return fmt.Errorf("session %x: bad record in the tree", k)
				}
				live[binary.BigEndian.Uint64(k)] = slices.Clone(v)
				inTree++
				return nil
			})
		})
		if err != nil {
			return nil, 0, err
		}
	}
	for _, name := range []string{snapName, logOldName, logName} {
		if err := l.readFile(name, live, name == snapName); err != nil {
			return nil, 0, err
		}
	}
	return live, inTree, nil
}

// readFile applies a file's entries to live (a missing file has none).
// strict: the whole file must be good frames (a snapshot).
func (l *sessionLog) readFile(name string, live map[uint64][]byte, strict bool) error {
	data, err := os.ReadFile(filepath.Join(l.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	good, err := readLog(data, live)
	if err == nil && strict && good != len(data) {
		err = fmt.Errorf("a bad frame at %d", good)
	}
	if err != nil {
		return fmt.Errorf("session store %s: %w", name, err)
	}
	return nil
}

// writeSnapshot replaces the snapshot with live's sessions (deletions
// left out), in SEID order, frames of about 1 MiB.
func (l *sessionLog) writeSnapshot(live map[uint64][]byte) error {
	tmp := filepath.Join(l.dir, snapName+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	var size int64
	b := make([]byte, logFrameHead, snapFrameSize+64<<10)
	flush := func() error {
		if len(b) == logFrameHead {
			return nil
		}
		sealFrame(b)
		_, err := f.Write(b)
		size += int64(len(b))
		b = b[:logFrameHead]
		return err
	}
	for _, seid := range slices.Sorted(maps.Keys(live)) {
		v := live[seid]
		if v == nil {
			continue
		}
		var at int
		b, at = putHead(b, seid)
		b = append(b, v...)
		putEnd(b, at)
		if len(b) >= snapFrameSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if l.sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(l.dir, snapName)); err != nil {
		return err
	}
	l.mu.Lock()
	l.snapSize = size
	l.mu.Unlock()
	return syncDir(l.dir, l.sync)
}

// sealFrame writes a frame's head for the body after it.
func sealFrame(b []byte) {
	body := b[logFrameHead:]
	binary.LittleEndian.PutUint32(b[0:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(body, crc32c))
}

// readLog applies a log's frames to last (a SEID's record, nil for a
// deletion) and returns the length of its whole frames.  A frame whose length
// runs past the data or whose checksum fails ends it (a crash during
// its append); a frame that passes its checksum and does not parse is
// an error (the file is not ours, or a bug: the caller must not guess).
func readLog(data []byte, last map[uint64][]byte) (int, error) {
	off := 0
	for len(data)-off >= logFrameHead {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		sum := binary.LittleEndian.Uint32(data[off+4:])
		if n > logMaxFrame || n > len(data)-off-logFrameHead {
			break
		}
		body := data[off+logFrameHead : off+logFrameHead+n]
		if crc32.Checksum(body, crc32c) != sum {
			break
		}
		if err := readFrame(body, last); err != nil {
			return 0, fmt.Errorf("frame at %d: %w", off, err)
		}
		off += logFrameHead + n
	}
	return off, nil
}

func readFrame(body []byte, last map[uint64][]byte) error {
	for len(body) > 0 {
		if len(body) < 9 {
			return io.ErrUnexpectedEOF
		}
		op, seid := body[0], binary.BigEndian.Uint64(body[1:9])
		body = body[9:]
		switch op {
		case opDel:
			last[seid] = nil
		case opPut:
			if len(body) < 4 {
				return io.ErrUnexpectedEOF
			}
			n := int(binary.BigEndian.Uint32(body))
			if n == 0 || n > len(body)-4 {
				return fmt.Errorf("session %x: bad length", seid)
			}
			last[seid] = body[4 : 4+n : 4+n]
			body = body[4+n:]
		default:
			return fmt.Errorf("session %x: unknown operation %q", seid, op)
		}
	}
	return nil
}

// putHead appends a put entry's head, its value's length left at at:
// the caller appends the value and calls putEnd.
func putHead(b []byte, seid uint64) (_ []byte, at int) {
	b = binary.BigEndian.AppendUint64(append(b, opPut), seid)
	return append(b, 0, 0, 0, 0), len(b)
}

func putEnd(b []byte, at int) {
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
}

func appendDel(b []byte, seid uint64) []byte {
	return binary.BigEndian.AppendUint64(append(b, opDel), seid)
}

// syncDir makes a rename or a creation in dir durable (when the store
// syncs at all).
func syncDir(dir string, sync bool) error {
	if !sync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
