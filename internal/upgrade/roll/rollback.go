package roll

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/usage"
	"github.com/siemctl/siemctl/runbooks"
)

// The rollback of a roll (`siemctl rollback --cluster`, docs/distributed.md): one phase of
// runbooks/cluster-rollback.yaml at a time on the hosts the phase names; the record's side is
// internal/ops/rollout's rollback.go. ansible/rollback.yml drives the phases.

// RollbackPhases are the phases of a roll's rollback, in order, each with where it runs and its
// subtrees: cluster-rollback.yaml's phases.
var RollbackPhases = sync.OnceValues(func() ([]runbook.Phase, error) {
	rb, err := embedded(runbooks.ClusterRollback)
	if err != nil {
		return nil, err
	}
	return rb.Phases, nil
})

// RollbackPhaseNames lists the phases' names (none when the embedded runbook does not decode,
// which its tests rule out).
func RollbackPhaseNames() []string {
	phases, _ := RollbackPhases()
	out := make([]string, len(phases))
	for i, p := range phases {
		out[i] = p.Name
	}
	return out
}

// RollbackRequest is one phase of a roll's rollback on this host (`siemctl rollback --cluster`).
type RollbackRequest struct {
	runs.Common
	Phase  string
	DryRun bool
	// Turn is the node phase's turn in the record.
	Turn TurnOptions
}

// Rollback runs one phase of the roll's rollback on this host; with DryRun and no phase, it prints
// every call of every phase.
func Rollback(ctx context.Context, o *RollbackRequest) error {
	if err := o.Turn.Check(); err != nil {
		return usage.Errorf("%v", err)
	}
	if o.Phase == "" {
		if !o.DryRun {
			return usage.Errorf("a cluster rollback runs phase by phase on the hosts each phase names: --phase %s (ansible-playbook %s/rollback.yml runs them all; --dry-run without --phase prints every phase)",
				strings.Join(RollbackPhaseNames(), "|"), "/usr/share/siemctl/ansible")
		}
		phases, err := RollbackPhases()
		if err != nil {
			return err
		}
		for _, p := range phases {
			fmt.Fprintf(o.IO.Out, "\n## phase %s (%s): siemctl rollback --cluster --phase %s\n", p.Name, p.Where, p.Name)
			q := *o
			q.Phase = p.Name
			if err := Rollback(ctx, &q); err != nil {
				fmt.Fprintf(o.IO.Out, "# phase %s: %v\n", p.Name, err)
			}
		}
		return nil
	}
	phases, err := RollbackPhases()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(phases, func(p runbook.Phase) bool { return p.Name == o.Phase })
	if i < 0 {
		return usage.Errorf("--phase %q: want one of %s", o.Phase, strings.Join(RollbackPhaseNames(), ", "))
	}
	phase := phases[i]
	deps, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	cfg := deps.Config
	sel := engine.Selection{Only: slices.Clone(phase.Steps)}
	switch o.Phase {
	case "prepare":
		if !cfg.Runs("shipper") {
			sel.Skip = []string{"prepare/shipper-stop"}
		}
	case "indexer-down", "indexer-up":
		if !cfg.Runs("indexer") {
			return usage.Errorf("--phase %s runs on the indexer hosts (this host runs %s)", o.Phase, strings.Join(cfg.HostComponents(), ", "))
		}
	case "node":
		sel.Only = nil
		for _, c := range phase.Steps {
			if cfg.Runs(c) {
				sel.Only = append(sel.Only, c)
			}
		}
		if len(sel.Only) == 0 {
			return usage.Errorf("--phase node runs on the manager and dashboard hosts (this host runs %s; its indexer came back in the indexer-down and indexer-up phases)", strings.Join(cfg.HostComponents(), ", "))
		}
	}
	var kept *rollout.Record
	if r, err := rollout.LoadCopy(cfg.StateDir); err == nil {
		kept = &r
	} else if o.Phase != "prepare" && !o.DryRun {
		return fmt.Errorf("%w: run siemctl rollback --cluster --phase prepare on this host first (it keeps the record before the indexer nodes stop)", err)
	}
	if !o.DryRun {
		ri := lastRollbackRun(cfg.StateDir, sel)
		switch {
		case ri != nil && ri.Resumable() && (kept == nil || rolloutRunOf(ri) == "" || rolloutRunOf(ri) == kept.RunID):
			if o.Phase == "node" {
				return InTurn(ctx, o.Turn, o.IO.ErrOut, func(ctx context.Context, _ *rollout.Turn) error {
					return resumeRollbackPhase(ctx, o, deps, ri)
				})
			}
			return resumeRollbackPhase(ctx, o, deps, ri)
		case o.Phase == "prepare":
			if why := prepared(ctx, o.Turn.Roll, kept); why != "" {
				fmt.Fprintln(o.IO.ErrOut, why)
				return nil
			}
		case ri != nil && ri.Status == engine.StatusSucceeded && kept != nil && rolloutRunOf(ri) == kept.RunID:
			fmt.Fprintf(o.IO.ErrOut, "phase %s of the rollback of run %s is done on this host (run %s): nothing to do\n", o.Phase, kept.RunID, ri.ID)
			return nil
		}
	}
	if o.Phase == "prepare" {
		kept = nil // the record in the cluster decides (the kept copy may be an older run's)
	}
	var installed map[string]string
	if pm, err := deps.Packages.Get(); err == nil {
		if inst, err := packages.ByComponent(ctx, pm, cfg.HostPackageNames()); err == nil {
			installed = inst
		} else if !o.DryRun {
			return fmt.Errorf("the installed versions: %w", err)
		}
	}
	previous, seed, err := upgrade.ClusterRollbackSeed(cfg.StateDir, kept, installed)
	if err != nil {
		return err
	}
	sess, err := upgrade.ClusterRollback(deps, sel, previous, seed)
	if err != nil {
		return err
	}
	cmdline := runs.CommandLine("rollback", "--cluster", "--phase", o.Phase)
	run := func(ctx context.Context) error {
		r := runs.NewRunner(o.Common, sess, 0, cmdline, o.DryRun)
		if o.DryRun {
			_, err := r.Run(ctx, sess.Plan, engine.RunOptions{Seed: seed})
			return err
		}
		fmt.Fprintf(o.IO.ErrOut, "cluster rollback, phase %s on this host (%s): back to %s; %d steps\n", o.Phase, strings.Join(cfg.HostComponents(), ", "), versionsOf(previous), sess.Plan.Total())
		ri, err := r.Run(ctx, sess.Plan, engine.RunOptions{Seed: seed})
		return runs.Finish(o.Common, cfg.StateDir, ri, err)
	}
	if o.DryRun {
		if o.Phase == "node" {
			for _, c := range rollout.RollbackCalls()["node"] {
				fmt.Fprintf(o.IO.Out, "turn: %s\n", c)
			}
		}
		return run(ctx)
	}
	if err := o.Confirm(fmt.Sprintf("Cluster rollback, phase %s on this host (%s): back to %s, %d steps. Proceed?", o.Phase, strings.Join(cfg.HostComponents(), ", "), versionsOf(previous), sess.Plan.Total())); err != nil {
		return err
	}
	if o.Phase == "node" {
		return InTurn(ctx, o.Turn, o.IO.ErrOut, func(ctx context.Context, _ *rollout.Turn) error { return run(ctx) })
	}
	return run(ctx)
}

