package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/model"
)

// CMTS is what reconciliation reads from and writes to a vCMTS
// edgeplane-dp (dataplane/cmts): per service group, its cable modems
// (cm-get: the record, service flows, classifiers) and filter-group rules.
// DP is the real one.
type CMTS interface {
	Uptime(ctx context.Context) (float64, error)
	Filters(ctx context.Context, sg string) ([]CMTSFilterState, error)
	FilterAdd(ctx context.Context, sg string, f model.CMTSFilter) error // adds or replaces (group, order)
	FilterDel(ctx context.Context, sg string, group, order int) error
	Modems(ctx context.Context, sg string) ([]ModemState, error)
	ModemAdd(ctx context.Context, sg string, cms []map[string]any) error // adds or replaces; keeps SFs and classifiers
	ModemDel(ctx context.Context, sg string, id int) error
	SFSet(ctx context.Context, sg string, cm int, f model.ServiceFlow) error
	SFDel(ctx context.Context, sg string, cm, sf int) error
	ClsSet(ctx context.Context, sg string, cm int, c model.Classifier) error
	ClsDel(ctx context.Context, sg string, cm, cls int) error
}

// CMTSMatchState is a filter's or classifier's match as the data plane
// prints it (proto a number, ranges lo-hi).
type CMTSMatchState struct {
	Proto *int   `json:"proto"`
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	Sport string `json:"sport"`
	Dport string `json:"dport"`
	Tos   string `json:"tos"`
}

// Canonical is the match in model.CMTSMatch.Canonical's form.
func (m CMTSMatchState) Canonical() string {
	var parts []string
	if m.Proto != nil {
		parts = append(parts, "proto="+strconv.Itoa(*m.Proto))
	}
	for _, f := range []struct{ k, v string }{{"src", m.Src}, {"dst", m.Dst}, {"sport", m.Sport}, {"dport", m.Dport}, {"tos", m.Tos}} {
		if f.v != "" {
			if p, err := netip.ParsePrefix(f.v); err == nil {
				f.v = p.Masked().String()
			}
			parts = append(parts, f.k+"="+f.v)
		}
	}
	return strings.Join(parts, " ")
}

// CMTSFilterState is one rule of filter-list.
type CMTSFilterState struct {
	CMTSMatchState
	Group  int    `json:"group"`
	Order  int    `json:"order"`
	Action string `json:"action"`
}

// ModemState is cm-get's record of a CM.
type ModemState struct {
	ID     int      `json:"id"`
	MAC    string   `json:"mac"`
	BG     int      `json:"bg"`
	BPI    bool     `json:"bpi"`
	CPE    []string `json:"cpe"`
	SID    []int    `json:"sid"`
	FG     []int    `json:"fg"`
	DSID   int      `json:"dsid"`
	SAID   int      `json:"said"`
	DSKseq int      `json:"ds_kseq"`
	SF     []struct {
		SF    int   `json:"sf"`
		Rate  int64 `json:"rate"`
		Burst int   `json:"burst"`
		Prio  int   `json:"prio"`
	} `json:"sf"`
	Cls []struct {
		CMTSMatchState
		Cls  int `json:"cls"`
		SF   int `json:"sf"`
		Prio int `json:"prio"`
	} `json:"cls"`
}

// modemKey is a CM record's every field the model sets, one form for the
// desired and the listed CM (its flows and classifiers are compared one by
// one).
func modemKey(mac string, bg int, cpe []string, sid, fg []int, dsid int, bpi bool, said, kseq int) string {
	cp := make([]string, len(cpe))
	for i, c := range cpe {
		a, m, _ := strings.Cut(strings.ToLower(c), "@")
		if ad, err := netip.ParseAddr(a); err == nil {
			a = ad.String()
		}
		cp[i] = a
		if m != "" {
			cp[i] += "@" + m
		}
	}
	sort.Strings(cp)
	if !bpi {
		said, kseq = -1, -1
	}
	return fmt.Sprintf("%s|%d|%s|%v|%v|%d|%d|%d", strings.ToLower(mac), bg, strings.Join(cp, ","), sid, fg, dsid, said, kseq)
}

