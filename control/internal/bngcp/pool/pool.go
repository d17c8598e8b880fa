// Package pool hands out subscriber addresses: IPv4 addresses from ranges,
// and IPv6 blocks from a prefix (one block per subscriber, from which its
// link prefix and its delegated prefix are cut).
//
// A pool is a bitmap over its range with a rotating cursor: Allocate is a
// scan from the cursor for a free bit (amortised O(1) while the pool is
// not nearly full), Release clears one, Reserve takes a given address (a
// RADIUS Framed-IP-Address, a session restored after a restart).  A
// released address waits a hold time before it is handed out again, so a
// subscriber that comes back soon after a flap gets its address back and
// another one does not inherit a stale ARP entry or a core route that is
// still converging.
//
// Pools are safe for concurrent use (one mutex each: a few hundred
// nanoseconds per operation, far below a session set-up's cost).
package pool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"sync"
	"time"
)

// Errors.
var (
	ErrExhausted = errors.New("pool exhausted")
	ErrNotInPool = errors.New("address not in the pool")
	ErrInUse     = errors.New("address in use")
)

// V4 is a pool of IPv4 addresses.
type V4 struct {
	Name    string
	Gateway netip.Prefix // the subscribers' gateway and subnet (DHCP router, subnet mask)
	DNS     []netip.Addr
	first   uint32
	size    uint32
	hold    time.Duration
	now     func() time.Time

	mu     sync.Mutex
	used   []uint64
	held   map[uint32]time.Time // released at, still held
	cursor uint32
	inUse  int
}

func v4u(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }
func u4v(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// NewV4 makes a pool of first..last (inclusive).  The gateway address and
// the subnet's network and broadcast addresses are never handed out.
func NewV4(name string, first, last netip.Addr, gw netip.Prefix, dns []netip.Addr, hold time.Duration) (*V4, error) {
	if !first.Is4() || !last.Is4() || v4u(last) < v4u(first) {
		return nil, fmt.Errorf("pool %s: range %s-%s is not an IPv4 range", name, first, last)
	}
	n := v4u(last) - v4u(first) + 1
	if n > 1<<24 {
		return nil, fmt.Errorf("pool %s: %d addresses (at most 2^24)", name, n)
	}
	p := &V4{Name: name, Gateway: gw, DNS: dns, first: v4u(first), size: n, hold: hold, now: time.Now,
		used: make([]uint64, (n+63)/64), held: map[uint32]time.Time{}}
	if gw.IsValid() {
		if !gw.Addr().Is4() {
			return nil, fmt.Errorf("pool %s: gateway %s is not IPv4", name, gw)
		}
		never := []netip.Addr{gw.Addr()}
		if gw.Bits() < 31 {
			never = append(never, gw.Masked().Addr(), broadcast(gw.Masked()))
		}
		for _, a := range never {
			if p.contains(a) {
				p.mark(v4u(a) - p.first)
			}
		}
	}
	return p, nil
}

func broadcast(p netip.Prefix) netip.Addr {
	v := v4u(p.Addr()) | (1<<(32-p.Bits()) - 1)
	return u4v(v)
}

func (p *V4) contains(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	v := v4u(a)
	return v >= p.first && v-p.first < p.size
}

func (p *V4) mark(i uint32) {
	if p.used[i/64]&(1<<(i%64)) == 0 {
		p.used[i/64] |= 1 << (i % 64)
		p.inUse++
	}
}

func (p *V4) isUsed(i uint32) bool { return p.used[i/64]&(1<<(i%64)) != 0 }

// Contains reports whether a is in the pool's range.
func (p *V4) Contains(a netip.Addr) bool { return p.contains(a) }

// Allocate takes a free address.
func (p *V4) Allocate() (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if i, ok := p.scan(now); ok {
		p.mark(i)
		delete(p.held, i)
		p.cursor = (i + 1) % p.size
		return u4v(p.first + i), nil
	}
	return netip.Addr{}, fmt.Errorf("pool %s: %w", p.Name, ErrExhausted)
}

// scan finds a free bit from the cursor, a word at a time, skipping held
// addresses whose hold has not passed (one of those is taken only when
// nothing else is free).
func (p *V4) scan(now time.Time) (uint32, bool) {
	words := len(p.used)
	start := p.cursor
	var heldCandidate uint32
	haveHeld := false
	for k := 0; k <= words; k++ {
		wi := (int(start/64) + k) % words
		free := ^p.used[wi]
		if k == 0 {
			free &= ^uint64(0) << (start % 64)
		}
		if k == words {
			free &= 1<<(start%64) - 1
		}
		if wi == words-1 && p.size%64 != 0 {
			free &= 1<<(p.size%64) - 1
		}
		for free != 0 {
			b := bits.TrailingZeros64(free)
			free &= free - 1
			i := uint32(wi*64 + b)
			if t, ok := p.held[i]; ok && now.Sub(t) < p.hold {
				if !haveHeld {
					heldCandidate, haveHeld = i, true
				}
				continue
			}
			return i, true
		}
	}
	return heldCandidate, haveHeld
}

// Reserve takes address a if it is free.
func (p *V4) Reserve(a netip.Addr) error {
	if !p.contains(a) {
		return fmt.Errorf("pool %s: %s: %w", p.Name, a, ErrNotInPool)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := v4u(a) - p.first
	if p.isUsed(i) {
		return fmt.Errorf("pool %s: %s: %w", p.Name, a, ErrInUse)
	}
	p.mark(i)
	delete(p.held, i)
	return nil
}

// Release returns a.
func (p *V4) Release(a netip.Addr) {
	if !p.contains(a) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := v4u(a) - p.first
	if p.isUsed(i) {
		p.used[i/64] &^= 1 << (i % 64)
		p.inUse--
		if p.hold > 0 {
			p.held[i] = p.now()
			if len(p.held) > 4096 {
				p.expireHeld()
			}
		}
	}
}

func (p *V4) expireHeld() {
	now := p.now()
	for i, t := range p.held {
		if now.Sub(t) >= p.hold {
			delete(p.held, i)
		}
	}
}

// Stats are a pool's size and use.
type Stats struct {
	Name  string `json:"name"`
	Size  uint64 `json:"size"`
	InUse uint64 `json:"in_use"`
}

// Stats reads the pool's use.
func (p *V4) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Name: p.Name, Size: uint64(p.size), InUse: uint64(p.inUse)}
}

