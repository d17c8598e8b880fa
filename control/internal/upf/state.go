package upf

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/wmnsk/go-pfcp/ie"
)

// State is every session and what each one holds: its subscriber id in the
// data plane, its access key, its addresses, its redirect tunnels.  A
// change is planned first -- everything it needs is checked and reserved
// here, nothing is sent -- then applied; on success the old holdings the
// new plan does not keep are released, on failure the new ones are
// (commit / rollback).  One mutex: planning and committing are short, and
// the data plane work happens outside it.
type State struct {
	mu       sync.Mutex
	sess     sessTable       // by our SEID (sesstable.go)
	byCP     cpTable         // by the control plane's node and SEID (sesstable.go)
	keys     *accessKeyTable // access keys (accesskeys.go)
	addrs    *addrTable      // UE addresses and prefixes (addrtable.go)
	teids    map[uint32]uint64
	free     []uint32 // subscriber ids free for reuse
	nextID   uint32   // next never-used subscriber id
	maxID    uint32   // the highest id this function owns
	nextSEID uint64
	nextTEID uint32
	subs     int // sessions with a subscriber (committed)
	// metered are the committed sessions with URRs and a subscriber: the
	// ones usage polling reads (a scan of every session each poll cost
	// more than the establishments themselves at 64K sessions).
	metered map[uint64]struct{}
}

// entry is one session's committed state and the change in flight.
type entry struct {
	s     *Session // committed; for a session being established, the planned one
	plan  *Plan
	subID uint32
	live  bool // committed at least once
	busy  bool // an operation is being applied
	queue []queued
	last  Usage // the data plane's counters when last read
}

// queued is a request for a busy session, handled when it is idle again.
type queued struct {
	peer netip.AddrPort
	msg  []byte
}

// NewState gives the function subscriber ids lo..hi of the data plane.
//
// The maps are sized for that many sessions from the start (a session has
// one access key and, dual-stack, two prefixes): grown one doubling at a
// time while the table filled, their rehashing was 4 % of an
// establishment's CPU time.  At the default 65,536 ids that is 26 MiB
// up front (the sessions themselves take 1.5-4 KiB each when there).
func NewState(lo, hi uint32, firstSEID uint64) *State {
	n := 0
	if hi >= lo {
		n = int(min(hi-lo+1, maxPresized))
	}
	return &State{sess: newSessTable(n), byCP: newCPTable(n),
		keys: newAccessKeyTable(n), addrs: newAddrTable(2 * n),
		teids: map[uint32]uint64{}, nextID: lo, maxID: hi,
		nextSEID: firstSEID, nextTEID: 1, metered: map[uint64]struct{}{}}
}

// maxPresized bounds the sessions the maps are sized for at start (a wide
// --sub-ids range must not cost its whole size in memory up front).
const maxPresized = 1 << 16

func (st *State) allocID() (uint32, bool) {
	if n := len(st.free); n > 0 {
		id := st.free[n-1]
		st.free = st.free[:n-1]
		return id, true
	}
	if st.nextID > st.maxID {
		return 0, false
	}
	st.nextID++
	return st.nextID - 1, true
}

func (st *State) freeID(id uint32) {
	if id != 0 {
		st.free = append(st.free, id)
	}
}

// holdings is what a plan claims: its subscriber's access key and
// addresses, its redirect tunnels' TEIDs.  Read in place (reserve and
// release run for every establishment: copying them into slices was an
// allocation each).
type holdings struct {
	hasKey bool
	key    dpKey
	addrs  []netip.Prefix
	down   []CPRDown
}

func holdingsOf(p *Plan) (h holdings) {
	if p == nil {
		return
	}
	if p.Sub != nil {
		h.hasKey, h.key, h.addrs = true, p.Sub.Key.dp(), p.Sub.Addrs
	}
	h.down = p.CPRDown
	return
}

func (h *holdings) holdsKey(k dpKey) bool { return h.hasKey && h.key == k }

func (h *holdings) holdsTEID(t uint32) bool {
	for _, d := range h.down {
		if d.TEID == t {
			return true
		}
	}
	return false
}

