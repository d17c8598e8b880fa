package controller

import (
	"fmt"
	"sort"
	"strings"

	"edgeplane/control/model"
)

// Placement of subscribers on a node's BNG instances, a step of every
// plan (and so of every apply and rollback), without side effects:
//
//	pinned   the request names the instance: it stays there (over the
//	         instance's budget: refused)
//	kept     no instance in the request, one in the stored state that
//	         still exists, holds its addresses and has room: it stays
//	placed   the rest, in id order, on the least-loaded instance (fewest
//	         subscribers, then the first by name) whose pools hold its
//	         addresses and whose budget, and its subport's, has room;
//	         none: refused
//	moved    an instance the stored state lacked (and the stored state
//	         had instances) takes kept subscribers from the instances
//	         above the fair share (subscribers / instances), the most
//	         loaded first and its highest ids first, until it reaches the
//	         fair share or nothing more fits it
//
// A re-plan of the same request therefore moves nothing, and a new
// instance changes only the subscribers it takes: each is one update in
// the plan (its instance changed), which the node's agent turns into a
// removal on the old instance's data planes and an addition on the new
// one's, in the same revision. A subscriber of a removed instance is
// placed again like a new one. Every subscriber whose instance differs
// from the stored one (the operator's pins included) is a move.
type instLoad struct {
	in      *model.BNGInstance
	stat    model.InstancePlacement
	subport map[int]int // subscribers per subport
	kept    []int       // indices of kept subscribers, by id
	added   bool        // not in the stored state's instances
}

// room: the instance's budget and that of s's subport have room for s.
func (l *instLoad) room(s *model.Subscriber) bool {
	return l.stat.Subscribers < l.in.MaxSubscribers && l.subport[s.Subport] < l.in.SubportBudget(s.Subport)
}

func (l *instLoad) add(s *model.Subscriber, n int) {
	l.stat.Subscribers += n
	l.subport[s.Subport] += n
}

