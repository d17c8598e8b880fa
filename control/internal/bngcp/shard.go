package bngcp

import (
	"container/heap"
	"context"
	"time"

	"golang.org/x/time/rate"

	"edgeplane/control/internal/bngcp/frame"
)

// A shard is one event loop owning a share of the subscribers (by a hash
// of port, tags and MAC, so every frame of a subscriber lands on the same
// shard): their sessions, their timers, and a batch of frames to send.
// Frames, AAA answers, user-plane answers and API requests reach it as
// events on one channel; it handles what is queued, sends the frames it
// built in one batch, then waits again.
//
//	access reader --frame--> shard.in --> handle --> out batch --> Access.Send
//	AAA / PFCP goroutines --func--^        timers (heap) --^
//
// Cost per frame is a map lookup and the protocol's work; no locks except
// the pools' and the global index's, taken once per session set-up.

type event struct {
	port *portState
	hdr  frame.Header
	data []byte // the whole frame (hdr.Len octets of header first)
	fn   func()
}

type timerEntry struct {
	at  int64
	s   *session
	k   timerKind
	gen uint32
}

type timerHeap []timerEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type circuitKey struct {
	port string
	line frame.Line
	mac  frame.MAC
}

type pppKey struct {
	port string
	sid  uint16
}

type shard struct {
	srv *Server
	idx int
	in  chan event

	all   map[uint64]*session     // every session of the shard, by id
	ipoe  map[circuitKey]*session // IPoE sessions by circuit
	lines map[lineKey]*session    // IPoE sessions by line (one per line: the user plane's key)
	ppp   map[pppKey]*session     // PPPoE sessions by port and session id
	byMAC map[circuitKey][]*session

	timers  timerHeap
	gen     uint32
	wake    *time.Timer
	wakeAt  int64
	out     []Out
	limiter *rate.Limiter
	perMAC  map[circuitKey]int // discovery frames from unknown subscribers this second
	perSec  int64
}

type lineKey struct {
	port string
	line frame.Line
}

func newShard(s *Server, i int, perSecond float64, burst int) *shard {
	return &shard{srv: s, idx: i, in: make(chan event, 8192), all: map[uint64]*session{},
		ipoe: map[circuitKey]*session{}, lines: map[lineKey]*session{}, ppp: map[pppKey]*session{},
		byMAC: map[circuitKey][]*session{}, wake: time.NewTimer(time.Hour),
		limiter: rate.NewLimiter(rate.Limit(perSecond), burst), perMAC: map[circuitKey]int{}}
}

func (sh *shard) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-sh.in:
			sh.handle(ev)
			// Whatever else is queued, up to a batch, before sending.
			for n := 0; n < 256; n++ {
				select {
				case ev = <-sh.in:
					sh.handle(ev)
					continue
				default:
				}
				break
			}
		case <-sh.wake.C:
			sh.wakeAt = 0
		}
		sh.fire()
		sh.flush()
	}
}

func (sh *shard) handle(ev event) {
	if ev.fn != nil {
		ev.fn()
		return
	}
	sh.frame(ev)
}

// post runs fn on the shard (from any goroutine).
func (sh *shard) post(fn func()) { sh.in <- event{fn: fn} }

// --- timers ---------------------------------------------------------------

func (sh *shard) now() time.Time { return sh.srv.now() }

func (sh *shard) arm(s *session, k timerKind, after time.Duration) {
	sh.gen++
	if sh.gen == 0 {
		sh.gen = 1
	}
	s.timers[k] = sh.gen
	at := sh.now().Add(after).UnixNano()
	heap.Push(&sh.timers, timerEntry{at: at, s: s, k: k, gen: sh.gen})
	if sh.wakeAt == 0 || at < sh.wakeAt {
		sh.wakeAt = at
		d := time.Duration(at - sh.now().UnixNano())
		if d < 0 {
			d = 0
		}
		sh.wake.Reset(d)
	}
}

func (sh *shard) stop(s *session, k timerKind) { s.timers[k] = 0 }

