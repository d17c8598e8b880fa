package upf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Store keeps what the function needs to come back after its own restart
// without the control plane noticing: every committed session (the model
// as the control plane built it, with its URRs' measurement state and the
// usage of data-plane instances gone), the associations, our Recovery
// Time Stamp and the next SEID.  Sessions are an append-only log with a
// snapshot (store_log.go: a batch of committed changes is one frame
// appended, compacted in the background and at start); the rest is
// bbolt (etcd's B+tree file).  A change is in the store before its PFCP
// answer is sent, so an answer the control plane has seen is never
// lost; what the data plane holds is reconciled against the store at
// start (recover.go).
type Store struct {
	db  *bolt.DB
	log *sessionLog
	j   []byte // scratch for a record's header, under log.mu
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
	// The map is set up large from the start (address space, not
	// memory): each time bbolt grows it, it copies every node a writer
	// holds out of the old map, while the table fills.  256 MiB holds
	// ~400K sessions of ~600 octets.
	db, err := bolt.Open(filepath.Join(dir, "upf.db"), 0o600, &bolt.Options{Timeout: 2 * time.Second,
		NoSync: !sync, NoFreelistSync: true, InitialMmapSize: 256 << 20})
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
	l, err := openSessionLog(db, dir, sync)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, log: l}, nil
}

// Close closes the files (a compaction under way ends first).
func (s *Store) Close() error {
	return errors.Join(s.log.close(), s.db.Close())
}

func seidKey(seid uint64) []byte { return binary.BigEndian.AppendUint64(nil, seid) }

// record is a session to store: a new one as the establishment that made
// it (raw, its IEs as received: storing them is a copy, where encoding
// the model was a fifth of the function's time per establishment), a
// changed one as its model (raw nil).
type record struct {
	s   *Session
	raw []byte
}

// Record formats, the first octet of a stored value.
const (
	recModel = 'J' // JSON of the model (storedSession)
	recRaw   = 'R' // uvarint length, JSON of rawMeta, the establishment's IEs
)

// rawMeta is what an establishment's IEs do not say.
type rawMeta struct {
	SEID    uint64            `json:"seid"`
	SubID   uint32            `json:"sub_id,omitempty"`
	Chosen  map[string]uint32 `json:"chosen,omitempty"`
	Created int64             `json:"created"`
	URRs    []*URR            `json:"urrs,omitempty"` // measurement state
}

// appendJSON appends m as encoding/json writes it.  The usual record (no
// chosen TEIDs, no URRs) is written by hand: json.Marshal's reflection
// was 4 % of an establishment's CPU time.  TestRawMetaJSON checks that
// both write the same octets.
func (m *rawMeta) appendJSON(b []byte) ([]byte, error) {
	if len(m.Chosen) > 0 || len(m.URRs) > 0 {
		c := *m // a copy to marshal: m itself stays on its caller's stack (one allocation a record, when it escaped)
		j, err := json.Marshal(&c)
		return append(b, j...), err
	}
	b = append(b, `{"seid":`...)
	b = strconv.AppendUint(b, m.SEID, 10)
	if m.SubID != 0 {
		b = append(b, `,"sub_id":`...)
		b = strconv.AppendUint(b, uint64(m.SubID), 10)
	}
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, m.Created, 10)
	return append(b, '}'), nil
}

// appendTo appends the record's stored value to b; j is scratch room for
// its header, returned for the next record.
func (r record) appendTo(b, j []byte) ([]byte, []byte, error) {
	if r.raw == nil {
		m, err := r.s.MarshalJSON()
		return append(append(b, recModel), m...), j, err
	}
	m := rawMeta{SEID: r.s.SEID, SubID: r.s.SubID, Chosen: r.s.Chosen, Created: r.s.Created.Unix()}
	for _, u := range r.s.URRs.All() {
		m.URRs = append(m.URRs, u)
	}
	j, err := m.appendJSON(j[:0])
	if err != nil {
		return b, j, err
	}
	b = append(b, recRaw)
	b = binary.AppendUvarint(b, uint64(len(j)))
	b = append(b, j...)
	return append(b, r.raw...), j, nil
}

// Commit writes sessions and removes others, all or none of them: one
// frame appended to the session log (store_log.go).
func (s *Store) Commit(puts []record, dels []uint64) error {
	if len(puts) == 0 && len(dels) == 0 {
		return nil
	}
	return s.log.appendFrame(func(b []byte) ([]byte, error) {
		// Room for every entry at once: a commit's frame is grown by
		// doubling at most when a changed session's model is large.
		room := len(puts)*(13+96) + len(dels)*9
		for _, x := range puts {
			room += len(x.raw)
		}
		b = slices.Grow(b, room)
		j := s.j[:0]
		var err error
		for _, x := range puts {
			var at int
			b, at = putHead(b, x.s.SEID)
			if b, j, err = x.appendTo(b, j); err != nil {
				return b, err
			}
			putEnd(b, at)
		}
		s.j = j
		for _, id := range dels {
			b = appendDel(b, id)
		}
		return b, nil
	})
}

