package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/steps"
)

// The time budget of an upgrade (issue 16 §1): every step's duration is
// estimated by its kind (engine.Estimator; internal/steps/estimate.go) from
// this host's earlier runs (the median of the last successful upgrade runs'
// journals) and the data volume for the steps that copy the indexer data,
// else from its history or a default; the units' start wait limits
// (indexer 60 s, manager 30 s, dashboard 60 s) are their floor.

// HistoryRuns is how many of the latest successful runs the estimate uses.
const HistoryRuns = 5

// Assumed rates when no earlier run measured one.
const (
	assumedCopyRate     = 100 << 20 // bytes/s: cold copy + sha256 verification on a local disk
	assumedSnapshotRate = 50 << 20  // bytes/s: snapshot into a file-system repository
)

// Spec buffer on top of the estimate: 50–100%.
const (
	bufferMin = 1.5
	bufferMax = 2.0
)

// defaultGate and defaultOther are the estimates of the kinds that have
// neither an estimate of their own (steps: Spec.Estimate) nor a history.
const (
	defaultGate  = 2 * time.Second
	defaultOther = 5 * time.Second
)

// Estimate sources.
const (
	srcHistory = steps.SourceHistory
	srcDefault = steps.SourceDefault
	srcSpec    = steps.SourceSpec
	srcVolume  = steps.SourceVolume
)

// History is what earlier runs on this host measured.
type History struct {
	// Runs is the number of successful upgrade runs used (at most HistoryRuns).
	Runs int
	// Step: step id → durations of its successful attempts, newest first.
	Step map[string][]time.Duration
	// Undo: step id → durations of its successful undos, newest first.
	Undo map[string][]time.Duration
	// UndoRuns is the number of runs that contributed undo durations.
	UndoRuns int
	// CopyRates and SnapshotRates are measured bytes per second.
	CopyRates, SnapshotRates []float64
}

// LoadHistory reads the journals in stateDir: the step durations of the
// last HistoryRuns successful runs of the runbook named runbook (upgrade,
// rollback) and the undo durations of its rolled-back runs.
func LoadHistory(stateDir, runbook string) (History, error) {
	h := History{Step: map[string][]time.Duration{}, Undo: map[string][]time.Duration{}}
	ids, err := engine.Runs(stateDir)
	if err != nil {
		return h, err
	}
	slices.Reverse(ids) // newest first
	for _, id := range ids {
		evs, _, err := engine.ReadJournal(stateDir, id)
		if err != nil || len(evs) == 0 || evs[0].Runbook == nil || evs[0].Runbook.Name != runbook {
			continue // a corrupt journal or another runbook says nothing about this one
		}
		status := ""
		for _, e := range evs {
			if e.Type == engine.EvRunEnd {
				status = e.Status
			}
		}
		undone := false
		for _, e := range evs {
			if e.Type == engine.EvUndoOK && e.Duration > 0 {
				h.Undo[e.Step] = append(h.Undo[e.Step], e.Duration.D())
				undone = true
			}
		}
		if undone {
			h.UndoRuns++
		}
		if status != engine.StatusSucceeded || h.Runs >= HistoryRuns {
			continue
		}
		h.Runs++
		for _, e := range evs {
			role := steps.RoleOf(e.Kind)
			if e.Type == engine.EvStepSkip && !role.MovesData {
				// skipped (a unit already running): it cost next to nothing;
				// a data step's skip depends on the mode, not the host
				h.Step[e.Step] = append(h.Step[e.Step], 0)
			}
			if e.Type != engine.EvStepOK || e.Verified {
				continue
			}
			h.Step[e.Step] = append(h.Step[e.Step], e.Duration.D())
			if e.Outcome == nil || e.Duration <= 0 || role.Measures == "" {
				continue
			}
			b := number(e.Outcome.Data[role.MeasuredBytes])
			if b <= 0 {
				continue
			}
			switch rate := b / e.Duration.D().Seconds(); role.Measures {
			case steps.RateCopy:
				h.CopyRates = append(h.CopyRates, rate)
			case steps.RateSnapshot:
				h.SnapshotRates = append(h.SnapshotRates, rate)
			}
		}
	}
	return h, nil
}

func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	case int64:
		return float64(n)
	case int:
		return float64(n)
	}
	return 0
}

