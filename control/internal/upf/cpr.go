package upf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/ipv4"

	"edgeplane/control/internal/afpacket"
	"edgeplane/control/internal/gtpu"
)

// The control packet redirect (TR-459 clause 5.x, the CPRi interface).
//
// Control traffic of subscribers -- PPPoE discovery, LCP, authentication,
// NCPs, DHCPv4/v6, ICMPv6 RS/NS, ARP -- is punted by the data plane's
// uplink parse stage; here it meets the sessions' redirect rules (PDRs
// from Access whose FAR forwards to the CP function) and travels to the
// control plane in GTP-U (3GPP TS 29.281; UDP 2152), the T-PDU being the
// whole Ethernet frame as received, tags included.  Per-session rules
// (the session's own tunnel) come first, then the default session's
// (created right after association, they catch traffic of subscribers
// that have no session yet).  The control plane answers on a per-session
// tunnel we chose (CHOOSE): the frame goes out on that session's logical
// port with its tags (pushed if the control plane sent it untagged).
//
//	subscriber --> edgeplane-dp uplink parse --punt--> control port
//	               --> rule (session, then default) --> GTP-U TEID --> CP
//	CP --> GTP-U (our TEID) --> session's port + tags --> control port
//	               --> edgeplane-dp --> access port --> subscriber
//
// With BBF Outer Header Creation "CPR-NSH" on the FAR (TR-459 Issue 2),
// the frame is preceded by an NSH header (RFC 8300, MD type 2) whose BBF
// metadata TLV (class 0x0200, type 0) names the logical port.
//
// This runs at control-traffic rates (tens of thousands of frames a
// second while subscribers attach by the thousand), in one goroutine per
// direction, a batch of frames per system call each way (recvmmsg and
// sendmmsg on both sockets); the data plane keeps line rate.

// CPR is the redirect: its rules, its GTP-U socket, its frame port.
type CPR struct {
	u   *UPF
	gtp *net.UDPConn
	pc  *ipv4.PacketConn // gtp's batch calls (recvmmsg, sendmmsg)
	// The data plane's side: punted frames in, frames for the access port
	// out (its control port's other end, a net_af_packet or net_tap port);
	// one logical port, puntPort.
	punt     *afpacket.Socket
	puntPort string
	peers    map[netip.Addr]*net.UDPAddr // fromSubscribers' own: the CP functions' GTP-U addresses

	mu       sync.RWMutex
	down     map[uint32]CPRDown
	downOf   map[uint64][]uint32 // a session's tunnels (TEIDs)
	perSess  map[uint64][]CPRUp
	byTags   map[tagKey][]uint64
	defaults []CPRUp

	Up, UpNoRule, UpBad             atomic.Uint64 // frames from subscribers: sent, no rule, unparsable
	Down, DownNoTEID, DownBad, Echo atomic.Uint64 // frames from the control plane: sent, unknown TEID, unparsable; echo answers
	SendErrors                      atomic.Uint64
}

type tagKey struct {
	port       string
	outer, inr uint16
}

func newCPR(u *UPF) (*CPR, error) {
	c := &CPR{u: u, down: map[uint32]CPRDown{}, downOf: map[uint64][]uint32{}, perSess: map[uint64][]CPRUp{},
		byTags: map[tagKey][]uint64{}}
	g, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(u.cfg.GTPU))
	if err != nil {
		return nil, fmt.Errorf("redirect GTP-U socket %s: %w", u.cfg.GTPU, err)
	}
	g.SetReadBuffer(8 << 20)
	g.SetWriteBuffer(8 << 20)
	c.gtp, c.pc = g, ipv4.NewPacketConn(g)
	if u.cfg.PuntIface != "" {
		p, err := afpacket.Open(u.cfg.PuntIface, afpacket.Options{})
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("punt %w", err)
		}
		c.punt, c.puntPort = p, u.cfg.Ports[0]
	}
	return c, nil
}

