package runbooks_test

import (
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/runbooks"
)

// registry is every step kind as siemctl registers it, describing itself
// without a configuration or versions (placeholders).
func registry(t *testing.T) *steps.Registry {
	t.Helper()
	reg, err := steps.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// Every kind decodes strictly: an unknown parameter is refused, naming it.
func TestKindsRefuseUnknownParameters(t *testing.T) {
	reg := registry(t)
	for _, name := range reg.Names() {
		k, _ := reg.Lookup(name)
		_, err := k.Decode(map[string]any{"no_such_parameter": 1})
		if err == nil || !strings.Contains(err.Error(), "no_such_parameter") {
			t.Errorf("%s accepts an unknown parameter: %v", name, err)
		}
	}
}

// Every parameter the embedded runbooks give is checked by its kind: the
// step planned with that value replaced by one of the wrong type (or out of
// range) fails to plan, naming the step.
func TestKindsCheckTheRunbooksParameters(t *testing.T) {
	reg := registry(t)
	bad := []any{map[string]any{"x": 1}, []any{"x"}, "no-such-value", -1}
	for _, name := range []string{runbooks.Upgrade, runbooks.Rollback, runbooks.ClusterApply, runbooks.Node, runbooks.ClusterFinish} {
		p := plan(t, name)
		for _, s := range p.Steps {
			for _, u := range []struct {
				kind string
				with map[string]any
			}{{s.Step.Kind, s.With}, {undoKind(s), undoWith(s)}} {
				k, ok := reg.Lookup(u.kind)
				if !ok {
					continue
				}
				for key := range u.with {
					refused := 0
					for _, v := range bad {
						with := maps.Clone(u.with)
						with[key] = v
						if _, err := decodeValid(k, with); err != nil {
							refused++
						}
					}
					if refused == 0 {
						t.Errorf("%s: %s (%s) accepts anything for %s", name, s.ID, u.kind, key)
					}
				}
			}
		}
	}
}

func undoKind(s *steps.PlannedStep) string {
	if s.Step.Undo == nil {
		return ""
	}
	return s.Step.Undo.Kind
}

func undoWith(s *steps.PlannedStep) map[string]any {
	if s.Step.Undo == nil {
		return nil
	}
	return s.Step.Undo.With
}

// decodeValid is what the planner does with a step's parameters: decode strictly, then validate.
func decodeValid(k steps.Kind, with map[string]any) (engine.Params, error) {
	p, err := k.Decode(with)
	if err != nil {
		return nil, err
	}
	return p, p.Validate()
}

// TestEmbeddedRunbooksValidate plans every embedded runbook against the kind
// contract: ids, order of needs, kinds, parameters, undos.
func TestEmbeddedRunbooksValidate(t *testing.T) {
	names, err := fs.Glob(runbooks.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, runbooks.Upgrade) || !slices.Contains(names, runbooks.Rollback) {
		t.Fatalf("embedded runbooks: %v", names)
	}
	reg := registry(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			p, err := engine.LoadPlan(runbooks.FS, name, reg, engine.Selection{}, &steps.Planning{})
			if err != nil {
				t.Fatalf("%v", err)
			}
			for _, s := range p.Steps {
				if len(s.Describe) == 0 {
					t.Errorf("%s: no describe lines", s.ID)
				}
			}
			last := p.Steps[len(p.Steps)-1]
			if name == runbooks.ClusterApply || name == runbooks.Node {
				return // a roll's first phases leave allocation at primaries on purpose: cluster-finish sets it back and ends with gate.no_trace
			}
			if name == runbooks.ClusterRollback {
				if last.ID != "finish/no-trace" || last.Step.Kind != "gate.no_trace" {
					t.Errorf("last step %s (%s): the finish phase ends with gate.no_trace", last.ID, last.Step.Kind)
				}
				return // its phases are subtrees run one by one: an always-step would run in each, with the indexer stopped on purpose
			}
			if !last.Always || last.Step.Kind != "gate.no_trace" {
				t.Errorf("last step %s (%s) is not the always gate.no_trace", last.ID, last.Step.Kind)
			}
		})
	}
}