func median[T float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// DataVolume is what the indexer data costs to secure (the facts of the
// kinds' own estimates).
type DataVolume = steps.DataVolume

// VolumeFromGates reads the data volume from the result of the gate that
// reports it (gate.data_safety: steps.BudgetRole.ReportsVolume); mode from
// the configuration when the gate did not pass.
func VolumeFromGates(cfg *config.Config, gates []GateResult) DataVolume {
	v := DataVolume{Mode: steps.DataSafetyMode(cfg)}
	for _, g := range gates {
		if !steps.RoleOf(g.Kind).ReportsVolume || g.Data == nil {
			continue
		}
		raw, err := json.Marshal(g.Data["cost"])
		var c steps.DataSafetyCost
		if err != nil || json.Unmarshal(raw, &c) != nil || c.Mode == "" {
			continue
		}
		v.Mode, v.Bytes, v.Known = c.Mode, c.DataBytes, true
		v.FirstSnapshot = c.Mode == config.DataSafetySnapshot && c.NeedBytes > c.DataBytes
	}
	return v
}

// Seconds is a duration in JSON as seconds.
type Seconds float64

func secsOf(d time.Duration) Seconds { return Seconds(math.Round(d.Seconds()*10) / 10) }

// D converts back.
func (s Seconds) D() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// StepBudget is one step's estimate and its undo's.
type StepBudget struct {
	Step       string  `json:"step"`
	Kind       string  `json:"kind"`
	Phase      string  `json:"phase"`
	Estimate   Seconds `json:"estimate_s"`
	Source     string  `json:"source"`
	Undo       Seconds `json:"undo_s,omitempty"`
	UndoSource string  `json:"undo_source,omitempty"`
	Finally    bool    `json:"finally,omitempty"`
}

// PhaseBudget is one phase's estimate.
type PhaseBudget struct {
	Phase    string  `json:"phase"`
	Estimate Seconds `json:"estimate_s"`
	Source   string  `json:"source"`
	Steps    int     `json:"steps"`
}

// Budget is the upgrade's time budget.
type Budget struct {
	HistoryRuns int           `json:"history_runs"`
	Data        DataVolume    `json:"data"`
	Phases      []PhaseBudget `json:"phases"`
	Total       Seconds       `json:"total_s"`
	Rollback    Seconds       `json:"rollback_s"`
	// RollbackSource says where the rollback estimate comes from.
	RollbackSource string `json:"rollback_source"`
	// WindowMin/Max: the maintenance window with the usual 50–100% buffer.
	WindowMin Seconds      `json:"window_min_s"`
	WindowMax Seconds      `json:"window_max_s"`
	Steps     []StepBudget `json:"steps"`
	// Later is `siemctl rollback` after a finished upgrade (rollback.yaml),
	// estimated the same way from the rollback runs' journals.
	Later *LaterRollback `json:"rollback_after_success,omitempty"`
}

// LaterRollback is the estimate of an explicit rollback.
type LaterRollback struct {
	Estimate    Seconds `json:"estimate_s"`
	Source      string  `json:"source"`
	HistoryRuns int     `json:"history_runs"`
}

// WithLater adds the explicit rollback's estimate (rb: rollback.yaml's budget).
func (b Budget) WithLater(rb Budget) Budget {
	b.Later = &LaterRollback{Estimate: rb.Total, Source: sourceSummary(phaseSources(rb)), HistoryRuns: rb.HistoryRuns}
	return b
}

func phaseSources(b Budget) []string {
	var out []string
	for _, s := range b.Steps {
		out = append(out, s.Source)
	}
	return out
}

// PhaseOf is the budget phase of a step: the one its kind declares
// (steps.BudgetRole.Phase: the data-safety steps in "backups"), else the
// step-id prefix, with the post-upgrade snapshot in "validation".
func PhaseOf(id, kind string) string {
	if p := steps.RoleOf(kind).Phase; p != "" {
		return p
	}
	switch p := engine.Phase(id); p {
	case "backup":
		return "backups"
	case "validate", "post":
		return "validation"
	default:
		return p
	}
}

// EstimateBudget estimates every selected step of plan and its undo; watch
// is the --watch window the run will hold after validation (0: none).
func EstimateBudget(plan *steps.Plan, h History, vol DataVolume, watch time.Duration) Budget {
	b := Budget{HistoryRuns: h.Runs, Data: vol, Phases: []PhaseBudget{}, Steps: []StepBudget{}}
	r := rates{watch: watch, copy: rate(h.CopyRates, assumedCopyRate), snap: rate(h.SnapshotRates, assumedSnapshotRate)}
	idx := map[string]int{}
	phaseSrcs := map[string][]string{}
	var undoSrcs []string
	var total, rollback time.Duration
	for _, ps := range plan.Selected() {
		sb := StepBudget{Step: ps.ID, Kind: ps.Step.Kind, Phase: PhaseOf(ps.ID, ps.Step.Kind), Finally: ps.Always}
		if ps.Always {
			sb.Phase = "finally"
		}
		d, src := estimateStep(ps, h, vol, r)
		sb.Estimate, sb.Source = secsOf(d), src
		total += d
		if ps.Always {
			rollback += d // finally-steps run after a rollback too
			undoSrcs = append(undoSrcs, src)
		}
		if ps.Undo != nil && ps.Step.Undo != nil {
			ud, usrc := estimateUndo(ps, h, vol, r)
			sb.Undo, sb.UndoSource = secsOf(ud), usrc
			rollback += ud
			undoSrcs = append(undoSrcs, usrc)
		}
		b.Steps = append(b.Steps, sb)
		i, ok := idx[sb.Phase]
		if !ok {
			i = len(b.Phases)
			idx[sb.Phase] = i
			b.Phases = append(b.Phases, PhaseBudget{Phase: sb.Phase})
		}
		b.Phases[i].Estimate += Seconds(d.Seconds())
		b.Phases[i].Steps++
		phaseSrcs[sb.Phase] = append(phaseSrcs[sb.Phase], src)
	}
	for i := range b.Phases {
		b.Phases[i].Estimate = secsOf(b.Phases[i].Estimate.D())
		b.Phases[i].Source = sourceSummary(phaseSrcs[b.Phases[i].Phase])
	}
	b.Total, b.Rollback = secsOf(total), secsOf(rollback)
	b.RollbackSource = sourceSummary(undoSrcs)
	b.WindowMin, b.WindowMax = secsOf(time.Duration(float64(total)*bufferMin)), secsOf(time.Duration(float64(total)*bufferMax))
	return b
}

func rate(measured []float64, assumed float64) steps.Rate {
	if len(measured) > 0 {
		return steps.Rate{PerSecond: median(measured), Source: "measured"}
	}
	return steps.Rate{PerSecond: assumed, Source: "assumed"}
}

// rates are the data rates an estimate uses, with where they come from.
type rates struct {
	copy, snap steps.Rate
	watch      time.Duration // the --watch window (0: the step is skipped)
}

func estimateStep(ps *steps.PlannedStep, h History, vol DataVolume, r rates) (time.Duration, string) {
	return estimateAction(ps.Kind, ps.Params, ps.Step.Kind, h.Step[ps.ID], vol, r)
}

func estimateUndo(ps *steps.PlannedStep, h History, vol DataVolume, r rates) (time.Duration, string) {
	return estimateAction(ps.Undo.Kind, ps.Undo.Params, ps.Step.Undo.Kind, h.Undo[ps.ID], vol, r)
}

// estimateAction estimates one action of kind k (a step or an undo, named
// name, with parameters p): the kind's own estimate from its earlier
// durations hist and the data volume, else its history, else a default.
func estimateAction(k steps.Kind, p engine.Params, name string, hist []time.Duration, vol DataVolume, r rates) (time.Duration, string) {
	f := steps.EstimateFacts{Volume: vol, Copy: r.copy, Snapshot: r.snap, Watch: r.watch}
	if len(hist) > 0 {
		f.History, f.HistorySource = median(hist), fmt.Sprintf("%s (median of %d)", srcHistory, len(hist))
	}
	if e, ok := k.(engine.Estimator); ok {
		if d, src, ok := e.Estimate(p, f); ok {
			return d, src
		}
	}
	if f.HistorySource != "" {
		return f.History, f.HistorySource
	}
	if strings.HasPrefix(name, "gate.") {
		return defaultGate, srcDefault
	}
	return defaultOther, srcDefault
}

// sourceSummary names the distinct kinds of source, in a fixed order:
// "history + start wait".
func sourceSummary(srcs []string) string {
	seen := map[string]bool{}
	var out []string
	for _, s := range srcs {
		if strings.HasPrefix(s, "skipped") {
			continue
		}
		head, _, _ := strings.Cut(s, ":")
		head, _, _ = strings.Cut(head, " (")
		if !seen[head] {
			seen[head] = true
			out = append(out, head)
		}
	}
	order := func(s string) int {
		for i, p := range []string{srcHistory, srcVolume, srcSpec, srcDefault} {
			if strings.HasPrefix(s, p) {
				return i
			}
		}
		return 9
	}
	sort.SliceStable(out, func(i, j int) bool { return order(out[i]) < order(out[j]) })
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, " + ")
}

