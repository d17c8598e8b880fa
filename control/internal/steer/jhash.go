package steer

import "math/bits"

// jhashInitval is JHASH_INITVAL of the kernel's include/linux/jhash.h.
const jhashInitval = 0xdeadbeef

// jhash2 is the kernel's jhash2 (Bob Jenkins' lookup3 over 32-bit words), the
// XDP steering paper's "adapted jhash" (docs/xdp-steering.md): the flow hash of the intent API (flow_hash, the
// rule's identity in the agent and in prio_value.hash). The program does not
// compute it: it places and finds rules by the cheaper index hash
// (flowhash.go). TestJhash2Vectors pins it to the kernel's C code.
func jhash2(k []uint32, initval uint32) uint32 {
	a := uint32(jhashInitval) + uint32(len(k))<<2 + initval
	b, c := a, a
	for len(k) > 3 {
		a += k[0]
		b += k[1]
		c += k[2]
		a, b, c = mix(a, b, c)
		k = k[3:]
	}
	switch len(k) {
	case 3:
		c += k[2]
		fallthrough
	case 2:
		b += k[1]
		fallthrough
	case 1:
		a += k[0]
		c = final(a, b, c)
	}
	return c
}

func mix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func final(a, b, c uint32) uint32 {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}
