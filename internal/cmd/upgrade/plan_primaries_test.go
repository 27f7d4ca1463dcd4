package upgrade

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// The plan's time estimate grows with the indexer's primary shards as its step deadlines do,
// from the same count: 1,001 primaries take longer than 1 (issue 26 §6).
func TestPlanEstimateGrowsWithPrimaries(t *testing.T) {
	plan := func(primaries int) PlanReport {
		t.Helper()
		fx := newFixture(t, "4.9.0-1")
		fx.srv.Set("GET /_cluster/health", indexertest.Route{Body: fmt.Appendf(nil, `{"cluster_name":"siem-lab","status":"green","timed_out":false,"number_of_nodes":1,"number_of_data_nodes":1,"active_primary_shards":%d,"active_shards":%[1]d,"relocating_shards":0,"initializing_shards":0,"unassigned_shards":0,"delayed_unassigned_shards":0,"number_of_pending_tasks":0,"number_of_in_flight_fetch":0,"task_max_waiting_in_queue_millis":0,"active_shards_percent_as_number":100.0}`, primaries)})
		c := fx.common
		c.Output = "json"
		_ = runPlan(t.Context(), &PlanOptions{Common: c, To: "4.10.0"}) // NO-GO: the fixture has no manager; the budget is there all the same
		var rep PlanReport
		if err := json.Unmarshal(fx.out.Bytes(), &rep); err != nil {
			t.Fatalf("plan -o json: %v\n%s\n%s", err, fx.out, fx.errOut)
		}
		return rep
	}
	few, many := plan(1), plan(1001)
	var security upgrade.StepBudget
	for _, s := range many.Budget.Steps {
		if s.Step == "indexer/security" {
			security = s
		}
	}
	if many.Budget.Total <= few.Budget.Total {
		t.Errorf("estimate %vs with 1001 primary shards, %vs with 1: it does not grow with the shards the deadlines count", many.Budget.Total, few.Budget.Total)
	}
	if !strings.Contains(security.Source, "1001 primary shards") {
		t.Errorf("indexer/security's estimate does not say the count it used: %+v", security)
	}
	for _, s := range many.Steps {
		if s.ID == "indexer/security" && (s.Deadline == nil || !strings.Contains(s.Deadline.Why, "1001 primary shards")) {
			t.Errorf("indexer/security's deadline %+v", s.Deadline)
		}
	}
}
