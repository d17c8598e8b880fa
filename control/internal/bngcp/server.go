// Package bngcp is the BNG's control plane (a DBNG-CP in the terms of
// BBF TR-459 "Control and User Plane Separation for a disaggregated BNG"):
// it terminates the subscribers' session protocols -- PPPoE (RFC 2516) with
// PPP's LCP, PAP, CHAP, IPCP and IPv6CP, and IPoE with DHCPv4, DHCPv6 and
// router advertisements -- authenticates and accounts for them (a local
// subscriber file or RADIUS), hands out their addresses from pools, and
// drives the user plane over PFCP (one session per subscriber, its rates
// from a named profile).  Control frames reach it from the user planes in
// GTP-U (TR-459's control packet redirect), or from a Linux interface in
// direct mode.
//
// Files, in the order a subscriber meets them:
//
//	access.go       frames in and out (an interface; afpacket.go, cpr in sci/)
//	shard.go        the event loops: sessions, timers, batched output
//	dispatch.go     a frame to its protocol
//	pppoe.go        discovery: PADI/PADO (AC-Cookie), PADR/PADS, PADT
//	pppsess.go      one PPP session: LCP, PAP/CHAP, IPCP, IPv6CP, keepalive
//	ipoe.go         DHCPv4 server; dhcp6.go DHCPv6 (IPoE and over PPP)
//	ndarp.go        router advertisements, NS and ARP for the gateway
//	lifecycle.go    authorise, address, activate, account, terminate
//	store.go        what survives a restart; resync.go brings it back
//	api.go, coa.go  operations: the REST API, RADIUS CoA/Disconnect
package bngcp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/nd"
	"edgeplane/control/internal/bngcp/pool"
)

// Out is a frame to send to a subscriber on a logical port.
type Out struct {
	Port  string
	Frame []byte
	// Session is the subscriber session the frame belongs to once the
	// user plane has it (0 before): with the control packet redirect it
	// travels in that session's own tunnel rather than the port's.
	Session uint64
}

// Access carries frames between the subscribers and the control plane.
type Access interface {
	// Run reads frames until ctx ends, calling deliver for each (the
	// frame is only valid during the call).
	Run(ctx context.Context, deliver func(port string, frame []byte)) error
	// Send transmits frames; it returns how many left.
	Send(out []Out) int
}

type portState struct {
	cfg  PortConfig
	mac  frame.MAC
	ll   netip.Addr // our link-local address (RA source, NA target)
	duid []byte     // our DHCPv6 server DUID (DUID-LL of the port MAC)
	sids *sidAlloc
}

// Server is the control plane.
type Server struct {
	cfg      *Config
	ports    map[string]*portState
	shards   []*shard
	access   Access
	auth     aaa.Authenticator
	acct     aaa.Accounter
	up       UserPlane
	pools4   map[string]*pool.V4
	pools6   map[string]*pool.V6
	profiles map[string]*Profile
	ctr      *counters
	metrics  *Metrics
	store    *Store
	cookie   []byte // AC-Cookie key
	nextID   atomic.Uint64
	sessions atomic.Int64
	now      func() time.Time
	pppDNS   [2]netip.Addr

	idxMu sync.RWMutex
	index map[uint64]*shard

	ready chan struct{}

	// Components adds other parts' counters to Stats (RADIUS, PFCP).
	Components func() map[string]map[string]uint64
}

// Deps are the pieces a Server is built from (tests substitute them).
type Deps struct {
	Access Access
	Auth   aaa.Authenticator
	Acct   aaa.Accounter
	UP     UserPlane
	Store  *Store
	Now    func() time.Time
}