// localAddr is the address of our F-TEIDs.
func (c *CPR) localAddr() netip.Addr {
	a := c.u.cfg.GTPU.Addr()
	if a.IsUnspecified() {
		if n, err := netip.ParseAddr(c.u.cfg.NodeID); err == nil && n.Is4() {
			return n
		}
		if l := c.u.cfg.Listen.Addr(); l.Is4() && !l.IsUnspecified() {
			return l
		}
	}
	return a.Unmap()
}

func (c *CPR) close() {
	c.gtp.Close()
	if c.punt != nil {
		c.punt.Close()
	}
}

// update replaces the redirect rules of a session (nil: it has none).
func (c *CPR) update(seid uint64, p *Plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.downOf[seid] {
		delete(c.down, t)
	}
	delete(c.downOf, seid)
	for _, r := range c.perSess[seid] {
		k := tagKey{r.Key.Port, r.Key.STag, r.Key.CTag}
		c.byTags[k] = slices.DeleteFunc(c.byTags[k], func(s uint64) bool { return s == seid })
		if len(c.byTags[k]) == 0 {
			delete(c.byTags, k)
		}
	}
	delete(c.perSess, seid)
	if len(c.defaults) > 0 {
		c.defaults = slices.DeleteFunc(c.defaults, func(r CPRUp) bool { return r.SEID == seid })
	}
	if p == nil || len(p.CPRUp) == 0 && len(p.CPRDown) == 0 {
		return
	}
	for _, d := range p.CPRDown {
		c.down[d.TEID] = d
		c.downOf[seid] = append(c.downOf[seid], d.TEID)
	}
	var mine []CPRUp
	for _, r := range p.CPRUp {
		if r.Default {
			c.defaults = append(c.defaults, r)
		} else {
			mine = append(mine, r)
		}
	}
	sort.SliceStable(c.defaults, func(i, j int) bool { return c.defaults[i].Precedence < c.defaults[j].Precedence })
	if len(mine) > 0 {
		sort.SliceStable(mine, func(i, j int) bool { return mine[i].Precedence < mine[j].Precedence })
		c.perSess[seid] = mine
		seen := map[tagKey]bool{}
		for _, r := range mine {
			k := tagKey{r.Key.Port, r.Key.STag, r.Key.CTag}
			if !seen[k] {
				seen[k] = true
				c.byTags[k] = append(c.byTags[k], seid)
			}
		}
	}
}

func (c *CPR) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.fromCP(ctx) }()
	if c.punt != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.fromSubscribers(ctx) }()
	}
	<-ctx.Done()
	c.gtp.SetReadDeadline(time.Now())
	if c.punt != nil {
		c.punt.Close()
	}
	wg.Wait()
}

// frame is what the redirect's rules look at in a punted frame.
type frame struct {
	src        net.HardwareAddr
	outer, inr uint16 // VLAN ids (outer only: one tag)
	ntags      int
	etype      uint16
	pppoe      uint16 // session id (0x8864 frames)
	ppp        uint16 // PPP protocol
	ipProto    int
	srcIP      netip.Addr
	dstIP      netip.Addr
	sport      uint16
	dport      uint16
}

func parseFrame(b []byte) (frame, bool) {
	var f frame
	if len(b) < 14 {
		return f, false
	}
	f.src = net.HardwareAddr(b[6:12])
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	for (et == 0x8100 || et == 0x88a8 || et == 0x9100) && f.ntags < 2 {
		if len(b) < off+6 {
			return f, false
		}
		vid := binary.BigEndian.Uint16(b[off+2:]) & 0x0fff
		if f.ntags == 0 {
			f.outer = vid
		} else {
			f.inr = vid
		}
		f.ntags++
		off += 4
		et = binary.BigEndian.Uint16(b[off:])
	}
	f.etype = et
	off += 2
	p := b[off:]
	switch et {
	case 0x8864: // PPPoE session: ver/type, code, session, length, PPP protocol
		if len(p) < 8 {
			return f, false
		}
		f.pppoe = binary.BigEndian.Uint16(p[2:])
		f.ppp = binary.BigEndian.Uint16(p[6:])
		switch f.ppp {
		case 0x0021:
			f.ip4(p[8:])
		case 0x0057:
			f.ip6(p[8:])
		}
	case 0x0800:
		f.ip4(p)
	case 0x86dd:
		f.ip6(p)
	}
	return f, true
}

