package upf

import (
	"crypto/rand"
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"sync"
	"time"
)

// Transactions (TS 29.244 clause 6.4, reliable delivery over UDP).
//
// Requests we receive are keyed by (peer, sequence number).  The first
// copy is handled; a copy that arrives while it is being handled is
// dropped (its answer is coming); a copy that arrives after the answer was
// sent gets the same answer again, from the cache, without being handled
// twice (clause 6.4: "the receiver shall respond with the same response").
// Answers are kept for Retain, which must exceed the peer's T1 x N1.
//
// A copy is the same request only if its bytes are: a peer that restarts
// numbers its requests from where its new process starts, and may reuse
// a number this cache still holds for a request of the old process.
// Answering that with the old answer (an Association Setup Response for a
// Session Establishment Request) would confuse the peer for good, so each
// entry keeps a 64-bit hash of its request; a number reused with other
// bytes is a new request (counted as sequence_reused) and replaces it.
//
// The cache is two generations of maps, swapped every Retain/2: an entry
// lives between Retain/2 and Retain, and expiry costs nothing per entry
// (no timer each; at 10,000 requests a second that would be 10,000
// timers live at any time).

type rxKey struct {
	peer netip.AddrPort
	seq  uint32
}

// rxEntry is held in the maps by pointer: Begin gives it to the request's
// handling, and its answer is stored through it (AnswerTo) without a
// second look into a map of tens of thousands of entries, long evicted
// from the cache by then (a miss in the cache and the TLB: 7 % of an
// establishment's CPU time, against an allocation of 48 octets).
type rxEntry struct {
	sum  uint64 // hash of the request's bytes
	resp []byte // nil while the request is being handled
}

type dupCache struct {
	mu        sync.Mutex
	cur, prev rxGen // rxgen.go
	swapped   time.Time
	half      time.Duration
}

func newDupCache(retain time.Duration) *dupCache {
	return &dupCache{cur: newRxGen(), prev: newRxGen(), half: retain / 2}
}

// Verdict of a request seen again or for the first time.
type dupVerdict int

const (
	dupNew      dupVerdict = iota // handle it
	dupInFlight                   // being handled: drop this copy
	dupAnswered                   // answered: send the cached answer
	dupReused                     // a new request under a number the cache held: handle it
)

func (c *dupCache) rotate(now time.Time) {
	if now.Sub(c.swapped) >= c.half {
		c.prev, c.cur = c.cur, newRxGen()
		c.swapped = now
	}
}

// Begin records a request (sum: hash of its bytes, requestSum); for a
// duplicate it returns what to do and the cached answer.
func (c *dupCache) Begin(peer netip.AddrPort, seq uint32, sum uint64, now time.Time) (dupVerdict, []byte) {
	v, resp, _ := c.BeginEntry(peer, seq, sum, now)
	return v, resp
}

// BeginEntry is Begin, with the entry of a request to handle (dupNew,
// dupReused) for AnswerTo.
func (c *dupCache) BeginEntry(peer netip.AddrPort, seq uint32, sum uint64, now time.Time) (dupVerdict, []byte, *rxEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rotate(now)
	e, ok := c.cur.get(peer, seq)
	if !ok {
		if e, ok = c.prev.get(peer, seq); ok {
			c.cur.set(peer, seq, e)
		}
	}
	if ok && e.sum == sum {
		if e.resp == nil {
			return dupInFlight, nil, nil
		}
		return dupAnswered, e.resp, nil
	}
	if ok {
		// (A new request's number is in neither map: no third probe
		// of a map of tens of thousands of entries for it.)
		c.prev.del(peer, seq)
	}
	n := &rxEntry{sum: sum}
	c.cur.set(peer, seq, n)
	if ok {
		return dupReused, nil, n
	}
	return dupNew, nil, n
}

// requestSum hashes a request for Begin: hash/maphash (AES-based where
// the CPU has it), a few tens of nanoseconds for a request of a few
// hundred bytes where a byte-at-a-time FNV-1a took 1.5 % of an
// establishment.  The hash key is this process's: sums are never stored.
func requestSum(b []byte) uint64 { return maphash.Bytes(sumKey, b) }

