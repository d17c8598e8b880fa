package intent

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"edgeplane/control/internal/steer"
)

// Tables is what the engine needs from the data plane (*steer.Dataplane).
type Tables interface {
	PutRule(hash uint32, r steer.Rule) error
	DeleteRule(hash uint32) error
	SetMask(slot int, f steer.Fields) error
	Masks() ([steer.MaxMasks]steer.Fields, error)
	Rules() (map[uint32]steer.Rule, error)
	RuleCounts(hash uint32) (steer.Counter, error)
	CPUs() []int
}

// NIC installs optional NIC-side rules for prioritised flows (ethtool
// ntuple, internal/ntuple); nil or unsupported means none.
type NIC interface {
	Supported() bool
	Add(k steer.Key, f steer.Fields, queue uint32) (int, error)
	Delete(loc int) error
}

// Engine owns the intents of one interface. Every entry point (REST, the
// restore at start-up, tests) goes through Apply and Delete: one business
// function per operation.
type Engine struct {
	mu      sync.Mutex
	t       Tables
	iface   string
	order   []string // intent ids in apply order
	intents map[string]*Intent
	slots   [steer.MaxMasks]steer.Fields
	refs    [steer.MaxMasks]int
	store   *Store            // nil: not persisted
	nic     NIC               // nil when the NIC has no ntuple filters
	nicLoc  map[uint32]int    // flow hash -> ntuple rule location
	nicNote map[uint32]string // flow hash -> why no ntuple rule
}

// SetNIC enables NIC rules when the NIC supports them.
func (e *Engine) SetNIC(n NIC) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n != nil && n.Supported() {
		e.nic = n
	}
}

// addNICLocked installs the NIC rules of an applied intent, best-effort:
// the XDP rule already steers the flow, so a failure is only noted.
func (e *Engine) addNICLocked(in *Intent) {
	if e.nic == nil {
		return
	}
	for _, r := range in.Rules {
		h := r.Hash()
		if _, done := e.nicLoc[h]; done || !r.Active {
			continue
		}
		loc, err := e.nic.Add(r.Key, r.Fields, r.CPU)
		if err != nil {
			e.nicNote[h] = err.Error()
			slog.Info("no ntuple rule for flow", "intent", in.ID, "flow_hash", FlowHashHex(h), "why", err)
			continue
		}
		e.nicLoc[h] = loc
	}
}

func (e *Engine) deleteNICLocked(in *Intent) {
	for _, r := range in.Rules {
		h := r.Hash()
		if loc, ok := e.nicLoc[h]; ok && e.nic != nil {
			if err := e.nic.Delete(loc); err != nil {
				slog.Warn("ntuple rule not removed", "loc", loc, "err", err)
			}
		}
		delete(e.nicLoc, h)
		delete(e.nicNote, h)
	}
}

// NewEngine starts an engine with no intents. store may be nil.
func NewEngine(t Tables, iface string, store *Store) *Engine {
	return &Engine{t: t, iface: iface, intents: map[string]*Intent{}, store: store,
		nicLoc: map[uint32]int{}, nicNote: map[uint32]string{}}
}

// placed is a rule with its plan decisions.
type placed struct {
	rule Rule
	hash uint32
	slot int
}

// plan is a validated change: nothing in it has touched the maps.
type plan struct {
	intents  []*Intent
	rules    [][]placed // per intent
	newSlots map[int]steer.Fields
}

// overlap reports whether one rule's field set contains the other's and
// they agree on the common fields: a packet matching the narrower rule then
// matches both, and which one wins would depend on mask slot order. Such a
// pair is refused. Rules on incomparable field sets (say VNI+TEID and
// dstIP+protocol) may both match a packet; the program takes the first
// mask slot that hits, i.e. the field set installed first (documented in
// docs/xdp-steering.md).
func overlap(a, b Rule) bool {
	both := a.Fields & b.Fields
	if both != a.Fields && both != b.Fields {
		return false
	}
	return a.Key.Masked(both) == b.Key.Masked(both)
}

