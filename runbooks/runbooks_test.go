package runbooks_test

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/runbooks"
)

// param describes one accepted parameter of a kind: its check returns an
// error for a bad value.
type param func(v any) error

func oneOf(vals ...string) param {
	return func(v any) error {
		s, ok := v.(string)
		if !ok || !slices.Contains(vals, s) {
			return fmt.Errorf("must be one of %s, not %v", strings.Join(vals, "|"), v)
		}
		return nil
	}
}

func isBool(v any) error {
	if _, ok := v.(bool); !ok {
		return fmt.Errorf("must be true or false")
	}
	return nil
}

func isDuration(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("must be a duration")
	}
	_, err := time.ParseDuration(s)
	return err
}

// number accepts a T from lo to hi; want names such a value.
func number[T int | float64](lo, hi T, want string) param {
	return func(v any) error {
		if n, ok := v.(T); !ok || n < lo || n > hi {
			return fmt.Errorf("must be %s", want)
		}
		return nil
	}
}

func isTrue(v any) error {
	if b, ok := v.(bool); !ok || !b {
		return fmt.Errorf("%v is not true", v)
	}
	return nil
}

func isLabel(v any) error {
	if s, ok := v.(string); !ok || s == "" {
		return fmt.Errorf("must be a non-empty label")
	}
	return nil
}

func listOf(vals ...string) param {
	return func(v any) error {
		l, ok := v.([]any)
		if !ok || len(l) == 0 {
			return fmt.Errorf("must be a non-empty list")
		}
		for _, e := range l {
			if err := oneOf(vals...)(e); err != nil {
				return err
			}
		}
		return nil
	}
}

var (
	isPercent    = number(0, 100, "a percentage")
	isRatio      = number(0.0, 1.0, "a share between 0 and 1")
	isCount      = number(1, math.MaxInt, "a count of at least 1")
	component    = oneOf("indexer", "manager", "dashboard", "shipper")
	componentAll = oneOf("indexer", "manager", "dashboard", "shipper", "all")
	version      = oneOf("target", "previous")
)

// kinds is the parameter contract of every step kind the embedded runbooks
// use (internal/steps implements them): name → accepted params, required ones
// marked with a trailing "!".
var kinds = map[string]map[string]param{
	"snapshot.capture":         {"label!": isLabel},
	"snapshot.diff":            {"against!": isLabel},
	"gate.cluster_health":      {"status!": oneOf("yellow", "green"), "wait_for_no_relocating": isBool, "wait_for_no_initializing": isBool, "timeout_per_primary": isDuration},
	"gate.disk":                {"min_free_percent": isPercent, "nogo_percent": isPercent},
	"gate.versions":            {"check!": oneOf("candidates", "installed"), "version": version},
	"gate.agents":              {},
	"gate.settings_clean":      {},
	"gate.templates":           {},
	"gate.manager_api":         {"version": version},
	"gate.dashboard":           {},
	"gate.units_active":        {"components": listOf("indexer", "manager", "dashboard", "shipper")},
	"gate.ports":               {},
	"gate.probe":               {},
	"gate.no_trace":            {},
	"backup.configs":           {"components": listOf("indexer", "manager", "dashboard", "shipper", "certs")},
	"backup.indexer_security":  {},
	"backup.indexer_data":      {},
	"restore.indexer_data":     {},
	"backup.manager_db":        {},
	"shipper.module":           {"version": version},
	"restore.manager_db":       {},
	"restore.configs":          {},
	"backup.shipper_registry":  {},
	"restore.shipper_registry": {},
	"units.stop":               {"component!": componentAll},
	"units.start":              {"component!": componentAll, "wait": isDuration},
	"units.daemon_reload":      {},
	"units.verify_gone":        {"component!": component},
	"indexer.allocation":       {"value!": oneOf("primaries", "all")},
	"indexer.flush":            {},
	"indexer.flush_synced":     {},
	"indexer.security_apply":   {"timeout_per_primary": isDuration},
	"packages.install":         {"component!": component},
	"packages.downgrade":       {"component!": component},
	"shipper.template":         {"version": version},
	"shipper.setup":            {"what!": oneOf("pipelines", "index_management")},
	"shipper.test_output":      {},

	// agents back and the watch window
	"agents.record":    {},
	"gate.agents_back": {"min_ratio": isRatio, "show": isCount},
	"watch.window": {"interval": isDuration, "cluster_breach": oneOf("red", "yellow"), "alert_rate_min": isRatio,
		"alert_rate_over": isDuration, "alert_rate_intervals": isCount, "agents_min_ratio": isRatio, "agents_intervals": isCount,
		"restarts_max": isCount, "inactive_intervals": isCount, "probe_every": isDuration, "probe_failures": isCount, "probe_timeout": isDuration},

	// data safety modes (indexer.data_safety)
	"gate.data_safety":         {},
	"indexer.snapshot_take":    {},
	"restore.indexer_snapshot": {"recoveries": isCount, "timeout_per_primary": isDuration},

	// a node that recovers thousands of daily indices after its restart
	"indexer.primaries_recoveries": {"value": isCount, "concurrent": isCount, "restore": isTrue},
}

