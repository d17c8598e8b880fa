package steer

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// Constants mirrored from xdp/steer/steer.h; TestConstantsMatchObject checks
// them against the object's map definitions.
const (
	MaxCPUs  = 128
	MaxMasks = 4
	MaxAlt   = 16
	NoCPU    = 0xffffffff
	hashSeed = 0x45505344 // STEER_JHASH_INITVAL
	keyWords = 12
)

// Key is the flow key the program builds: tunnel ids and the innermost
// 5-tuple. Zero fields are "absent" (no VXLAN, no ports).
type Key struct {
	VNI     uint32
	TEID    uint32
	Src     netip.Addr
	Dst     netip.Addr
	SrcPort uint16
	DstPort uint16
	Proto   uint8
}

// Fields is the set of key fields a rule matches on.
type Fields uint8

const (
	FieldVNI Fields = 1 << iota
	FieldTEID
	FieldSrc
	FieldDst
	FieldSrcPort
	FieldDstPort
	FieldProto
)

var fieldNames = []string{"vni", "teid", "src", "dst", "sport", "dport", "proto"}

func (f Fields) String() string {
	var parts []string
	for i, n := range fieldNames {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, "+")
}

// addr16 stores an address as the program does: IPv6 as is, IPv4
// IPv4-mapped, absent as zeros.
func addr16(a netip.Addr) [16]byte {
	if !a.IsValid() {
		return [16]byte{}
	}
	return a.As16() // IPv4 comes back as ::ffff:a.b.c.d
}

func (k Key) raw() steerFlowKey {
	return steerFlowKey{
		Vni: k.VNI, Teid: k.TEID,
		Saddr: addr16(k.Src), Daddr: addr16(k.Dst),
		Sport: k.SrcPort, Dport: k.DstPort, Proto: k.Proto,
	}
}

func keyFromRaw(r steerFlowKey) Key {
	conv := func(b [16]byte) netip.Addr {
		if b == [16]byte{} {
			return netip.Addr{}
		}
		return netip.AddrFrom16(b).Unmap()
	}
	return Key{VNI: r.Vni, TEID: r.Teid, Src: conv(r.Saddr), Dst: conv(r.Daddr),
		SrcPort: r.Sport, DstPort: r.Dport, Proto: r.Proto}
}

// words lays the key out as the program's struct flow_key and reads it as
// the 12 host-order (little-endian) words jhash2 consumes.
func words(r steerFlowKey) [keyWords]uint32 {
	var b [keyWords * 4]byte
	binary.LittleEndian.PutUint32(b[0:], r.Vni)
	binary.LittleEndian.PutUint32(b[4:], r.Teid)
	copy(b[8:24], r.Saddr[:])
	copy(b[24:40], r.Daddr[:])
	binary.LittleEndian.PutUint16(b[40:], r.Sport)
	binary.LittleEndian.PutUint16(b[42:], r.Dport)
	b[44] = r.Proto
	var w [keyWords]uint32
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[i*4:])
	}
	return w
}

func fromWords(w [keyWords]uint32) steerFlowKey {
	var b [keyWords * 4]byte
	for i := range w {
		binary.LittleEndian.PutUint32(b[i*4:], w[i])
	}
	var r steerFlowKey
	r.Vni = binary.LittleEndian.Uint32(b[0:])
	r.Teid = binary.LittleEndian.Uint32(b[4:])
	copy(r.Saddr[:], b[8:24])
	copy(r.Daddr[:], b[24:40])
	r.Sport = binary.LittleEndian.Uint16(b[40:])
	r.Dport = binary.LittleEndian.Uint16(b[42:])
	r.Proto = b[44]
	return r
}

// maskRaw is the all-ones mask of the fields in f, as mask_map holds it.
func (f Fields) maskRaw() steerFlowKey {
	var m steerFlowKey
	ones := [16]byte{}
	for i := range ones {
		ones[i] = 0xff
	}
	if f&FieldVNI != 0 {
		m.Vni = 0xffffffff
	}
	if f&FieldTEID != 0 {
		m.Teid = 0xffffffff
	}
	if f&FieldSrc != 0 {
		m.Saddr = ones
	}
	if f&FieldDst != 0 {
		m.Daddr = ones
	}
	if f&FieldSrcPort != 0 {
		m.Sport = 0xffff
	}
	if f&FieldDstPort != 0 {
		m.Dport = 0xffff
	}
	if f&FieldProto != 0 {
		m.Proto = 0xff
	}
	return m
}

// Masked returns the key with only the fields in f kept.
func (k Key) Masked(f Fields) Key {
	kw, mw := words(k.raw()), words(f.maskRaw())
	for i := range kw {
		kw[i] &= mw[i]
	}
	return keyFromRaw(fromWords(kw))
}

// Hash is the flow hash of the key: jhash2 over its 12 words, as the
// intent API reports it (the program indexes prio_map with IndexHash).
func (k Key) Hash() uint32 {
	w := words(k.raw())
	return jhash2(w[:], hashSeed)
}

// RuleHash is the flow hash of a rule matching k on fields f: its identity
// in the agent, the API and prio_value.hash.
func RuleHash(k Key, f Fields) uint32 { return k.Masked(f).Hash() }

// AltIndex is the alternative node the program picks for a flow key when
// n nodes are configured: IndexHash(k) * n / 2^32.
func AltIndex(k Key, n int) int { return int(uint64(IndexHash(k)) * uint64(n) >> 32) }

func (k Key) String() string {
	return fmt.Sprintf("vni=%d teid=%#x %v:%d -> %v:%d proto=%d", k.VNI, k.TEID, k.Src, k.SrcPort, k.Dst, k.DstPort, k.Proto)
}