func (e *Engine) planLocked(ins []Intent) (*plan, error) {
	p := &plan{newSlots: map[int]steer.Fields{}}
	slots, refs := e.slots, e.refs
	cpus := e.t.CPUs()
	type owned struct {
		id string
		r  Rule
		h  uint32
	}
	var existing []owned
	for _, id := range e.order {
		for _, r := range e.intents[id].Rules {
			existing = append(existing, owned{id, r, r.Hash()})
		}
	}
	seen := map[string]bool{}
	for i := range ins {
		in := ins[i]
		if in.Interface != "" && e.iface != "" && in.Interface != e.iface {
			return nil, badRequest("intent %s is for interface %s; this agent steers %s", in.ID, in.Interface, e.iface)
		}
		if _, dup := e.intents[in.ID]; dup || seen[in.ID] {
			return nil, conflict("intent %s already exists", in.ID)
		}
		seen[in.ID] = true
		var prs []placed
		for _, r := range in.Rules {
			if r.CPU != steer.NoCPU && !slices.Contains(cpus, int(r.CPU)) {
				return nil, badRequest("intent %s: CPU %d has no cpumap entry (online CPUs: %v)", in.ID, r.CPU, cpus)
			}
			h := r.Hash()
			for _, o := range existing {
				if o.h == h && o.r.Key.Masked(o.r.Fields) != r.Key.Masked(r.Fields) {
					return nil, conflict("intent %s: flow hash %08X collides with intent %s; change a field", in.ID, h, o.id)
				}
				if overlap(o.r, r) {
					return nil, conflict("intent %s overlaps intent %s (a packet could match both: %s and %s)", in.ID, o.id, o.r.Fields, r.Fields)
				}
			}
			slot := slices.Index(slots[:], r.Fields)
			if slot < 0 || refs[slot] == 0 && slots[slot] != r.Fields {
				slot = -1
				for s := range slots {
					if refs[s] == 0 {
						slot = s
						break
					}
				}
				if slot < 0 {
					return nil, conflict("intent %s: its field set %s would be a %dth; at most %d distinct field sets are supported", in.ID, r.Fields, steer.MaxMasks+1, steer.MaxMasks)
				}
				slots[slot] = r.Fields
				p.newSlots[slot] = r.Fields
			}
			refs[slot]++
			prs = append(prs, placed{r, h, slot})
			existing = append(existing, owned{in.ID, r, h})
		}
		p.intents = append(p.intents, &ins[i])
		p.rules = append(p.rules, prs)
	}
	return p, nil
}

// Plan validates intents against the current state without changing it.
func (e *Engine) Plan(ins []Intent) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.planLocked(ins)
	return err
}

// Apply validates the intents as one plan, then writes them: new masks
// first, then the rules. If any write fails, the ones already made are
// undone and the error returned; the intents are then not applied.
func (e *Engine) Apply(ins []Intent) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.planLocked(ins)
	if err != nil {
		return err
	}
	var putHashes []uint32
	var setSlots []int
	rollback := func(cause error) error {
		var errs []error
		for _, h := range putHashes {
			errs = append(errs, e.t.DeleteRule(h))
		}
		for _, s := range setSlots {
			errs = append(errs, e.t.SetMask(s, e.slots[s]))
		}
		if rb := errors.Join(errs...); rb != nil {
			return fmt.Errorf("%w; rollback also failed: %v", cause, rb)
		}
		return cause
	}
	for s, f := range p.newSlots {
		if err := e.t.SetMask(s, f); err != nil {
			return rollback(fmt.Errorf("write mask slot %d: %w", s, err))
		}
		setSlots = append(setSlots, s)
	}
	for i, prs := range p.rules {
		for _, pr := range prs {
			err := e.t.PutRule(pr.hash, steer.Rule{Key: pr.rule.Key.Masked(pr.rule.Fields), Fields: pr.rule.Fields,
				Slot: pr.slot, CPU: pr.rule.CPU, Active: pr.rule.Active})
			if err != nil {
				return rollback(&Error{409, fmt.Sprintf("intent %s: write rule %08X: %v", p.intents[i].ID, pr.hash, err)})
			}
			putHashes = append(putHashes, pr.hash)
		}
	}
	for i, in := range p.intents {
		e.intents[in.ID] = in
		e.order = append(e.order, in.ID)
		for _, pr := range p.rules[i] {
			e.slots[pr.slot] = pr.rule.Fields
			e.refs[pr.slot]++
		}
		e.addNICLocked(in)
	}
	return e.persistLocked()
}

// Delete removes an intent: its rules, then the masks no rule uses.
func (e *Engine) Delete(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.intents[id]
	if !ok {
		return notFound("no intent %s", id)
	}
	for _, r := range in.Rules {
		if err := e.t.DeleteRule(r.Hash()); err != nil {
			return err
		}
		s := slices.Index(e.slots[:], r.Fields)
		if s >= 0 {
			e.refs[s]--
			if e.refs[s] == 0 {
				if err := e.t.SetMask(s, 0); err != nil {
					return err
				}
				e.slots[s] = 0
			}
		}
	}
	e.deleteNICLocked(in)
	delete(e.intents, id)
	e.order = slices.DeleteFunc(e.order, func(x string) bool { return x == id })
	return e.persistLocked()
}

func (e *Engine) persistLocked() error {
	if e.store == nil {
		return nil
	}
	docs := make([]Intent, 0, len(e.order))
	for _, id := range e.order {
		docs = append(docs, *e.intents[id])
	}
	return e.store.Save(docs, e.nicLoc)
}