var sumKey = maphash.MakeSeed()

// Answer stores the answer sent for a request.
func (c *dupCache) Answer(peer netip.AddrPort, seq uint32, resp []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cur.get(peer, seq); ok {
		e.resp = resp
		return
	}
	if e, ok := c.prev.get(peer, seq); ok {
		e.resp = resp
		return
	}
	c.cur.set(peer, seq, &rxEntry{resp: resp})
}

// AnswerTo stores the answer in the entry BeginEntry gave (nil: looked
// up as Answer does).  An entry the cache dropped meanwhile (forgotten,
// expired, replaced by a new request under the number) keeps it to
// itself: no later copy of the request is answered from there.
func (c *dupCache) AnswerTo(e *rxEntry, peer netip.AddrPort, seq uint32, resp []byte) {
	if e == nil {
		c.Answer(peer, seq, resp)
		return
	}
	c.mu.Lock()
	e.resp = resp
	c.mu.Unlock()
}

// Forget drops a request that was not answered (and will not be: the
// peer's retransmission is handled afresh).
func (c *dupCache) Forget(peer netip.AddrPort, seq uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur.del(peer, seq)
	c.prev.del(peer, seq)
}

// Len is the number of cached requests.
func (c *dupCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur.n + c.prev.n
}

// Requests we send (heartbeats, session reports, association set-up) are
// retransmitted every T1 up to N1 times until their answer comes
// (clause 6.4); the sequence number is ours, 24 bits.

type txReq struct {
	peer     netip.AddrPort
	seq      uint32
	msg      []byte
	left     int
	deadline time.Time
	done     func(resp []byte, ok bool) // ok false: no answer after N1 tries
}

type outbox struct {
	mu      sync.Mutex
	seq     uint32
	pending map[rxKey]*txReq
	t1      time.Duration
	n1      int
}

// The first number is random: the peer's duplicate cache may still hold
// answers to the numbers a previous process of ours used.
func newOutbox(t1 time.Duration, n1 int) *outbox {
	var b [4]byte
	rand.Read(b[:])
	return &outbox{pending: map[rxKey]*txReq{}, t1: t1, n1: n1, seq: binary.BigEndian.Uint32(b[:]) & 0xffffff}
}

// Next is the next sequence number (1..2^24-1, wrapping).
func (o *outbox) Next() uint32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seq = (o.seq + 1) & 0xffffff
	if o.seq == 0 {
		o.seq = 1
	}
	return o.seq
}

// Add records a request sent for the first time.
func (o *outbox) Add(peer netip.AddrPort, seq uint32, msg []byte, now time.Time, done func([]byte, bool)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending[rxKey{peer, seq}] = &txReq{peer: peer, seq: seq, msg: msg, left: o.n1, deadline: now.Add(o.t1), done: done}
}

// Match takes the request a response of type typ answers; false if none
// is pending under that number, or the one pending is not of the type
// this answers (TS 29.244 clause 7.3: an answer's type is its request's
// plus one), which stays pending.
func (o *outbox) Match(peer netip.AddrPort, seq uint32, typ uint8) (*txReq, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := rxKey{peer, seq}
	r, ok := o.pending[k]
	if !ok || len(r.msg) < 2 || r.msg[1]+1 != typ {
		return nil, false
	}
	delete(o.pending, k)
	return r, true
}

// Due returns the requests to send again and those that ran out of tries.
func (o *outbox) Due(now time.Time) (resend, expired []*txReq) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, r := range o.pending {
		if now.Before(r.deadline) {
			continue
		}
		if r.left == 0 {
			delete(o.pending, k)
			expired = append(expired, r)
			continue
		}
		r.left--
		r.deadline = now.Add(o.t1)
		resend = append(resend, r)
	}
	return resend, expired
}

// Len is the number of requests awaiting an answer.
func (o *outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}
