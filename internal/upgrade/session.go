package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/steps"
)

// Gate verdicts of a plan: the engine's, and ERROR for a gate that could
// not judge.
const (
	VerdictGo    = engine.VerdictGo
	VerdictNoGo  = engine.VerdictNoGo
	VerdictWait  = engine.VerdictWait
	VerdictError = "ERROR"
)

// GateResult is one preflight gate evaluated once, at plan time.
type GateResult struct {
	Step    string `json:"step"`
	Kind    string `json:"kind"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
	// Ignorable gates may be skipped with --ignore-gate.
	Ignorable bool `json:"ignorable"`
	// Data is what a passing gate recorded (gate.data_safety: its cost),
	// for the plan's time budget; not part of the plan's JSON.
	Data map[string]any `json:"-"`
}

// PreflightGates runs, once each, the read-only gate steps that come before
// the first step that changes something, with data as the run data. Nothing
// is journaled and nothing changes. The gates run concurrently, each with
// its own copy of the data, all under ctx's one deadline: a hung stack costs
// that deadline once, not once per gate. A gate still running when ctx ends
// is reported as an error naming the deadline.
func PreflightGates(ctx context.Context, plan *steps.Plan, deps *steps.Deps, data map[string]any) []GateResult {
	var gates []*steps.PlannedStep
	for _, s := range plan.Selected() {
		if !s.ReadOnly {
			break
		}
		if s.Always || !strings.HasPrefix(s.Step.Kind, "gate.") {
			continue
		}
		gates = append(gates, s)
	}
	out := make([]GateResult, len(gates))
	var wg sync.WaitGroup
	for i, s := range gates {
		env := NewMemEnv(deps, s.ID, data)
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.Kind.Run(ctx, env, s.Params)
			out[i] = gateResult(ctx, s, o, err)
		}()
	}
	wg.Wait()
	return out
}

func gateResult(ctx context.Context, s *steps.PlannedStep, o engine.Outcome, err error) GateResult {
	r := GateResult{Step: s.ID, Kind: s.Step.Kind, Ignorable: isIgnorable(s.Step.Kind)}
	var judged bool
	if err != nil {
		r.Verdict, r.Detail, judged = engine.VerdictOf(err)
	}
	switch {
	case err == nil:
		r.Verdict, r.Detail, r.Data = VerdictGo, o.Message, o.Data
	case judged:
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.Verdict, r.Detail = VerdictError, "no answer before the deadline (--timeout): "+err.Error()
	default:
		r.Verdict, r.Detail = VerdictError, err.Error()
	}
	return r
}

func isIgnorable(kind string) bool { return slices.Contains(steps.Ignorable, kind) }

// IgnoreGates turns --ignore-gate names (step ids or kind names) into the
// ids of rb's steps to skip. Only ignorable gates may be ignored.
func IgnoreGates(rb *runbook.Runbook, names []string) ([]string, error) {
	var ids []string
	for _, n := range names {
		found := false
		for _, s := range rb.Steps {
			if s.ID != n && s.Kind != n {
				continue
			}
			found = true
			if !isIgnorable(s.Kind) {
				return nil, fmt.Errorf("--ignore-gate %s: %s (%s) cannot be ignored; only %s can", n, s.ID, s.Kind, strings.Join(steps.Ignorable, ", "))
			}
			ids = append(ids, s.ID)
		}
		if !found {
			return nil, fmt.Errorf("--ignore-gate %s: no such gate step or kind", n)
		}
	}
	return ids, nil
}

// MemEnv is a steps.Env without a journal: the run data lives in memory
// (plans and their gates; the kinds' own tests). It reports nothing and is
// safe for concurrent use.
type MemEnv struct {
	deps *steps.Deps
	step string
	mu   sync.Mutex
	data map[string]json.RawMessage
}

// NewMemEnv is a MemEnv for step (its StepID) with data as the run data.
func NewMemEnv(deps *steps.Deps, step string, data map[string]any) *MemEnv {
	e := &MemEnv{deps: deps, step: step, data: map[string]json.RawMessage{}}
	for k, v := range data {
		if b, err := json.Marshal(v); err == nil {
			e.data[k] = b
		}
	}
	return e
}

func (e *MemEnv) RunID() string     { return "plan" }
func (e *MemEnv) StepID() string    { return e.step }
func (e *MemEnv) Deps() *steps.Deps { return e.deps }
func (e *MemEnv) Get(key string, v any) (bool, error) {
	e.mu.Lock()
	raw, ok := e.data[key]
	e.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}
func (e *MemEnv) Set(key string, v any) error {
	b, err := json.Marshal(v)
	if err == nil {
		e.mu.Lock()
		e.data[key] = b
		e.mu.Unlock()
	}
	return err
}
func (e *MemEnv) Waiting(string, ...any) {}
func (e *MemEnv) Report(engine.Measure)  {}
func (e *MemEnv) Logger() *slog.Logger {
	if e.deps != nil && e.deps.Logger != nil {
		return e.deps.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// UpgradeSeed is the initial run data of an upgrade to target.
func UpgradeSeed(target string, cands []Candidate) map[string]any {
	tv := TargetMap(cands)
	expect := map[string]string{}
	for _, c := range cands {
		expect[c.Component] = c.Installed
		if c.Target != "" {
			expect[c.Component] = c.Target
		}
	}
	return map[string]any{rundata.KeyTarget: packages.Upstream(target), rundata.KeyTargetVersions: tv, rundata.KeyExpectVersions: expect}
}

// RunData decodes the string maps and backups of a run's data.
type RunData struct {
	Target   string
	Targets  map[string]string
	Previous map[string]string
	Backups  steps.Backups
	Snaps    map[string]string
	Diff     *steps.DiffSummary
	// AgentsBefore and AgentsAfter are the fleet before the manager
	// stopped and as gate.agents_back last saw it; Watch the watch window.
	AgentsBefore *fleet.AgentsBefore
	AgentsAfter  *snapshot.Agents
	Watch        *watch.State
	// Carried are the run values a rollback run starts with as they are
	// (carriedKeys: the recovery settings before the upgrade, the primaries it counted).
	Carried map[string]json.RawMessage
}

// carriedKeys are the run values RollbackSeed carries over unchanged.
var carriedKeys = []string{rundata.KeyPrimariesRecoveries, rundata.KeyIndexerPrimaries}

// DecodeRunData reads the keys the kinds and the CLI share.
func DecodeRunData(data map[string]json.RawMessage) (RunData, error) {
	rd := RunData{Targets: map[string]string{}, Previous: map[string]string{}, Snaps: map[string]string{}, Carried: map[string]json.RawMessage{}}
	for _, k := range carriedKeys {
		if raw, ok := data[k]; ok {
			rd.Carried[k] = raw
		}
	}
	var errs []error
	dec := func(key string, v any) bool {
		raw, ok := data[key]
		if ok {
			if err := json.Unmarshal(raw, v); err != nil {
				errs = append(errs, fmt.Errorf("run data %s: %w", key, err))
			}
		}
		return ok
	}
	dec(rundata.KeyTarget, &rd.Target)
	dec(rundata.KeyTargetVersions, &rd.Targets)
	dec(rundata.KeyPreviousVersions, &rd.Previous)
	dec(rundata.KeyBackups, &rd.Backups)
	dec(rundata.KeySnapshots, &rd.Snaps)
	rd.Diff = decodeOptional[steps.DiffSummary](dec, rundata.KeyDiff)
	rd.AgentsBefore = decodeOptional[fleet.AgentsBefore](dec, rundata.KeyAgentsBefore)
	rd.AgentsAfter = decodeOptional[snapshot.Agents](dec, rundata.KeyAgentsAfter)
	rd.Watch = decodeOptional[watch.State](dec, rundata.KeyWatchState)
	return rd, errors.Join(errs...)
}

// decodeOptional is the value of key decoded with dec, nil when the run data does not hold key.
func decodeOptional[T any](dec func(key string, v any) bool, key string) *T {
	v := new(T)
	if !dec(key, v) {
		return nil
	}
	return v
}

// RollbackSeed is the run data a rollback run of upgrade run rd starts with.
func RollbackSeed(rd RunData) (map[string]any, error) {
	if len(rd.Previous) == 0 {
		return nil, errors.New("the run recorded no previous versions (nothing was installed): nothing to roll back")
	}
	seed := map[string]any{
		rundata.KeyPreviousVersions: rd.Previous,
		rundata.KeyTargetVersions:   rd.Targets,
		rundata.KeyExpectVersions:   rd.Previous,
		rundata.KeyBackups:          rd.Backups,
	}
	if rd.Target != "" {
		seed[rundata.KeyTarget] = rd.Target
	}
	if id := rd.Snaps["pre-upgrade"]; id != "" {
		seed[rundata.KeySnapshots] = map[string]string{"pre-upgrade": id}
	}
	for k, raw := range rd.Carried {
		seed[k] = raw
	}
	return seed, nil
}

// TimeSplit is how a run's time divides between waiting on the stack's
// components and siemctl's own work.
type TimeSplit struct {
	Wall time.Duration `json:"wall_ns"`
	// Components: gates, units, packages, security tool, shipper commands,
	// indexer API calls, snapshot reads.
	Components time.Duration `json:"components_ns"`
	// Own: siemctl's own work (backups, data copies, restores, diffs).
	Own time.Duration `json:"own_ns"`
	// Overhead: the rest of the wall time (engine, journal fsyncs, start-up,
	// and time the run was stopped before a resume).
	Overhead time.Duration            `json:"overhead_ns"`
	ByKind   map[string]time.Duration `json:"by_kind_ns"`
}

// ownKinds are the kinds whose time is siemctl's own work.
var ownKinds = map[string]bool{"backup.configs": true, "backup.indexer_data": true, "restore.configs": true, "restore.indexer_data": true, "snapshot.diff": true}

// OwnWork reports whether a step of kind is siemctl's own work (not waiting on a component).
func OwnWork(kind string) bool { return ownKinds[kind] }

// SplitTime computes a TimeSplit from a run's journal.
func SplitTime(evs []engine.Event) TimeSplit {
	ts := TimeSplit{ByKind: map[string]time.Duration{}}
	var start, end time.Time
	for _, e := range evs {
		switch e.Type {
		case engine.EvRunStart:
			start = e.Time
		case engine.EvStepOK, engine.EvStepFail, engine.EvUndoOK, engine.EvUndoFail:
			d := e.Duration.D()
			ts.ByKind[e.Kind] += d
			if ownKinds[e.Kind] {
				ts.Own += d
			} else {
				ts.Components += d
			}
		}
		if !e.Time.IsZero() {
			end = e.Time
		}
	}
	if !start.IsZero() && end.After(start) {
		ts.Wall = end.Sub(start)
	}
	ts.Overhead = max(ts.Wall-ts.Components-ts.Own, 0)
	return ts
}

// Deadlines is the deadline a run would give each selected step (key: its id) and undo (key:
// "<id> undo") whose kind asks for more than its runbook timeout, judged now with data as the
// run data: plans show them.
func Deadlines(ctx context.Context, plan *steps.Plan, deps *steps.Deps, data map[string]any) map[string]engine.Deadline {
	out := map[string]engine.Deadline{}
	env := NewMemEnv(deps, "", data)
	timeout := func(d time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return engine.DefaultStepTimeout
	}
	for _, s := range plan.Selected() {
		env.step = s.ID
		if dl := engine.BudgetOf(ctx, env, s.Kind, s.Params, timeout(s.Timeout.D())); dl.Why != "" {
			out[s.ID] = dl
		}
		if s.Undo != nil {
			if dl := engine.BudgetOf(ctx, env, s.Undo.Kind, s.Undo.Params, timeout(s.Undo.Timeout)); dl.Why != "" {
				out[s.ID+" undo"] = dl
			}
		}
	}
	return out
}

// Primaries is the number of primary shards a run's steps would be given time for, and where it
// comes from (the count Deadlines uses), judged now with data as the run data: plans estimate
// the wait with it.
func Primaries(ctx context.Context, deps *steps.Deps, data map[string]any) (int, string) {
	return steps.Primaries(ctx, NewMemEnv(deps, "", data))
}

// Changes is the session's package changes in one line ("indexer 4.9.0 → 4.10.0, …", or "no
// package changes"): what apply and the roll's phases say before they run.
func (s *Session) Changes() string {
	var parts []string
	for _, c := range s.Candidates {
		if c.Target != "" && c.Target != c.Installed {
			parts = append(parts, fmt.Sprintf("%s %s → %s", c.Package, output.Dash(c.Installed), c.Target))
		}
	}
	if len(parts) == 0 {
		return "no package changes"
	}
	return strings.Join(parts, ", ")
}