// PlanBudget is the time budget `upgrade plan` shows: the session's plan
// estimated from this host's earlier runs, the data volume the gates
// measured and the primary shards the deadlines count, with the explicit
// rollback (rplan) after it, whose data moves at the rates the upgrades
// measured.
func (s *Session) PlanBudget(ctx context.Context, rplan *steps.Plan, gates []GateResult) (Budget, error) {
	cfg := s.Deps.Config
	hist, err := LoadHistory(cfg.StateDir, "upgrade")
	if err != nil {
		return Budget{}, err
	}
	vol := VolumeFromGates(cfg, gates)
	vol.Primaries, vol.PrimariesFrom = Primaries(ctx, s.Deps, s.Seed) // the deadlines' count
	rhist, err := LoadHistory(cfg.StateDir, "rollback")
	if err != nil {
		return Budget{}, err
	}
	rhist.CopyRates, rhist.SnapshotRates = hist.CopyRates, hist.SnapshotRates
	return EstimateBudget(s.Plan, hist, vol, 0).WithLater(EstimateBudget(rplan, rhist, vol, 0)), nil
}

// RollbackFor is the estimated rollback time of the completed steps done:
// their undos plus every finally-step.
func (b Budget) RollbackFor(done map[string]bool) time.Duration {
	var d time.Duration
	for _, s := range b.Steps {
		if s.Finally || done[s.Step] {
			d += s.Undo.D()
		}
		if s.Finally {
			d += s.Estimate.D()
		}
	}
	return d
}

