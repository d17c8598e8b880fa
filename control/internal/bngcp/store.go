package bngcp

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pppoe"
)

// Store keeps what a restart of the control plane must not lose: every
// session that is up, as a record with what its protocols negotiated, so
// that a new process can answer the same subscribers (LCP echoes with the
// same magic numbers, DHCP renewals of the same leases) and find their
// sessions on the user plane (the UP F-SEIDs).  The user plane keeps
// forwarding meanwhile: PFCP association set-up with Session Retention
// Information (TS 29.244 6.2.6.2.2) tells it to keep our sessions.
//
// Writes go through one goroutine that groups them into one bbolt
// transaction (one fsync) per batch: a shard never waits for the disk.
type Store struct {
	db   *bolt.DB
	ops  chan storeOp
	done chan struct{}
	wg   sync.WaitGroup
}

type storeOp struct {
	id  uint64
	rec []byte // nil: delete
}

var (
	bucketSessions = []byte("sessions")
	bucketMeta     = []byte("meta")
)

// OpenStore opens (creates) dir/bng-cp.db.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "bng-cp.db"), 0o640, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketSessions); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketMeta)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{db: db, ops: make(chan storeOp, 65536), done: make(chan struct{})}
	s.wg.Add(1)
	go s.writer()
	return s, nil
}

func key(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

func (s *Store) writer() {
	defer s.wg.Done()
	for {
		var batch []storeOp
		select {
		case op := <-s.ops:
			batch = append(batch, op)
		case <-s.done:
			for {
				select {
				case op := <-s.ops:
					batch = append(batch, op)
				default:
					s.apply(batch)
					return
				}
			}
		}
	more:
		for len(batch) < 4096 {
			select {
			case op := <-s.ops:
				batch = append(batch, op)
			default:
				break more
			}
		}
		s.apply(batch)
	}
}

func (s *Store) apply(batch []storeOp) {
	if len(batch) == 0 {
		return
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		for _, op := range batch {
			var err error
			if op.rec == nil {
				err = b.Delete(key(op.id))
			} else {
				err = b.Put(key(op.id), op.rec)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		slog.Error("session store", "err", err)
	}
}

func (s *Store) put(id uint64, rec []byte) { s.ops <- storeOp{id: id, rec: rec} }
func (s *Store) del(id uint64)             { s.ops <- storeOp{id: id} }

// Close writes what is queued and closes the file.
func (s *Store) Close() error {
	close(s.done)
	s.wg.Wait()
	return s.db.Close()
}

// load reads every record.
func (s *Store) load() ([]record, error) {
	var out []record
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				slog.Warn("session store: unreadable record dropped", "key", fmt.Sprintf("%x", k), "err", err)
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// setMeta / getMeta keep small values (the last session id handed out).
func (s *Store) setMeta(k string, v uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(k), key(v))
	})
}

func (s *Store) getMeta(k string) uint64 {
	var v uint64
	s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta).Get([]byte(k)); len(b) == 8 {
			v = binary.BigEndian.Uint64(b)
		}
		return nil
	})
	return v
}

// SetBlob keeps a small value of another part (the PFCP side's default
// sessions) under key.
func (s *Store) SetBlob(k string, v []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte("blob/"+k), v)
	})
}

// GetBlob reads what SetBlob kept (nil: nothing).
func (s *Store) GetBlob(k string) []byte {
	var v []byte
	s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta).Get([]byte("blob/" + k)); b != nil {
			v = append([]byte(nil), b...)
		}
		return nil
	})
	return v
}