// RuleView is a rule as the API shows it.
type RuleView struct {
	FlowHash  string         `json:"flowHash"`
	Resources []string       `json:"resources,omitempty"`
	Match     map[string]any `json:"match"`
	CPU       *uint32        `json:"cpu"`
	Active    bool           `json:"active"`
	NICRule   *int           `json:"nicRule,omitempty"`     // ethtool ntuple location
	NICNote   string         `json:"nicRuleNote,omitempty"` // why there is none
	Packets   uint64         `json:"packets"`
	Bytes     uint64         `json:"bytes"`
}

// View is an intent as the API shows it, with its flows' counters.
type View struct {
	Intent
	Rules []RuleView `json:"rules"`
}

func match(r Rule) map[string]any {
	m := map[string]any{}
	if r.Fields&steer.FieldVNI != 0 {
		m["vni"] = r.Key.VNI
	}
	if r.Fields&steer.FieldTEID != 0 {
		m["teid"] = fmt.Sprintf("%08X", r.Key.TEID)
	}
	if r.Fields&steer.FieldSrc != 0 {
		m["srcIP"] = r.Key.Src.String()
	}
	if r.Fields&steer.FieldDst != 0 {
		m["dstIP"] = r.Key.Dst.String()
	}
	if r.Fields&steer.FieldSrcPort != 0 {
		m["srcPort"] = r.Key.SrcPort
	}
	if r.Fields&steer.FieldDstPort != 0 {
		m["dstPort"] = r.Key.DstPort
	}
	if r.Fields&steer.FieldProto != 0 {
		m["protocol"] = r.Key.Proto
	}
	return m
}

func (e *Engine) viewLocked(in *Intent) View {
	v := View{Intent: *in}
	for _, r := range in.Rules {
		rv := RuleView{FlowHash: FlowHashHex(r.Hash()), Resources: r.Resources, Match: match(r), Active: r.Active}
		if r.CPU != steer.NoCPU {
			c := r.CPU
			rv.CPU = &c
		}
		if loc, ok := e.nicLoc[r.Hash()]; ok {
			rv.NICRule = &loc
		}
		rv.NICNote = e.nicNote[r.Hash()]
		if c, err := e.t.RuleCounts(r.Hash()); err == nil {
			rv.Packets, rv.Bytes = c.Packets, c.Bytes
		}
		v.Rules = append(v.Rules, rv)
	}
	return v
}

// List returns every intent in apply order.
func (e *Engine) List() []View {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []View{}
	for _, id := range e.order {
		out = append(out, e.viewLocked(e.intents[id]))
	}
	return out
}

// Get returns one intent.
func (e *Engine) Get(id string) (View, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.intents[id]
	if !ok {
		return View{}, notFound("no intent %s", id)
	}
	return e.viewLocked(in), nil
}

// Restore rebuilds the engine from stored intents after a restart, against
// maps that may still hold their rules (pinned). A rule already in place is
// adopted without a write, so its counters and its traffic are undisturbed;
// a missing one is written; a map entry no stored intent owns is removed.
func (e *Engine) Restore(ins []Intent, nicLoc map[uint32]int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for h, loc := range nicLoc {
		e.nicLoc[h] = loc
	}
	masks, err := e.t.Masks()
	if err != nil {
		return err
	}
	have, err := e.t.Rules()
	if err != nil {
		return err
	}
	e.slots = masks
	e.refs = [steer.MaxMasks]int{}
	want := map[uint32]bool{}
	var missing []Intent
	for i := range ins {
		in := ins[i]
		complete := true
		for _, r := range in.Rules {
			h := r.Hash()
			cur, ok := have[h]
			s := slices.Index(e.slots[:], r.Fields)
			if !ok || s < 0 || cur.Slot != s || cur.Key != r.Key.Masked(r.Fields) || cur.CPU != r.CPU || cur.Active != r.Active {
				complete = false
			}
		}
		if !complete {
			missing = append(missing, in)
			continue
		}
		for _, r := range in.Rules {
			want[r.Hash()] = true
			e.refs[slices.Index(e.slots[:], r.Fields)]++
		}
		e.intents[in.ID] = &ins[i]
		e.order = append(e.order, in.ID)
	}
	for h := range have {
		if !want[h] {
			if err := e.t.DeleteRule(h); err != nil {
				return err
			}
		}
	}
	for s := range e.slots {
		if e.refs[s] == 0 && e.slots[s] != 0 {
			if err := e.t.SetMask(s, 0); err != nil {
				return err
			}
			e.slots[s] = 0
		}
	}
	if len(missing) == 0 {
		return e.persistLocked()
	}
	e.mu.Unlock()
	err = e.Apply(missing)
	e.mu.Lock()
	return err
}
