package upf

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/udpio"
	"edgeplane/control/internal/pfcp/wire"
)

// Applying changes in batches.
//
// Establishments arrive faster than one control-socket round trip each
// (sub-add waits for every downlink worker's HQoS pipe configuration): the
// applier takes every op waiting when it wakes, up to BatchMax, and sends
// the batch as one sub-add-bulk (adds and replacements), the counter reads
// the reports need (before anything changes) and the deletions --
// pipelined on one connection, the next batch going out while the
// completer waits for the previous one's answers (Pipeline batches in
// flight).  No timer holds a lone request back: at low rates a batch is
// one op, at high rates it is what queued during the previous batch.
//
//	reader --op--> applyCh --> applier --dpctl (pipelined)--> edgeplane-dp
//	                                 \--batch--> completer: answers in order,
//	                                             commit or roll back each op,
//	                                             store, PFCP answers
//
// Each session's outcome is its own.  The data plane applies a bulk whole
// or not at all and names the entry it refused: that op fails ("Rule
// creation/modification Failure"), the others go round again (retryCh).
// A connection lost mid-batch leaves the outcome unknown: the ops are
// tried again (an add is a replace, a delete of a gone subscriber is
// done), and the reconnection reconciles the data plane with the state.

type batch struct {
	ops     []*op
	reads   *dpctl.Call // one sub-counters for every op that reports usage
	readOps []*op
	bulk    *dpctl.Call
	addOps  []*op
	dels    []*dpctl.Call
	delOps  []*op
	failed  map[*op]*Reject
}

// maxTries bounds the rounds an op makes when the data plane's connection
// keeps failing; after that it is refused with "System failure".
const maxTries = 5

