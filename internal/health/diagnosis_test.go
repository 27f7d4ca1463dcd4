package health

import (
	"context"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/units"
)

// An indexer whose unit runs but whose API does not answer (the JVM still coming up to fail on a
// loaded host): the API check gives the diagnosis's cause and fix when one is found, and leaves
// a diagnosis that only says "still starting" out.
func TestAPICheckOfARunningUnitUsesTheDiagnosis(t *testing.T) {
	for _, tt := range []struct {
		name string
		rep  diagnose.Report
		want string // in the summary; "" the diagnosis is not used
	}{
		{"a port held", diagnose.Report{Unit: "siem-indexer.service", Findings: []diagnose.Finding{{Kind: diagnose.KindPortBound,
			Cause: "port 9200 already bound by pid 6225 (sleep infinity)", Fix: "stop pid 6225 (sleep infinity) or move it off port 9200, then siemctl services start indexer"}}},
			"unit siem-indexer.service: port 9200 already bound by pid 6225 (sleep infinity)"},
		{"still starting", diagnose.Report{Unit: "siem-indexer.service", Findings: []diagnose.Finding{{Kind: diagnose.KindStillStarting,
			Cause: "siem-indexer.service is still starting (active/running)", Fix: "wait for it"}}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := healthyWorld()
			w.ix.infoErr = &netclient.Error{Op: "GET /", Kind: netclient.ErrTimeout}
			e := w.env(t)
			var asked []units.UnitStatus
			e.Stack.Diagnose = func(_ context.Context, component string, st units.UnitStatus, _ []units.UnitStatus) diagnose.Report {
				if component == "indexer" {
					asked = append(asked, st)
				}
				return tt.rep
			}
			checks, err := Select(Catalogue(), Selection{Only: []string{"indexer.api"}})
			if err != nil {
				t.Fatal(err)
			}
			rep := Run(context.Background(), e, checks)
			r := rep.Results[0]
			if len(asked) != 1 || !asked[0].IsActive() {
				t.Fatalf("diagnosis asked for %v, want the running unit once", asked)
			}
			if tt.want == "" {
				if strings.Contains(r.Summary, "still starting") || r.Fix == "wait for it" {
					t.Errorf("a still-starting diagnosis was used: %s / %s", r.Summary, r.Fix)
				}
				return
			}
			if r.Status != Crit || !strings.Contains(r.Summary, tt.want) || r.Fix != tt.rep.Fix() {
				t.Errorf("%s %q fix %q", r.Status, r.Summary, r.Fix)
			}
		})
	}
}
