package upgrade

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/runbooks"
)

// budgetPlan plans the embedded upgrade runbook with the siem profile.
func budgetPlan(t *testing.T, extra string) (*steps.Plan, *config.Config) {
	t.Helper()
	d := t.TempDir()
	cfg := clitest.LoadConfig(t, d, "state_dir: "+d+"/state\nbackup_dir: "+d+"/backups\n"+extra)
	v := map[string]string{"indexer": "4.10.0-1", "manager": "4.10.0-1", "dashboard": "4.10.0-1", "shipper": "4.10.0-1"}
	return planEmbedded(t, cfg, runbooks.Upgrade, v, oldVersions), cfg
}

var oldVersions = map[string]string{"indexer": "4.9.0-1", "manager": "4.9.0-1", "dashboard": "4.9.0-1", "shipper": "4.9.0-1"}

// planEmbedded plans the embedded runbook name from previous to target.
func planEmbedded(t *testing.T, cfg *config.Config, name string, target, previous map[string]string) *steps.Plan {
	t.Helper()
	reg, err := steps.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	raw, src, err := LoadRunbook("", name)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := engine.ParsePlan(raw, src, reg, engine.Selection{}, &steps.Planning{Config: cfg, Target: target, Previous: previous})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// budgetRollbackPlan plans the embedded rollback runbook.
func budgetRollbackPlan(t *testing.T) *steps.Plan {
	t.Helper()
	_, cfg := budgetPlan(t, "")
	return planEmbedded(t, cfg, runbooks.Rollback, oldVersions, oldVersions)
}

func renderBudgetBoth(t *testing.T, b Budget) (text, js []byte) {
	t.Helper()
	var tb, jb bytes.Buffer
	if err := b.Render(&tb, true); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&jb)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		t.Fatal(err)
	}
	return tb.Bytes(), jb.Bytes()
}

// The fixture journals: three successful upgrades (copy mode, ~2.9-3.1 GB
// copied at 220-260 MB/s), one rolled back at manager/api (its undo
// durations), one rollback-runbook run (ignored).
func TestBudgetFromHistoryGolden(t *testing.T) {
	plan, _ := budgetPlan(t, "")
	h, err := LoadHistory("testdata/budget", "upgrade")
	if err != nil {
		t.Fatal(err)
	}
	if h.Runs != 3 || h.UndoRuns != 1 || len(h.CopyRates) != 3 {
		t.Fatalf("history: %d runs, %d undo runs, %d copy rates", h.Runs, h.UndoRuns, len(h.CopyRates))
	}
	// the failed run's step durations (999999 ms) and the rollback runbook's are not history
	if d := h.Step["indexer/start"]; len(d) != 3 || median(d) != 38*time.Second {
		t.Fatalf("indexer/start history %v", d)
	}
	// a skipped step cost nothing (units already running); a skipped data step says nothing
	if _, ok := h.Step["indexer/snapshot"]; ok {
		t.Errorf("the copy-mode skip of indexer/snapshot is history: %v", h.Step["indexer/snapshot"])
	}
	if d := h.Step["finally/units-running"]; len(d) != 3 || median(d) != 0 {
		t.Errorf("finally/units-running (skipped in the fixtures) %v", d)
	}
	vol := DataVolume{Mode: config.DataSafetyCopy, Bytes: 6_000_000_000, Known: true}
	rh, err := LoadHistory("testdata/budget", "rollback")
	if err != nil || rh.Runs != 1 {
		t.Fatalf("rollback history: %d runs, %v", rh.Runs, err)
	}
	rh.CopyRates = h.CopyRates // as runPlan does
	rb := EstimateBudget(budgetRollbackPlan(t), rh, vol, 0)
	b := EstimateBudget(plan, h, vol, 0).WithLater(rb)
	// the explicit rollback: its own journal's durations, and the data copied back at the measured rate
	if rb.HistoryRuns != 1 || b.Later == nil || b.Later.HistoryRuns != 1 {
		t.Fatalf("later rollback %+v", b.Later)
	}
	for _, s := range rb.Steps {
		if s.Step == "indexer/start" && (s.Estimate != 40 || !strings.HasPrefix(s.Source, "history")) {
			t.Errorf("rollback's indexer/start %+v", s)
		}
		if s.Step == "restore/indexer-data" && !strings.HasPrefix(s.Source, "volume") {
			t.Errorf("rollback's data restore %+v", s)
		}
	}
	text, js := renderBudgetBoth(t, b)
	golden.Assert(t, "budget-history", text)
	golden.Assert(t, "budget-history-json", js)
	// the copy scales with today's volume at the measured rate (median 250 MB/s): 24 s, not the 12 s of history
	for _, s := range b.Steps {
		if s.Step == "indexer/backup-data" && (s.Estimate != 24 || !strings.Contains(s.Source, "measured")) {
			t.Errorf("copy estimate %+v", s)
		}
		if s.Step == "indexer/stop" && (s.Undo != 41 || !strings.HasPrefix(s.UndoSource, "history")) {
			t.Errorf("undo of indexer/stop %+v", s)
		}
	}
}

