package upf

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/dpctl"
)

// Usage reporting (TS 29.244 clause 5.2.2).  A URR measures its
// subscriber's volume (the data plane's per-subscriber counters: uplink IP
// octets after the policer, or before it with MBQE; downlink IP octets)
// and the time since its measurement started.  The counters are read
// every URRPoll for the sessions with URRs; a read triggers the reports
// due: PERIO (its Measurement Period passed), VOLTH (the volume since the
// last report reached the Volume Threshold), TIMTH (the time since reached
// the Time Threshold).  A report starts a new measurement (clause
// 5.2.2.3.1).  The answers to a modification (removed or queried URRs)
// and to a deletion (every URR, TERMR) carry reports too: the final usage.

// Usage Report Trigger octets (clause 8.2.41).
const (
	urtPERIO = 0x01 // octet 5
	urtVOLTH = 0x02
	urtTIMTH = 0x04
)

// report builds one usage report of URR r at now from the total usage,
// and starts r's next measurement.
func reportIE(t uint16, r *URR, total Usage, trig [3]uint8, now time.Time) *ie.IE {
	d := total.since(r.Base)
	r.Seq++
	ies := []*ie.IE{ie.NewURRID(r.ID), ie.NewURSEQN(r.Seq), ie.NewUsageReportTrigger(trig[0], trig[1], trig[2]),
		ie.NewStartTime(r.Start), ie.NewEndTime(now)}
	if r.Method&MeasVolume != 0 {
		ul, ulp := d.ULBytes, d.ULPkts
		if r.MeasInfo&0x01 != 0 { // MBQE: before the policer dropped anything
			ul, ulp = ul+d.ULRedBytes, ulp+d.ULRedPkts
		}
		ies = append(ies, ie.NewVolumeMeasurement(0x3f, ul+d.DLBytes, ul, d.DLBytes, ulp+d.DLPkts, ulp, d.DLPkts))
	}
	if r.Method&MeasDuration != 0 {
		ies = append(ies, ie.NewDurationMeasurement(now.Sub(r.Start).Truncate(time.Second)))
	}
	r.Base, r.Start = total, now
	return ie.NewUsageReport(t, ies...)
}

// usageReports builds the reports of an op's answer (its URRs were
// marked in planning; counters were read when the subscriber has them).
func (u *UPF) usageReports(o *op, t uint16) []*ie.IE {
	if len(o.reportURR) == 0 {
		return nil
	}
	now := u.now()
	var out []*ie.IE
	for _, id := range o.reportURR {
		var r *URR
		var s *Session
		if o.next != nil && !o.reported[id] {
			s, r = o.next, o.next.URRs.Get(id)
		}
		if r == nil && o.prev != nil {
			s = o.prev
			if x := o.prev.URRs.Get(id); x != nil {
				c := *x
				r = &c
			}
		}
		if r == nil {
			continue
		}
		live := o.usage
		if !o.usageOK {
			// No read (no subscriber, or the data plane did not answer):
			// the last counters we had.
			u.st.mu.Lock()
			if e := u.st.sess.Get(o.seid); e != nil {
				live = e.last
			}
			u.st.mu.Unlock()
		}
		trig := o.trigger
		if o.reported[id] && o.kind == opModify {
			trig = [3]uint8{0, 0x08, 0} // TERMR for a removed URR
		}
		out = append(out, reportIE(t, r, s.Acc.add(live), trig, now))
	}
	return out
}

// timers runs the periodic work: retransmissions (every 100 ms),
// heartbeats and association attempts (HeartbeatInterval), usage reports
// (URRPoll), the data plane's identity (every 2 s: a restart is noticed
// without waiting for a request).
func (u *UPF) timers(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastHB, lastURR, lastDP time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			resend, expired := u.out.Due(now)
			for _, r := range resend {
				u.write(r.peer, r.msg)
			}
			for _, r := range expired {
				if r.done != nil {
					r.done(nil, false)
				}
			}
			if now.Sub(lastHB) >= u.cfg.HeartbeatInterval {
				lastHB = now
				u.heartbeats(now)
				for _, p := range u.cfg.Associate {
					if u.nodes.byAddr(p.Addr()) == nil {
						u.associate(p, "")
					}
				}
			}
			if now.Sub(lastURR) >= u.cfg.URRPoll {
				lastURR = now
				u.pollUsage(ctx, now)
			}
			if now.Sub(lastDP) >= 2*time.Second {
				lastDP = now
				select {
				case u.kick <- struct{}{}:
				default:
				}
			}
		}
	}
}

type pollItem struct {
	seid  uint64
	sub   uint32
	hdr   uint64
	usage Usage
	ok    bool
}

