// Package upgrade is what an upgrade run is, apart from the step kinds that
// act it out (internal/steps) and the commands that start it
// (internal/cmd/upgrade, internal/cmd/rollback, and the roll, internal/upgrade/roll):
//
//   - the session (Session, Prepare, Reopen, RollbackOf): one registry, the
//     run's planning context (handed by the engine to every Describe), one
//     parse of the runbook (ignored gates are a selection of that parse),
//     the run data a run starts with;
//   - the run data as the commands read it (RunData, DecodeRunData, the
//     seeds of an upgrade and of its rollback) and the run report;
//   - target resolution (CheckTarget, ResolveTarget);
//   - preflight (PreflightGates, evaluated once, read-only; IgnoreGates) and
//     the deadlines a plan shows (Deadlines);
//   - the time budget (EstimateBudget: each kind's own estimate, an
//     engine.Estimator, from this host's history and the data volume; else
//     its history or a default);
//   - the evidence bundle (GatherEvidence, RenderHTML, Bundle).
//
// The run data keys and the set-aside data directories are the session's
// contract with the kinds: internal/rundata, below both.
package upgrade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/runbooks"
)

// Session is one run prepared for the engine: its dependencies, the
// registry (built once), the planning context the engine hands the kinds'
// Describe (the configuration and the run's versions), the plan (parsed
// once) and the run data it starts with.
type Session struct {
	Deps     *steps.Deps
	Registry *steps.Registry
	Planning *steps.Planning
	// Plan is the planned runbook (nil for a reopened run: the engine plans
	// it again from its journal).
	Plan *steps.Plan
	// Seed is the run data the run starts with.
	Seed map[string]any

	// Candidates are the components' packages resolved for the target
	// (Prepare), Installed their versions before the upgrade.
	Candidates []Candidate
	Installed  map[string]string
	// Data is the recorded run's data (Reopen, RollbackOf).
	Data RunData
}

// Request is what Prepare plans: the upgrade to To with the runbook at
// Runbook (a site's file; "" the embedded upgrade.yaml), the selection, and
// the gates to leave out (--ignore-gate).
type Request struct {
	To          string
	Runbook     string
	Selection   engine.Selection
	IgnoreGates []string
	// Embedded is the embedded runbook planned when Runbook is "" (""; upgrade.yaml): a rolling
	// upgrade's phases plan runbooks.ClusterApply, Node or ClusterFinish.
	Embedded string
}

// IgnoreGateError is an --ignore-gate name that is not an ignorable gate
// of the runbook (a usage error).
type IgnoreGateError struct{ Err error }

func (e *IgnoreGateError) Error() string { return e.Err.Error() }
func (e *IgnoreGateError) Unwrap() error { return e.Err }

// Prepare resolves the target versions and plans the upgrade runbook; no
// side effect.
func Prepare(ctx context.Context, deps *steps.Deps, req Request) (*Session, error) {
	pm, err := deps.Packages.Need("packages")
	if err != nil {
		return nil, err
	}
	cands, err := ResolveTarget(ctx, pm, deps.Config.PackageNames(), req.To)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", req.To, err)
	}
	installed := map[string]string{}
	for _, cd := range cands {
		installed[cd.Component] = cd.Installed
	}
	s, err := newSession(deps, TargetMap(cands), installed)
	if err != nil {
		return nil, err
	}
	raw, source, err := LoadRunbook(req.Runbook, cmp.Or(req.Embedded, runbooks.Upgrade))
	if err != nil {
		return nil, err
	}
	if s.Plan, err = s.parse(raw, source, req.Selection, req.IgnoreGates); err != nil {
		return nil, err
	}
	s.Candidates, s.Installed, s.Seed = cands, installed, UpgradeSeed(req.To, cands)
	return s, nil
}

// RollbackPlan plans the embedded rollback.yaml as `siemctl rollback` would
// run it after this session's upgrade, back to the installed versions.
func (s *Session) RollbackPlan() (*steps.Plan, error) {
	back, err := newSession(s.Deps, s.Installed, s.Installed)
	if err != nil {
		return nil, err
	}
	raw, source, err := LoadRunbook("", runbooks.Rollback)
	if err != nil {
		return nil, err
	}
	return back.parse(raw, source, engine.Selection{}, nil)
}

// Reopen prepares the recorded run ri for resume, abort or a rollback
// through its undos: the registry rebuilt from the run's versions.
func Reopen(deps *steps.Deps, ri *engine.RunInfo) (*Session, error) {
	rd, err := DecodeRunData(ri.Data)
	if err != nil {
		return nil, err
	}
	s, err := newSession(deps, rd.Targets, rd.Previous)
	if err != nil {
		return nil, err
	}
	s.Data = rd
	return s, nil
}

// RollbackOf prepares the explicit rollback (rollback.yaml) of the finished
// upgrade run up: its seed carries the versions and backups up recorded.
func (s *Session) RollbackOf(up *engine.RunInfo) error {
	seed, err := RollbackSeed(s.Data)
	if err != nil {
		return fmt.Errorf("run %s: %w", up.ID, err)
	}
	raw, err := runbooks.FS.ReadFile(runbooks.Rollback)
	if err != nil {
		return err
	}
	plan, err := s.parse(raw, runbooks.Rollback, engine.Selection{}, nil)
	if err != nil {
		return err
	}
	s.Plan, s.Seed = plan, seed
	return nil
}

// newSession builds the one registry of a session (every kind) and its
// planning context: the configuration and the versions involved.
func newSession(deps *steps.Deps, target, previous map[string]string) (*Session, error) {
	reg, err := steps.NewRegistry()
	if err != nil {
		return nil, err
	}
	return &Session{Deps: deps, Registry: reg, Planning: &steps.Planning{Config: deps.Config, Target: target, Previous: previous}}, nil
}

// parse plans the runbook text once: the ignored gates join the selection's
// skips before the steps are planned.
func (s *Session) parse(raw []byte, source string, sel engine.Selection, ignore []string) (*steps.Plan, error) {
	rb, probs := runbook.Decode(raw, source)
	if rb == nil {
		return nil, &engine.PlanError{Problems: probs}
	}
	ids, ierr := IgnoreGates(rb, ignore)
	if ierr == nil && len(ids) > 0 {
		sel.Skip = append(slices.Clone(sel.Skip), ids...)
	}
	plan, err := engine.PlanRunbook(rb, s.Registry, sel, s.Planning)
	var pe *engine.PlanError
	switch {
	case errors.As(err, &pe):
		return nil, &engine.PlanError{Problems: append(probs, pe.Problems...)}
	case err != nil:
		return nil, err
	case probs.Err() != nil:
		return nil, &engine.PlanError{Problems: probs}
	case ierr != nil:
		return nil, &IgnoreGateError{Err: ierr}
	}
	return plan, nil
}

// LoadRunbook returns the runbook text: the embedded one, or a site's file.
func LoadRunbook(path, embedded string) ([]byte, string, error) {
	if path == "" {
		b, err := runbooks.FS.ReadFile(embedded)
		return b, embedded, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("runbook: %w", err)
	}
	return b, path, nil
}
