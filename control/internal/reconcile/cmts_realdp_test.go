package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptest"
	"edgeplane/control/internal/reconcile"
	"edgeplane/control/model"
)

// cmtsConfig is a cmts section for dptest's vCMTS (service group sg0,
// bonding groups 0 and 1): n modems, each with a shaped flow and a
// classifier, every fourth with BPI+, and two filter rules.
func cmtsConfig(t *testing.T, n int) *model.NodeConfig {
	t.Helper()
	var cms []string
	for i := 1; i <= n; i++ {
		priv := ""
		if i%4 == 0 {
			priv = fmt.Sprintf(`, "privacy": {"said": %d, "kseq": 1, "key": "000102030405060708090a0b0c0d0e%02x", "iv": "101112131415161718191a1b1c1d1e1f"}`, 8192+i, i)
		}
		cms = append(cms, fmt.Sprintf(`{"id": %d, "mac": "02:00:00:30:00:%02x", "cpe": ["198.19.1.%d@02:00:00:31:00:%02X", "2001:db8:1::%x"],
		  "bondingGroup": %d, "filterGroups": [1], "sids": [%d]%s,
		  "serviceFlows": [{"sf": 1, "rate": 5000000, "prio": 5}],
		  "classifiers": [{"cls": 0, "sf": 1, "prio": 64, "proto": "udp", "dport": "5060", "tos": "184-191"}]}`,
			i, i, i, i, i, i%2, i, priv))
	}
	doc := `{"apiVersion": "edgeplane/v1", "cmts": {"serviceGroups": [{"name": "sg0",
	  "filters": [{"group": 1, "order": 10, "action": "deny", "proto": "udp", "dport": "137-139"},
	              {"group": 1, "order": 20, "action": "deny", "proto": "tcp", "dst": "2001:db8:9::/48", "dport": "25"}],
	  "modems": [` + strings.Join(cms, ",") + `]}]}}`
	c, err := model.DecodeNodeConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestRealCMTSConvergesAndStaysUntouched programs a real vCMTS's modems,
// flows, classifiers and filters; a second pass changes nothing (the
// model's forms are the ones cm-get and filter-list print); one changed
// modem is one update; a removed classifier and modem go; a restarted
// data plane is programmed again by the same pass.
func TestRealCMTSConvergesAndStaysUntouched(t *testing.T) {
	if testing.Short() {
		t.Skip("starts edgeplane-dp")
	}
	d := dptest.StartCMTS(t)
	c := dpctl.New(d.Socket, dpctl.Options{})
	defer c.Close()
	p := reconcile.Planes{CMTS: []reconcile.CMTS{reconcile.DP{C: c}}}
	cfg := cmtsConfig(t, 40)
	ctx := context.Background()
	pass := func(want map[string]int) {
		t.Helper()
		res := reconcile.Pass(ctx, p, cfg)
		if !res.Converged() {
			t.Fatalf("drift: %+v", res.Drift)
		}
		if fmt.Sprint(res.Changes) != fmt.Sprint(want) {
			t.Fatalf("changes %v, want %v", res.Changes, want)
		}
	}
	// The configuration file's filter 1 10 is the desired one: left alone.
	pass(map[string]int{"classifier add": 40, "filter add": 1, "modem add": 40, "service-flow add": 40})
	pass(map[string]int{})

	sg := &cfg.Cmts.ServiceGroups[0]
	sg.Modems[4].ServiceFlows[0].Rate = 8000000           // modem 5: its flow
	sg.Modems[6].Cpe = []string{"198.19.2.7"}             // modem 7: its record
	sg.Modems[7].Privacy.Kseq = 2                         // modem 8: a new key
	sg.Modems[9].Classifiers = nil                        // modem 10: its classifier goes
	sg.Modems = append(sg.Modems[:19], sg.Modems[20:]...) // modem 20 goes
	pass(map[string]int{"classifier remove": 1, "modem remove": 1, "modem update": 2, "service-flow update": 1})
	pass(map[string]int{})
	var got struct {
		CM reconcile.ModemState `json:"cm"`
	}
	if err := c.Cmd(ctx, "cm-get", map[string]any{"sg": "sg0", "id": 8}, &got); err != nil || got.CM.DSKseq != 2 {
		t.Fatalf("modem 8 after the key change: %+v %v", got.CM, err)
	}

	d.Restart()
	pass(map[string]int{"classifier add": 38, "filter add": 1, "modem add": 39, "service-flow add": 39})
}
