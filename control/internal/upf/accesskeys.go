package upf

// accessKeyTable is the access keys the sessions hold (owner SEID by
// dpKey): one entry a subscriber, 64K at the bench's 64K sessions.
//
// Why not map[dpKey]uint64: the key holds two strings (the logical port,
// the MAC), so a Go map hashes and compares them through their pointers
// and keeps the map's groups full of pointers for the collector to walk;
// an establishment looked into it twice (is it free? then take it), 7 %
// of the function's CPU time in BenchmarkEstablishmentCPU, most of it
// the first look's cache miss.  Here the key is made fixed-size and held
// in an addrTable (addrtable.go: 32-octet slots with no pointer, in
// memory of its own advised for huge pages), claimed with one probe:
//
//	hi    S-TAG << 32 | C-TAG << 16 | PPPoE session id
//	lo    the MAC's 48 bits (0: no MAC in the key)
//	meta  slotUsed | keyHasMAC | the port's number
//
// A logical port is numbered the first time a key names it (the ports
// are the configured ones: translation refuses others).  A MAC is the
// canonical text net.HardwareAddr.String makes (lower-case hex, colons),
// which is what the parser produces; any other text is numbered too
// (above 2^48, so it never equals a MAC's bits), so that two texts are
// one key exactly when they are equal, as with the map before.
type accessKeyTable struct {
	t     *addrTable
	ports map[string]uint64
	odd   map[string]uint64 // MAC texts not in canonical form
}

const keyHasMAC = 1 << 61

func newAccessKeyTable(hint int) *accessKeyTable {
	return &accessKeyTable{t: newAddrTable(hint), ports: map[string]uint64{}, odd: map[string]uint64{}}
}

// key is k's fixed form; ok false when k names a port or MAC text never
// numbered (no entry can hold it) and number is false.
func (a *accessKeyTable) key(k dpKey, number bool) (hi, lo, meta uint64, ok bool) {
	port, ok := a.ports[k.Port]
	if !ok {
		if !number {
			return 0, 0, 0, false
		}
		port = uint64(len(a.ports))
		a.ports[k.Port] = port
	}
	hi = uint64(k.STag)<<32 | uint64(k.CTag)<<16 | uint64(k.PPPoE)
	meta = slotUsed | port
	if k.MAC != "" {
		meta |= keyHasMAC
		if lo, ok = macBits(k.MAC); !ok {
			if lo, ok = a.odd[k.MAC]; !ok {
				if !number {
					return 0, 0, 0, false
				}
				lo = 1<<48 + uint64(len(a.odd))
				a.odd[k.MAC] = lo
			}
		}
	}
	return hi, lo, meta, true
}

// macBits reads a MAC in net.HardwareAddr.String's form
// ("02:00:5e:10:00:01") as 48 bits.
func macBits(s string) (uint64, bool) {
	if len(s) != 17 {
		return 0, false
	}
	var v uint64
	for i := 0; i < 17; i += 3 {
		h, ok1 := hexLower(s[i])
		l, ok2 := hexLower(s[i+1])
		if !ok1 || !ok2 || i < 15 && s[i+2] != ':' {
			return 0, false
		}
		v = v<<8 | uint64(h<<4|l)
	}
	return v, true
}

func hexLower(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// get is the owner of k.
func (a *accessKeyTable) get(k dpKey) (uint64, bool) {
	hi, lo, meta, ok := a.key(k, false)
	if !ok {
		return 0, false
	}
	return a.t.getRaw(hi, lo, meta)
}

// claim makes seid the owner of k unless another session holds it: the
// owner after the call, and whether k was not held before.
func (a *accessKeyTable) claim(k dpKey, seid uint64) (owner uint64, added bool) {
	hi, lo, meta, _ := a.key(k, true)
	return a.t.claimRaw(hi, lo, meta, seid)
}

// del removes k.
func (a *accessKeyTable) del(k dpKey) {
	if hi, lo, meta, ok := a.key(k, false); ok {
		a.t.delRaw(hi, lo, meta)
	}
}

// len is how many keys are held.
func (a *accessKeyTable) len() int { return a.t.len() }

// owners calls fn for every key's owner.
func (a *accessKeyTable) owners(fn func(seid uint64)) {
	a.t.allRaw(func(_, _, _, owner uint64) { fn(owner) })
}
