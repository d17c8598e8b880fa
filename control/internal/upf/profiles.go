package upf

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/dpctl"
)

// A QER's rates become shared profiles of the data plane, one per distinct
// rate (sessions of one service tier share theirs): an uplink trTCM
// policer per (MBR, GBR) and a downlink HQoS pipe profile per MBR.  The
// name carries the rates, so a name never changes meaning and a profile is
// never edited under the subscribers using it; the data plane holds 256
// of each and has no command to delete one, so the count we create is
// bounded (MaxProfiles) and a session that would pass it is refused with
// "No resources available".

// PolicerProfile is an uplink policer (RFC 2698 trTCM, colour blind).
type PolicerProfile struct {
	Name     string
	CIR, PIR uint64 // bit/s
	CBS, PBS uint64 // bytes
}

// PipeProfile is a downlink HQoS pipe profile.
type PipeProfile struct {
	Name       string
	Rate       uint64 // bit/s
	TCPeriodMS uint64
}

// Profiles tracks the profiles this function has in the data plane.
type Profiles struct {
	mu       sync.Mutex
	max      int
	known    map[string]bool // in the data plane (created by us or found there)
	reserved map[string]bool // admitted by a plan, not created yet
	// The profiles of the rates seen, shared by every plan of a rate
	// (plans never change them): a name formatted and two objects per
	// establishment were 2 % of the function.  At most memoMax of each.
	policers, pipes sync.Map
	nMemo           atomic.Int32
}

const memoMax = 4096

// NewProfiles bounds the profiles of each kind this function creates.
func NewProfiles(max int) *Profiles {
	return &Profiles{max: max, known: map[string]bool{}, reserved: map[string]bool{}}
}

// burst is the policers' bucket: 50 ms of the rate, at least 16 KiB (a
// TCP sender's window of bursts must fit, or the policer, not the rate,
// limits it).
func burst(bps uint64) uint64 {
	b := bps / 8 / 20
	if b < 16<<10 {
		b = 16 << 10
	}
	return b
}

// PolicerFor is the profile of an uplink MBR and GBR (kbit/s): PIR = MBR,
// CIR = GBR (or the MBR when no rate is guaranteed: all or nothing above
// it, as a plain rate limit).
func (p *Profiles) PolicerFor(mbr, gbr uint64) *PolicerProfile {
	k := [2]uint64{mbr, gbr}
	if v, ok := p.policers.Load(k); ok {
		return v.(*PolicerProfile)
	}
	pp := policerFor(mbr, gbr)
	if p.nMemo.Add(1) <= memoMax {
		p.policers.Store(k, pp)
	}
	return pp
}

func policerFor(mbr, gbr uint64) *PolicerProfile {
	cir := gbr
	if cir == 0 {
		cir = mbr
	}
	return &PolicerProfile{Name: fmt.Sprintf("pfcp-u%d-%d", mbr, gbr), CIR: cir * 1000, PIR: mbr * 1000,
		CBS: burst(cir * 1000), PBS: burst(mbr * 1000)}
}

// PipeFor is the profile of a downlink MBR (kbit/s).  rte_sched hands a
// pipe its traffic class credits once per period; a period must carry two
// full frames or a frame can wait for ever, so slow pipes get longer ones.
func (p *Profiles) PipeFor(mbr uint64) *PipeProfile {
	if v, ok := p.pipes.Load(mbr); ok {
		return v.(*PipeProfile)
	}
	pp := pipeFor(mbr)
	if p.nMemo.Add(1) <= memoMax {
		p.pipes.Store(mbr, pp)
	}
	return pp
}

func pipeFor(mbr uint64) *PipeProfile {
	bps := mbr * 1000
	period := uint64(10)
	if need := (2*1538*8*1000 + bps - 1) / bps; need > period {
		period = need
	}
	if period > 1000 {
		period = 1000
	}
	return &PipeProfile{Name: fmt.Sprintf("pfcp-d%d", mbr), Rate: bps, TCPeriodMS: period}
}