// CommitModels writes sessions as models.
func (s *Store) CommitModels(ss []*Session) error {
	recs := make([]record, len(ss))
	for i, x := range ss {
		recs[i] = record{s: x}
	}
	return s.Commit(recs, nil)
}

// Sessions reads every stored session, in SEID order; raw records are
// decoded by establishment (the parser the requests use).
func (s *Store) Sessions(establishment func(raw []byte, now time.Time) (*Session, error)) ([]*Session, error) {
	live, err := s.log.sessions()
	if err != nil {
		return nil, err
	}
	var out []*Session
	for _, seid := range slices.Sorted(maps.Keys(live)) {
		v := live[seid]
		if v == nil {
			continue // deleted
		}
		x, err := decodeRecord(v, establishment)
		if err != nil {
			return nil, fmt.Errorf("session %#x: %w", seid, err)
		}
		out = append(out, x)
	}
	return out, nil
}

// decodeRecord reads a stored value (record.appendTo).
func decodeRecord(v []byte, establishment func(raw []byte, now time.Time) (*Session, error)) (*Session, error) {
	switch v[0] {
	case recModel:
		var x Session
		if err := json.Unmarshal(v[1:], &x); err != nil {
			return nil, err
		}
		return &x, nil
	case recRaw:
		n, w := binary.Uvarint(v[1:])
		if w <= 0 || 1+w+int(n) > len(v) {
			return nil, fmt.Errorf("bad record")
		}
		var m rawMeta
		if err := json.Unmarshal(v[1+w:1+w+int(n)], &m); err != nil {
			return nil, err
		}
		x, err := establishment(v[1+w+int(n):], time.Unix(m.Created, 0))
		if err != nil {
			return nil, err
		}
		x.SEID, x.SubID, x.Chosen = m.SEID, m.SubID, m.Chosen
		for _, u := range m.URRs {
			if r := x.URRs.Get(u.ID); r != nil {
				r.Seq, r.Start, r.Base, r.NextPerio = u.Seq, u.Start, u.Base, u.NextPerio
			}
		}
		return x, nil
	}
	return nil, fmt.Errorf("unknown record format %q", v[0])
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

// storedSession is a session as the store writes it: rules as lists (a
// JSON object keyed by rule id costs a string conversion and a sort per
// map; lists were half the encoding time of a session).
type storedSession struct {
	SEID    uint64            `json:"seid"`
	CPSEID  uint64            `json:"cp_seid"`
	CPAddr  netip.Addr        `json:"cp_addr"`
	CPNode  string            `json:"cp_node"`
	PDNType uint8             `json:"pdn_type,omitempty"`
	MTU     uint16            `json:"mtu,omitempty"`
	SubID   uint32            `json:"sub_id,omitempty"`
	Chosen  map[string]uint32 `json:"chosen,omitempty"`
	Acc     Usage             `json:"acc"`
	Created int64             `json:"created"`
	PDRs    []*PDR            `json:"pdrs"`
	FARs    []*FAR            `json:"fars"`
	QERs    []*QER            `json:"qers,omitempty"`
	URRs    []*URR            `json:"urrs,omitempty"`
	TEs     []*TE             `json:"tes,omitempty"`
}

// MarshalJSON writes the stored form.
func (s *Session) MarshalJSON() ([]byte, error) {
	x := storedSession{SEID: s.SEID, CPSEID: s.CPSEID, CPAddr: s.CPAddr, CPNode: s.CPNode, PDNType: s.PDNType,
		MTU: s.MTU, SubID: s.SubID, Chosen: s.Chosen, Acc: s.Acc, Created: s.Created.Unix()}
	for _, r := range s.PDRs.All() {
		x.PDRs = append(x.PDRs, r)
	}
	for _, r := range s.FARs.All() {
		x.FARs = append(x.FARs, r)
	}
	for _, r := range s.QERs.All() {
		x.QERs = append(x.QERs, r)
	}
	for _, r := range s.URRs.All() {
		x.URRs = append(x.URRs, r)
	}
	for _, r := range s.TEs.All() {
		x.TEs = append(x.TEs, r)
	}
	return json.Marshal(&x)
}

// UnmarshalJSON reads the stored form.
func (s *Session) UnmarshalJSON(b []byte) error {
	var x storedSession
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*s = *newSession(x.SEID, time.Unix(x.Created, 0))
	s.CPSEID, s.CPAddr, s.CPNode, s.PDNType, s.MTU = x.CPSEID, x.CPAddr, x.CPNode, x.PDNType, x.MTU
	s.SubID, s.Chosen, s.Acc = x.SubID, x.Chosen, x.Acc
	for _, r := range x.PDRs {
		s.PDRs.Put(r.ID, r)
	}
	for _, r := range x.FARs {
		s.FARs.Put(r.ID, r)
	}
	for _, r := range x.QERs {
		s.QERs.Put(r.ID, r)
	}
	for _, r := range x.URRs {
		s.URRs.Put(r.ID, r)
	}
	for _, r := range x.TEs {
		s.TEs.Put(r.ID, r)
	}
	return nil
}