// fire runs the timers that are due and sets the wake-up for the next.
func (sh *shard) fire() {
	now := sh.now().UnixNano()
	for len(sh.timers) > 0 {
		e := sh.timers[0]
		if e.at > now {
			break
		}
		heap.Pop(&sh.timers)
		if e.s.dead || e.s.timers[e.k] != e.gen {
			continue
		}
		e.s.timers[e.k] = 0
		sh.timeout(e.s, e.k)
	}
	if len(sh.timers) > 0 {
		at := sh.timers[0].at
		if sh.wakeAt == 0 || at < sh.wakeAt || sh.wakeAt <= now {
			sh.wakeAt = at
			d := time.Duration(at - now)
			if d < 0 {
				d = 0
			}
			sh.wake.Reset(d)
		}
	}
}

func (sh *shard) timeout(s *session, k timerKind) {
	switch k {
	case tLCP, tIPCP, tIPv6CP, tAuth, tKeepalive:
		if s.ppp != nil {
			s.ppp.timeout(k)
		}
	case tLease4, tLease6:
		if s.ipoe != nil {
			sh.leaseTimeout(s, k)
		}
	case tRA:
		sh.unsolicitedRA(s)
	case tSetup:
		if s.state != stUp && s.state != stTerminating {
			sh.srv.ctr.inc(cSetupTimeout)
			sh.terminate(s, causeSetupTimeout)
		}
	case tSessionEnd:
		sh.srv.ctr.inc(cSessionTimeout)
		sh.terminate(s, causeSessionTimeout)
	}
}

// --- output -------------------------------------------------------------------

func (sh *shard) send(port *portState, b []byte) {
	sh.out = append(sh.out, Out{Port: port.cfg.Name, Frame: b})
}

// sendFor sends a frame of session s: in its own redirect tunnel once
// the user plane has the session.
func (sh *shard) sendFor(s *session, b []byte) {
	o := Out{Port: s.port.cfg.Name, Frame: b}
	if s.upDone && s.state != stTerminating {
		// (A session's last frames -- Terminate-Request, PADT -- take the
		// port's tunnel: its own goes with the PFCP deletion.)
		o.Session = s.id
	}
	sh.out = append(sh.out, o)
}

func (sh *shard) flush() {
	if len(sh.out) == 0 {
		return
	}
	n := sh.srv.access.Send(sh.out)
	sh.srv.ctr.add(cAccessTx, uint64(n))
	if n < len(sh.out) {
		sh.srv.ctr.add(cAccessSendErr, uint64(len(sh.out)-n))
	}
	for i := range sh.out {
		sh.out[i] = Out{}
	}
	sh.out = sh.out[:0]
}

// --- admission of new subscribers ---------------------------------------------

// admit: may a discovery frame (PADI, DHCPDISCOVER, SOLICIT) from a
// subscriber without a session start work?  A token bucket per shard
// (the configured total split across shards) and a count per MAC per
// second bound what a flood costs.
func (sh *shard) admit(k circuitKey) bool {
	if !sh.macAllows(k) {
		return false
	}
	if !sh.limiter.AllowN(sh.now(), 1) {
		return false
	}
	sh.macCount(k)
	return true
}

// again: may a discovery frame of a subscriber that has a session (a
// client starting over, or a flood from it) be answered?  Only the
// per-MAC count applies: it costs no new session.
func (sh *shard) again(k circuitKey) bool {
	if !sh.macAllows(k) {
		return false
	}
	sh.macCount(k)
	return true
}

func (sh *shard) macAllows(k circuitKey) bool {
	sec := sh.now().Unix()
	if sec != sh.perSec {
		sh.perSec = sec
		clear(sh.perMAC)
	}
	return float64(sh.perMAC[k]) < sh.srv.cfg.Limits.PerMACPerSecond
}

func (sh *shard) macCount(k circuitKey) {
	if len(sh.perMAC) < 65536 {
		sh.perMAC[k]++
	}
}