func (f *frame) ip4(p []byte) {
	if len(p) < 20 || p[0]>>4 != 4 {
		return
	}
	ihl := int(p[0]&0x0f) * 4
	f.ipProto = int(p[9])
	f.srcIP = netip.AddrFrom4([4]byte(p[12:16]))
	f.dstIP = netip.AddrFrom4([4]byte(p[16:20]))
	if len(p) >= ihl+4 && (f.ipProto == 17 || f.ipProto == 6) {
		f.sport, f.dport = binary.BigEndian.Uint16(p[ihl:]), binary.BigEndian.Uint16(p[ihl+2:])
	}
}

func (f *frame) ip6(p []byte) {
	if len(p) < 40 || p[0]>>4 != 6 {
		return
	}
	f.ipProto = int(p[6])
	f.srcIP = netip.AddrFrom16([16]byte(p[8:24]))
	f.dstIP = netip.AddrFrom16([16]byte(p[24:40]))
	if len(p) >= 44 && (f.ipProto == 17 || f.ipProto == 6) {
		f.sport, f.dport = binary.BigEndian.Uint16(p[40:]), binary.BigEndian.Uint16(p[42:])
	}
	if len(p) >= 41 && f.ipProto == 58 { // ICMPv6: the type as the "port"
		f.dport = uint16(p[40])
	}
}