// New builds a server from a checked configuration.
func New(cfg *Config, d Deps) (*Server, error) {
	s := &Server{cfg: cfg, ports: map[string]*portState{}, access: d.Access, auth: d.Auth, acct: d.Acct,
		up: d.UP, pools4: map[string]*pool.V4{}, pools6: map[string]*pool.V6{}, profiles: map[string]*Profile{},
		ctr: newCounters(), store: d.Store, now: d.Now, index: map[uint64]*shard{}, ready: make(chan struct{})}
	if s.now == nil {
		s.now = time.Now
	}
	if s.acct == nil {
		s.acct = aaa.Discard{}
	}
	if s.up == nil {
		s.up = noUserPlane{}
	}
	if s.access == nil || s.auth == nil {
		return nil, errors.New("bngcp: access and authenticator are required")
	}
	for _, p := range cfg.Ports {
		ps := &portState{cfg: p, mac: p.PortMAC(), ll: nd.LinkLocal(p.PortMAC()), sids: newSIDAlloc()}
		ps.duid = append([]byte{0, 3, 0, 1}, ps.mac[:]...)
		s.ports[p.Name] = ps
	}
	for _, pc := range cfg.Pools {
		if err := s.addPool(pc); err != nil {
			return nil, err
		}
	}
	for _, pc := range cfg.Profiles {
		p := &Profile{Name: pc.Name, ACL: pc.ACL}
		var err error
		if p.UpMBR, err = ParseRate(pc.UpMBR); err == nil {
			if p.UpGBR, err = ParseRate(pc.UpGBR); err == nil {
				p.DownMBR, err = ParseRate(pc.DownMBR)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", pc.Name, err)
		}
		if p.UpGBR > p.UpMBR && p.UpMBR != 0 {
			return nil, fmt.Errorf("profile %s: up_gbr above up_mbr", pc.Name)
		}
		if pc.Name == "" || s.profiles[pc.Name] != nil {
			return nil, fmt.Errorf("profile %q: empty or repeated name", pc.Name)
		}
		s.profiles[pc.Name] = p
	}
	if n := cfg.AAA.DefaultProfile; n != "" && s.profiles[n] == nil {
		return nil, fmt.Errorf("default_profile %q is not a profile", n)
	}
	if n := cfg.AAA.DefaultPool4; n != "" && s.pools4[n] == nil {
		return nil, fmt.Errorf("default_pool %q is not an IPv4 pool", n)
	}
	if n := cfg.AAA.DefaultPool6; n != "" && s.pools6[n] == nil {
		return nil, fmt.Errorf("default_pool6 %q is not an IPv6 pool", n)
	}
	for i, d := range firstPoolDNS(s) {
		s.pppDNS[i] = d
	}
	s.cookie = make([]byte, 32)
	rand.Read(s.cookie)
	n := cfg.Shards
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	per := cfg.Limits.NewPerSecond / float64(n)
	burst := cfg.Limits.NewBurst / n
	if burst < 1 {
		burst = 1
	}
	for i := 0; i < n; i++ {
		s.shards = append(s.shards, newShard(s, i, per, burst))
	}
	s.nextID.Store(uint64(time.Now().Unix()) << 20)
	s.metrics = newMetrics(s)
	return s, nil
}

func firstPoolDNS(s *Server) []netip.Addr {
	if p := s.pools4[s.cfg.AAA.DefaultPool4]; p != nil && len(p.DNS) > 0 {
		return p.DNS[:min(2, len(p.DNS))]
	}
	for _, pc := range s.cfg.Pools {
		if p := s.pools4[pc.Name]; p != nil && len(p.DNS) > 0 {
			return p.DNS[:min(2, len(p.DNS))]
		}
	}
	return nil
}

func (s *Server) addPool(pc PoolConfig) error {
	var dns []netip.Addr
	for _, d := range pc.DNS {
		a, err := netip.ParseAddr(d)
		if err != nil {
			return fmt.Errorf("pool %s: dns %q: %w", pc.Name, d, err)
		}
		dns = append(dns, a)
	}
	if pc.Name == "" || s.pools4[pc.Name] != nil || s.pools6[pc.Name] != nil {
		return fmt.Errorf("pool %q: empty or repeated name", pc.Name)
	}
	switch {
	case pc.Range != "" && pc.Prefix == "":
		first, last, ok := cutRange(pc.Range)
		if !ok {
			return fmt.Errorf("pool %s: range %q: want first-last", pc.Name, pc.Range)
		}
		gw, err := netip.ParsePrefix(pc.Gateway)
		if err != nil {
			return fmt.Errorf("pool %s: gateway %q: want address/length", pc.Name, pc.Gateway)
		}
		p, err := pool.NewV4(pc.Name, first, last, gw, dns, pc.Hold)
		if err != nil {
			return err
		}
		if !gw.Contains(first) || !gw.Contains(last) {
			return fmt.Errorf("pool %s: range %s is not inside the gateway's subnet %s", pc.Name, pc.Range, gw.Masked())
		}
		s.pools4[pc.Name] = p
	case pc.Prefix != "" && pc.Range == "":
		pf, err := netip.ParsePrefix(pc.Prefix)
		if err != nil {
			return fmt.Errorf("pool %s: prefix %q: %w", pc.Name, pc.Prefix, err)
		}
		p, err := pool.NewV6(pc.Name, pf, pc.Block, pc.PD, dns, pc.Hold)
		if err != nil {
			return err
		}
		s.pools6[pc.Name] = p
	default:
		return fmt.Errorf("pool %s: give range (IPv4) or prefix (IPv6)", pc.Name)
	}
	return nil
}

func cutRange(r string) (netip.Addr, netip.Addr, bool) {
	for i := 0; i < len(r); i++ {
		if r[i] == '-' {
			a, err1 := netip.ParseAddr(r[:i])
			b, err2 := netip.ParseAddr(r[i+1:])
			return a, b, err1 == nil && err2 == nil
		}
	}
	return netip.Addr{}, netip.Addr{}, false
}

// Run serves until ctx ends: the shards, then the access reader.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, sh := range s.shards {
		wg.Add(1)
		go func(sh *shard) { defer wg.Done(); sh.run(ctx) }(sh)
	}
	if err := s.restore(ctx); err != nil {
		slog.Error("restoring sessions", "err", err)
	}
	close(s.ready)
	err := s.access.Run(ctx, s.deliver)
	wg.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Ready is closed once restored sessions are back and frames are read.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// shardOf picks the shard of a circuit (Fibonacci hashing of its fields).