func TestBudgetWithoutHistoryGolden(t *testing.T) {
	plan, _ := budgetPlan(t, "")
	h, err := LoadHistory(t.TempDir(), "upgrade")
	if err != nil {
		t.Fatal(err)
	}
	b := EstimateBudget(plan, h, DataVolume{Mode: config.DataSafetyCopy, Bytes: 6 << 30, Known: true}, 0)
	text, js := renderBudgetBoth(t, b)
	golden.Assert(t, "budget-default", text)
	golden.Assert(t, "budget-default-json", js)
	// the units' start waits are the floor: indexer 60 s, manager 30 s, dashboard 60 s
	want := map[string]Seconds{"indexer/start": 60, "manager/start": 30, "dashboard/start": 60}
	for _, s := range b.Steps {
		if w, ok := want[s.Step]; ok && (s.Estimate != w || s.Source != srcSpec) {
			t.Errorf("%s: %v %s, want %v (the start wait)", s.Step, s.Estimate, s.Source, w)
		}
	}
	if math.Abs(float64(b.WindowMin-b.Total*1.5)) > 0.2 || math.Abs(float64(b.WindowMax-b.Total*2)) > 0.2 {
		t.Errorf("window %v–%v for total %v", b.WindowMin, b.WindowMax, b.Total)
	}
}

func TestBudgetSnapshotAndCommandModes(t *testing.T) {
	plan, _ := budgetPlan(t, "")
	first := EstimateBudget(plan, History{}, DataVolume{Mode: config.DataSafetySnapshot, Bytes: 5 << 30, Known: true, FirstSnapshot: true}, 0)
	again := EstimateBudget(plan, History{}, DataVolume{Mode: config.DataSafetySnapshot, Bytes: 5 << 30, Known: true}, 0)
	est := func(b Budget, id string) StepBudget {
		for _, s := range b.Steps {
			if s.Step == id {
				return s
			}
		}
		t.Fatalf("no step %s", id)
		return StepBudget{}
	}
	if f, a := est(first, "indexer/snapshot"), est(again, "indexer/snapshot"); f.Estimate != 102.4 || a.Estimate != 10.2 {
		t.Errorf("snapshot: first %v (%s), incremental %v (%s)", f.Estimate, f.Source, a.Estimate, a.Source)
	}
	if s := est(first, "indexer/backup-data"); s.Estimate != 1 {
		t.Errorf("snapshot mode records only: %+v", s)
	}
	h := History{Runs: 2, Step: map[string][]time.Duration{"indexer/backup-data": {3 * time.Minute, 5 * time.Minute}}}
	cmd := EstimateBudget(plan, h, DataVolume{Mode: config.DataSafetyCommand, Bytes: 5 << 30, Known: true}, 0)
	if s := est(cmd, "indexer/backup-data"); s.Estimate != 240 || !strings.Contains(s.Source, "take hook") {
		t.Errorf("command mode: the hook's recorded duration, got %+v", s)
	}
	if s := est(cmd, "indexer/snapshot"); s.Estimate != 0 {
		t.Errorf("snapshot step outside snapshot mode: %+v", s)
	}
}

// TestBudgetCountsTheWatchWindow: without --watch the watch step costs
// nothing; with it, the window is part of the total a --window must hold.
func TestBudgetCountsTheWatchWindow(t *testing.T) {
	plan, _ := budgetPlan(t, "")
	vol := DataVolume{Mode: config.DataSafetyCopy, Bytes: 1 << 30, Known: true}
	without := EstimateBudget(plan, History{}, vol, 0)
	with := EstimateBudget(plan, History{}, vol, 20*time.Minute)
	if got := with.Total.D() - without.Total.D(); got != 20*time.Minute {
		t.Fatalf("--watch 20m adds %s to the total, want 20m", got)
	}
	for _, s := range without.Steps {
		if s.Kind == "watch.window" && (s.Estimate.D() != 0 || !strings.HasPrefix(s.Source, "skipped")) {
			t.Errorf("watch step without --watch: %s %q", s.Estimate.D(), s.Source)
		}
	}
}
