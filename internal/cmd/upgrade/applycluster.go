package upgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/runbooks"
)

// A rolling upgrade of a distributed deployment runs in three phases, each an embedded runbook
// with the single-host guarantees (plan, journal, resume, dry run, lock, undos): `upgrade apply
// --cluster` on the first host (cluster-apply.yaml), `upgrade node` on every host in its turn
// (node.yaml, only the components the host runs), `upgrade finish --cluster` once at the end
// (cluster-finish.yaml).

// phase is one planned phase of a roll.
type phase struct {
	name     string // "apply --cluster", "node", "finish --cluster"
	runbook  string
	to       string
	only     []string
	skip     []string
	dryRun   bool
	watch    time.Duration
	cmdline  string
	question string
}

// hostSkips are the step-id subtrees of the components this host does not run: node.yaml and
// cluster-finish.yaml keep every step of a component under its name.
func hostSkips(c runs.Common, ctx context.Context) ([]string, []string, error) {
	deps, err := c.Deps(ctx)
	if err != nil {
		return nil, nil, err
	}
	return deps.Config.NotHere(), deps.Config.HostComponents(), nil
}

// inRunbook keeps the component subtrees the embedded runbook has (a selection naming no step
// is refused by the planner).
func inRunbook(name string, comps []string) ([]string, error) {
	raw, source, err := upgrade.LoadRunbook("", name)
	if err != nil {
		return nil, err
	}
	rb, probs := runbook.Decode(raw, source)
	if rb == nil {
		return nil, &engine.PlanError{Problems: probs}
	}
	var out []string
	for _, c := range comps {
		for _, s := range rb.Steps {
			if strings.HasPrefix(s.ID, c+"/") {
				out = append(out, c)
				break
			}
		}
	}
	return out, nil
}

// runPhase plans and runs one phase's runbook on this host.
func runPhase(ctx context.Context, c runs.Common, ph phase, notHere []string) error {
	deps, err := c.Deps(ctx)
	if err != nil {
		return err
	}
	skip, err := inRunbook(ph.runbook, notHere)
	if err != nil {
		return err
	}
	ph.skip = append(skip, ph.skip...)
	p, err := upgrade.Prepare(ctx, deps, upgrade.Request{To: ph.to, Embedded: ph.runbook, Selection: engine.Selection{Only: ph.only, Skip: ph.skip}})
	if err != nil {
		return err
	}
	if ph.watch > 0 {
		if err := steps.RequestWatch(p.Plan, p.Seed, ph.watch); err != nil {
			return &cli.FlagError{Err: err}
		}
		ph.cmdline += " --watch " + ph.watch.String()
	}
	r := runs.NewRunner(c, p, 0, ph.cmdline, ph.dryRun)
	if ph.dryRun {
		fmt.Fprintf(c.IO.Out, "upgrade %s to %s (dry run) on this host (%s): %s\n", ph.name, ph.to, strings.Join(deps.Config.HostComponents(), ", "), summary(p))
		_, err := r.Run(ctx, p.Plan, engine.RunOptions{Seed: p.Seed})
		return err
	}
	q := fmt.Sprintf("%s (%s): %d steps on this host (%s). Proceed?", ph.question, summary(p), p.Plan.Total(), strings.Join(deps.Config.HostComponents(), ", "))
	if err := c.Confirm(q); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.ErrOut, "upgrade %s to %s: %s; %d steps\n", ph.name, ph.to, summary(p), p.Plan.Total())
	ri, err := r.Run(ctx, p.Plan, engine.RunOptions{Seed: p.Seed})
	return runs.Finish(c, p.Deps.Config.StateDir, ri, err)
}

// runApplyCluster is `upgrade apply --cluster`: the first host's phase. It runs on an indexer host
// (the security backup and the snapshot are taken there).
func runApplyCluster(ctx context.Context, opts *ApplyOptions) error {
	_, here, err := hostSkips(opts.Common, ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(here, "indexer") {
		return cli.FlagErrorf("upgrade apply --cluster runs on an indexer host (this host runs %s): run it on one of the hosts of indexer.nodes", strings.Join(here, ", "))
	}
	if opts.Guided || opts.Window > 0 || opts.Watch > 0 || opts.Runbook != "" || len(opts.IgnoreGates) > 0 {
		return cli.FlagErrorf("--cluster takes --to, --dry-run, --only, --skip-steps and --yes (guided mode, --window, --watch, --runbook and --ignore-gate are single-host; --watch goes to upgrade finish --cluster)")
	}
	if !opts.DryRun {
		if err := noRunInProgress(ctx, opts.Roll); err != nil {
			return err
		}
	}
	return runPhase(ctx, opts.Common, phase{name: "apply --cluster", runbook: runbooks.ClusterApply, to: opts.To, only: opts.Only, skip: opts.SkipSteps,
		dryRun: opts.DryRun, cmdline: commandLine("upgrade", "apply", "--cluster", "--to", opts.To),
		question: "Prepare the rolling upgrade to " + opts.To + ": cluster-wide preflight, backups, snapshot, allocation primaries, flush"}, nil)
	// The coordination record of the roll (turns, leases, order) is created by the rollout
	// package once it is merged (see upgrade node): this phase leaves the cluster ready for the
	// first node.
}

// noRunInProgress refuses a second apply --cluster while the cluster's record holds a run that has
// not ended (exit 3, nothing run, no run journaled on this host): the same refusal rollout/create
// makes, before the preflight rather than after it. A record that cannot be read leaves the
// judgement to the runbook's own gates.
func noRunInProgress(ctx context.Context, d ClusterDeps) error {
	if d.Indexer == nil {
		return nil
	}
	s, _, err := d.store(ctx)
	if err != nil {
		return nil //nolint:nilerr // the preflight names an indexer that does not answer
	}
	rec, err := s.Load(ctx)
	if err != nil || rec.Phase.Ended() {
		return nil //nolint:nilerr // no run (or unreadable: the preflight judges)
	}
	e := &rollout.RunExistsError{RunID: rec.RunID, Phase: rec.Phase, Target: rec.Target}
	return &cli.ExitError{Code: cli.ExitNoGo, Reason: "no-go: " + e.Error()}
}
