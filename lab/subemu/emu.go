package main

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// The emulator: N subscribers, each a small state machine, sharded over a
// few event loops.  A reader goroutine takes frames off the link in
// batches and hands each to the loop of the subscriber it is for (by
// destination MAC, or the client hardware address of a broadcast DHCP
// answer); each loop keeps its subscribers' retransmission timers in
// 20 ms slots and sends what it built in one batch.

type state uint8

const (
	stIdle state = iota
	stDiscovery
	stRequest // PADR sent / DHCP REQUEST sent
	stLink    // LCP
	stAuth
	stNetwork // NCPs, RA, DHCPv6
	stUp
	stDown
	stFailed
)

var stateNames = [...]string{"idle", "discovery", "request", "link", "auth", "network", "up", "down", "failed"}

type sess struct {
	i   int
	mac mac
	l   line
	st  state

	t0, tUp  time.Time
	tIn      [stUp]time.Time // when each set-up phase began (stIdle: unused)
	deadline time.Time
	retries  int
	last     []byte // the frame to send again on a timeout
	fail     string

	// PPPoE
	ac         mac
	sid        uint16
	cookie     []byte
	relay      []byte
	magic      uint32
	peerMagic  uint32
	id         uint8
	rejID      uint8 // our Protocol-Rejects' identifiers
	lcpAcked   bool  // the server acked ours
	lcpPeerAck bool  // we acked the server's
	auth       uint16
	chapName   string
	ipcpAcked  bool
	ipcpPeer   bool
	ip6Acked   bool
	ip6Peer    bool
	ifid       uint64
	peerIfid   uint64
	reqIPCP    []opt
	ra         netip.Prefix
	slaac      netip.Addr
	ncpDone    bool
	echoOff    bool
	echoRx     uint64

	// IPoE and DHCPv6
	xid     uint32
	server4 netip.Addr
	v4      netip.Addr
	dns     []netip.Addr
	xid6    [3]byte
	server6 []byte
	na      netip.Addr
	pd      netip.Prefix
	v4done  bool
	v6done  bool
	lease   time.Duration
	renewAt time.Time
	opt82   bool
	flaps   int

	// traffic
	txPkts, rxPkts uint64
	rxBytes        uint64
}

type loop struct {
	e      *emu
	in     chan []byte
	subs   []*sess
	slots  map[int64][]*sess
	out    [][]byte
	mu     sync.Mutex // guards cmds
	cmds   []func()
	wake   chan struct{}
	credit map[*sess]float64
}

type emu struct {
	cfg       *config
	lk        *link
	loops     []*loop
	subs      []*sess
	byMAC     map[mac]*sess
	stop      atomic.Bool
	start     time.Time
	upN       atomic.Int64
	failN     atomic.Int64
	retx      atomic.Int64 // requests sent again after no answer within -rto
	begun     atomic.Int64
	unknownRx atomic.Uint64
	traffic   atomic.Pointer[traffic]
}

const slot = 20 * time.Millisecond

func slotOf(t time.Time) int64 { return t.UnixNano() / int64(slot) }

func (e *emu) macOf(i int) mac {
	m := e.cfg.macBase
	v := binary.BigEndian.Uint32(m[2:]) + uint32(i)
	binary.BigEndian.PutUint32(m[2:], v)
	return m
}

func (e *emu) lineOf(i int) line {
	c := e.cfg
	switch c.encap {
	case "qinq":
		return line{uint16(c.svlan + i/c.perS), uint16(c.cvlan + i%c.perS)}
	case "vlan":
		return line{0, uint16(c.cvlan + i)}
	}
	return line{}
}

func newEmu(c *config, lk *link) *emu {
	e := &emu{cfg: c, lk: lk, byMAC: map[mac]*sess{}}
	for k := 0; k < c.loops; k++ {
		e.loops = append(e.loops, &loop{e: e, in: make(chan []byte, 65536), slots: map[int64][]*sess{},
			wake: make(chan struct{}, 1), credit: map[*sess]float64{}})
	}
	for i := 0; i < c.n; i++ {
		s := &sess{i: i, mac: e.macOf(i), l: e.lineOf(i)}
		e.subs = append(e.subs, s)
		e.byMAC[s.mac] = s
		lp := e.loops[i%len(e.loops)]
		lp.subs = append(lp.subs, s)
	}
	return e
}

func (e *emu) loopOf(s *sess) *loop { return e.loops[s.i%len(e.loops)] }

// dispatch sends a received frame to its subscriber's loop.
func (e *emu) dispatch(b []byte) {
	if len(b) < 14 {
		return
	}
	var dst mac
	copy(dst[:], b)
	s := e.byMAC[dst]
	if s == nil && dst[0]&1 != 0 {
		// Broadcast or multicast answers: the subscriber by the DHCP
		// client hardware address, or by the tags.  A unicast frame to
		// another MAC is not ours, as a NIC would filter it.
		s = e.byPayload(b)
	}
	if s == nil {
		e.unknownRx.Add(1)
		return
	}
	cp := append([]byte(nil), b...)
	select {
	case e.loopOf(s).in <- cp:
	default:
	}
}

