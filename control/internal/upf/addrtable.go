package upf

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// addrTable is the UE addresses and prefixes the sessions hold (owner
// SEID by prefix): the largest table an establishment looks into (two
// entries a dual-stack subscriber, 128K at the bench's 64K sessions).
// Its raw form (a key of 16 octets and a tag) holds the access keys too
// (accesskeys.go).
//
// Why not a Go map: every establishment's first look at a map of that
// size is a cache miss and, on a VM with nested paging, a TLB miss; a
// Go map's slot for a netip.Prefix (40 octets: the address's zone is a
// pointer) sits in a group of eight behind its control word, two cache
// lines a look, and the garbage collector walks the whole map at every
// cycle for those pointers.  Here a slot is 32 octets with no pointer
// (two to a cache line), probed linearly from the hash (a look is
// usually one line), in memory of its own (mmap) that the kernel is asked
// to back with huge pages (MADV_HUGEPAGE: transparent huge pages are
// often `madvise` only, and Go's heap does not ask), and that the
// collector never sees.
//
// Open addressing with linear probing, load at most one half, deletion
// by backward shift (no tombstones: a table that churns stays as fast as
// a fresh one).  The hash is seeded at random per table, so a control
// plane cannot choose addresses that all land on one run of slots.
//
// The key is the prefix as netip.Prefix compares it, less the zone (UE
// addresses come from PFCP IEs, which have none): the address's 16
// octets, whether it is IPv4, the prefix length.
type addrTable struct {
	slots []addrSlot
	mask  uint64
	n     int
	seed  [2]uint64
	mmap  []byte // the slots' memory when mapped (nil: Go's heap)
}

type addrSlot struct {
	hi, lo uint64
	meta   uint64 // slotUsed | slotIs4 | prefix length + 1
	owner  uint64
}

const (
	slotUsed = 1 << 63
	slotIs4  = 1 << 62
	// A table of fewer slots lives on Go's heap (tests, small ranges);
	// larger ones are mapped, a whole number of 2 MiB pages.
	addrMmapMin = 1 << 16
)

func newAddrTable(hint int) *addrTable {
	t := &addrTable{}
	var s [16]byte
	rand.Read(s[:])
	t.seed = [2]uint64{binary.LittleEndian.Uint64(s[:]), binary.LittleEndian.Uint64(s[8:]) | 1}
	t.alloc(max(16, 1<<bits.Len(uint(max(hint, 1)*2-1))))
	return t
}

func (t *addrTable) alloc(n int) {
	t.slots, t.mmap, t.mask, t.n = nil, nil, uint64(n-1), 0
	if n >= addrMmapMin {
		size := n * int(unsafe.Sizeof(addrSlot{}))
		m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err == nil {
			// Advice only: where the kernel has no huge pages it backs
			// the map with small ones.
			_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
			t.mmap = m
			t.slots = unsafe.Slice((*addrSlot)(unsafe.Pointer(&m[0])), n)
			return
		}
	}
	t.slots = make([]addrSlot, n)
}

func (t *addrTable) key(p netip.Prefix) (hi, lo, meta uint64) {
	a := p.Addr().As16()
	hi, lo = binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	meta = slotUsed | uint64(p.Bits()+1)&0xff
	if p.Addr().Is4() {
		meta |= slotIs4
	}
	return
}

// hash mixes the key with the table's seed (the folded 128-bit product
// of wyhash and its kin).
func (t *addrTable) hash(hi, lo, meta uint64) uint64 {
	h1, l1 := bits.Mul64(hi^t.seed[0], lo^t.seed[1])
	h2, l2 := bits.Mul64((h1^l1)^meta, t.seed[1]^0x9e3779b97f4a7c15)
	return h2 ^ l2
}

// find is the slot holding the key, or the empty slot that ends its run.
func (t *addrTable) find(hi, lo, meta uint64) *addrSlot {
	for i := t.hash(hi, lo, meta) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.meta == 0 || s.hi == hi && s.lo == lo && s.meta == meta {
			return s
		}
	}
}

// get is the owner of p.
func (t *addrTable) get(p netip.Prefix) (uint64, bool) { return t.getRaw(t.key(p)) }

