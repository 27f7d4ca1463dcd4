package upgrade

import (
	"bytes"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/steps"
)

// The plan prints the deadline of each step that waits for the indexer's primaries, with the
// count the indexer gives now, under the step, in the automatic and in the explicit rollback.
func TestPlanShowsDeadlines(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	srv.Set("GET /_cluster/health", indexertest.Route{Body: []byte(`{"cluster_name":"siem-lab","status":"yellow","timed_out":false,"number_of_nodes":1,"number_of_data_nodes":1,"active_primary_shards":1001,"active_shards":1001,"relocating_shards":0,"initializing_shards":0,"unassigned_shards":1001,"delayed_unassigned_shards":0,"number_of_pending_tasks":0,"number_of_in_flight_fetch":0,"task_max_waiting_in_queue_millis":0,"active_shards_percent_as_number":50.0}`)})
	ix, err := indexer.New(srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	plan, cfg := budgetPlan(t, "")
	d := &steps.Deps{Config: cfg, Indexer: ix}
	ctx := t.Context()
	dls := steps.Deadlines(ctx, plan, d, nil)
	rep := PlanReport{Target: "4.10.0", Steps: planSteps(plan, dls)}
	for _, s := range plan.Selected() {
		if s.Undo != nil {
			rep.Rollback.Automatic = append(rep.Rollback.Automatic, PlanStep{ID: s.ID, Kind: s.Undo.Kind.Name(), Deadline: deadline(dls, s.ID+" undo")})
		}
	}
	rplan := budgetRollbackPlan(t)
	rep.Rollback.Explicit = planSteps(rplan, steps.Deadlines(ctx, rplan, d, nil))
	var b bytes.Buffer
	if err := renderPlan(&b, false, &output.Palette{}, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"indexer/security  [indexer.security_apply, on_fail rollback]",
		"       deadline 13m20.5s: timeout 5m0s + 8m20.5s (500ms × 1001 primary shards, active on the indexer now, none counted yet)",
		"  indexer/snapshot  restore.indexer_snapshot: ; deadline 2h8m20.5s: timeout 2h0m0s + 8m20.5s (500ms × 1001 primary shards",
		"  restore/indexer-snapshot  restore.indexer_snapshot; deadline 2h8m20.5s",
		"  indexer/health  gate.cluster_health; deadline 13m20.5s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "deadline "); n != 2+1+3 { // upgrade: security, health; its undo of the snapshot; rollback: security, restore, health
		t.Errorf("%d deadlines in the plan:\n%s", n, out)
	}
}
