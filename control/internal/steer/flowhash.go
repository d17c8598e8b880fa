package steer

// The index hash of xdp/include/flowhash.h: which prio_map set a masked key
// lives in, and which alternative node a flow is offloaded to. It is not the
// flow hash of the intent API (RuleHash, jhash2). Every test that expects a
// rule to hit checks the two implementations agree (the agent places the
// rule with this one, the program looks with the C one), and
// alt-node-chosen-by-flow-hash checks AltIndex against the frame.

const (
	flowhashK0    = 0x9e3779b97f4a7c15
	flowhashK1    = 0xc2b2ae3d27d4eb4f
	flowhashK2    = 0x165667b19e3779f9
	flowhashK3    = 0xd6e8feb86659fd93
	flowhashK4    = 0xff51afd7ed558ccd
	flowhashK5    = 0xc4ceb9fe1a85ec53
	flowhashFinal = 0x9e3779b97f4a7c15
)

// flowhash6 is flowhash6() of flowhash.h over a key's six 64-bit words.
func flowhash6(w [6]uint64) uint32 {
	s := (w[0]*flowhashK0 + w[1]*flowhashK1) + (w[2]*flowhashK2 + w[3]*flowhashK3) +
		(w[4]*flowhashK4 + w[5]*flowhashK5)
	s ^= s >> 32
	return uint32((s * flowhashFinal) >> 32)
}

// words64 is the key as the program's six 64-bit words (little-endian).
func words64(r steerFlowKey) [6]uint64 {
	w := words(r)
	var out [6]uint64
	for i := range out {
		out[i] = uint64(w[2*i]) | uint64(w[2*i+1])<<32
	}
	return out
}

// IndexHash is the program's index hash of a key (already masked for a
// rule; the whole key for the alternative node).
func IndexHash(k Key) uint32 { return flowhash6(words64(k.raw())) }
