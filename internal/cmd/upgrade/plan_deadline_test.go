package upgrade

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/steps"
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

// hangingApt answers dpkg-query, and apt-cache only when its context ends (a package manager that
// hangs), recording the deadline it was given.
type hangingApt struct {
	*fakeApt
	mu       sync.Mutex
	deadline []time.Time
}

func (h *hangingApt) Run(ctx context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error) {
	if name != "apt-cache" {
		return h.fakeApt.Run(ctx, env, name, args...)
	}
	dl, _ := ctx.Deadline()
	h.mu.Lock()
	h.deadline = append(h.deadline, dl)
	h.mu.Unlock()
	<-ctx.Done()
	return nil, nil, -1, ctx.Err()
}

// The plan's --timeout bounds the whole plan: the package manager's answers are asked under the
// same deadline as the gates (they were asked before it started), all at once.
func TestPlanTimeoutCoversThePackageManager(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	h := &hangingApt{fakeApt: fx.apt}
	pm, err := packages.New("apt", h)
	if err != nil {
		t.Fatal(err)
	}
	deps, _ := fx.common.Deps(t.Context())
	deps.Packages = clientset.Of[steps.PackagesAPI](pm)
	start := time.Now()
	err = runPlan(t.Context(), &PlanOptions{Common: fx.common, To: "4.10.0", Timeout: 200 * time.Millisecond})
	if cli.ExitCode(err) != cli.ExitUnreachable || !strings.Contains(fmt.Sprint(err), "no answer within --timeout 200ms") {
		t.Fatalf("%v (exit %d)", err, cli.ExitCode(err))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.deadline) != 4 {
		t.Fatalf("apt-cache asked %d times, want once per component", len(h.deadline))
	}
	for _, dl := range h.deadline {
		if dl.IsZero() || dl.Before(start.Add(200*time.Millisecond)) || dl.After(start.Add(200*time.Millisecond+time.Second)) {
			t.Errorf("apt-cache ran with deadline %v, want the plan's: 200ms after %v", dl, start)
		}
	}
	if d := time.Since(start); d > 30*time.Second { // generous: the asks are at once, under one deadline
		t.Errorf("the plan took %s", d)
	}
}

// An indexer that answers only when the request gives up: the plan still ends, its gates saying
// the deadline passed, and the indexer versions it could not ask are not made up.
func TestPlanTimeoutWithASilentIndexer(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	silent := indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}
	for _, k := range []string{"GET /_cluster/health", "GET /_nodes", "GET /_cluster/settings", "GET /_cat/recovery"} {
		fx.srv.Set(k, silent)
	}
	err := runPlan(t.Context(), &PlanOptions{Common: fx.common, To: "4.10.0", Timeout: 300 * time.Millisecond})
	if cli.ExitCode(err) != cli.ExitNoGo {
		t.Fatalf("%v (exit %d)", err, cli.ExitCode(err))
	}
	out := fx.out.String()
	shows(t, "plan", out, "preflight/cluster-health\tgate.cluster_health\tWAIT\tindexer not answering: GET /_cluster/health", "timed out: context deadline exceeded", "indexer: Wazuh 4.9.0 = OpenSearch 2.13.0 → Wazuh 4.10.0 = OpenSearch 2.16.0")
	if strings.Contains(out, "running now (_nodes)") {
		t.Errorf("node versions shown without an answer:\n%s", out)
	}
}