func (u *UPF) applier(ctx context.Context) {
	var carry *op
	for {
		var first *op
		if carry != nil {
			first, carry = carry, nil
		} else {
			select {
			case <-ctx.Done():
				return
			case first = <-u.retryCh:
			case first = <-u.applyCh:
			case <-u.kick:
				u.barrier()
				u.resync(ctx)
				continue
			}
		}
		if u.dp.Generation() != u.dpGen && !u.dpSeen.IsZero() {
			u.barrier()
			u.resync(ctx)
		}
		if first.kind == opPurge {
			u.barrier()
			u.runPurge(ctx, first)
			continue
		}
		// A slot first, the batch second: whatever arrives while the data
		// plane works on the batches in flight joins this one.
		select {
		case u.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		ops := []*op{first}
	drain:
		for len(ops) < u.cfg.BatchMax {
			var o *op
			select {
			case o = <-u.retryCh:
			default:
				select {
				case o = <-u.applyCh:
				default:
					break drain
				}
			}
			if o.kind == opPurge {
				carry = o
				break
			}
			ops = append(ops, o)
		}
		u.doneCh <- u.sendBatch(ctx, ops)
	}
}

// barrier waits until no batch is in flight.
func (u *UPF) barrier() {
	for i := 0; i < cap(u.slots); i++ {
		u.slots <- struct{}{}
	}
	for i := 0; i < cap(u.slots); i++ {
		<-u.slots
	}
}

func (u *UPF) sendBatch(ctx context.Context, ops []*op) *batch {
	b := &batch{ops: ops, failed: map[*op]*Reject{}}
	u.c.dpBatches.Add(1)
	// Sized for the whole batch (hundreds of ops at high rates: growing
	// these by doubling, the subscribers' copies most, was 4 % of the
	// function).
	live := make([]*op, 0, len(ops))
	for _, o := range ops {
		if ep, ok := u.nodes.epochOf(o.node); !ok || ep != o.epoch {
			// Planned for an association that has since been purged.
			b.failed[o] = reject(ie.CauseNoEstablishedPFCPAssociation, 0, "the association was released or restarted")
			continue
		}
		live = append(live, o)
	}
	plans := make([]*SubPlan, 0, len(live))
	for _, o := range live {
		if o.add != nil {
			plans = append(plans, o.nextPlan.Sub)
		}
	}
	if len(plans) > 0 {
		if err := u.prof.Ensure(ctx, u.dp, plans); err != nil {
			slog.Warn("data plane refused a profile", "err", err)
			var keep []*op
			for _, o := range live {
				if o.add != nil && (o.add.Policer != "" || o.add.Pipe != "") && !u.prof.has(o.add.Policer, o.add.Pipe) {
					b.failed[o] = u.dpReject(o, err)
					continue
				}
				keep = append(keep, o)
			}
			live = keep
		}
	}
	var ids []uint32
	for _, o := range live {
		if o.readUsage {
			b.readOps = append(b.readOps, o)
			ids = append(ids, o.prevSubOrNext())
		}
	}
	if len(ids) > 0 {
		b.reads = u.dp.GoSubCounters(ctx, ids)
	}
	subs := make([]dpctl.Subscriber, 0, len(live))
	b.addOps = make([]*op, 0, len(live))
	for _, o := range live {
		if o.add != nil {
			b.addOps = append(b.addOps, o)
			subs = append(subs, *o.add)
		}
	}
	if len(subs) > 0 {
		b.bulk = u.dp.GoSubAddBulk(ctx, subs)
	}
	for _, o := range live {
		if o.del != 0 {
			b.delOps = append(b.delOps, o)
			b.dels = append(b.dels, u.dp.GoSubDel(ctx, o.del))
		}
	}
	return b
}

func (o *op) prevSubOrNext() uint32 {
	if o.prevSub != 0 {
		return o.prevSub
	}
	return o.nextSub
}

// dpReject is the refusal of an op the data plane would not take.
func (u *UPF) dpReject(o *op, err error) *Reject {
	u.c.dpFailures.Add(1)
	return reject(ie.CauseRuleCreationModificationFailure, ie.CreatePDR, "data plane: %v", err)
}

func isGone(err error) bool {
	var de *dpctl.Error
	return errors.As(err, &de) && strings.Contains(de.Msg, "no subscriber")
}

func (u *UPF) completer(ctx context.Context) {
	var sc finishScratch
	for {
		var b *batch
		select {
		case <-ctx.Done():
			return
		case b = <-u.doneCh:
		}
		wait := context.Background() // answers always come: the connection either answers or dies
		retry := map[*op]bool{}      // again: a sibling in a refused bulk, or no answer
		lost := false                // no answer: the data plane is gone or restarting
		if b.reads != nil {
			res, err := b.reads.Wait(wait)
			if err == nil {
				if r, derr := dpctl.DecodeCounters(res); derr == nil {
					byID := make(map[uint32]dpctl.Counters, len(r.Rows))
					for _, row := range r.Rows {
						byID[row.ID] = row
					}
					for _, o := range b.readOps {
						if row, ok := byID[o.prevSubOrNext()]; ok {
							o.usage, o.usageOK = usageFrom(row, o.accessHeader()), true
						}
					}
				}
			} else if errors.Is(err, dpctl.ErrConnLost) {
				lost = true
				for _, o := range b.readOps {
					retry[o] = true
				}
			}
		}
		if b.bulk != nil {
			_, err := b.bulk.Wait(wait)
			if err != nil {
				var de *dpctl.Error
				if errors.As(err, &de) && de.Index >= 0 && de.Index < len(b.addOps) {
					bad := b.addOps[de.Index]
					b.failed[bad] = u.dpReject(bad, err)
					for _, o := range b.addOps {
						if o != bad {
							retry[o] = true
						}
					}
				} else if errors.As(err, &de) {
					// Refused without naming an entry: one by one next time.
					for _, o := range b.addOps {
						if len(b.addOps) == 1 {
							b.failed[o] = u.dpReject(o, err)
						} else {
							o.tries = maxTries - 1 // alone, and only once more
							retry[o] = true
						}
					}
				} else {
					lost = true
					for _, o := range b.addOps {
						retry[o] = true
					}
				}
			}
		}
		for i, k := range b.dels {
			_, err := k.Wait(wait)
			if err != nil && !isGone(err) {
				if errors.Is(err, dpctl.ErrConnLost) {
					lost = true
					retry[b.delOps[i]] = true
				} else {
					slog.Warn("data plane refused a subscriber deletion", "id", b.delOps[i].del, "err", err)
				}
			}
		}
		// The data plane did not answer (gone, restarting): the ops go
		// round again after a pause that grows with their tries, so a
		// restart of a few seconds does not use up maxTries at once.
		pause := time.Duration(0)
		for o := range retry {
			if d := time.Duration(o.tries+1) * 200 * time.Millisecond; lost && d > pause {
				pause = d
			}
		}
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-ctx.Done():
			}
		}
		var ok []*op
		for _, o := range b.ops {
			if rj := b.failed[o]; rj != nil {
				u.rollback(o, rj)
				continue
			}
			if retry[o] {
				o.tries++
				if o.tries >= maxTries {
					u.rollback(o, reject(ie.CauseSystemFailure, 0, "the data plane did not answer"))
					continue
				}
				u.c.dpRetries.Add(1)
				u.retryCh <- o
				continue
			}
			ok = append(ok, o)
		}
		u.finishWith(ok, &sc)
		<-u.slots
	}
}

