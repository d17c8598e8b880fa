package upf

import (
	"fmt"
	"net/netip"
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
	sess     map[uint64]*entry
	byCP     map[cpRef]uint64
	keys     map[dpKey]uint64
	addrs    map[netip.Prefix]uint64
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

// cpRef is the control plane's name for a session.
type cpRef struct {
	node string
	seid uint64
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
func NewState(lo, hi uint32, firstSEID uint64) *State {
	return &State{sess: map[uint64]*entry{}, byCP: map[cpRef]uint64{}, keys: map[dpKey]uint64{},
		addrs: map[netip.Prefix]uint64{}, teids: map[uint32]uint64{}, nextID: lo, maxID: hi,
		nextSEID: firstSEID, nextTEID: 1, metered: map[uint64]struct{}{}}
}

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

// holdings lists what a plan claims.
func holdings(p *Plan) (keys []dpKey, addrs []netip.Prefix, teids []uint32) {
	if p == nil {
		return
	}
	if p.Sub != nil {
		keys = append(keys, p.Sub.Key.dp())
		addrs = p.Sub.Addrs
	}
	for _, d := range p.CPRDown {
		teids = append(teids, d.TEID)
	}
	return
}

// reserve claims what next holds and prev does not, for seid; nothing is
// claimed if any of it belongs to another session.
func (st *State) reserve(seid uint64, next, prev *Plan) *Reject {
	nk, na, nt := holdings(next)
	for _, k := range nk {
		if o, ok := st.keys[k]; ok && o != seid {
			return reject(ie.CauseRuleCreationModificationFailure, ie.CreateTrafficEndpoint,
				"access key (%s %d.%d pppoe %#x) belongs to session %#x", k.Port, k.STag, k.CTag, k.PPPoE, o)
		}
	}
	for _, a := range na {
		if o, ok := st.addrs[a]; ok && o != seid {
			return reject(ie.CauseRuleCreationModificationFailure, ie.UEIPAddress, "address %s belongs to session %#x", a, o)
		}
	}
	for _, t := range nt {
		if o, ok := st.teids[t]; ok && o != seid {
			return reject(ie.CauseInvalidFTEIDAllocationOption, ie.FTEID, "TEID %#x belongs to session %#x", t, o)
		}
	}
	for _, k := range nk {
		st.keys[k] = seid
	}
	for _, a := range na {
		st.addrs[a] = seid
	}
	for _, t := range nt {
		st.teids[t] = seid
	}
	return nil
}

// release gives back what drop holds and keep does not.
func (st *State) release(seid uint64, drop, keep *Plan) {
	dk, da, dt := holdings(drop)
	kk, ka, kt := holdings(keep)
	for _, k := range dk {
		if !containsKey(kk, k) && st.keys[k] == seid {
			delete(st.keys, k)
		}
	}
	for _, a := range da {
		if !containsPrefix(ka, a) && st.addrs[a] == seid {
			delete(st.addrs, a)
		}
	}
	for _, t := range dt {
		if !containsTEID(kt, t) && st.teids[t] == seid {
			delete(st.teids, t)
		}
	}
}

func containsKey(s []dpKey, k dpKey) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}

func containsPrefix(s []netip.Prefix, k netip.Prefix) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}

func containsTEID(s []uint32, k uint32) bool {
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
	return len(st.sess), st.subs
}

// meter records whether a committed session is polled for usage.
func (st *State) meter(seid uint64, e *entry) {
	if e != nil && e.live && e.subID != 0 && len(e.s.URRs) > 0 {
		st.metered[seid] = struct{}{}
	} else {
		delete(st.metered, seid)
	}
}
