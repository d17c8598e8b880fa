package intent

import (
	"encoding/json"
	"fmt"
	"strings"
)

// An ETSI GS MEC 011 TrafficRule (section 7.1.2.2 in v2.2.1) expressing the
// same thing as a DPPnApp intent:
//
//	{"trafficRuleId": "tr-1", "filterType": "FLOW", "priority": 1,
//	 "trafficFilter": [{"srcAddress": ["198.18.10.1"], "dstPort": ["5004"],
//	                    "protocol": ["UDP"], "tag": ["vxlan:4450", "gtp:8894D0D4"]}],
//	 "action": "PASSTHROUGH", "state": "ACTIVE", "x-edgeplane-cpu": 1}
//
// Mapping: each trafficFilter is one rule. PASSTHROUGH (keep the traffic on
// this host) is the only action: it is what prioritising means here. MEC 011
// has no field for tunnel ids, so they travel in "tag" as "vxlan:<VNI>" and
// "gtp:<TEID hex>"; nor for a CPU, so "x-edgeplane-cpu" carries it (absent:
// XDP_PASS on the receiving CPU). state INACTIVE installs the rule inactive
// (the paper's is_active = 0). Outer-tunnel filters (srcTunnelAddress, ...)
// and QoS marks (qCI, dSCP, tC) are refused: the XDP key has no such field.
type mecDoc struct {
	ID            string          `json:"trafficRuleId"`
	FilterType    string          `json:"filterType"`
	Priority      json.RawMessage `json:"priority"` // MEC 011's 0..255; one rule per flow, so unused
	TrafficFilter []mecFilter     `json:"trafficFilter"`
	Action        string          `json:"action"`
	State         string          `json:"state"`
	DstInterface  []any           `json:"dstInterface"`
	CPU           json.RawMessage `json:"x-edgeplane-cpu"`
	Interface     string          `json:"x-edgeplane-interface"`
}

// mecFilter has the trafficFilter fields the XDP key can match; the API's
// schema refuses the others (srcTunnelAddress, qCI, ...) by name.
type mecFilter struct {
	SrcAddress []string `json:"srcAddress"`
	DstAddress []string `json:"dstAddress"`
	SrcPort    []string `json:"srcPort"`
	DstPort    []string `json:"dstPort"`
	Protocol   []string `json:"protocol"`
	Tag        []string `json:"tag"`
}

func one(field string, i int, vs []string) (string, error) {
	if len(vs) > 1 {
		return "", badRequest("trafficFilter[%d].%s has %d values: use one trafficFilter per flow", i, field, len(vs))
	}
	if len(vs) == 0 {
		return "", nil
	}
	return strings.TrimSpace(vs[0]), nil
}

func parseMEC(doc []byte) (Intent, error) {
	var d mecDoc
	if err := strictDecode(doc, &d); err != nil {
		return Intent{}, badRequest("MEC 011 TrafficRule: %v", err)
	}
	in := Intent{ID: d.ID, Format: "mec011", Interface: d.Interface}
	if d.ID == "" {
		return Intent{}, badRequest("trafficRuleId is empty")
	}
	if d.FilterType != "FLOW" {
		return Intent{}, badRequest("filterType %q is not supported (FLOW)", d.FilterType)
	}
	if d.Action != "PASSTHROUGH" {
		return Intent{}, badRequest("action %q is not supported: XDP steering prioritises traffic on this host (PASSTHROUGH)", d.Action)
	}
	active := true
	switch d.State {
	case "ACTIVE", "":
	case "INACTIVE":
		active = false
	default:
		return Intent{}, badRequest("state %q: want ACTIVE or INACTIVE", d.State)
	}
	if len(d.DstInterface) != 0 {
		return Intent{}, badRequest("dstInterface is not supported: prioritised traffic stays on this host")
	}
	cpu := "" // none
	if d.CPU != nil {
		v, err := value(d.CPU)
		if err != nil {
			return Intent{}, badRequest("x-edgeplane-cpu: %v", err)
		}
		cpu = v
	}
	c, err := parseCPU(cpu)
	if err != nil {
		return Intent{}, err
	}
	if len(d.TrafficFilter) == 0 {
		return Intent{}, badRequest("trafficFilter is empty")
	}
	for i, f := range d.TrafficFilter {
		r := Rule{Resources: []string{fmt.Sprintf("trafficFilter[%d]", i)}, CPU: c, Active: active}
		s := setter{&r}
		steps := []struct {
			field string
			vs    []string
			apply func(string) error
		}{
			{"srcAddress", f.SrcAddress, func(v string) error { return s.addr(v, true) }},
			{"dstAddress", f.DstAddress, func(v string) error { return s.addr(v, false) }},
			{"srcPort", f.SrcPort, func(v string) error { return s.port(v, true) }},
			{"dstPort", f.DstPort, func(v string) error { return s.port(v, false) }},
			{"protocol", f.Protocol, s.proto},
		}
		for _, st := range steps {
			v, err := one(st.field, i, st.vs)
			if err != nil {
				return Intent{}, err
			}
			if v != "" {
				if err := st.apply(v); err != nil {
					return Intent{}, err
				}
			}
		}
		for _, tag := range f.Tag {
			typ, v, ok := strings.Cut(tag, ":")
			if !ok {
				return Intent{}, badRequest("trafficFilter[%d].tag %q: want vxlan:<VNI> or gtp:<TEID>", i, tag)
			}
			switch strings.ToLower(typ) {
			case "vxlan":
				err = s.vni(v)
			case "gtp", "gtpu", "gtp-u":
				err = s.teid(v, false)
			default:
				err = badRequest("trafficFilter[%d].tag %q: encapsulation %q is not supported (vxlan, gtp)", i, tag, typ)
			}
			if err != nil {
				return Intent{}, err
			}
		}
		in.Rules = append(in.Rules, r)
	}
	return in, nil
}