// byPayload finds the subscriber of a broadcast DHCPv4 answer (chaddr)
// or of an IPv6 multicast (by its tags).
func (e *emu) byPayload(b []byte) *sess {
	f, err := parseEth(b)
	if err != nil {
		return nil
	}
	if f.et == 0x0800 {
		p, ok := parseIP(f.payload)
		if ok && p.isUDP && p.dp == 68 && len(p.payload) >= 34 {
			var m mac
			copy(m[:], p.payload[28:34])
			return e.byMAC[m]
		}
	}
	if e.cfg.encap != "untagged" {
		for _, s := range e.subs {
			if s.l == f.l {
				return s
			}
		}
	}
	return nil
}

func (lp *loop) post(fn func()) {
	lp.mu.Lock()
	lp.cmds = append(lp.cmds, fn)
	lp.mu.Unlock()
	select {
	case lp.wake <- struct{}{}:
	default:
	}
}

func (lp *loop) arm(s *sess, d time.Duration) {
	s.deadline = time.Now().Add(d)
	k := slotOf(s.deadline)
	lp.slots[k] = append(lp.slots[k], s)
}

// sendRetry sends a request and arms its retransmission.
func (lp *loop) sendRetry(s *sess, b []byte) {
	s.last = b
	s.retries = 0
	lp.out = append(lp.out, b)
	lp.arm(s, lp.e.cfg.rto)
}

func (lp *loop) send(b []byte) { lp.out = append(lp.out, b) }

func (lp *loop) run(wg *sync.WaitGroup) {
	defer wg.Done()
	tick := time.NewTicker(slot)
	defer tick.Stop()
	lastSlot := slotOf(time.Now())
	for !lp.e.stop.Load() {
		select {
		case b := <-lp.in:
			lp.frame(b)
			for n := 0; n < 512; n++ {
				select {
				case b = <-lp.in:
					lp.frame(b)
					continue
				default:
				}
				break
			}
		case <-tick.C:
			now := slotOf(time.Now())
			for k := lastSlot; k <= now; k++ {
				list := lp.slots[k]
				delete(lp.slots, k)
				for _, s := range list {
					if !s.deadline.IsZero() && slotOf(s.deadline) <= now {
						s.deadline = time.Time{}
						lp.timeout(s)
					}
				}
			}
			lastSlot = now + 1
			lp.trafficTick(lp.e.traffic.Load(), slot, lp.credit)
		case <-lp.wake:
			lp.mu.Lock()
			cmds := lp.cmds
			lp.cmds = nil
			lp.mu.Unlock()
			for _, c := range cmds {
				c()
			}
		}
		if len(lp.out) > 0 {
			lp.e.lk.send(lp.out)
			lp.out = lp.out[:0]
		}
	}
}

func (lp *loop) timeout(s *sess) {
	c := lp.e.cfg
	if s.st == stUp {
		lp.upTimer(s)
		return
	}
	if s.st == stIdle || s.st == stDown || s.st == stFailed || s.last == nil {
		return
	}
	s.retries++
	if s.retries > c.retries {
		lp.failed(s, "no answer in state "+stateNames[s.st])
		return
	}
	lp.e.retx.Add(1)
	lp.out = append(lp.out, s.last)
	lp.arm(s, c.rto)
}

func (lp *loop) frame(b []byte) {
	f, err := parseEth(b)
	if err != nil {
		return
	}
	s := lp.e.byMAC[f.dst]
	if s == nil {
		s = lp.e.byPayload(b)
	}
	if s == nil || f.l != s.l {
		return
	}
	switch f.et {
	case etDisc:
		lp.discovery(s, f)
	case etSess:
		lp.session(s, f)
	case 0x0800, 0x86dd:
		lp.ipoeFrame(s, f)
	}
}

// enter moves a subscriber into a set-up phase and notes when: the
// report's per-phase times say where a set-up's time goes.
func (s *sess) enter(st state) {
	s.st = st
	if st < stUp {
		s.tIn[st] = time.Now()
	}
}

func (lp *loop) up(s *sess) {
	if s.st == stUp {
		return
	}
	s.st = stUp
	s.tUp = time.Now()
	s.last = nil
	lp.e.upN.Add(1)
	if lp.e.cfg.mode == "ipoe" && s.lease > 0 {
		// Renew at T1 (half the lease) to keep the session.
		lp.arm(s, s.lease/2)
	}
}

func (lp *loop) failed(s *sess, why string) {
	if s.st == stFailed {
		return
	}
	s.st = stFailed
	s.fail = why
	s.last = nil
	lp.e.failN.Add(1)
}

// begin starts subscriber s.
func (lp *loop) begin(s *sess) {
	*s = sess{i: s.i, mac: s.mac, l: s.l, flaps: s.flaps, txPkts: s.txPkts, rxPkts: s.rxPkts, rxBytes: s.rxBytes,
		echoOff: s.echoOff}
	s.t0 = time.Now()
	lp.e.begun.Add(1)
	if lp.e.cfg.mode == "pppoe" {
		lp.padi(s)
	} else {
		lp.dhcpStart(s)
	}
}

// down ends subscriber s from its side.
func (lp *loop) down(s *sess) {
	wasUp := s.st == stUp
	if lp.e.cfg.mode == "pppoe" {
		lp.padt(s)
	} else {
		lp.release(s)
	}
	if wasUp {
		lp.e.upN.Add(-1)
	}
	s.st = stDown
	s.last = nil
	s.deadline = time.Time{}
}

// upTimer: periodic work of an up subscriber (DHCP renewal).
func (lp *loop) upTimer(s *sess) {
	if lp.e.cfg.mode == "ipoe" {
		lp.renew(s)
	}
}
