package upf

import (
	"context"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/pfcp/wire"
)

// Session requests decoded on every core.
//
// Decoding a session request (go-pfcp's IEs, the session model) and
// planning it (translation, reservations) is two thirds of what the
// function spends on an establishment.  One reader goroutine doing it
// all gets one core at most -- and on cores shared with other work, one
// thread's share of them.  The reader keeps what must follow arrival
// order (framing, the duplicate cache, node messages: associations,
// heartbeats) and hands session requests to Config.Decoders goroutines,
// every request of a session to the same one -- by the SEID of its
// header, an establishment by its CP F-SEID -- so that one session's
// requests are handled in the order they came while different sessions'
// are decoded in parallel.  Planning takes the state's lock as before (a
// request that waited for its busy session is planned from the completer,
// concurrently with the reader, already).
//
//	reader: recvmmsg, framing, duplicates --(by session)--> decoder 0..N-1:
//	                                                        decode, plan --> applyCh
//
// A decoder's queue holds the requests of whole receive batches; when
// every queue is full the reader waits, and requests wait in the
// socket's buffer as they did before.

// decodeJob is one session request for a decoder.
type decodeJob struct {
	m    []byte // the message: the job's own copy (the receive buffer is reused)
	h    wire.Header
	peer netip.AddrPort
	dup  *rxEntry  // its entry in the duplicate cache
	at   time.Time // when it arrived
}

type decoders struct {
	ch   []chan []decodeJob
	pend [][]decodeJob // this receive batch's jobs, by decoder
	slab []byte        // copies of the messages, many to an allocation
}

// slabSize is the allocation the messages' copies are carved from.
const slabSize = 64 << 10

func newDecoders(n int) *decoders {
	d := &decoders{ch: make([]chan []decodeJob, n), pend: make([][]decodeJob, n)}
	for i := range d.ch {
		d.ch[i] = make(chan []decodeJob, 64)
	}
	return d
}

// runDecoder decodes one decoder's jobs until ctx ends.
func (u *UPF) runDecoder(ctx context.Context, ch chan []decodeJob) {
	var sc wire.Scratch
	for {
		select {
		case <-ctx.Done():
			return
		case jobs := <-ch:
			for _, j := range jobs {
				u.decode(j.m, j.h, j.peer, &sc, j.dup, true, j.at) // j.m is in the slab
			}
		}
	}
}

// handoff decodes a request that passed the duplicate cache: a session
// request on its session's decoder (when the decoders run), anything
// else here.
func (u *UPF) handoff(m []byte, h wire.Header, peer netip.AddrPort, dup *rxEntry, at time.Time) {
	d := u.dec
	if d == nil || !isSessionMsg(h.Type) {
		u.decode(m, h, peer, &u.inline, dup, false, at)
		return
	}
	k := int(mix(sessionKey(m, h)) % uint64(len(d.ch)))
	if len(m) > cap(d.slab)-len(d.slab) {
		d.slab = make([]byte, 0, max(slabSize, len(m)))
	}
	off := len(d.slab)
	d.slab = append(d.slab, m...)
	d.pend[k] = append(d.pend[k], decodeJob{d.slab[off:len(d.slab):len(d.slab)], h, peer, dup, at})
}

// flush gives each decoder the jobs of one receive batch.
func (d *decoders) flush(ctx context.Context) {
	for k, jobs := range d.pend {
		if len(jobs) == 0 {
			continue
		}
		select {
		case d.ch[k] <- jobs:
		case <-ctx.Done():
			return
		}
		d.pend[k] = nil
	}
}

// sessionKey is what keeps a session's requests on one decoder: the
// SEID of the header, or for an establishment (SEID 0) the CP F-SEID's
// SEID, found by walking the top-level IEs (bounds checked: the IEs have
// not been checked yet); the sequence number when there is none.
func sessionKey(m []byte, h wire.Header) uint64 {
	if h.SEID != 0 {
		return h.SEID
	}
	b := wire.Body(m, h)
	for len(b) >= 4 {
		t, l := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		if 4+l > len(b) {
			break
		}
		if t == ie.FSEID && l >= 9 {
			return binary.BigEndian.Uint64(b[5:])
		}
		b = b[4+l:]
	}
	return uint64(h.Sequence)
}

// mix spreads consecutive keys (control planes number sessions 1, 2, 3)
// over the decoders (Fibonacci hashing).
func mix(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> 32 }