// set makes seid the owner of p.
func (t *addrTable) set(p netip.Prefix, seid uint64) {
	hi, lo, meta := t.key(p)
	t.insert(hi, lo, meta).owner = seid
}

// claim makes seid the owner of p unless another session holds it: the
// owner after the call, and whether p was not held before (one probe,
// where a look and then a set were two).
func (t *addrTable) claim(p netip.Prefix, seid uint64) (owner uint64, added bool) {
	hi, lo, meta := t.key(p)
	return t.claimRaw(hi, lo, meta, seid)
}

// del removes p.
func (t *addrTable) del(p netip.Prefix) { t.delRaw(t.key(p)) }

// The same operations on a key of 16 octets and a tag (meta, with
// slotUsed set): what other fixed-size keys use (accessKeyTable).

func (t *addrTable) getRaw(hi, lo, meta uint64) (uint64, bool) {
	s := t.find(hi, lo, meta)
	return s.owner, s.meta != 0
}

// insert is the key's slot, made (owner 0) when the key is not there.
func (t *addrTable) insert(hi, lo, meta uint64) *addrSlot {
	s := t.find(hi, lo, meta)
	if s.meta == 0 {
		if uint64(t.n+1)*2 > t.mask+1 {
			t.grow()
			s = t.find(hi, lo, meta)
		}
		*s = addrSlot{hi: hi, lo: lo, meta: meta}
		t.n++
	}
	return s
}

func (t *addrTable) claimRaw(hi, lo, meta, seid uint64) (owner uint64, added bool) {
	s := t.find(hi, lo, meta)
	if s.meta != 0 {
		return s.owner, false
	}
	if uint64(t.n+1)*2 > t.mask+1 {
		t.grow()
		s = t.find(hi, lo, meta)
	}
	*s = addrSlot{hi: hi, lo: lo, meta: meta, owner: seid}
	t.n++
	return seid, true
}

// delRaw removes the key: the slots after it in its run move back into
// the hole when their home is at or before it (backward-shift deletion).
func (t *addrTable) delRaw(hi, lo, meta uint64) {
	s := t.find(hi, lo, meta)
	if s.meta == 0 {
		return
	}
	hole := uint64((uintptr(unsafe.Pointer(s)) - uintptr(unsafe.Pointer(&t.slots[0]))) / unsafe.Sizeof(addrSlot{}))
	for i := (hole + 1) & t.mask; t.slots[i].meta != 0; i = (i + 1) & t.mask {
		x := &t.slots[i]
		home := t.hash(x.hi, x.lo, x.meta) & t.mask
		// x may fill the hole if its home is not in (hole, i], cyclically.
		if (i-home)&t.mask >= (i-hole)&t.mask {
			t.slots[hole] = *x
			hole = i
		}
	}
	t.slots[hole] = addrSlot{}
	t.n--
}

func (t *addrTable) grow() {
	old, oldMap := t.slots, t.mmap
	t.alloc(len(old) * 2)
	for i := range old {
		if x := &old[i]; x.meta != 0 {
			*t.find(x.hi, x.lo, x.meta) = *x
			t.n++
		}
	}
	if oldMap != nil {
		unix.Munmap(oldMap)
	}
}

// len is how many prefixes are held.
func (t *addrTable) len() int { return t.n }

// all calls fn for every prefix and its owner.
func (t *addrTable) all(fn func(netip.Prefix, uint64)) {
	t.allRaw(func(hi, lo, meta, owner uint64) {
		var a [16]byte
		binary.BigEndian.PutUint64(a[:8], hi)
		binary.BigEndian.PutUint64(a[8:], lo)
		addr := netip.AddrFrom16(a)
		if meta&slotIs4 != 0 {
			addr = addr.Unmap()
		}
		fn(netip.PrefixFrom(addr, int(meta&0xff)-1), owner)
	})
}

// allRaw calls fn for every key and its owner.
func (t *addrTable) allRaw(fn func(hi, lo, meta, owner uint64)) {
	for i := range t.slots {
		if x := &t.slots[i]; x.meta != 0 {
			fn(x.hi, x.lo, x.meta, x.owner)
		}
	}
}
