package runbooks_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/runbooks"
)

// TestClusterRollbackRunbook: every step is under a phase (prepare, indexer-down, indexer-up,
// restore, finish) or a component of the node phase, no step needs one of another phase (each
// phase runs on its own, on other hosts), the indexer's data is set aside only after it stopped and
// the record is written back only once the restored cluster is green.
func TestClusterRollbackRunbook(t *testing.T) {
	p := plan(t, runbooks.ClusterRollback)
	phases := []string{"prepare", "indexer-down", "indexer-up", "restore", "manager", "shipper", "dashboard", "finish"}
	last := -1
	for _, s := range p.Steps {
		ph, _, _ := strings.Cut(s.ID, "/")
		i := slices.Index(phases, ph)
		if i < 0 {
			t.Errorf("step %s is under no phase", s.ID)
			continue
		}
		if i < last {
			t.Errorf("step %s (%s) after a later phase", s.ID, ph)
		}
		last = i
		for _, n := range s.Needs {
			if !strings.HasPrefix(n, ph+"/") {
				t.Errorf("step %s needs %s of another phase", s.ID, n)
			}
		}
		if s.Always {
			t.Errorf("step %s is an always-step: it would run in every phase", s.ID)
		}
	}
	// the phases (rollback --cluster --phase NAME) in the order of their steps
	rb := parsed(t, runbooks.ClusterRollback)
	if got := strings.Join(rb.PhaseNames(), " "); got != "prepare indexer-down indexer-up restore node finish" {
		t.Errorf("phases %q", got)
	}
	var order []string
	for _, ph := range rb.Phases {
		order = append(order, ph.Steps...)
	}
	if got := strings.Join(order, " "); got != strings.Join(phases, " ") {
		t.Errorf("the phases' subtrees %q, want the steps' order %q", got, strings.Join(phases, " "))
	}
	before(t, p, "prepare/record", "indexer-down/stop", "indexer-down/downgrade", "indexer-down/data-aside", "indexer-up/start",
		"restore/security", "restore/indexer-snapshot", "restore/allocation-all", "restore/green", "restore/record",
		"manager/stop", "manager/gone", "manager/downgrade", "manager/db", "manager/start", "manager/api", "finish/record", "finish/no-trace")
}