// finishScratch is the lists finish makes for a batch, kept by the
// completer from batch to batch (sized for a batch of hundreds, they
// were ~200 octets of fresh memory a session).
type finishScratch struct {
	puts    []record
	dels    []uint64
	answers []*op
	msgs    []message.Message
	fast    [][]byte
	out     []udpio.Datagram
}

// finish commits ops whose data-plane work is done: state, store, the
// redirect's tables, then the answers.
func (u *UPF) finish(ops []*op) { u.finishWith(ops, nil) }

// finishWith is finish with its lists in sc (nil: made for the call).
func (u *UPF) finishWith(ops []*op, sc *finishScratch) {
	if len(ops) == 0 {
		return
	}
	if sc == nil {
		sc = &finishScratch{}
	}
	defer sc.release()
	now := u.now()
	st := u.st
	puts, dels, answers := sc.puts[:0], sc.dels[:0], sc.answers[:0]
	var again []queued
	st.mu.Lock()
	for _, o := range ops {
		e := st.sess.Get(o.seid)
		if e == nil {
			// Purged while its op was in flight: nothing to keep.
			st.release(o.seid, o.nextPlan, nil)
			continue
		}
		if o.usageOK {
			e.last = o.usage
		}
		switch o.kind {
		case opEstablish, opModify:
			st.release(o.seid, o.prevPlan, o.nextPlan)
			if o.prevSub != 0 && o.nextSub != o.prevSub {
				st.freeID(o.prevSub)
			}
			if o.prevSub == 0 && o.nextSub != 0 {
				st.subs++
			} else if o.prevSub != 0 && o.nextSub == 0 {
				st.subs--
			}
			// New URRs measure from now; the reports in the answer move
			// their URRs' measurement on (usageReports).
			total := o.next.Acc.add(e.last)
			for id, r := range o.next.URRs.All() {
				if o.prev == nil || o.prev.URRs.Get(id) == nil {
					r.Start, r.Base = now, total
					if r.PeriodS > 0 {
						r.NextPerio = now.Add(time.Duration(r.PeriodS) * time.Second)
					}
				}
			}
			if o.prev != nil && o.prev.CPSEID != o.next.CPSEID {
				// The control plane moved the session to a new F-SEID.
				st.byCP.Delete(o.prev.CPNode, o.prev.CPSEID)
				st.byCP.Set(o.next.CPNode, o.next.CPSEID, o.seid)
			}
			o.next.SubID, o.next.Chosen = o.nextSub, chosenMap(o.nextPlan)
			e.s, e.plan, e.subID, e.live = o.next, o.nextPlan, o.nextSub, true
			st.meter(o.seid, e)
			u.cpr.update(o.seid, o.nextPlan)
			puts = append(puts, record{o.next, o.raw})
			if o.kind == opEstablish {
				u.c.established.Add(1)
			} else {
				u.c.modified.Add(1)
			}
		case opDelete, opDeleteQuiet:
			st.release(o.seid, o.prevPlan, nil)
			st.freeID(o.prevSub)
			if o.prevSub != 0 {
				st.subs--
			}
			st.sess.Delete(o.seid)
			st.byCP.Delete(o.prev.CPNode, o.prev.CPSEID)
			st.meter(o.seid, nil)
			dels = append(dels, o.seid)
			u.cpr.update(o.seid, nil)
			if o.kind == opDeleteQuiet {
				u.c.unknownToCP.Add(1)
			} else {
				u.c.deleted.Add(1)
			}
		}
		if o.kind != opDeleteQuiet && o.seq != 0 {
			answers = append(answers, o)
		}
		again = append(again, e.queue...)
		e.queue, e.busy = nil, false
	}
	st.mu.Unlock()
	// Reports in the answers move their URRs' measurement on: built
	// before the store write, so the store has the moved measurement.
	sc.puts, sc.dels, sc.answers = puts, dels, answers
	msgs, fast := grown(sc.msgs, len(answers)), grown(sc.fast, len(answers))
	sc.msgs, sc.fast = msgs, fast
	for i, o := range answers {
		if fast[i] = u.establishedBytes(o); fast[i] == nil {
			msgs[i] = u.sessionResponse(o)
		}
	}
	if err := u.store.Commit(puts, dels); err != nil {
		u.c.storeErrors.Add(1)
		slog.Error("session store", "err", err)
	}
	u.keepSEIDBound()
	out := sc.out[:0]
	for i, o := range answers {
		if b := fast[i]; b != nil {
			u.c.causes[ie.CauseRequestAccepted].Add(1)
			u.dups.AnswerTo(o.dup, o.peer, o.seq, b)
			out = append(out, udpio.Datagram{Peer: o.peer, B: b})
		} else if msgs[i] != nil {
			if b := u.answerBytes(o.peer, o.seq, msgs[i]); b != nil {
				out = append(out, udpio.Datagram{Peer: o.peer, B: b})
			}
		}
	}
	sc.out = out
	u.writeAll(out)
	for _, q := range again {
		u.process(q.msg, q.peer)
	}
}

