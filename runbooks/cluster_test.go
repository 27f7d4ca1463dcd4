package runbooks_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/runbooks"
)

// The rolling upgrade's phases: the first host's preflight comes before anything changes; each
// host's turn keeps every step of a component under that component's id (the command leaves out
// the components the host does not run by id), and a node is gated back before the next phase.
func TestClusterRunbooks(t *testing.T) {
	ap := plan(t, runbooks.ClusterApply)
	before(t, ap, "preflight/cluster-green", "preflight/nodes", "preflight/snapshot-repository", "rollout/create", "backup/configs",
		"backup/indexer-security", "indexer/snapshot", "indexer/allocation-primaries", "indexer/flush", "rollout/rolling")
	for _, s := range ap.Steps {
		if strings.HasPrefix(s.ID, "preflight/") && !s.ReadOnly {
			t.Errorf("cluster-apply %s (%s) changes something in preflight", s.ID, s.Step.Kind)
		}
	}

	np := plan(t, runbooks.Node)
	for _, s := range np.Steps {
		comp, _, _ := strings.Cut(s.ID, "/")
		if !slices.Contains(steps.Components, comp) {
			t.Errorf("node.yaml step %s is under no component: a host could not leave it out", s.ID)
		}
		for _, n := range s.Needs {
			if !strings.HasPrefix(n, comp+"/") {
				t.Errorf("node.yaml step %s needs %s of another component: leaving that component out would break the plan", s.ID, n)
			}
		}
	}
	before(t, np, "indexer/unit-active", "indexer/record", "indexer/allocation-primaries", "indexer/flush", "indexer/stop", "indexer/install",
		"indexer/start", "indexer/rejoined", "indexer/allocation-all", "indexer/health")
	before(t, np, "manager/unit-active", "manager/stop", "manager/gone", "manager/backup-db", "manager/install", "manager/start", "manager/api", "manager/in-cluster")
	before(t, np, "shipper/stop", "shipper/install", "shipper/module", "shipper/template", "shipper/start", "shipper/test-output")
	before(t, np, "dashboard/stop", "dashboard/install", "dashboard/start", "dashboard/up")

	// An indexer host plans only its indexer steps.
	p, err := engine.LoadPlan(runbooks.FS, runbooks.Node, registry(t), engine.Selection{Skip: []string{"manager", "shipper", "dashboard"}}, &steps.Planning{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Selected() {
		if !strings.HasPrefix(s.ID, "indexer/") {
			t.Errorf("an indexer host would run %s", s.ID)
		}
	}
	if len(p.Selected()) != 12 {
		t.Errorf("an indexer host plans %d steps, want the 12 indexer steps", len(p.Selected()))
	}

	fp := plan(t, runbooks.ClusterFinish)
	before(t, fp, "rollout/all-done", "indexer/security", "cluster/allocation-all", "cluster/health", "validate/nodes", "watch/window", "rollout/done")
}

// TestNodePointOfNoReturn: node.yaml marks its own point of no return, an indexer node's first
// start at the new version (its data upgraded on the way): from there to the end of the indexer's
// steps a no-go rolls the deployment back (internal/upgrade/roll); a manager, shipper or dashboard
// failure is resumed instead.
func TestNodePointOfNoReturn(t *testing.T) {
	got := parsed(t, runbooks.Node).PastPointOfNoReturn()
	want := []string{"indexer/start", "indexer/rejoined", "indexer/allocation-all", "indexer/health"}
	if !slices.Equal(got, want) {
		t.Fatalf("past the point of no return: %q, want %q", got, want)
	}
	for _, name := range []string{runbooks.Upgrade, runbooks.Rollback, runbooks.ClusterApply, runbooks.ClusterFinish, runbooks.ClusterRollback} {
		if past := parsed(t, name).PastPointOfNoReturn(); len(past) != 0 {
			t.Errorf("%s marks a point of no return: %q (only a host's turn of a roll has one)", name, past)
		}
	}
}

// parsed is the embedded runbook name, decoded and checked.
func parsed(t *testing.T, name string) *runbook.Runbook {
	t.Helper()
	raw, err := runbook.Read(runbooks.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := runbook.Parse(raw, name)
	if err != nil {
		t.Fatal(err)
	}
	return rb
}