// matches: the rule's access fields, then its filters (any Ethertype, any
// SDF filter, the PPP protocol), all that are given.
func (r *CPRUp) matches(f *frame, port string) bool {
	k := r.Key
	if k.Port != "" && k.Port != port {
		return false
	}
	switch f.ntags {
	case 2:
		if k.STag != 0 && k.STag != f.outer || k.CTag != 0 && k.CTag != f.inr {
			return false
		}
	case 1:
		if k.STag != 0 && k.CTag != 0 || k.STag|k.CTag != 0 && k.STag|k.CTag != f.outer {
			return false
		}
	default:
		if k.STag != 0 || k.CTag != 0 {
			return false
		}
	}
	if k.PPPoE != 0 && (f.etype != 0x8864 || f.pppoe != k.PPPoE) {
		return false
	}
	if k.MAC != "" && k.MAC != f.src.String() {
		return false
	}
	if len(r.Ethertypes) > 0 && !slices.Contains(r.Ethertypes, f.etype) {
		return false
	}
	if r.PPP != nil && (f.etype != 0x8864 || !r.PPP.Matches(f.ppp)) {
		return false
	}
	if len(r.SDF) > 0 {
		if !f.srcIP.IsValid() {
			return false
		}
		hit := false
		for _, s := range r.SDF {
			if s.matches(f.ipProto, f.srcIP, f.dstIP, f.sport, f.dport) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// lookup finds the rule for a frame: the sessions on its tags first, then
// the defaults.
func (c *CPR) lookup(f *frame, port string) (CPRUp, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := []tagKey{{port, f.outer, f.inr}}
	if f.ntags == 1 {
		keys = append(keys, tagKey{port, 0, f.outer})
	}
	for _, k := range keys {
		for _, seid := range c.byTags[k] {
			for i := range c.perSess[seid] {
				if r := &c.perSess[seid][i]; r.matches(f, port) {
					return *r, true
				}
			}
		}
	}
	for i := range c.defaults {
		if r := &c.defaults[i]; r.matches(f, port) {
			return *r, true
		}
	}
	return CPRUp{}, false
}

// fromSubscribers: a batch of punted frames (one recvmmsg), each to its
// rule's tunnel, the G-PDUs out in one sendmmsg.  Batching is what keeps
// the redirect's cost per frame low when subscribers attach by the
// thousand: a system call and a wake-up per frame each way were most of
// the user plane's CPU time in the set-up benchmark.
func (c *CPR) fromSubscribers(ctx context.Context) {
	in := afpacket.NewBatch(afpacket.Max, 9216)
	out := make([]ipv4.Message, afpacket.Max)
	bufs := make([][]byte, afpacket.Max)
	for i := range out {
		bufs[i] = make([]byte, 0, 9216+256)
		out[i].Buffers = [][]byte{nil}
	}
	for ctx.Err() == nil {
		n, err := c.punt.Recv(in)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if err != afpacket.ErrTimeout {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		k := 0
		for _, fr := range in.Frames[:n] {
			f, ok := parseFrame(fr)
			if !ok {
				c.UpBad.Add(1)
				continue
			}
			r, ok := c.lookup(&f, c.puntPort)
			if !ok {
				c.UpNoRule.Add(1)
				continue
			}
			var nsh []byte
			if r.NSH {
				nsh = nshHeader(c.puntPort)
			}
			out[k].Buffers[0] = gtpu.AppendGPDU(bufs[k][:0], r.TEID, nsh, fr)
			out[k].Addr = c.peer(r.Peer)
			k++
		}
		c.sendGTPU(out[:k])
	}
}

// peer is the UDP address of a CP function's GTP-U endpoint (cached: an
// address per frame would be an allocation per frame).
func (c *CPR) peer(a netip.Addr) *net.UDPAddr {
	p := c.peers[a]
	if p == nil {
		if c.peers == nil {
			c.peers = map[netip.Addr]*net.UDPAddr{}
		}
		p = net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 2152))
		c.peers[a] = p
	}
	return p
}

// sendGTPU sends G-PDUs to the control plane, as many a call as the
// kernel takes; what it refuses is counted.
func (c *CPR) sendGTPU(msgs []ipv4.Message) {
	for len(msgs) > 0 {
		n, err := c.pc.WriteBatch(msgs, 0)
		c.Up.Add(uint64(n))
		msgs = msgs[n:]
		if err != nil {
			// The message at the head failed: count it and go on.
			c.SendErrors.Add(1)
			if len(msgs) > 0 {
				msgs = msgs[1:]
			}
		}
	}
}

// nshHeader is an NSH base + service path header and one BBF context
// TLV with the logical port (RFC 8300 sections 2.2-2.5; TR-459 Issue 2
// metadata class 0x0200, type 0 "Logical Port"); next protocol Ethernet.
func nshHeader(port string) []byte {
	v := []byte(port)
	pad := (4 - len(v)%4) % 4
	tlv := make([]byte, 4+len(v)+pad)
	binary.BigEndian.PutUint16(tlv[0:], 0x0200)
	tlv[2] = 0
	tlv[3] = uint8(len(v))
	copy(tlv[4:], v)
	words := (8 + len(tlv)) / 4
	h := make([]byte, 8, 8+len(tlv))
	// Ver 0, O 0, TTL 63, Length (words), MD type 2, Next Protocol 3 (Ethernet).
	h[0] = 63 >> 2
	h[1] = (63&0x03)<<6 | uint8(words&0x3f)
	h[2] = 0x02
	h[3] = 0x03
	// Service path 1, index 255.
	binary.BigEndian.PutUint32(h[4:], 1<<8|255)
	return append(h, tlv...)
}

// fromCP: a batch of G-PDUs from the control plane (one recvmmsg), each
// frame tagged for its session's port, all out on the punt port in one
// sendmmsg.
func (c *CPR) fromCP(ctx context.Context) {
	in := make([]ipv4.Message, afpacket.Max)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, 9216)}
	}
	frames := make([][]byte, 0, afpacket.Max)
	echo := gopacket.NewSerializeBuffer()
	for {
		n, err := c.pc.ReadBatch(in, 0)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		frames = frames[:0]
		for i := range in[:n] {
			var g layers.GTPv1U
			if err := g.DecodeFromBytes(in[i].Buffers[0][:in[i].N], gopacket.NilDecodeFeedback); err != nil || g.Version != 1 {
				c.DownBad.Add(1)
				continue
			}
			switch g.MessageType {
			case 1: // Echo Request: Echo Response with a Recovery IE (TS 29.281 7.2)
				echo.Clear()
				resp := &layers.GTPv1U{Version: 1, ProtocolType: 1, MessageType: 2, TEID: 0,
					SequenceNumberFlag: g.SequenceNumberFlag, SequenceNumber: g.SequenceNumber}
				if gopacket.SerializeLayers(echo, gopacket.SerializeOptions{FixLengths: true}, resp,
					gopacket.Payload([]byte{14, 0})) == nil {
					c.gtp.WriteTo(echo.Bytes(), in[i].Addr)
					c.Echo.Add(1)
				}
				continue
			case 255:
			default:
				c.DownBad.Add(1)
				continue
			}
			c.mu.RLock()
			d, ok := c.down[g.TEID]
			c.mu.RUnlock()
			if !ok {
				c.DownNoTEID.Add(1)
				continue
			}
			fr := g.Payload
			if len(fr) < 14 {
				c.DownBad.Add(1)
				continue
			}
			if c.punt == nil || d.Key.Port != c.puntPort {
				c.SendErrors.Add(1) // no frame port, or not this one's logical port
				continue
			}
			frames = append(frames, withTags(fr, d.Key))
		}
		if len(frames) == 0 {
			continue
		}
		sent, _ := c.punt.Send(frames)
		c.Down.Add(uint64(sent))
		c.SendErrors.Add(uint64(len(frames) - sent))
	}
}

