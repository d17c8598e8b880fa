package upf

import "github.com/wmnsk/go-pfcp/ie"

// A new session and room for its rules in one allocation, where the
// session, its four rule arrays, its five rule sets' entry arrays and its
// UE IP Address lists were twelve (an establishment's objects were 36;
// each is allocation work now and marking work at every collection while
// the session lives).  Two shapes, so the usual sessions waste little:
//
//	dataSessionBlock  the subscriber's data rules: 2 PDRs, 2 FARs, 1 QER,
//	                  1 URR, 3 Traffic Endpoints (1,728 octets)
//	fullSessionBlock  with the per-session control-packet redirect:
//	                  4 PDRs, 4 FARs, 2 QERs, 2 URRs, 4 Traffic Endpoints (2,720)
//
// A request creating more of a kind than its block holds gets an array of
// its own for that kind.  The arrays are handed out with their capacity
// clipped to the request's count (room), so a rule set never appends into
// its neighbour: they are what the separate arrays were, in one object.
// The rules are shared by the session's clones as before; a block lives
// as long as one of them points into it.

// ruleCounts is how many rules of each kind a request creates.
type ruleCounts struct{ pdr, far, qer, urr, te int }

func countCreates(ies []*ie.IE) (n ruleCounts) {
	for _, i := range ies {
		switch i.Type {
		case ie.CreatePDR:
			n.pdr++
		case ie.CreateFAR:
			n.far++
		case ie.CreateQER:
			n.qer++
		case ie.CreateURR:
			n.urr++
		case ie.CreateTrafficEndpoint:
			n.te++
		}
	}
	return
}

// ruleRoom is a block's arrays, taken by parser.rules and parser.match.
type ruleRoom struct {
	pdrs  []PDR
	fars  []FAR
	qers  []QER
	tes   []TE
	pdrE  []ruleEntry[uint16, PDR]
	farE  []ruleEntry[uint32, FAR]
	qerE  []ruleEntry[uint32, QER]
	urrE  []ruleEntry[uint32, URR]
	teE   []ruleEntry[uint8, TE]
	ueips []UEIP // UE IP Address lists, two entries each (IPv4 and IPv6)
}

type dataSessionBlock struct {
	s     Session
	pdrs  [2]PDR
	fars  [2]FAR
	qers  [1]QER
	tes   [3]TE
	pdrE  [2]ruleEntry[uint16, PDR]
	farE  [2]ruleEntry[uint32, FAR]
	qerE  [1]ruleEntry[uint32, QER]
	urrE  [1]ruleEntry[uint32, URR]
	teE   [3]ruleEntry[uint8, TE]
	ueips [4]UEIP
}

type fullSessionBlock struct {
	s     Session
	pdrs  [4]PDR
	fars  [4]FAR
	qers  [2]QER
	tes   [4]TE
	pdrE  [4]ruleEntry[uint16, PDR]
	farE  [4]ruleEntry[uint32, FAR]
	qerE  [2]ruleEntry[uint32, QER]
	urrE  [2]ruleEntry[uint32, URR]
	teE   [4]ruleEntry[uint8, TE]
	ueips [4]UEIP
}

// newSessionBlock allocates a session with room for n's rules.
func newSessionBlock(n ruleCounts) (*Session, ruleRoom) {
	if n.pdr <= 2 && n.far <= 2 && n.qer <= 1 && n.urr <= 1 && n.te <= 3 {
		b := &dataSessionBlock{}
		return &b.s, ruleRoom{b.pdrs[:], b.fars[:], b.qers[:], b.tes[:],
			b.pdrE[:], b.farE[:], b.qerE[:], b.urrE[:], b.teE[:], b.ueips[:]}
	}
	b := &fullSessionBlock{}
	return &b.s, ruleRoom{b.pdrs[:], b.fars[:], b.qers[:], b.tes[:],
		b.pdrE[:], b.farE[:], b.qerE[:], b.urrE[:], b.teE[:], b.ueips[:]}
}

// room is the first n elements of a (length 0, capacity n) when a holds
// them, else a fresh array of n; nil for n 0.
func room[T any](a []T, n int) []T {
	if n == 0 {
		return nil
	}
	if n <= len(a) {
		return a[:0:n]
	}
	return make([]T, 0, n)
}