// record is a session as stored.
type record struct {
	ID        uint64        `json:"id"`
	Kind      aaa.Service   `json:"kind"`
	Circuit   frame.Circuit `json:"circuit"`
	LineID    pppoe.LineID  `json:"line_id"`
	User      string        `json:"user"`
	Profile   string        `json:"profile,omitempty"`
	V4        netip.Addr    `json:"v4,omitempty"`
	Pool4     string        `json:"pool4,omitempty"`
	V6        netip.Prefix  `json:"v6,omitempty"`
	Pool6     string        `json:"pool6,omitempty"`
	Delegated netip.Prefix  `json:"delegated,omitempty"`
	UpSEID    uint64        `json:"up_seid"`
	Created   time.Time     `json:"created"`
	UpAt      time.Time     `json:"up_at"`
	Usage     aaa.Usage     `json:"usage"`
	Interim   time.Duration `json:"interim"`
	Class     [][]byte      `json:"class,omitempty"`
	EndAt     time.Time     `json:"end_at,omitempty"` // Session-Timeout

	// Ending: the session was being deleted from the user plane when the
	// record was last written (terminate), for TermCause.  A restart
	// finishes that deletion instead of bringing the session back.
	Ending    bool `json:"ending,omitempty"`
	TermCause int  `json:"term_cause,omitempty"`

	SID       uint16 `json:"sid,omitempty"`
	Magic     uint32 `json:"magic,omitempty"`
	PeerMagic uint32 `json:"peer_magic,omitempty"`
	PeerMRU   uint16 `json:"peer_mru,omitempty"`
	Auth      uint8  `json:"auth,omitempty"`
	LocalID   uint64 `json:"local_ifid,omitempty"`
	PeerID    uint64 `json:"peer_ifid,omitempty"`
	NCP4      bool   `json:"ncp4,omitempty"`
	NCP6      bool   `json:"ncp6,omitempty"`

	Bound4    bool      `json:"bound4,omitempty"`
	Lease4End time.Time `json:"lease4_end,omitempty"`
	Bound6    bool      `json:"bound6,omitempty"`
	Lease6End time.Time `json:"lease6_end,omitempty"`
	Opt82     []byte    `json:"opt82,omitempty"`
	DUID      []byte    `json:"duid,omitempty"`
}

func (sh *shard) recordOf(s *session) record {
	r := record{ID: s.id, Kind: s.kind, Circuit: s.circuit, LineID: s.lineID, User: s.user, V4: s.v4,
		V6: s.v6block, Delegated: s.delegated, UpSEID: s.upSEID, Created: s.created, UpAt: s.upAt,
		Usage: s.usage, Interim: s.interim, Class: s.res.Class, EndAt: s.endAt}
	if s.profile != nil {
		r.Profile = s.profile.Name
	}
	if s.pool4 != nil {
		r.Pool4 = s.pool4.Name
	}
	if s.pool6 != nil {
		r.Pool6 = s.pool6.Name
	}
	if p := s.ppp; p != nil {
		r.SID, r.Magic, r.PeerMagic, r.PeerMRU = p.sid, p.lcp.Magic, p.lcp.PeerMagic, p.lcp.PeerMRU
		r.Auth = uint8(p.lcp.Auth)
		r.LocalID, r.PeerID = p.ip6.Local, p.ip6.Peer
		r.NCP4, r.NCP6 = p.ncp4, p.ncp6
	}
	if d := s.ipoe; d != nil {
		r.Bound4, r.Lease4End, r.Bound6, r.Lease6End = d.bound4, d.leaseEnd, d.bound6, d.lease6End
		r.Opt82, r.DUID = d.opt82, d.duid
	}
	return r
}

// save writes an up session's record.
func (sh *shard) save(s *session) {
	st := sh.srv.store
	if st == nil || s.state != stUp {
		return
	}
	b, err := json.Marshal(sh.recordOf(s))
	if err != nil {
		return
	}
	st.put(s.id, b)
}

// saveEnding marks the record of a session being deleted from the user
// plane: if this process stops before the user plane answers, the next
// one finishes the deletion (and its accounting) rather than restore a
// session its subscriber has already left.  Only a session that was ever
// up has a record.
func (sh *shard) saveEnding(s *session) {
	st := sh.srv.store
	if st == nil || s.upAt.IsZero() {
		return
	}
	r := sh.recordOf(s)
	r.Ending, r.TermCause = true, s.termCause
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	st.put(s.id, b)
}

// forget removes a session's record.
func (sh *shard) forget(s *session) {
	if st := sh.srv.store; st != nil && !s.upAt.IsZero() {
		st.del(s.id)
	}
}
