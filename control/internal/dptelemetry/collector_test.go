package dptelemetry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptelemetry"
	"edgeplane/control/internal/dptest"
)

// TestCollectorExportsWhatTheControlSocketReports scrapes the real
// edgeplane-dp: every drop reason of its list is a label, every worker and
// stage of `stages` has its series, and a data plane that is gone is
// edgeplane_dp_up 0.
func TestCollectorExportsWhatTheControlSocketReports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts edgeplane-dp")
	}
	b := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(b.Socket, dpctl.Options{})
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(dptelemetry.New(map[string]*dpctl.Client{"bng": c}, 2*time.Second))

	var reasons struct {
		Reasons []struct {
			Name string `json:"name"`
		} `json:"reasons"`
	}
	if err := c.Cmd(context.Background(), "drop-reasons", nil, &reasons); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "edgeplane_dp_drops_total"); n != len(reasons.Reasons) {
		t.Fatalf("%d drop series, the data plane lists %d reasons", n, len(reasons.Reasons))
	}
	var stages struct {
		Workers []struct {
			Name   string `json:"name"`
			Stages []struct {
				Name string `json:"name"`
			} `json:"stages"`
		} `json:"workers"`
	}
	if err := c.Cmd(context.Background(), "stages", nil, &stages); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, w := range stages.Workers {
		want += len(w.Stages)
	}
	if n := testutil.CollectAndCount(reg, "edgeplane_dp_stage_cycles_total"); n != want {
		t.Fatalf("%d stage series, the data plane has %d stages", n, want)
	}
	up := "# HELP edgeplane_dp_up 1 when the data plane's control socket answered this scrape.\n# TYPE edgeplane_dp_up gauge\n"
	if err := testutil.CollectAndCompare(reg, strings.NewReader(up+"edgeplane_dp_up{dp=\"bng\"} 1\n"), "edgeplane_dp_up"); err != nil {
		t.Fatal(err)
	}
	b.Kill()
	if err := testutil.CollectAndCompare(reg, strings.NewReader(up+"edgeplane_dp_up{dp=\"bng\"} 0\n"), "edgeplane_dp_up"); err != nil {
		t.Fatal(err)
	}
}
