package upf

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// sessionLog is the front of the session store: a commit of sessions is
// one append to a file, the B+tree (bbolt) behind it gets the log's
// records later, folded in key order in one transaction.
//
// Why: a bbolt commit of a batch of establishments walks the tree for
// each key, copies and rebalances the pages it touches, and writes them
// and the meta page: 13 % of the function's CPU an establishment in the
// bench (`make bench BENCH=pfcp`), against one write(2) of the batch's
// records here.  A session's record is written once to the log and once
// to the tree when its log is folded, instead of once per batch to the
// tree's pages.
//
// The file, sessions.log, is a sequence of frames, one per commit:
//
//	+----------+----------+--------------------------------------------+
//	| len u32  | crc u32  | body: entries, len octets                  |
//	+----------+----------+--------------------------------------------+
//	entry: op (1: 'P' put, 'D' delete) | SEID u64 | (put) n u32, n octets
//
// the frame's fields little-endian, an entry's big-endian, crc32c (Castagnoli) of the body.  A frame is the
// unit of atomicity, as the bbolt transaction was: a crash part-way
// through an append leaves a frame shorter than its length or failing
// its checksum, and opening the store drops it (and anything after it)
// and truncates the file there.  The commit's answers were not sent, so
// the control plane retransmits and nothing it has seen is lost.
//
// Folding (compaction): when the log passes logRotateSize it is renamed
// sessions.log.1 and a fresh one opened; a goroutine folds .1 into the
// tree (one transaction, keys sorted, the last record of a key winning)
// and removes it.  At open, .1 (a fold a crash interrupted) and then the
// log are folded before anything is read; folding is idempotent, so a
// crash between the tree's commit and the file's removal only folds the
// same records again.
type sessionLog struct {
	db       *bolt.DB
	dir      string
	sync     bool
	rotateAt int64 // logRotateSize; smaller in tests

	mu      sync.Mutex
	f       *os.File
	size    int64
	folding bool          // a goroutine is folding sessions.log.1
	done    chan struct{} // closed when that fold ends
	buf     []byte        // the frame being built, reused
	err     error         // a background fold's failure, returned by the next commit
}

const (
	logName       = "sessions.log"
	logOldName    = "sessions.log.1"
	logFrameHead  = 8
	logMaxFrame   = 1 << 30
	logRotateSize = 64 << 20 // ~100K establishments of ~600 octets
	opPut         = 'P'
	opDel         = 'D'
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// openSessionLog folds what a previous run left into db and opens an
// empty log.
func openSessionLog(db *bolt.DB, dir string, sync bool) (*sessionLog, error) {
	l := &sessionLog{db: db, dir: dir, sync: sync, rotateAt: logRotateSize}
	for _, name := range []string{logOldName, logName} {
		if err := l.foldFile(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
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
	binary.LittleEndian.PutUint32(b[0:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(body, crc32c))
	if cap(b) <= 4<<20 {
		l.buf = b
	}
	if _, err := l.f.Write(b); err != nil {
		// A part of the frame may be in the file: what follows it would
		// be read as garbage, so the store takes no more commits (the
		// next open drops the torn frame).
		l.err = fmt.Errorf("session store: %w", err)
		return l.err
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			l.err = fmt.Errorf("session store: %w", err)
			return l.err
		}
	}
	l.size += int64(len(b))
	if l.size >= l.rotateAt && !l.folding {
		return l.rotate()
	}
	return nil
}

// rotate renames the log .1, opens a fresh one and folds .1 in the
// background.  Called with mu held and no fold running.
func (l *sessionLog) rotate() error {
	cur, old := filepath.Join(l.dir, logName), filepath.Join(l.dir, logOldName)
	if err := os.Rename(cur, old); err != nil {
		return err
	}
	f, err := os.OpenFile(cur, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := syncDir(l.dir, l.sync); err != nil {
		f.Close()
		return err
	}
	l.f.Close()
	l.f, l.size, l.folding, l.done = f, 0, true, make(chan struct{})
	go func(done chan struct{}) {
		err := l.foldFile(old)
		l.mu.Lock()
		if err != nil && l.err == nil {
			l.err = err
		}
		l.folding = false
		l.mu.Unlock()
		close(done)
	}(l.done)
	return nil
}

// flush folds everything into the tree: a running fold is waited for,
// then the log is rotated and folded here.
func (l *sessionLog) flush() error {
	l.wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.size == 0 {
		return nil
	}
	if err := l.foldFile(filepath.Join(l.dir, logName)); err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	l.size = 0
	return nil
}

// wait returns when no fold runs.
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

// foldFile puts the file's frames into the tree and removes the file
// (.1) or leaves it to its caller (the log).  A torn or corrupt frame
// ends what is read; the log is truncated there, so that an append
// after it is not hidden behind it.
func (l *sessionLog) foldFile(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	last, good, err := readLog(data)
	if err != nil {
		return fmt.Errorf("session store %s: %w", path, err)
	}
	if len(last) > 0 {
		keys := make([]uint64, 0, len(last))
		for k := range last {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, cmp.Compare)
		err = l.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bSessions)
			b.FillPercent = 0.9
			for _, k := range keys {
				v := last[k]
				if v == nil {
					err = b.Delete(seidKey(k))
				} else {
					err = b.Put(seidKey(k), v)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !l.sync {
			// The log's records may have been on their way to the disk
			// only; the tree's copy must not be lost with them.
			if err := l.db.Sync(); err != nil {
				return err
			}
		}
	}
	if filepath.Base(path) == logOldName {
		if err := os.Remove(path); err != nil {
			return err
		}
		return syncDir(l.dir, l.sync)
	}
	if good < len(data) {
		return os.Truncate(path, int64(good))
	}
	return nil
}

// readLog reads a log's frames: the last record of each SEID (nil for a
// deletion) and the length of its whole frames.  A frame whose length
// runs past the data or whose checksum fails ends it (a crash during
// its append); a frame that passes its checksum and does not parse is
// an error (the file is not ours, or a bug: the caller must not guess).
func readLog(data []byte) (map[uint64][]byte, int, error) {
	last := make(map[uint64][]byte)
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
			return nil, 0, fmt.Errorf("frame at %d: %w", off, err)
		}
		off += logFrameHead + n
	}
	return last, off, nil
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