func (s *Server) shardOf(port string, l frame.Line, m frame.MAC) *shard {
	h := uint64(l.STag)<<48 | uint64(l.CTag)<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
	h ^= uint64(m[0])<<56 | uint64(m[1])<<40
	for i := 0; i < len(port); i++ {
		h = h*31 + uint64(port[i])
	}
	h *= 0x9e3779b97f4a7c15
	hi, _ := bits.Mul64(h, uint64(len(s.shards)))
	return s.shards[hi]
}

// deliver takes a frame from the access side to its shard.
func (s *Server) deliver(port string, b []byte) {
	s.ctr.inc(cAccessRx)
	ps := s.ports[port]
	if ps == nil {
		s.ctr.inc(cAccessUnknownPort)
		return
	}
	h, _, err := frame.Parse(b)
	if err != nil || !h.Src.IsUnicast() {
		s.ctr.inc(cAccessMalformed)
		return
	}
	sh := s.shardOf(port, h.Line, h.Src)
	ev := event{port: ps, hdr: h, data: append([]byte(nil), b...)}
	select {
	case sh.in <- ev:
	default:
		// The shard is behind: shed load at the door rather than block
		// the reader (which serves every shard).
		s.ctr.inc(cAccessQueueFull)
	}
}

func (s *Server) newID() uint64 { return s.nextID.Add(1) }

// indexAdd records which shard owns a session (the API and CoA find it).
func (s *Server) indexAdd(id uint64, sh *shard) {
	s.idxMu.Lock()
	s.index[id] = sh
	s.idxMu.Unlock()
}

func (s *Server) indexDel(id uint64) {
	s.idxMu.Lock()
	delete(s.index, id)
	s.idxMu.Unlock()
}

func (s *Server) shardByID(id uint64) *shard {
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	return s.index[id]
}

// Counters reads the per-protocol counters.
func (s *Server) Counters() map[string]map[string]uint64 { return s.ctr.snapshot() }

// Config is the server's configuration.
func (s *Server) Config() *Config { return s.cfg }