// withTags pushes the session's tags onto an untagged frame (802.1ad
// outer, 802.1Q inner; one tag: 802.1Q); a tagged frame is left as the
// control plane built it.
func withTags(fr []byte, k AccessKey) []byte {
	et := binary.BigEndian.Uint16(fr[12:])
	if et == 0x8100 || et == 0x88a8 || et == 0x9100 || k.STag == 0 && k.CTag == 0 {
		return fr
	}
	var tags []byte
	put := func(tpid, vid uint16) {
		tags = binary.BigEndian.AppendUint16(tags, tpid)
		tags = binary.BigEndian.AppendUint16(tags, vid)
	}
	switch {
	case k.STag != 0 && k.CTag != 0:
		put(0x88a8, k.STag)
		put(0x8100, k.CTag)
	case k.STag != 0:
		put(0x8100, k.STag)
	default:
		put(0x8100, k.CTag)
	}
	out := make([]byte, 0, len(fr)+len(tags))
	out = append(out, fr[:12]...)
	out = append(out, tags...)
	return append(out, fr[12:]...)
}

// Stats of the redirect.
type CPRStats struct {
	Up, UpNoRule, UpBad, Down, DownNoTEID, DownBad, Echo, SendErrors uint64
	Rules, Tunnels                                                   int
}

// CPRStats reads the redirect's counters.
func (u *UPF) CPRStats() CPRStats {
	c := u.cpr
	c.mu.RLock()
	rules := len(c.defaults)
	for _, r := range c.perSess {
		rules += len(r)
	}
	tunnels := len(c.down)
	c.mu.RUnlock()
	return CPRStats{c.Up.Load(), c.UpNoRule.Load(), c.UpBad.Load(), c.Down.Load(), c.DownNoTEID.Load(),
		c.DownBad.Load(), c.Echo.Load(), c.SendErrors.Load(), rules, tunnels}
}