// lastRollbackRun is this host's newest cluster-rollback run of the same selection (not a dry
// run): stopped part-way (a failure, kill -9), the same command resumes it; succeeded for the same
// roll, the phase is not run twice.
func lastRollbackRun(stateDir string, sel engine.Selection) *engine.RunInfo {
	ids, err := engine.Runs(stateDir)
	if err != nil {
		return nil
	}
	for i := len(ids) - 1; i >= 0; i-- {
		ri, err := engine.Status(stateDir, ids[i])
		if err != nil || ri.Runbook.Name != upgrade.ClusterRollbackRunbook || ri.Status == engine.StatusDryRun || !slices.Equal(ri.Selection.Only, sel.Only) {
			continue
		}
		return ri
	}
	return nil
}

// rolloutRunOf is the roll's run id a cluster-rollback run was seeded with.
func rolloutRunOf(ri *engine.RunInfo) string {
	var id string
	if raw, ok := ri.Data[upgrade.KeyRolloutRun]; ok {
		_ = json.Unmarshal(raw, &id)
	}
	return id
}

// prepared says why prepare has nothing to do on this host: it kept a copy of the run rolling back
// and the cluster no longer holds that run's original record (the indexer nodes were stopped, or
// the record was written back with its rollback turns open). "" when prepare must run.
func prepared(ctx context.Context, d Deps, kept *rollout.Record) string {
	if kept == nil || kept.Phase != rollout.PhaseRollingBack {
		return ""
	}
	s, _, err := d.Store(ctx)
	var r rollout.Record
	if err == nil {
		r, err = s.Load(ctx)
	}
	switch {
	case err != nil:
		return fmt.Sprintf("this host kept the record of run %s rolling back, and the cluster's record is not readable (%v): prepared already", kept.RunID, firstLine(err.Error()))
	case r.RunID != kept.RunID:
		return ""
	case r.Phase == rollout.PhaseRolledBack:
		return fmt.Sprintf("run %s is rolled back already: nothing to do", r.RunID)
	case r.Rollback != nil && r.Rollback.Turns:
		return fmt.Sprintf("the record of run %s is back in the fresh cluster with its rollback turns: prepared already", r.RunID)
	}
	return ""
}

func resumeRollbackPhase(ctx context.Context, o *RollbackRequest, deps *steps.Deps, ri *engine.RunInfo) error {
	sess, err := upgrade.Reopen(deps, ri)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "resuming this host's cluster rollback run %s, phase %s (stopped: %s)\n", ri.ID, o.Phase, ri.Error)
	r := runs.NewRunner(o.Common, sess, 0, runs.CommandLine("rollback", "--cluster", "--phase", o.Phase)+" (resume "+ri.ID+")", false)
	out, err := r.Resume(ctx, ri.ID)
	return runs.Finish(o.Common, deps.Config.StateDir, out, err)
}

func versionsOf(m map[string]string) string {
	var parts []string
	for _, c := range steps.Components {
		if v := m[c]; v != "" {
			parts = append(parts, c+" "+v)
		}
	}
	if len(parts) == 0 {
		return "the versions recorded before the roll"
	}
	return strings.Join(parts, ", ")
}
