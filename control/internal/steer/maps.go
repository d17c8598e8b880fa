package steer

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/cilium/ebpf"
)

// Rule is one prio_map entry: a masked key and what to do with its packets.
type Rule struct {
	Key    Key    // masked with Fields
	Fields Fields // which key fields count
	Slot   int    // mask_map slot holding Fields
	CPU    uint32 // target CPU, or NoCPU
	Active bool   // the paper's is_active
}

// ErrExists is returned by PutRule when the hash is already in prio_map.
var ErrExists = errors.New("flow hash already in prio_map")

// ErrSetFull is returned by PutRule when both slots of the hash's set hold
// other rules.
var ErrSetFull = errors.New("both prio_map slots for this flow hash are taken")

// set is the first slot of the 2-way set for an index hash (see struct
// prio_value): the program computes the same with prio_set_mask, which the
// loader sets from the map's size.
func (d *Dataplane) set(ihash uint32) uint32 { return ihash & (d.objs.PrioMap.MaxEntries() - 2) }

// slotOf finds the slot holding the rule with flow hash hash, or returns ok
// false. Rules are identified by their flow hash (the intent API's jhash2)
// but placed by the program's index hash of their key, so the slot comes
// from d.where, which scanRules rebuilds from the map itself.
func (d *Dataplane) slotOf(hash uint32) (idx uint32, vals []steerPrioValue, ok bool, err error) {
	d.rmu.Lock()
	idx, ok = d.where[hash]
	d.rmu.Unlock()
	if !ok {
		return 0, nil, false, nil
	}
	if err := d.objs.PrioMap.Lookup(idx, &vals); err != nil {
		return 0, nil, false, err
	}
	if vals[0].Used == 0 || vals[0].Hash != hash {
		return 0, nil, false, nil
	}
	return idx, vals, true, nil
}

// PutRule inserts a rule (its Key already masked with its Fields) under
// its flow hash, in a free slot of the set its index hash picks. The same
// value goes into every CPU's copy, with zero counters. The kernel copies
// each CPU's value front to back while that CPU may be reading it: the key
// precedes the active flag, so on x86's ordered stores a reader that sees
// active = 1 sees the whole key; one that sees a half-cleared key on
// delete fails the compare.
func (d *Dataplane) PutRule(hash uint32, r Rule) error {
	if _, _, ok, err := d.slotOf(hash); err != nil || ok {
		if ok {
			return ErrExists
		}
		return err
	}
	v := steerPrioValue{Key: r.Key.raw(), Cpu: r.CPU, Hash: hash, Used: 1, MaskId: uint8(r.Slot)}
	if r.Active {
		v.Active = 1
	}
	set := d.set(IndexHash(r.Key))
	for i := set; i <= set+1; i++ {
		var cur []steerPrioValue
		if err := d.objs.PrioMap.Lookup(i, &cur); err != nil {
			return err
		}
		if cur[0].Used != 0 {
			continue
		}
		vals := make([]steerPrioValue, d.ncpu)
		for c := range vals {
			vals[c] = v
		}
		if err := d.objs.PrioMap.Update(i, vals, ebpf.UpdateExist); err != nil {
			return err
		}
		d.rmu.Lock()
		d.where[hash] = i
		d.rmu.Unlock()
		return nil
	}
	return ErrSetFull
}

// DeleteRule clears the slot holding hash; a missing rule is not an error.
func (d *Dataplane) DeleteRule(hash uint32) error {
	idx, _, ok, err := d.slotOf(hash)
	if err != nil || !ok {
		return err
	}
	if err := d.objs.PrioMap.Update(idx, make([]steerPrioValue, d.ncpu), ebpf.UpdateExist); err != nil {
		return err
	}
	d.rmu.Lock()
	delete(d.where, hash)
	d.rmu.Unlock()
	return nil
}

// RuleCounts sums a rule's per-CPU counters.
func (d *Dataplane) RuleCounts(hash uint32) (Counter, error) {
	_, vals, ok, err := d.slotOf(hash)
	if err != nil {
		return Counter{}, err
	}
	if !ok {
		return Counter{}, ebpf.ErrKeyNotExist
	}
	var c Counter
	for _, v := range vals {
		c.Packets += v.Packets
		c.Bytes += v.Bytes
	}
	return c, nil
}