func plan(t *testing.T, name string) *steps.Plan {
	t.Helper()
	p, err := engine.LoadPlan(runbooks.FS, name, registry(t), engine.Selection{}, &steps.Planning{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func index(t *testing.T, p *steps.Plan, id string) int {
	t.Helper()
	for i, s := range p.Steps {
		if s.ID == id {
			return i
		}
	}
	t.Fatalf("%s has no step %s", p.Runbook.Name, id)
	return -1
}

func before(t *testing.T, p *steps.Plan, ids ...string) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if index(t, p, ids[i-1]) >= index(t, p, ids[i]) {
			t.Errorf("%s: %s must come before %s", p.Runbook.Name, ids[i-1], ids[i])
		}
	}
}

// TestUpgradeRunbookOrder pins the upgrade order and its safety rules.
func TestUpgradeRunbookOrder(t *testing.T) {
	p := plan(t, runbooks.Upgrade)
	before(t, p,
		"preflight/snapshot", "preflight/cluster-health", "preflight/disk", "preflight/versions",
		"backup/configs",
		"stop/shipper", "stop/dashboard",
		"indexer/allocation-primaries", "indexer/flush", "indexer/flush-synced",
		"indexer/snapshot-start", "backup/indexer-security", "indexer/snapshot",
		"manager/stop", "manager/gone",
		"indexer/stop", "indexer/backup-data", "indexer/install", "indexer/start",
		"indexer/security", "indexer/health",
		"indexer/allocation-all", "indexer/settled",
		"manager/install", "manager/start", "manager/api",
		"shipper/module", "shipper/template", "shipper/pipelines", "shipper/index-management", "shipper/start", "shipper/test-output",
		"dashboard/install", "dashboard/start", "dashboard/up",
		"validate/versions", "validate/units", "validate/ports", "validate/data-flow",
		"post/snapshot", "post/diff", "watch/window")
	// The node's initial primaries recoveries are raised while it runs, before its stop, and put
	// back once it settled and in the finally-steps.
	before(t, p, "indexer/allocation-primaries", "indexer/recoveries-up", "indexer/stop", "indexer/start",
		"indexer/settled", "indexer/recoveries-back", "finally/recoveries-back", "finally/no-trace")
	// The agents active before are recorded before the manager stops and
	// must be back before the shipper and dashboard start.
	before(t, p, "preflight/agents-before", "manager/stop", "manager/api", "manager/agents-back", "shipper/install")
	if w := p.Steps[index(t, p, "watch/window")]; w.FailMode() != "rollback" {
		t.Error("a breach of the watch window must roll back")
	}

	firstChange := -1
	for i, s := range p.Steps {
		if !s.ReadOnly && firstChange < 0 {
			firstChange = i
		}
		switch {
		case strings.HasPrefix(s.ID, "preflight/"):
			if !s.ReadOnly && s.Step.Kind != "snapshot.capture" {
				t.Errorf("preflight step %s changes something", s.ID)
			}
		case s.Step.Kind == "packages.install":
			if s.Undo == nil || s.Step.Undo.Kind != "packages.downgrade" || s.Step.Undo.With["component"] != s.With["component"] {
				t.Errorf("%s: install without a downgrade undo of the same component", s.ID)
			}
		case s.Step.Kind == "units.stop" || s.Step.Kind == "indexer.allocation" && s.With["value"] == "primaries":
			if s.Undo == nil {
				t.Errorf("%s: no undo", s.ID)
			}
		}
		// From the indexer stop to validation, failures roll back.
		if i >= index(t, p, "indexer/stop") && i <= index(t, p, "validate/data-flow") && s.FailMode() != "rollback" {
			t.Errorf("%s: on_fail %s, want rollback", s.ID, s.FailMode())
		}
	}
	if h := p.Steps[index(t, p, "indexer/health")]; h.Step.Kind != "gate.cluster_health" || h.FailMode() != "rollback" {
		t.Errorf("red cluster after the indexer upgrade must roll back: %+v", h.Step)
	}
	if b := p.Steps[index(t, p, "indexer/backup-data")]; b.Undo == nil || b.Step.Undo.Kind != "restore.indexer_data" {
		t.Error("the indexer data copy must be restored on rollback")
	}
	// The manager's databases are copied once it is gone, before the new
	// version migrates them, and put back on rollback.
	before(t, p, "manager/gone", "manager/backup-db", "manager/install")
	if b := p.Steps[index(t, p, "manager/backup-db")]; b.Undo == nil || b.Step.Undo.Kind != "restore.manager_db" || b.FailMode() != "rollback" {
		t.Error("the manager database copy must be restored on rollback")
	}
	// The snapshot is taken while the old version runs and restored after
	// the old indexer is started again (undos run in reverse).
	if sn := p.Steps[index(t, p, "indexer/snapshot")]; sn.Undo == nil || sn.Step.Undo.Kind != "restore.indexer_snapshot" {
		t.Error("the indexer snapshot must be restored on rollback")
	}
	before(t, p, "preflight/disk", "preflight/data-safety", "indexer/snapshot", "indexer/stop")
	// The shipper's read position is saved with the data (shipper stopped) and restored with it.
	before(t, p, "stop/shipper", "indexer/flush", "backup/shipper-registry", "indexer/snapshot", "indexer/backup-data")
	// The snapshot is started after the flush and followed to its end by indexer/snapshot; the
	// security backup runs in between, while it copies (one wait instead of two).
	before(t, p, "backup/shipper-registry", "indexer/snapshot-start", "backup/indexer-security", "indexer/snapshot")
	if s := p.Steps[index(t, p, "indexer/snapshot-start")]; s.Step.Kind != "indexer.snapshot_start" || s.Undo != nil {
		t.Errorf("indexer/snapshot-start: kind %s, undo %v (the restore is indexer/snapshot's)", s.Step.Kind, s.Undo)
	}
	if r := p.Steps[index(t, p, "backup/shipper-registry")]; r.Undo == nil || r.Step.Undo.Kind != "restore.shipper_registry" {
		t.Error("the shipper registry must be restored on rollback")
	}
	if !slices.Contains(p.Steps[index(t, p, "indexer/install")].Needs, "indexer/backup-data") {
		t.Error("indexer/install must need indexer/backup-data")
	}
	// --only for a late step must be refused while it needs the data copy.
	if _, err := engine.LoadPlan(runbooks.FS, runbooks.Upgrade, registry(t), engine.Selection{Only: []string{"indexer/install"}}, &steps.Planning{}); err == nil {
		t.Error("installing the indexer without its data copy was planned")
	}
}

// TestRollbackRunbookOrder: stop in reverse order, downgrade dashboard,
// shipper, manager, indexer, restore, start in start order.
func TestRollbackRunbookOrder(t *testing.T) {
	p := plan(t, runbooks.Rollback)
	before(t, p,
		"stop/shipper", "stop/dashboard", "stop/manager", "stop/indexer",
		"packages/dashboard", "packages/shipper", "packages/manager", "packages/indexer",
		"restore/indexer-data", "restore/configs", "restore/manager-db", "restore/shipper-registry",
		"indexer/start", "indexer/security", "restore/indexer-snapshot", "indexer/health",
		"manager/start", "dashboard/start", "shipper/start",
		"validate/versions", "post/snapshot", "post/diff")
	before(t, p, "stop/shipper", "restore/shipper-registry", "shipper/start")
	// The recovery settings an upgrade's data copy carries, or the snapshot restore raised, are
	// put back once the node settled and in the finally-steps.
	before(t, p, "restore/indexer-snapshot", "indexer/settled", "indexer/recoveries-back", "manager/start",
		"finally/allocation-all", "finally/recoveries-back", "finally/no-trace")
	for _, s := range p.Steps {
		if s.Undo != nil || s.FailMode() != "abort" {
			t.Errorf("%s: a rollback step has an undo or rolls back", s.ID)
		}
	}
}

// TestWaitsForPrimariesGrow: in both runbooks every step that waits while the node brings its
// primary shards back gets time for each of them (timeout_per_primary), and the snapshot restores
// raise the empty cluster's recovery settings.
func TestWaitsForPrimariesGrow(t *testing.T) {
	for name, ids := range map[string][]string{
		runbooks.Upgrade:  {"indexer/security", "indexer/health", "indexer/snapshot undo"},
		runbooks.Rollback: {"indexer/security", "restore/indexer-snapshot", "indexer/health"},
	} {
		p := plan(t, name)
		for _, id := range ids {
			sid, undo := strings.CutSuffix(id, " undo")
			s := p.Steps[index(t, p, sid)]
			with, kind := s.With, s.Step.Kind
			if undo {
				with, kind = s.Step.Undo.With, s.Step.Undo.Kind
			}
			if d, _ := with["timeout_per_primary"].(string); d == "" {
				t.Errorf("%s: %s (%s) has no timeout_per_primary", name, id, kind)
			}
			if kind == "restore.indexer_snapshot" && with["recoveries"] == nil {
				t.Errorf("%s: %s restores without raising the recovery settings", name, id)
			}
		}
	}
}