func wantModemKey(m *model.CableModem) string {
	dsid := m.Dsid
	if dsid == 0 {
		dsid = m.Id // the data plane's default
	}
	said, kseq := 0, 0
	if m.Privacy != nil {
		said, kseq = m.Privacy.Said, m.Privacy.Kseq
	}
	return modemKey(m.Mac, m.BondingGroup, m.Cpe, orEmpty(m.Sids), orEmpty(m.FilterGroups), dsid, m.Privacy != nil, said, kseq)
}

func haveModemKey(m *ModemState) string {
	return modemKey(m.MAC, m.BG, m.CPE, orEmpty(m.SID), orEmpty(m.FG), m.DSID, m.BPI, m.SAID, m.DSKseq)
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// ModemRequest is the cm-add object of a model CM. The key goes only
// when it is new to the data plane (a new CM, BPI+ turned on, another
// SAID or key sequence): a replaced CM otherwise keeps the keys it has.
func ModemRequest(m *model.CableModem, have *ModemState) map[string]any {
	r := map[string]any{"id": m.Id, "mac": strings.ToLower(m.Mac), "bg": m.BondingGroup}
	if len(m.Cpe) > 0 {
		r["cpe"] = strings.Join(m.Cpe, ",")
	}
	if len(m.Sids) > 0 {
		r["sid"] = joinInts(m.Sids)
	}
	if len(m.FilterGroups) > 0 {
		r["fg"] = joinInts(m.FilterGroups)
	}
	if m.Dsid != 0 {
		r["dsid"] = m.Dsid
	}
	if p := m.Privacy; p == nil {
		r["bpi"] = "off"
	} else {
		r["said"] = p.Said
		if have == nil || !have.BPI || have.SAID != p.Said || have.DSKseq != p.Kseq {
			r["kseq"], r["key"], r["iv"] = p.Kseq, p.Key, p.Iv
		}
	}
	return r
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// cmts reconciles every service group of the section on the vCMTS process
// that has it (the first whose filter-list answers for its name).
func cmts(ctx context.Context, planes []CMTS, c *model.CMTSConfig, res *Result) {
	for _, sg := range c.ServiceGroups {
		var owner CMTS
		var have []CMTSFilterState
		var lastErr error
		for _, p := range planes {
			f, err := p.Filters(ctx, sg.Name)
			if err == nil {
				owner, have = p, f
				break
			}
			lastErr = err
		}
		if owner == nil {
			if lastErr == nil {
				lastErr = fmt.Errorf("no vCMTS data plane on this node (--cmts-socket)")
			}
			res.drift("modem", sg.Name, fmt.Errorf("service group %s: %w", sg.Name, lastErr))
			continue
		}
		cmtsFilters(ctx, owner, sg.Name, sg.Filters, have, res)
		modems(ctx, owner, sg.Name, sg.Modems, res)
	}
}

func cmtsFilters(ctx context.Context, dp CMTS, sg string, want []model.CMTSFilter, have []CMTSFilterState, res *Result) {
	cur := map[string]string{}
	for _, f := range have {
		cur[fmt.Sprintf("%d %d", f.Group, f.Order)] = strings.TrimSpace(fmt.Sprintf("%s %s", f.Action, f.Canonical()))
	}
	keep := map[string]bool{}
	for _, f := range want {
		k := f.Key()
		keep[k] = true
		text, found := cur[k]
		if found && text == strings.TrimSpace(string(f.Action)+" "+f.Match().Canonical()) {
			continue
		}
		if err := dp.FilterAdd(ctx, sg, f); err != nil {
			res.drift("filter", sg+" "+k, err)
			continue
		}
		res.count("filter", map[bool]string{true: "update", false: "add"}[found], 1)
	}
	for _, f := range have {
		k := fmt.Sprintf("%d %d", f.Group, f.Order)
		if keep[k] {
			continue
		}
		if err := dp.FilterDel(ctx, sg, f.Group, f.Order); err != nil {
			res.drift("filter", sg+" "+k, err)
			continue
		}
		res.count("filter", "remove", 1)
	}
}

func modems(ctx context.Context, dp CMTS, sg string, want []model.CableModem, res *Result) {
	list, err := dp.Modems(ctx, sg)
	if err != nil {
		res.drift("modem", sg, err)
		return
	}
	have := make(map[int]*ModemState, len(list))
	for i := range list {
		have[list[i].ID] = &list[i]
	}
	// Records first (one cm-add-bulk: one ACL build), then each CM's
	// flows before the classifiers that name them, removals last.
	var add []map[string]any
	replaced := map[int]bool{}
	for i := range want {
		m := &want[i]
		h := have[m.Id]
		if h != nil && haveModemKey(h) == wantModemKey(m) {
			continue
		}
		replaced[m.Id] = h != nil
		add = append(add, ModemRequest(m, h))
	}
	if len(add) > 0 {
		if err := dp.ModemAdd(ctx, sg, add); err != nil {
			res.drift("modem", fmt.Sprintf("%s %v..%v", sg, add[0]["id"], add[len(add)-1]["id"]), err)
		} else {
			for _, r := range add {
				res.count("modem", map[bool]string{true: "update", false: "add"}[replaced[r["id"].(int)]], 1)
			}
		}
	}
	keep := map[int]bool{}
	for i := range want {
		m := &want[i]
		keep[m.Id] = true
		serviceFlows(ctx, dp, sg, m, have[m.Id], res)
	}
	for id := range have {
		if keep[id] {
			continue
		}
		if err := dp.ModemDel(ctx, sg, id); err != nil {
			res.drift("modem", fmt.Sprintf("%s %d", sg, id), err)
			continue
		}
		res.count("modem", "remove", 1)
	}
}

// serviceFlows makes one CM's flows and classifiers match (h nil: a new
// CM, which has SF 0 with its defaults and nothing else).
func serviceFlows(ctx context.Context, dp CMTS, sg string, m *model.CableModem, h *ModemState, res *Result) {
	key := fmt.Sprintf("%s %d", sg, m.Id)
	curSF := map[int]model.ServiceFlow{0: model.DefaultSF}
	curCls := map[int]string{}
	if h != nil {
		curSF = map[int]model.ServiceFlow{}
		for _, f := range h.SF {
			curSF[f.SF] = model.ServiceFlow{Sf: f.SF, Rate: f.Rate, Burst: f.Burst, Prio: f.Prio}
		}
		for _, c := range h.Cls {
			curCls[c.Cls] = fmt.Sprintf("%d|%d|%s", c.SF, c.Prio, c.Canonical())
		}
	}
	flows := m.Flows()
	for _, sf := range sortedKeys(flows) {
		f := flows[sf]
		old, found := curSF[sf]
		// An unshaped flow (rate 0) has no burst to compare.
		if found && old.Rate == f.Rate && old.Prio == f.Prio && (f.Rate == 0 || old.Burst == f.Burst) {
			continue
		}
		if err := dp.SFSet(ctx, sg, m.Id, f); err != nil {
			res.drift("modem", fmt.Sprintf("%s sf %d", key, sf), err)
			continue
		}
		res.count("service-flow", map[bool]string{true: "update", false: "add"}[found], 1)
	}
	wantCls := map[int]bool{}
	for _, c := range m.Classifiers {
		wantCls[c.Cls] = true
		old, found := curCls[c.Cls]
		if found && old == fmt.Sprintf("%d|%d|%s", c.Sf, c.Prio, c.Match().Canonical()) {
			continue
		}
		if err := dp.ClsSet(ctx, sg, m.Id, c); err != nil {
			res.drift("modem", fmt.Sprintf("%s cls %d", key, c.Cls), err)
			continue
		}
		res.count("classifier", map[bool]string{true: "update", false: "add"}[found], 1)
	}
	for _, cls := range sortedKeys(curCls) {
		if wantCls[cls] {
			continue
		}
		if err := dp.ClsDel(ctx, sg, m.Id, cls); err != nil {
			res.drift("modem", fmt.Sprintf("%s cls %d", key, cls), err)
			continue
		}
		res.count("classifier", "remove", 1)
	}
	for _, sf := range sortedKeys(curSF) {
		if _, ok := flows[sf]; ok || sf == 0 {
			continue
		}
		if err := dp.SFDel(ctx, sg, m.Id, sf); err != nil {
			res.drift("modem", fmt.Sprintf("%s sf %d", key, sf), err)
			continue
		}
		res.count("service-flow", "remove", 1)
	}
}

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Filters reads filter-list.
func (d DP) Filters(ctx context.Context, sg string) ([]CMTSFilterState, error) {
	var r struct {
		Filters []CMTSFilterState `json:"filters"`
	}
	err := d.C.Cmd(ctx, "filter-list", map[string]any{"sg": sg}, &r)
	return r.Filters, err
}

// FilterAdd adds or replaces a filter-group rule.
func (d DP) FilterAdd(ctx context.Context, sg string, f model.CMTSFilter) error {
	return d.C.Cmd(ctx, "filter-add", map[string]any{"sg": sg, "rule": f.Text()}, nil)
}

// FilterDel removes one.
func (d DP) FilterDel(ctx context.Context, sg string, group, order int) error {
	return d.C.Cmd(ctx, "filter-del", map[string]any{"sg": sg, "group": group, "order": order}, nil)
}

// Modems lists the CM ids (cm-list), then reads each CM's record, flows
// and classifiers (cm-get, pipelined).
func (d DP) Modems(ctx context.Context, sg string) ([]ModemState, error) {
	var r struct {
		CMs []struct {
			ID int `json:"id"`
		} `json:"cms"`
	}
	if err := d.C.Cmd(ctx, "cm-list", map[string]any{"sg": sg, "limit": 1 << 20}, &r); err != nil {
		return nil, err
	}
	calls := make([]*dpctl.Call, len(r.CMs))
	for i, c := range r.CMs {
		calls[i] = d.C.Go(ctx, "cm-get", map[string]any{"cmd": "cm-get", "sg": sg, "id": c.ID})
	}
	out := make([]ModemState, len(calls))
	var first error
	for i, c := range calls {
		raw, err := c.Wait(ctx)
		if err == nil {
			var g struct {
				CM ModemState `json:"cm"`
			}
			if err = json.Unmarshal(raw, &g); err == nil {
				out[i] = g.CM
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return out, first
}

// ModemAdd adds or replaces CMs in one cm-add-bulk (one ACL build).
func (d DP) ModemAdd(ctx context.Context, sg string, cms []map[string]any) error {
	return d.C.Cmd(ctx, "cm-add-bulk", map[string]any{"sg": sg, "cms": cms}, nil)
}

// ModemDel removes a CM.
func (d DP) ModemDel(ctx context.Context, sg string, id int) error {
	return d.C.Cmd(ctx, "cm-del", map[string]any{"sg": sg, "id": id}, nil)
}

// SFSet sets a service flow.
func (d DP) SFSet(ctx context.Context, sg string, cm int, f model.ServiceFlow) error {
	req := map[string]any{"sg": sg, "cm": cm, "sf": f.Sf, "rate": f.Rate, "prio": f.Prio}
	if f.Burst != 0 {
		req["burst"] = f.Burst
	}
	return d.C.Cmd(ctx, "sf-set", req, nil)
}

// SFDel removes one.
func (d DP) SFDel(ctx context.Context, sg string, cm, sf int) error {
	return d.C.Cmd(ctx, "sf-del", map[string]any{"sg": sg, "cm": cm, "sf": sf}, nil)
}

// ClsSet sets a classifier.
func (d DP) ClsSet(ctx context.Context, sg string, cm int, c model.Classifier) error {
	req := map[string]any{"sg": sg, "cm": cm, "cls": c.Cls, "sf": c.Sf, "prio": c.Prio}
	c.Match().Fields(req)
	return d.C.Cmd(ctx, "cls-set", req, nil)
}

// ClsDel removes one.
func (d DP) ClsDel(ctx context.Context, sg string, cm, cls int) error {
	return d.C.Cmd(ctx, "cls-del", map[string]any{"sg": sg, "cm": cm, "cls": cls}, nil)
}