// V6 is a pool of IPv6 blocks: Prefix cut into blocks of BlockLen.  A
// subscriber's block holds its link prefix (the first /64: router
// advertisements over PPP, the IA_NA address of IPoE) and its delegated
// prefix (IA_PD: the PDLen prefix at index 1 of the block), so the user
// plane needs one prefix per subscriber for both.
//
//	block 2001:db8:100::/56
//	  link 2001:db8:100::/64           (index 0 of the /64s)
//	  PD   2001:db8:100:10::/60        (index 1 of the /60s)
type V6 struct {
	Name     string
	Prefix   netip.Prefix
	BlockLen int
	PDLen    int // 0: no delegation
	DNS      []netip.Addr
	inner    *V4 // the block index space, as a bitmap
}

// NewV6 makes a pool of BlockLen blocks of prefix.
func NewV6(name string, prefix netip.Prefix, blockLen, pdLen int, dns []netip.Addr, hold time.Duration) (*V6, error) {
	if !prefix.Addr().Is6() || prefix.Addr().Is4In6() {
		return nil, fmt.Errorf("pool %s: %s is not an IPv6 prefix", name, prefix)
	}
	if blockLen < prefix.Bits() || blockLen > 64 {
		return nil, fmt.Errorf("pool %s: block /%d must lie between /%d and /64", name, blockLen, prefix.Bits())
	}
	if blockLen-prefix.Bits() > 24 {
		return nil, fmt.Errorf("pool %s: 2^%d blocks (at most 2^24)", name, blockLen-prefix.Bits())
	}
	if pdLen != 0 && (pdLen <= blockLen || pdLen > 64) {
		return nil, fmt.Errorf("pool %s: delegated /%d must be longer than the block /%d and at most /64", name, pdLen, blockLen)
	}
	n := uint32(1) << (blockLen - prefix.Bits())
	inner, err := NewV4(name, u4v(0), u4v(n-1), netip.Prefix{}, nil, hold)
	if err != nil {
		return nil, err
	}
	return &V6{Name: name, Prefix: prefix.Masked(), BlockLen: blockLen, PDLen: pdLen, DNS: dns, inner: inner}, nil
}

// block is block number i.
func (p *V6) block(i uint32) netip.Prefix {
	a := p.Prefix.Addr().As16()
	hi := binary.BigEndian.Uint64(a[:8])
	hi |= uint64(i) << (64 - p.BlockLen)
	binary.BigEndian.PutUint64(a[:8], hi)
	return netip.PrefixFrom(netip.AddrFrom16(a), p.BlockLen)
}

func (p *V6) index(b netip.Prefix) (uint32, bool) {
	if b.Bits() != p.BlockLen || !p.Prefix.Contains(b.Addr()) {
		return 0, false
	}
	a := b.Addr().As16()
	hi := binary.BigEndian.Uint64(a[:8])
	base := p.Prefix.Addr().As16()
	off := hi - binary.BigEndian.Uint64(base[:8])
	return uint32(off >> (64 - p.BlockLen)), true
}

// Allocate takes a free block.
func (p *V6) Allocate() (netip.Prefix, error) {
	a, err := p.inner.Allocate()
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.block(v4u(a)), nil
}

// Reserve takes block b.
func (p *V6) Reserve(b netip.Prefix) error {
	i, ok := p.index(b)
	if !ok {
		return fmt.Errorf("pool %s: %s: %w", p.Name, b, ErrNotInPool)
	}
	return p.inner.Reserve(u4v(i))
}

// Release returns block b.
func (p *V6) Release(b netip.Prefix) {
	if i, ok := p.index(b); ok {
		p.inner.Release(u4v(i))
	}
}

// Stats reads the pool's use.
func (p *V6) Stats() Stats {
	s := p.inner.Stats()
	s.Name = p.Name
	return s
}

// Link is the block's link prefix: its first /64.
func Link(block netip.Prefix) netip.Prefix {
	return netip.PrefixFrom(block.Addr(), 64)
}

// Delegated is the block's delegated prefix of length pdLen: the second
// prefix of that length inside the block.
func Delegated(block netip.Prefix, pdLen int) netip.Prefix {
	a := block.Addr().As16()
	hi := binary.BigEndian.Uint64(a[:8])
	hi |= 1 << (64 - pdLen)
	binary.BigEndian.PutUint64(a[:8], hi)
	return netip.PrefixFrom(netip.AddrFrom16(a), pdLen)
}

// Host is the address of interface id in the link prefix.
func Host(link netip.Prefix, id uint64) netip.Addr {
	a := link.Addr().As16()
	binary.BigEndian.PutUint64(a[8:], id)
	return netip.AddrFrom16(a)
}