// pollUsage reads the counters of every session with URRs and sends the
// reports due.  Busy sessions are skipped (their op's answer reports).
func (u *UPF) pollUsage(ctx context.Context, now time.Time) {
	st := u.st
	var items []pollItem
	st.mu.Lock()
	for seid := range st.metered {
		if e := st.sess.Get(seid); e != nil && !e.busy && e.plan.Sub != nil {
			items = append(items, pollItem{seid: seid, sub: e.subID, hdr: accessHeader(e.plan.Sub.Key)})
		}
	}
	st.mu.Unlock()
	if len(items) == 0 {
		return
	}
	// One sub-counters request per 65536 sessions (the command's limit).
	byID := make(map[uint32]int, len(items))
	var calls []*dpctl.Call
	for off := 0; off < len(items); off += 65536 {
		var ids []uint32
		for i := off; i < min(off+65536, len(items)); i++ {
			ids = append(ids, items[i].sub)
			byID[items[i].sub] = i
		}
		calls = append(calls, u.dp.GoSubCounters(ctx, ids))
	}
	for _, k := range calls {
		res, err := k.Wait(ctx)
		if err != nil {
			continue
		}
		r, err := dpctl.DecodeCounters(res)
		if err != nil {
			continue
		}
		for _, row := range r.Rows {
			if i, ok := byID[row.ID]; ok {
				items[i].usage, items[i].ok = usageFrom(row, items[i].hdr), true
			}
		}
	}
	type out struct {
		peer netip.AddrPort
		seid uint64
		m    *message.SessionReportRequest
		seq  uint32
	}
	var send []out
	var dirty []*Session
	st.mu.Lock()
	for _, it := range items {
		e := st.sess.Get(it.seid)
		if !it.ok || e == nil || e.busy || e.subID != it.sub {
			continue
		}
		e.last = it.usage
		total := e.s.Acc.add(it.usage)
		var reps []*ie.IE
		for _, r := range e.s.URRs.All() {
			var trig [3]uint8
			if r.Triggers&TrigPERIO != 0 && r.PeriodS > 0 && !now.Before(r.NextPerio) {
				trig[0] |= urtPERIO
				for !now.Before(r.NextPerio) {
					r.NextPerio = r.NextPerio.Add(time.Duration(r.PeriodS) * time.Second)
				}
			}
			if r.Triggers&TrigVOLTH != 0 {
				d := total.since(r.Base)
				ul := d.ULBytes
				if r.MeasInfo&0x01 != 0 {
					ul += d.ULRedBytes
				}
				v := r.VolThresh
				if v.Total != 0 && ul+d.DLBytes >= v.Total || v.UL != 0 && ul >= v.UL || v.DL != 0 && d.DLBytes >= v.DL {
					trig[0] |= urtVOLTH
				}
			}
			if r.Triggers&TrigTIMTH != 0 && r.TimeThresh > 0 && now.Sub(r.Start) >= time.Duration(r.TimeThresh)*time.Second {
				trig[0] |= urtTIMTH
			}
			if trig != ([3]uint8{}) {
				reps = append(reps, reportIE(ie.UsageReportWithinSessionReportRequest, r, total, trig, now))
			}
		}
		if len(reps) == 0 {
			continue
		}
		dirty = append(dirty, e.s)
		a := u.nodes.get(e.s.CPNode)
		if a == nil {
			continue
		}
		u.nodes.mu.Lock()
		peer := netip.AddrPortFrom(e.s.CPAddr, a.peer.Port())
		if !e.s.CPAddr.IsValid() {
			peer = a.peer
		}
		u.nodes.mu.Unlock()
		seq := u.out.Next()
		m := message.NewSessionReportRequest(0, 0, e.s.CPSEID, seq, 0,
			append([]*ie.IE{ie.NewReportType(0, 0, 1, 0)}, reps...)...)
		send = append(send, out{peer, it.seid, m, seq})
	}
	st.mu.Unlock()
	if err := u.store.CommitModels(dirty); err != nil {
		u.c.storeErrors.Add(1)
	}
	for _, x := range send {
		x := x
		u.c.reports.Add(1)
		u.request(x.peer, x.m, x.seq, func(resp []byte, ok bool) {
			if !ok {
				u.c.reportsLost.Add(1)
				return
			}
			u.onReportResponse(x.seid, resp)
		})
	}
}

// onReportResponse: "Session context not found" means the control plane
// no longer has the session (clause 6.3.x): it is deleted here too.
func (u *UPF) onReportResponse(seid uint64, resp []byte) {
	m, err := message.Parse(resp)
	if err != nil {
		return
	}
	r, ok := m.(*message.SessionReportResponse)
	if !ok || r.Cause == nil {
		return
	}
	if c, err := r.Cause.Cause(); err != nil || c != ie.CauseSessionContextNotFound {
		return
	}
	st := u.st
	st.mu.Lock()
	e := st.sess.Get(seid)
	if e == nil || e.busy || !e.live {
		st.mu.Unlock()
		return
	}
	o := u.planDelete(e, opDeleteQuiet)
	st.mu.Unlock()
	slog.Info("control plane does not know a session any more; deleted", "seid", seid)
	u.submit(o)
}