// Admit reserves room for the plan's profiles that do not exist yet.
func (p *Profiles) Admit(sp *SubPlan) *Reject {
	if sp == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	count := func(prefix string) int {
		n := 0
		for name := range p.known {
			if strings.HasPrefix(name, prefix) {
				n++
			}
		}
		for name := range p.reserved {
			if strings.HasPrefix(name, prefix) && !p.known[name] {
				n++
			}
		}
		return n
	}
	for _, x := range []struct {
		name   string
		prefix string
	}{{nameOf(sp.Policer), "pfcp-u"}, {nameOf(sp.Pipe), "pfcp-d"}} {
		if x.name == "" || p.known[x.name] || p.reserved[x.name] {
			continue
		}
		if count(x.prefix) >= p.max {
			return reject(ie.CauseNoResourcesAvailable, ie.CreateQER,
				"profile %s would be one more than the %d this function may create", x.name, p.max)
		}
		p.reserved[x.name] = true
	}
	return nil
}

func nameOf[T interface{ *PolicerProfile | *PipeProfile }](x T) string {
	switch v := any(x).(type) {
	case *PolicerProfile:
		if v != nil {
			return v.Name
		}
	case *PipeProfile:
		if v != nil {
			return v.Name
		}
	}
	return ""
}

// Ensure creates in the data plane the profiles the plans use that it
// does not have yet.  Creating one that exists is harmless (same name,
// same rates: policer-add and pipe-add replace it with itself).
func (p *Profiles) Ensure(ctx context.Context, dp *dpctl.Client, subs []*SubPlan) error {
	type want struct {
		pol  *PolicerProfile
		pipe *PipeProfile
	}
	var todo []want
	p.mu.Lock()
	seen := map[string]bool{}
	for _, sp := range subs {
		if sp == nil {
			continue
		}
		if sp.Policer != nil && !p.known[sp.Policer.Name] && !seen[sp.Policer.Name] {
			seen[sp.Policer.Name] = true
			todo = append(todo, want{pol: sp.Policer})
		}
		if sp.Pipe != nil && !p.known[sp.Pipe.Name] && !seen[sp.Pipe.Name] {
			seen[sp.Pipe.Name] = true
			todo = append(todo, want{pipe: sp.Pipe})
		}
	}
	p.mu.Unlock()
	for _, w := range todo {
		var err error
		var name string
		if w.pol != nil {
			name = w.pol.Name
			err = dp.PolicerAdd(ctx, dpctl.Policer{Name: w.pol.Name, CIR: u64s(w.pol.CIR), CBS: u64s(w.pol.CBS),
				PIR: u64s(w.pol.PIR), PBS: u64s(w.pol.PBS)})
		} else {
			name = w.pipe.Name
			err = dp.PipeAdd(ctx, dpctl.Pipe{Name: w.pipe.Name, Rate: u64s(w.pipe.Rate),
				TCPeriod: u64s(w.pipe.TCPeriodMS)})
		}
		if err != nil {
			return fmt.Errorf("profile %s: %w", name, err)
		}
		p.mu.Lock()
		p.known[name] = true
		p.mu.Unlock()
	}
	return nil
}

// Forget marks every profile unknown (the data plane restarted without
// them); the next Ensure creates them again.
func (p *Profiles) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.known {
		p.reserved[k] = true
	}
	p.known = map[string]bool{}
}

// Learn records the profiles the data plane already has (at start).
func (p *Profiles) Learn(names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range names {
		p.known[n] = true
	}
}

func u64s(v uint64) string { return strconv.FormatUint(v, 10) }

// has reports whether the named profiles ("" is none) are in the data plane.
func (p *Profiles) has(policer, pipe string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return (policer == "" || p.known[policer]) && (pipe == "" || p.known[pipe])
}

// missingFrom reports whether a profile we know is not among names (the
// data plane's list): it lost them, it restarted.
func (p *Profiles) missingFrom(names []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := make(map[string]bool, len(names))
	for _, n := range names {
		in[n] = true
	}
	for n := range p.known {
		if !in[n] {
			return true
		}
	}
	return false
}