// grown is s with length n (zeroed), reusing its array when it has room.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// release lets go of what the last batch's lists point to (sessions,
// operations, answers): kept, they would keep them alive until the next.
func (sc *finishScratch) release() {
	clear(sc.puts)
	clear(sc.answers)
	clear(sc.msgs)
	clear(sc.fast)
	clear(sc.out)
	sc.puts, sc.dels, sc.answers = sc.puts[:0], sc.dels[:0], sc.answers[:0]
	sc.msgs, sc.fast, sc.out = sc.msgs[:0], sc.fast[:0], sc.out[:0]
}

// rollback undoes what planning reserved and refuses the request.
func (u *UPF) rollback(o *op, rj *Reject) {
	st := u.st
	st.mu.Lock()
	e := st.sess.Get(o.seid)
	st.release(o.seid, o.nextPlan, o.prevPlan)
	if o.nextSub != 0 && o.nextSub != o.prevSub {
		st.freeID(o.nextSub)
	}
	var again []queued
	if e != nil {
		if !e.live {
			st.sess.Delete(o.seid)
			st.byCP.Delete(o.next.CPNode, o.next.CPSEID)
		}
		again = e.queue
		e.queue, e.busy = nil, false
	}
	st.mu.Unlock()
	if o.seq != 0 {
		if o.kind == opEstablish {
			rj.cpSEID = o.cpSEID
		}
		u.refuseOp(o, rj)
	}
	for _, q := range again {
		u.process(q.msg, q.peer)
	}
}

// refuseOp answers an op's request with a refusal.
func (u *UPF) refuseOp(o *op, rj *Reject) {
	h := wire.Header{Sequence: o.seq, HasSEID: true}
	switch o.kind {
	case opEstablish:
		h.Type = message.MsgTypeSessionEstablishmentRequest
	case opModify:
		h.Type, h.SEID = message.MsgTypeSessionModificationRequest, o.seid
	case opDelete:
		h.Type, h.SEID = message.MsgTypeSessionDeletionRequest, o.seid
	default:
		return
	}
	u.refuse(o.peer, h, rj)
}

// usageFrom reads a subscriber's counters as usage: uplink IP octets by
// what the policer passed (green, yellow) and dropped (red); downlink
// octets are the data plane's access frame octets less the access header
// of each packet (hdr).
func usageFrom(c dpctl.Counters, hdr uint64) Usage {
	u := Usage{ULBytes: c.Green.Bytes + c.Yellow.Bytes, ULPkts: c.Green.Pkts + c.Yellow.Pkts,
		ULRedBytes: c.Red.Bytes, ULRedPkts: c.Red.Pkts, DLPkts: c.Down.Pkts}
	if c.Down.Bytes > u.DLPkts*hdr {
		u.DLBytes = c.Down.Bytes - u.DLPkts*hdr
	}
	return u
}

// accessHeader is the octets the data plane puts in front of a
// subscriber's IP packets: Ethernet 14, 4 a tag, PPPoE session and PPP 8.
func accessHeader(k AccessKey) uint64 {
	h := uint64(14)
	if k.STag != 0 {
		h += 4
	}
	if k.CTag != 0 {
		h += 4
	}
	if k.PPPoE != 0 {
		h += 8
	}
	return h
}

// accessHeader of the subscriber an op reads the counters of.
func (o *op) accessHeader() uint64 {
	if o.prevSub != 0 && o.prevPlan != nil && o.prevPlan.Sub != nil {
		return accessHeader(o.prevPlan.Sub.Key)
	}
	if o.nextPlan != nil && o.nextPlan.Sub != nil {
		return accessHeader(o.nextPlan.Sub.Key)
	}
	return 14
}
