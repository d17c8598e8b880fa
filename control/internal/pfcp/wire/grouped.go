package wire

import "github.com/wmnsk/go-pfcp/ie"

// go-pfcp asks whether an IE type is grouped on every marshal, length and
// parse step (ie.(*IE).IsGrouped), through a function that takes a
// sync.RWMutex and looks a map up: 24 % of the CPU time of a session
// establishment in our profile (RLock, RUnlock and the map hash, for every
// IE at every level).  The same answers from a table filled once, read
// without a lock; SetIsGroupedFun is go-pfcp's own hook for this.
var grouped [1 << 16]bool

func init() {
	probe := &ie.IE{}
	for t := 0; t < 1<<16; t++ {
		probe.Type = uint16(t)
		grouped[t] = probe.IsGrouped()
	}
	ie.SetIsGroupedFun(func(t uint16) bool { return grouped[t] })
}