// reserve claims what next holds and prev does not, for seid; nothing is
// claimed if any of it belongs to another session.  Each key and address
// is claimed with one probe of its table (taken when free, its owner
// told when not); a refusal gives back what this call took.
func (st *State) reserve(seid uint64, next, prev *Plan) *Reject {
	n := holdingsOf(next)
	keyAdded := false
	if n.hasKey {
		o, added := st.keys.claim(n.key, seid)
		if o != seid {
			k := n.key
			return reject(ie.CauseRuleCreationModificationFailure, ie.CreateTrafficEndpoint,
				"access key (%s %d.%d pppoe %#x) belongs to session %#x", k.Port, k.STag, k.CTag, k.PPPoE, o)
		}
		keyAdded = added
	}
	var addedBuf [4]int
	added := addedBuf[:0] // indices in n.addrs of the addresses this call took
	undo := func() {
		for _, i := range slices.Backward(added) {
			st.addrs.del(n.addrs[i])
		}
		if keyAdded {
			st.keys.del(n.key)
		}
	}
	for i, a := range n.addrs {
		o, fresh := st.addrs.claim(a, seid)
		if o != seid {
			undo()
			return reject(ie.CauseRuleCreationModificationFailure, ie.UEIPAddress, "address %s belongs to session %#x", a, o)
		}
		if fresh {
			added = append(added, i)
		}
	}
	for _, d := range n.down {
		if o, ok := st.teids[d.TEID]; ok && o != seid {
			undo()
			return reject(ie.CauseInvalidFTEIDAllocationOption, ie.FTEID, "TEID %#x belongs to session %#x", d.TEID, o)
		}
	}
	for _, d := range n.down {
		st.teids[d.TEID] = seid
	}
	return nil
}

// release gives back what drop holds and keep does not.
func (st *State) release(seid uint64, drop, keep *Plan) {
	d, k := holdingsOf(drop), holdingsOf(keep)
	if d.hasKey && !k.holdsKey(d.key) {
		if o, _ := st.keys.get(d.key); o == seid {
			st.keys.del(d.key)
		}
	}
	for _, a := range d.addrs {
		if o, _ := st.addrs.get(a); o == seid && !containsPrefix(k.addrs, a) {
			st.addrs.del(a)
		}
	}
	for _, t := range d.down {
		if !k.holdsTEID(t.TEID) && st.teids[t.TEID] == seid {
			delete(st.teids, t.TEID)
		}
	}
}

func containsPrefix(s []netip.Prefix, k netip.Prefix) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}

// chooseTEIDs gives the plan's CHOOSE tunnels their TEIDs: the ones the
// session has for the same CHOOSE (kept across modifications and
// restarts: the control plane knows them), else fresh ones.
func (st *State) chooseTEIDs(p *Plan, had map[string]uint32) {
	for i := range p.CPRDown {
		d := &p.CPRDown[i]
		if !d.choose {
			continue
		}
		if t, ok := had[d.ck.String()]; ok {
			d.TEID = t
			continue
		}
		if t, ok := p.chosenSoFar(d.ck, i); ok {
			d.TEID = t
			continue
		}
		for {
			t := st.nextTEID
			st.nextTEID++
			if _, used := st.teids[t]; !used && t != 0 {
				d.TEID = t
				break
			}
		}
	}
}

// chosenSoFar finds a TEID given to the same CHOOSE earlier in the plan.
func (p *Plan) chosenSoFar(k chooseKey, before int) (uint32, bool) {
	for _, d := range p.CPRDown[:before] {
		if d.choose && d.ck == k && d.TEID != 0 {
			return d.TEID, true
		}
	}
	return 0, false
}

func (k chooseKey) String() string { return fmt.Sprintf("%c%d", k.kind, k.id) }

// chosenMap records a plan's chosen TEIDs in its session.
func chosenMap(p *Plan) map[string]uint32 {
	var m map[string]uint32
	for _, d := range p.CPRDown {
		if d.choose {
			if m == nil {
				m = map[string]uint32{}
			}
			m[d.ck.String()] = d.TEID
		}
	}
	return m
}

// Sessions is how many sessions exist (committed or being established).
func (st *State) Sessions() (all, withSub int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sess.Len(), st.subs
}

// meter records whether a committed session is polled for usage.
func (st *State) meter(seid uint64, e *entry) {
	if e != nil && e.live && e.subID != 0 && e.s.URRs.Len() > 0 {
		st.metered[seid] = struct{}{}
	} else {
		delete(st.metered, seid)
	}
}
