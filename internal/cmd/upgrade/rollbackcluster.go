package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// `siemctl rollback --cluster` (docs/distributed.md): the rollback of a rolling upgrade,
// one phase of runbooks/cluster-rollback.yaml at a time on the hosts the phase names; the record's
// side is internal/ops/rollout's rollback.go. ansible/rollback.yml drives the phases.

// RollbackPhases are the phases of a cluster rollback, in order, and where each runs.
var RollbackPhases = []struct{ Name, Where string }{
	{"prepare", "every host, the one that ran upgrade apply --cluster first"},
	{"indexer-down", "every indexer host at once"},
	{"indexer-up", "every indexer host at once"},
	{"restore", "once, on the host that ran upgrade apply --cluster"},
	{"node", "each manager and dashboard host in its turn (the record's order)"},
	{"finish", "once, on any host"},
}

// RollbackPhaseNames lists the phases' names.
func RollbackPhaseNames() []string {
	out := make([]string, len(RollbackPhases))
	for i, p := range RollbackPhases {
		out[i] = p.Name
	}
	return out
}

// nodeRollbackComponents are the runbook subtrees of the node phase.
var nodeRollbackComponents = []string{"manager", "shipper", "dashboard"}

// RollbackClusterOptions are the inputs of `siemctl rollback --cluster`.
type RollbackClusterOptions struct {
	runs.Common
	Phase  string
	DryRun bool
	// Turn is the node phase's turn in the record.
	Turn TurnOptions
}

// NewRollbackClusterOptions are the options over the Factory's clients.
func NewRollbackClusterOptions(f *cli.Factory) *RollbackClusterOptions {
	return &RollbackClusterOptions{Common: common(f), Turn: TurnOptions{Cluster: FactoryClusterDeps(f), Lease: DefaultLease, Poll: DefaultTurnPoll}}
}

