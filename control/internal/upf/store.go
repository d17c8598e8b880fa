package upf

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Store keeps what the function needs to come back after its own restart
// without the control plane noticing: every committed session (the model
// as the control plane built it, with its URRs' measurement state and the
// usage of data-plane instances gone), the associations, our Recovery
// Time Stamp and the next SEID.  It is bbolt (etcd's B+tree file, one
// writer transaction per batch of committed changes): a change is in the
// store before its PFCP answer is sent, so an answer the control plane
// has seen is never lost; what the data plane holds is reconciled against
// the store at start (recover.go).
type Store struct {
	db *bolt.DB
}

var (
	bSessions = []byte("sessions")
	bAssoc    = []byte("associations")
	bMeta     = []byte("meta")
	kRecovery = []byte("recovery")
	kNextSEID = []byte("next_seid")
)

// OpenStore opens (creates) dir/upf.db.  sync false skips the fsync of
// each commit (the file system's own write-back decides).
func OpenStore(dir string, sync bool) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "upf.db"), 0o600, &bolt.Options{Timeout: 2 * time.Second,
		NoSync: !sync, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("session store %s: %w", dir, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bSessions, bAssoc, bMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

func seidKey(seid uint64) []byte { return binary.BigEndian.AppendUint64(nil, seid) }

// Commit writes sessions and removes others, in one transaction.
func (s *Store) Commit(puts []*Session, dels []uint64) error {
	if len(puts) == 0 && len(dels) == 0 {
		return nil
	}
	vals := make([][]byte, len(puts))
	for i, x := range puts {
		v, err := json.Marshal(x)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSessions)
		for i, x := range puts {
			if err := b.Put(seidKey(x.SEID), vals[i]); err != nil {
				return err
			}
		}
		for _, id := range dels {
			if err := b.Delete(seidKey(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Sessions reads every stored session.
func (s *Store) Sessions() ([]*Session, error) {
	var out []*Session
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bSessions).ForEach(func(k, v []byte) error {
			var x Session
			if err := json.Unmarshal(v, &x); err != nil {
				return fmt.Errorf("session %x: %w", k, err)
			}
			out = append(out, &x)
			return nil
		})
	})
	return out, err
}

// storedAssoc is an association as stored.
type storedAssoc struct {
	Node     string         `json:"node"`
	Peer     netip.AddrPort `json:"peer"`
	Recovery time.Time      `json:"recovery"`
	Features []byte         `json:"features,omitempty"`
}

// PutAssociation stores an association (by node).
func (s *Store) PutAssociation(a storedAssoc) error {
	v, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bAssoc).Put([]byte(a.Node), v) })
}

// DeleteAssociation removes an association.
func (s *Store) DeleteAssociation(node string) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bAssoc).Delete([]byte(node)) })
}

// Associations reads the stored associations.
func (s *Store) Associations() ([]storedAssoc, error) {
	var out []storedAssoc
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bAssoc).ForEach(func(k, v []byte) error {
			var a storedAssoc
			if err := json.Unmarshal(v, &a); err != nil {
				return err
			}
			out = append(out, a)
			return nil
		})
	})
	return out, err
}

// Meta reads our Recovery Time Stamp and the next SEID (zero when new).
func (s *Store) Meta() (time.Time, uint64, error) {
	var ts time.Time
	var next uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMeta)
		if v := b.Get(kRecovery); len(v) == 8 {
			ts = time.Unix(int64(binary.BigEndian.Uint64(v)), 0)
		}
		if v := b.Get(kNextSEID); len(v) == 8 {
			next = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return ts, next, err
}

// PutMeta stores the Recovery Time Stamp and a SEID bound: every SEID
// handed out before the next PutMeta is below it.
func (s *Store) PutMeta(ts time.Time, nextSEID uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMeta)
		if err := b.Put(kRecovery, binary.BigEndian.AppendUint64(nil, uint64(ts.Unix()))); err != nil {
			return err
		}
		return b.Put(kNextSEID, binary.BigEndian.AppendUint64(nil, nextSEID))
	})
}
