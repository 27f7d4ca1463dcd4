package upgrade

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
)

// The plan prints the deadline of each step that waits for the indexer's primaries, with the
// count the indexer gives now, under the step, in the automatic and in the explicit rollback.
func TestPlanShowsDeadlines(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.srv.Set("GET /_cluster/health", indexertest.Route{Body: []byte(`{"cluster_name":"siem-lab","status":"yellow","timed_out":false,"number_of_nodes":1,"number_of_data_nodes":1,"active_primary_shards":1001,"active_shards":1001,"relocating_shards":0,"initializing_shards":0,"unassigned_shards":1001,"delayed_unassigned_shards":0,"number_of_pending_tasks":0,"number_of_in_flight_fetch":0,"task_max_waiting_in_queue_millis":0,"active_shards_percent_as_number":50.0}`)})
	err := runPlan(t.Context(), &PlanOptions{Common: fx.common, To: "4.10.0", Timeout: time.Minute})
	if err != nil && cli.ExitCode(err) != cli.ExitNoGo {
		t.Fatal(err)
	}
	out := fx.out.String()
	shows(t, "plan", out,
		"indexer/security  [indexer.security_apply, on_fail rollback]",
		"       deadline 13m20.5s: timeout 5m0s + 8m20.5s (500ms × 1001 primary shards, active on the indexer now, none counted yet)",
		"  restore/indexer-snapshot  restore.indexer_snapshot; deadline 2h8m20.5s",
		"  indexer/health  gate.cluster_health; deadline 13m20.5s")
	// the automatic rollback's line of the snapshot's undo: what it does, then its deadline
	undo := regexp.MustCompile(`(?m)^  indexer/snapshot  restore\.indexer_snapshot: .*; deadline 2h8m20\.5s: timeout 2h0m0s \+ 8m20\.5s \(500ms × 1001 primary shards`)
	if !undo.MatchString(out) {
		t.Errorf("the automatic rollback lacks the snapshot undo's deadline:\n%s", out)
	}
	if n := strings.Count(out, "deadline "); n != 2+1+3 { // upgrade: security, health; its undo of the snapshot; rollback: security, restore, health
		t.Errorf("%d deadlines in the plan:\n%s", n, out)
	}
}