// RunRollbackCluster runs one phase of the cluster rollback on this host; with --dry-run and no
// phase, it prints every call of every phase.
func RunRollbackCluster(ctx context.Context, o *RollbackClusterOptions) error {
	if err := o.Turn.Check(); err != nil {
		return cli.FlagErrorf("%v", err)
	}
	if o.Phase == "" {
		if !o.DryRun {
			return cli.FlagErrorf("a cluster rollback runs phase by phase on the hosts each phase names: --phase %s (ansible-playbook %s/rollback.yml runs them all; --dry-run without --phase prints every phase)",
				strings.Join(RollbackPhaseNames(), "|"), "/usr/share/siemctl/ansible")
		}
		for _, p := range RollbackPhases {
			fmt.Fprintf(o.IO.Out, "\n## phase %s (%s): siemctl rollback --cluster --phase %s\n", p.Name, p.Where, p.Name)
			q := *o
			q.Phase = p.Name
			if err := RunRollbackCluster(ctx, &q); err != nil {
				fmt.Fprintf(o.IO.Out, "# phase %s: %v\n", p.Name, err)
			}
		}
		return nil
	}
	if !slices.Contains(RollbackPhaseNames(), o.Phase) {
		return cli.FlagErrorf("--phase %q: want one of %s", o.Phase, strings.Join(RollbackPhaseNames(), ", "))
	}
	deps, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	cfg := deps.Config
	sel := engine.Selection{Only: []string{o.Phase}}
	switch o.Phase {
	case "prepare":
		if !cfg.Runs("shipper") {
			sel.Skip = []string{"prepare/shipper-stop"}
		}
	case "indexer-down", "indexer-up":
		if !cfg.Runs("indexer") {
			return cli.FlagErrorf("--phase %s runs on the indexer hosts (this host runs %s)", o.Phase, strings.Join(cfg.HostComponents(), ", "))
		}
	case "node":
		sel.Only = nil
		for _, c := range nodeRollbackComponents {
			if cfg.Runs(c) {
				sel.Only = append(sel.Only, c)
			}
		}
		if len(sel.Only) == 0 {
			return cli.FlagErrorf("--phase node runs on the manager and dashboard hosts (this host runs %s; its indexer came back in the indexer-down and indexer-up phases)", strings.Join(cfg.HostComponents(), ", "))
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
			if why := prepared(ctx, o.Turn.Cluster, kept); why != "" {
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
	cmdline := commandLine("rollback", "--cluster", "--phase", o.Phase)
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
func prepared(ctx context.Context, d ClusterDeps, kept *rollout.Record) string {
	if kept == nil || kept.Phase != rollout.PhaseRollingBack {
		return ""
	}
	s, _, err := d.store(ctx)
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

func resumeRollbackPhase(ctx context.Context, o *RollbackClusterOptions, deps *steps.Deps, ri *engine.RunInfo) error {
	sess, err := upgrade.Reopen(deps, ri)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "resuming this host's cluster rollback run %s, phase %s (stopped: %s)\n", ri.ID, o.Phase, ri.Error)
	r := runs.NewRunner(o.Common, sess, 0, commandLine("rollback", "--cluster", "--phase", o.Phase)+" (resume "+ri.ID+")", false)
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

// autoRollbackSteps are the node.yaml steps past the point of no return of an indexer node: it
// started at the new version (its data upgraded on the way), so a no-go from here rolls the whole
// deployment back.
var autoRollbackSteps = []string{"indexer/start", "indexer/rejoined", "indexer/allocation-all", "indexer/health"}

// noGoAfterStart says whether err, from this host's turn, is a no-go that rolls the deployment
// back: a node.yaml step failing past an indexer node's start, or a turn the engine already
// rolled back on this host (exit 10). It returns the failed step.
func noGoAfterStart(err error) (string, bool) {
	var fe *engine.FailedError
	if errors.As(err, &fe) && slices.Contains(autoRollbackSteps, fe.Step) {
		return fe.Step, true
	}
	var rb *engine.RolledBackError
	if errors.As(err, &rb) {
		return "", true
	}
	return "", false
}

// beginAutoRollback moves the run to rolling-back after a no-go in this host's turn of entry and
// returns the *rollout.RollingBackError (exit 10) naming the node, the reason and the node's
// log's last error (diag).
func beginAutoRollback(ctx context.Context, d ClusterDeps, rec rollout.Record, entry string, cause error, diag []string, errOut io.Writer) error {
	runID := rec.RunID
	host := ""
	if d.Hostname != nil {
		host, _ = d.Hostname()
	}
	out := &rollout.RollingBackError{RunID: runID, Entry: entry, Reason: cause, Diagnosis: diag}
	why := firstLine(cause.Error())
	if len(diag) > 0 {
		why += "; the node's log: " + strings.Join(diag[:min(len(diag), 3)], " ")
	}
	s, _, err := d.store(ctx)
	if err == nil {
		_, err = s.Begin(ctx, runID, host, entry, why)
	}
	if err != nil { // not from here: the node this host talks to is the one that failed; keep it for prepare
		if cfg, cerr := d.Config(); cerr == nil {
			if cerr := rollout.SaveCopy(cfg.StateDir, rollout.BeganHere(rec, host, entry, why, d.now())); cerr == nil {
				fmt.Fprintf(errOut, "the cluster's record could not be written from this host (%v): this host kept the rollback's record (%s); the rollback's prepare on the other hosts marks the cluster's\n", firstLine(err.Error()), rollout.CopyFile)
			}
		}
	}
	out.Mark = err
	fmt.Fprintln(errOut, out.Error())
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// nodeDiagnosis is the diagnosis of this host's indexer after a no-go at an indexer step (the
// cause and the log lines it rests on, from internal/ops/diagnose), or nil.
func nodeDiagnosis(ctx context.Context, c runs.Common, step string) []string {
	if !strings.HasPrefix(step, "indexer/") {
		return nil
	}
	deps, err := c.Deps(ctx)
	if err != nil || deps.Diagnose == nil || deps.Units == nil {
		return nil
	}
	u, err := deps.Units(ctx)
	if err != nil {
		return nil
	}
	unit := deps.Config.Indexer.Unit
	sts, err := u.Status(ctx, unit)
	if err != nil || len(sts) == 0 {
		return nil
	}
	lines := deps.Diagnose(ctx, services.Component{Name: "indexer", Unit: unit}, sts[0]).Lines()
	if len(lines) > 8 {
		lines = append(lines[:8:8], "…")
	}
	return lines
}