// Rules lists the used slots of prio_map by flow hash.
func (d *Dataplane) Rules() (map[uint32]Rule, error) {
	return d.scanRules()
}

// scanRules reads prio_map in batches (one syscall per 1024 slots, not one
// per slot), lists its rules and rebuilds d.where from what it found: the
// map is the truth, including after a restart with pinned maps.
func (d *Dataplane) scanRules() (map[uint32]Rule, error) {
	out := map[uint32]Rule{}
	where := map[uint32]uint32{}
	const chunk = 1024
	keys := make([]uint32, chunk)
	vals := make([]steerPrioValue, chunk*d.ncpu)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := d.objs.PrioMap.BatchLookup(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			v := vals[i*d.ncpu]
			if v.Used != 0 {
				out[v.Hash] = Rule{Key: keyFromRaw(v.Key), Slot: int(v.MaskId), CPU: v.Cpu, Active: v.Active != 0}
				where[v.Hash] = keys[i]
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	d.rmu.Lock()
	d.where = where
	d.rmu.Unlock()
	return out, nil
}

// SetMask writes mask_map[slot]; fields 0 clears the slot. The program
// reads only the slots whose bit is set in node_state.masks_active: a new
// mask is written before its bit is set, a removed one cleared after its
// bit is, so a packet racing the change never hashes with half a mask.
func (d *Dataplane) SetMask(slot int, fields Fields) error {
	if slot < 0 || slot >= MaxMasks {
		return fmt.Errorf("mask slot %d out of range", slot)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, err := d.nodeState()
	if err != nil {
		return err
	}
	bit := uint32(1) << slot
	if fields == 0 {
		ns.MasksActive &^= bit
		if err := d.objs.NodeMap.Update(uint32(0), &ns, ebpf.UpdateAny); err != nil {
			return err
		}
		return d.objs.MaskMap.Update(uint32(slot), &steerFlowMask{}, ebpf.UpdateAny)
	}
	m := steerFlowMask{Active: 1, Mask: fields.maskRaw()}
	if err := d.objs.MaskMap.Update(uint32(slot), &m, ebpf.UpdateAny); err != nil {
		return err
	}
	ns.MasksActive |= bit
	return d.objs.NodeMap.Update(uint32(0), &ns, ebpf.UpdateAny)
}

// Masks returns the fields of every slot (0 for unused).
func (d *Dataplane) Masks() ([MaxMasks]Fields, error) {
	var out [MaxMasks]Fields
	for i := range out {
		var m steerFlowMask
		if err := d.objs.MaskMap.Lookup(uint32(i), &m); err != nil {
			return out, err
		}
		if m.Active == 0 {
			continue
		}
		w := words(m.Mask)
		for f := Fields(1); f <= FieldProto; f <<= 1 {
			fw := words(f.maskRaw())
			all := true
			for j := range fw {
				if fw[j] != 0 && w[j]&fw[j] != fw[j] {
					all = false
				}
			}
			if all {
				out[i] |= f
			}
		}
	}
	return out, nil
}

// AltNode is an alternative node for offloaded traffic.
type AltNode struct {
	MAC  net.HardwareAddr `json:"mac"`
	IPv4 netip.Addr       `json:"ipv4,omitzero"`
	IPv6 netip.Addr       `json:"ipv6,omitzero"`
}

// SetAltNodes replaces the alternative nodes. Growing writes the entries
// before the count, shrinking lowers the count first, so the program never
// picks an entry that is being written.
func (d *Dataplane) SetAltNodes(nodes []AltNode) error {
	if len(nodes) > MaxAlt {
		return fmt.Errorf("%d alternative nodes, at most %d", len(nodes), MaxAlt)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, err := d.nodeState()
	if err != nil {
		return err
	}
	if uint32(len(nodes)) < ns.AltCount {
		ns.AltCount = uint32(len(nodes))
		if err := d.objs.NodeMap.Update(uint32(0), &ns, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	for i, n := range nodes {
		var v steerAltNode
		if len(n.MAC) != 6 {
			return fmt.Errorf("alternative node %d: MAC %q is not 6 bytes", i, n.MAC)
		}
		copy(v.Mac[:], n.MAC)
		if n.IPv4.Is4() {
			v.HasIp4 = 1
			v.Ip4 = n.IPv4.As4()
		}
		if n.IPv6.Is6() && !n.IPv6.Is4In6() {
			v.HasIp6 = 1
			v.Ip6 = n.IPv6.As16()
		}
		if err := d.objs.AltMap.Update(uint32(i), &v, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	ns.AltCount = uint32(len(nodes))
	return d.objs.NodeMap.Update(uint32(0), &ns, ebpf.UpdateAny)
}

// AltNodes reads the configured alternative nodes back.
func (d *Dataplane) AltNodes() ([]AltNode, error) {
	d.mu.Lock()
	ns, err := d.nodeState()
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := []AltNode{}
	for i := uint32(0); i < ns.AltCount; i++ {
		var v steerAltNode
		if err := d.objs.AltMap.Lookup(i, &v); err != nil {
			return nil, err
		}
		n := AltNode{MAC: net.HardwareAddr(append([]byte(nil), v.Mac[:]...))}
		if v.HasIp4 != 0 {
			n.IPv4 = netip.AddrFrom4(v.Ip4)
		}
		if v.HasIp6 != 0 {
			n.IPv6 = netip.AddrFrom16(v.Ip6)
		}
		out = append(out, n)
	}
	return out, nil
}

func (d *Dataplane) nodeState() (steerNodeState, error) {
	var ns steerNodeState
	err := d.objs.NodeMap.Lookup(uint32(0), &ns)
	return ns, err
}

// SetOverload writes the overload state: the host flag and one flag per CPU.
func (d *Dataplane) SetOverload(host bool, cpus []bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, err := d.nodeState()
	if err != nil {
		return err
	}
	ns.HostOverloaded = 0
	if host {
		ns.HostOverloaded = 1
	}
	ns.CpuOverloaded = [MaxCPUs / 64]uint64{}
	for c, o := range cpus {
		if o && c < MaxCPUs {
			ns.CpuOverloaded[c/64] |= 1 << (c % 64)
		}
	}
	return d.objs.NodeMap.Update(uint32(0), &ns, ebpf.UpdateAny)
}

// Overload reads the overload state back.
func (d *Dataplane) Overload() (host bool, cpus []int, err error) {
	d.mu.Lock()
	ns, err := d.nodeState()
	d.mu.Unlock()
	if err != nil {
		return false, nil, err
	}
	cpus = []int{}
	for c := 0; c < MaxCPUs; c++ {
		if ns.CpuOverloaded[c/64]&(1<<(c%64)) != 0 {
			cpus = append(cpus, c)
		}
	}
	return ns.HostOverloaded != 0, cpus, nil
}

// Counter is packets and bytes.
type Counter struct {
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// Counters are the program's statistics summed over CPUs, by name.
type Counters struct {
	Verdicts map[string]Counter `json:"verdicts"`
	Paths    map[string]Counter `json:"paths"`
	Drops    map[string]Counter `json:"drops"`
}

// ReadCounters sums stats_map over CPUs.
func (d *Dataplane) ReadCounters() (Counters, error) {
	var vals []steerSteerCounters
	if err := d.objs.StatsMap.Lookup(uint32(0), &vals); err != nil {
		return Counters{}, err
	}
	c := Counters{Verdicts: map[string]Counter{}, Paths: map[string]Counter{}, Drops: map[string]Counter{}}
	add := func(m map[string]Counter, names []string, i int, r steerDatarec) {
		if i >= len(names) {
			return
		}
		x := m[names[i]]
		x.Packets += r.Packets
		x.Bytes += r.Bytes
		m[names[i]] = x
	}
	for _, v := range vals {
		for i, r := range v.Verdict {
			add(c.Verdicts, d.Names.Verdicts, i, r)
		}
		for i, r := range v.Path {
			add(c.Paths, d.Names.Paths, i, r)
		}
		for i, r := range v.Drop {
			add(c.Drops, d.Names.Drops, i, r)
		}
	}
	return c, nil
}
