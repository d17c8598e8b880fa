package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"edgeplane/control/internal/intent"
	"edgeplane/control/model"
)

// Steering is the XDP steering function of the node (the agent's own,
// agent.Agent, when it runs with --iface): its intents, applied whole or
// not at all.
type Steering interface {
	Intents() []intent.View
	ApplyIntents(docs []json.RawMessage) ([]intent.View, error)
	DeleteIntent(id string) error
}

// SteeringPrefix marks the intents the desired state owns: the steering
// section's intent "voice" is the XDP intent "desired-voice". Intents
// applied through the XDP agent's own API under other ids are left alone.
const SteeringPrefix = "desired-"

// SteeringDoc is a model intent as the XDP agent's DPPnApp-format document
// (docs/xdp-steering.md): the flow fields as one resource, the CPU in the
// action. Its bytes are stable, so an intent that did not change compares
// equal to the one installed.
func SteeringDoc(in model.SteeringIntent) json.RawMessage {
	res := map[string]string{}
	n := 1
	if in.Vni != nil {
		res["encapsulationID"+strconv.Itoa(n)] = strconv.FormatInt(*in.Vni, 10)
		res["encapsulationType"+strconv.Itoa(n)] = "vxlan"
		n++
	}
	if in.Teid != nil {
		res["encapsulationID"+strconv.Itoa(n)] = fmt.Sprintf("%08X", *in.Teid)
		res["encapsulationType"+strconv.Itoa(n)] = "gtp"
	}
	if in.SrcIp != nil {
		res["srcIP"] = *in.SrcIp
	}
	if in.DstIp != nil {
		res["dstIP"] = *in.DstIp
	}
	if in.SrcPort != nil {
		res["srcPort"] = strconv.Itoa(*in.SrcPort)
	}
	if in.DstPort != nil {
		res["dstPort"] = strconv.Itoa(*in.DstPort)
	}
	if in.Proto != nil {
		res["protocol"] = string(*in.Proto)
	}
	action := map[string]string{"actionName": "PRIO_QUEUE"}
	if in.Cpu != nil {
		action["cpu"] = strconv.Itoa(*in.Cpu)
	}
	b, _ := json.Marshal(map[string]any{"intentId": SteeringPrefix + in.Name,
		"Resources": []map[string]string{res}, "Action": action}) // maps marshal in key order
	return b
}

// steering applies the section's intents: removed and changed ones are
// deleted, then the missing ones applied as one batch (the XDP agent
// plans it whole: a conflict refuses all of it, and is drift).
func steering(ctx context.Context, s Steering, want []model.SteeringIntent, res *Result) {
	have := map[string]string{}
	for _, v := range s.Intents() {
		if strings.HasPrefix(v.ID, SteeringPrefix) {
			have[v.ID] = string(v.Doc)
		}
	}
	keep := map[string]bool{}
	var add []json.RawMessage
	var updates int
	for _, in := range want {
		doc := SteeringDoc(in)
		id := SteeringPrefix + in.Name
		keep[id] = true
		old, found := have[id]
		if found && old == string(doc) {
			continue
		}
		if found {
			if err := s.DeleteIntent(id); err != nil {
				res.drift("intent", in.Name, err)
				continue
			}
			updates++
		}
		add = append(add, doc)
	}
	for id := range have {
		if keep[id] {
			continue
		}
		if err := s.DeleteIntent(id); err != nil {
			res.drift("intent", strings.TrimPrefix(id, SteeringPrefix), err)
			continue
		}
		res.count("intent", "remove", 1)
	}
	if len(add) == 0 {
		return
	}
	if _, err := s.ApplyIntents(add); err != nil {
		res.drift("intent", "*", err)
		return
	}
	res.count("intent", "update", updates)
	res.count("intent", "add", len(add)-updates)
}