type schemaKind struct {
	name   string
	params map[string]param
}

type schemaParams struct {
	kind string
	with map[string]any
	errs []string
}

func (p *schemaParams) Describe() []string {
	keys := make([]string, 0, len(p.with))
	for k := range p.with {
		keys = append(keys, fmt.Sprintf("%s=%v", k, p.with[k]))
	}
	sort.Strings(keys)
	return []string{strings.TrimSpace(p.kind + " " + strings.Join(keys, " "))}
}

func (p *schemaParams) Validate() error {
	if len(p.errs) > 0 {
		return fmt.Errorf("%s", strings.Join(p.errs, "; "))
	}
	return nil
}

func (k schemaKind) Name() string { return k.name }
func (k schemaKind) ReadOnly() bool {
	return strings.HasPrefix(k.name, "gate.") || k.name == "agents.record" || k.name == "watch.window"
}

func (k schemaKind) Decode(with map[string]any) (engine.Params, error) {
	p := &schemaParams{kind: k.name, with: with}
	for key, v := range with {
		check, ok := k.params[key]
		if !ok {
			check, ok = k.params[key+"!"]
		}
		if !ok {
			return nil, fmt.Errorf("unknown parameter %s", key)
		}
		if err := check(v); err != nil {
			p.errs = append(p.errs, fmt.Sprintf("%s: %v", key, err))
		}
	}
	for key := range k.params {
		if name, req := strings.CutSuffix(key, "!"); req {
			if _, ok := with[name]; !ok {
				p.errs = append(p.errs, "missing "+name)
			}
		}
	}
	sort.Strings(p.errs)
	return p, nil
}

func (k schemaKind) Run(context.Context, steps.Env, engine.Params) (engine.Outcome, error) {
	return engine.Outcome{}, nil
}

func registry(t *testing.T) *steps.Registry {
	t.Helper()
	reg := &steps.Registry{}
	for name, ps := range kinds {
		if err := reg.Register(schemaKind{name: name, params: ps}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
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
			p, err := engine.LoadPlan(runbooks.FS, name, reg, engine.Selection{})
			if err != nil {
				t.Fatalf("%v", err)
			}
			for _, s := range p.Steps {
				if len(s.Describe) == 0 {
					t.Errorf("%s: no describe lines", s.ID)
				}
			}
			last := p.Steps[len(p.Steps)-1]
			if !last.Always || last.Step.Kind != "gate.no_trace" {
				t.Errorf("last step %s (%s) is not the always gate.no_trace", last.ID, last.Step.Kind)
			}
		})
	}
}

func plan(t *testing.T, name string) *steps.Plan {
	t.Helper()
	p, err := engine.LoadPlan(runbooks.FS, name, registry(t), engine.Selection{})
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
		"backup/configs", "backup/indexer-security",
		"stop/shipper", "stop/dashboard",
		"indexer/allocation-primaries", "indexer/flush", "indexer/flush-synced", "indexer/snapshot",
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
	if r := p.Steps[index(t, p, "backup/shipper-registry")]; r.Undo == nil || r.Step.Undo.Kind != "restore.shipper_registry" {
		t.Error("the shipper registry must be restored on rollback")
	}
	if !slices.Contains(p.Steps[index(t, p, "indexer/install")].Needs, "indexer/backup-data") {
		t.Error("indexer/install must need indexer/backup-data")
	}
	// --only for a late step must be refused while it needs the data copy.
	if _, err := engine.LoadPlan(runbooks.FS, runbooks.Upgrade, registry(t), engine.Selection{Only: []string{"indexer/install"}}); err == nil {
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
