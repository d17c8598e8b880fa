package steer

import "testing"

// TestJhash2Vectors pins jhash2 to the kernel's include/linux/jhash.h: the
// vectors were computed with that C code (the copy the BPF program carried
// while it computed flow hashes itself). The flow hash is now computed only
// here, so nothing else checks the two agree.
func TestJhash2Vectors(t *testing.T) {
	var k, z [keyWords]uint32
	for i := range k {
		k[i] = 0x01020304 * uint32(i+1)
	}
	for _, c := range []struct {
		name string
		in   []uint32
		want uint32
	}{
		{"ascending-words", k[:], 0x97970cc8},
		{"zero-key", z[:], 0xa4a3e00e},
	} {
		if got := jhash2(c.in, hashSeed); got != c.want {
			t.Errorf("%s: jhash2 = %08x, want %08x", c.name, got, c.want)
		}
	}
}