// place fills in the instance of every subscriber of b (whose Subscribers
// the caller owns) and says what it did.
func place(old, b *model.BNGConfig) ([]model.InstancePlacement, []model.SubscriberMove, error) {
	if len(b.Instances) == 0 {
		return nil, nil, nil
	}
	had := map[string]bool{}
	was := map[int64]string{}
	if old != nil {
		for _, in := range old.Instances {
			had[in.Name] = true
		}
		for _, s := range old.Subscribers {
			if s.Instance != "" {
				was[s.Id] = s.Instance
			}
		}
	}
	byName := map[string]*instLoad{}
	loads := make([]*instLoad, len(b.Instances))
	for i := range b.Instances {
		in := &b.Instances[i]
		loads[i] = &instLoad{in: in, subport: map[int]int{}, added: len(had) > 0 && !had[in.Name],
			stat: model.InstancePlacement{Instance: in.Name, MaxSubscribers: in.MaxSubscribers}}
		byName[in.Name] = loads[i]
	}
	subs := b.Subscribers
	order := make([]int, len(subs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool { return subs[order[x]].Id < subs[order[y]].Id })

	for _, i := range order { // pinned
		if name := subs[i].Instance; name != "" {
			l := byName[name] // validation checked it exists and can serve it
			if !l.room(&subs[i]) {
				return nil, nil, fmt.Errorf("budget exhausted: instance %q has maxSubscribers %d (subport %d: %d) and more subscribers name it",
					name, l.in.MaxSubscribers, subs[i].Subport, l.in.SubportBudget(subs[i].Subport))
			}
			l.add(&subs[i], 1)
		}
	}
	var free []int
	for _, i := range order { // kept
		s := &subs[i]
		if s.Instance != "" {
			continue
		}
		if l := byName[was[s.Id]]; l != nil && l.room(s) {
			if _, ok := l.in.Holds(s); ok {
				s.Instance = l.in.Name
				l.add(s, 1)
				l.kept = append(l.kept, i)
				continue
			}
		}
		free = append(free, i)
	}
	for _, i := range free { // placed
		s := &subs[i]
		var best *instLoad
		var holders []string
		for _, l := range sortedByName(loads) {
			if _, ok := l.in.Holds(s); !ok {
				continue
			}
			holders = append(holders, l.in.Name)
			if l.room(s) && (best == nil || l.stat.Subscribers < best.stat.Subscribers) {
				best = l
			}
		}
		if best == nil {
			return nil, nil, noRoom(s, holders, loads, len(subs))
		}
		s.Instance = best.in.Name
		best.add(s, 1)
		if _, ok := was[s.Id]; !ok {
			best.stat.Placed++
		}
	}
	fair := len(subs) / len(loads)
	for _, to := range sortedByName(loads) { // moved to added instances
		if !to.added {
			continue
		}
		cursor := map[*instLoad]int{} // kept[:cursor] are what is left to try on this donor
		for to.stat.Subscribers < fair && to.stat.Subscribers < to.in.MaxSubscribers {
			i, from := takeOne(subs, loads, to, fair, cursor)
			if from == nil {
				break
			}
			subs[i].Instance = to.in.Name
			from.add(&subs[i], -1)
			to.add(&subs[i], 1)
		}
	}
	var moves []model.SubscriberMove
	for _, i := range order {
		s := &subs[i]
		if prev, ok := was[s.Id]; ok && prev != s.Instance {
			moves = append(moves, model.SubscriberMove{Id: s.Id, From: prev, To: s.Instance})
			byName[s.Instance].stat.MovedIn++
			if l := byName[prev]; l != nil {
				l.stat.MovedOut++
			}
		}
	}
	out := make([]model.InstancePlacement, len(loads))
	for i, l := range loads {
		out[i] = l.stat
	}
	return out, moves, nil
}

// takeOne finds the subscriber an added instance takes next: from the
// most loaded instance above the fair share (then the first by name), its
// highest kept id the added instance can serve and has room for (its
// subports' budgets only fill up: one skipped here stays skipped).
func takeOne(subs []model.Subscriber, loads []*instLoad, to *instLoad, fair int, cursor map[*instLoad]int) (int, *instLoad) {
	donors := sortedByName(loads)
	sort.SliceStable(donors, func(x, y int) bool { return donors[x].stat.Subscribers > donors[y].stat.Subscribers })
	for _, from := range donors {
		if from == to || from.stat.Subscribers <= fair {
			continue
		}
		c, seen := cursor[from]
		if !seen {
			c = len(from.kept)
		}
		for c > 0 {
			c--
			i := from.kept[c]
			if subs[i].Instance != from.in.Name {
				continue
			}
			if _, ok := to.in.Holds(&subs[i]); ok && to.room(&subs[i]) {
				cursor[from] = c
				return i, from
			}
		}
		cursor[from] = 0
	}
	return 0, nil
}

func sortedByName(loads []*instLoad) []*instLoad {
	out := append([]*instLoad(nil), loads...)
	sort.Slice(out, func(x, y int) bool { return out[x].in.Name < out[y].in.Name })
	return out
}

// noRoom is the refusal when subscriber s fits nowhere: no instance can
// serve it (pools, subports), every instance is at its budget, the ones
// that can serve it are at their subport's budget, or at their budgets.
func noRoom(s *model.Subscriber, holders []string, loads []*instLoad, total int) error {
	addrs := strings.Join(append(append([]string(nil), s.Ipv4...), s.Ipv6), " ")
	if len(holders) == 0 {
		return fmt.Errorf("subscriber %d: no instance's pool holds its addresses (%s) or budgets its subport (%d)", s.Id, strings.TrimSpace(addrs), s.Subport)
	}
	budget, full := 0, true
	for _, l := range loads {
		budget += l.in.MaxSubscribers
		full = full && l.stat.Subscribers >= l.in.MaxSubscribers
	}
	if full {
		return fmt.Errorf("budget exhausted: %d subscribers, the instances' budgets hold %d (subscriber %d has no room)", total, budget, s.Id)
	}
	for _, l := range loads {
		if _, ok := l.in.Holds(s); ok && l.stat.Subscribers < l.in.MaxSubscribers {
			return fmt.Errorf("subport exhausted: subscriber %d (subport %d): the instances that serve it (%s) are at that subport's budget",
				s.Id, s.Subport, strings.Join(holders, ", "))
		}
	}
	return fmt.Errorf("pool exhausted: subscriber %d (%s): the instances whose pools hold its addresses (%s) are at their budgets",
		s.Id, strings.TrimSpace(addrs), strings.Join(holders, ", "))
}