// Window is the budget's maintenance window line: "1h12m–1h36m".
func (b Budget) Window() string {
	return output.Duration(b.WindowMin.D()) + "–" + output.Duration(b.WindowMax.D())
}

func (b Budget) header() string {
	hist := "no earlier run on this host: defaults and the start wait limits"
	if b.HistoryRuns > 0 {
		hist = fmt.Sprintf("medians of the last %d successful runs on this host", b.HistoryRuns)
	}
	data := "data size unknown"
	if b.Data.Known {
		data = output.Bytes(b.Data.Bytes) + " of indexer data"
	}
	return fmt.Sprintf("Time budget (%s; %s, data safety %s):", hist, data, b.Data.Mode)
}

// Render writes the budget table (upgrade plan, the guided mode).
func (b Budget) Render(w io.Writer, tty bool) error {
	fmt.Fprintln(w, b.header())
	t := output.NewTable(w, tty, "PHASE", "ESTIMATE", "SOURCE")
	for _, p := range b.Phases {
		t.Row(p.Phase, output.Duration(p.Estimate.D()), p.Source)
	}
	t.Row("total", output.Duration(b.Total.D()), "")
	t.Row("rollback", output.Duration(b.Rollback.D()), b.RollbackSource+" (every undo, then the finally-steps)")
	t.Row("window", b.Window(), "total + a 50–100% buffer")
	t.Row("least window", output.Duration((b.Total + b.Rollback).D()), "upgrade + full rollback: the shortest --window apply accepts")
	if b.Later != nil {
		t.Row("rollback later", output.Duration(b.Later.Estimate.D()), fmt.Sprintf("%s (siemctl rollback after a finished upgrade, rollback.yaml; %d earlier rollback runs)", b.Later.Source, b.Later.HistoryRuns))
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, s := range b.Steps {
		if strings.HasPrefix(s.Source, srcVolume) {
			fmt.Fprintf(w, "  %s: %s\n", s.Step, s.Source)
		}
		if strings.HasPrefix(s.UndoSource, srcVolume) {
			fmt.Fprintf(w, "  %s undo: %s\n", s.Step, s.UndoSource)
		}
	}
	return nil
}
