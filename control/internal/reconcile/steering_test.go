package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"edgeplane/control/internal/intent"
	"edgeplane/control/internal/reconcile"
	"edgeplane/control/model"
)

// fakeSteering keeps intents as the XDP agent does (documents as
// received), parsing each with the agent's own parser: a document the
// agent would refuse fails here too.
type fakeSteering struct {
	intents map[string]intent.Intent
	log     []string
}

func (f *fakeSteering) Intents() []intent.View {
	var out []intent.View
	for _, in := range f.intents {
		out = append(out, intent.View{Intent: in})
	}
	return out
}

func (f *fakeSteering) ApplyIntents(docs []json.RawMessage) ([]intent.View, error) {
	var ins []intent.Intent
	for _, d := range docs {
		in, err := intent.Parse(d)
		if err != nil {
			return nil, err
		}
		ins = append(ins, in)
	}
	for _, in := range ins {
		f.intents[in.ID] = in
		f.log = append(f.log, "apply "+in.ID)
	}
	return nil, nil
}

func (f *fakeSteering) DeleteIntent(id string) error {
	delete(f.intents, id)
	f.log = append(f.log, "delete "+id)
	return nil
}

func steeringConfig(t *testing.T, intents string) *model.NodeConfig {
	t.Helper()
	c, err := model.DecodeNodeConfig([]byte(`{"apiVersion": "edgeplane/v1", "steering": {"intents": [` + intents + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestSteeringIntentsFollowTheDesiredState(t *testing.T) {
	f := &fakeSteering{intents: map[string]intent.Intent{}}
	// An intent applied through the XDP agent's own API: not ours.
	own, err := intent.Parse([]byte(`{"intentId": "operator", "Resources": [{"dstPort": "53", "protocol": "udp"}], "Action": {"actionName": "PRIO_QUEUE"}}`))
	if err != nil {
		t.Fatal(err)
	}
	f.intents[own.ID] = own
	p := reconcile.Planes{Steering: f}
	cfg := steeringConfig(t, `{"name": "voice", "vni": 4450, "teid": 48879, "srcIp": "198.18.10.7", "proto": "udp", "dstPort": 5004, "cpu": 1},
	                          {"name": "web", "dstIp": "2001:db8:20::9", "proto": "tcp", "dstPort": 443}`)
	res := reconcile.Pass(context.Background(), p, cfg)
	if !res.Converged() || res.Changes["intent add"] != 2 {
		t.Fatalf("%v %v", res.Changes, res.Drift)
	}
	voice := f.intents["desired-voice"]
	if len(voice.Rules) != 1 || voice.Rules[0].CPU != 1 || voice.Rules[0].Key.VNI != 4450 || voice.Rules[0].Key.TEID != 48879 {
		t.Fatalf("voice as the XDP agent parsed it: %+v", voice.Rules)
	}
	f.log = nil
	if res := reconcile.Pass(context.Background(), p, cfg); len(res.Changes) != 0 || len(f.log) != 0 {
		t.Fatalf("second pass: %v %v", res.Changes, f.log)
	}
	// web changes its port, voice goes; the operator's intent stays.
	cfg = steeringConfig(t, `{"name": "web", "dstIp": "2001:db8:20::9", "proto": "tcp", "dstPort": 8443}`)
	res = reconcile.Pass(context.Background(), p, cfg)
	slices.Sort(f.log)
	if fmt.Sprint(f.log) != "[apply desired-web delete desired-voice delete desired-web]" || res.Changes["intent update"] != 1 {
		t.Fatalf("sent %v, changes %v", f.log, res.Changes)
	}
	if _, ok := f.intents["operator"]; !ok {
		t.Fatal("the operator's intent was removed")
	}
	if !strings.Contains(string(f.intents["desired-web"].Doc), `"dstPort":"8443"`) {
		t.Fatalf("web: %s", f.intents["desired-web"].Doc)
	}
}

func TestSteeringWithoutTheXDPFunctionIsDrift(t *testing.T) {
	res := reconcile.Pass(context.Background(), reconcile.Planes{}, steeringConfig(t, `{"name": "x", "vni": 1}`))
	if len(res.Drift) != 1 || res.Drift[0].Key != "steering" {
		t.Fatalf("%+v", res.Drift)
	}
}
