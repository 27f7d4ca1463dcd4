package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// ApplyOptions are the inputs of `upgrade apply`.
type ApplyOptions struct {
	runs.Common
	To          string
	DryRun      bool
	Runbook     string
	Only        []string
	SkipSteps   []string
	IgnoreGates []string
	RetryLock   time.Duration
	Window      time.Duration
	Guided      bool
	// Watch is the watch window after validation (0: none).
	Watch time.Duration
	// Cluster runs the first phase of a rolling upgrade of a distributed deployment
	// (cluster-apply.yaml; internal/upgrade/roll).
	Cluster bool
	// Roll reaches the roll's coordination record (--cluster: a run in progress refuses a second
	// apply before anything runs); nil Indexer: not checked.
	Roll roll.Deps
}

// NewCmdApply builds `upgrade apply`.
func NewCmdApply(f *cli.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{Common: common(f), Roll: roll.NewDeps(f.Config, f.Indexer, f.Manager, f.Now, f.HostLock)}
	cmd := &cobra.Command{
		Use:   "apply --to VERSION",
		Short: "Run the upgrade runbook to an exact version",
		Long: `Plan the runbook (every step, kind and parameter checked before anything runs), take
the host lock, ask for confirmation (--yes without a terminal) and run it: progress per
step on stderr, the final report with the pre/post snapshot diff on stdout.

A gate marked on_fail: rollback that says no-go rolls the stack back to the recorded
versions with the indexer data copy (exit 10). An interrupted run (Ctrl-C, crash) is
continued with 'siemctl upgrade resume'.

--window 2h refuses to start (exit 3) when the estimated upgrade plus a full rollback
do not fit (the estimate is 'upgrade plan''s time budget); during the run it shows the
point of no return (window end minus the estimated rollback of what is done) at each
phase, warns before it passes and says when it has. --guided pauses after preflight,
the indexer, the manager and validation with the evidence so far and asks: continue,
wait (re-evaluate the gates), roll back, or stop here (resumable); it needs a terminal.
Each decision is journaled with the operator (SUDO_USER, else USER) and shows in
'upgrade status'. Resume keeps the window and guided mode.

Exit codes: 0 ok, 2 usage, 3 no-go (nothing changed), 6 locked, 10 failed and rolled
back, 11 rollback failed, 130 interrupted or stopped here (resumable).

--watch DURATION keeps judging the stack after validation (step watch/window:
cluster status, alert rate against the pre-upgrade snapshot, agents active
against before, unit restarts, the data-flow probe); a breach rolls back (exit
10), or with --guided asks: roll back, wait (keep watching) or stop here.
'siemctl upgrade resume' continues the remaining window.`,
		Example: `  siemctl upgrade apply --to 4.10.0
  siemctl upgrade apply --to 4.10.0 --yes -o json
  siemctl upgrade apply --to 4.10.0 --dry-run
  siemctl upgrade apply --to 4.10.0 --window 2h --guided
  siemctl upgrade apply --to 4.10.0 --yes --watch 20m
  siemctl upgrade apply --to 4.10.0 --yes --ignore-gate preflight/agents --retry-lock 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fillTarget(f, &opts.Common, opts.To); err != nil {
				return err
			}
			if opts.Window < 0 {
				return cli.FlagErrorf("--window must be a positive duration (e.g. --window 2h)")
			}
			if opts.Watch < 0 || opts.Watch > watch.MaxWindow {
				return cli.FlagErrorf("--watch %s: want a window up to %s, e.g. --watch 20m", opts.Watch, watch.MaxWindow)
			}
			if opts.Cluster {
				return cli.Run(cmd.Context(), runF, runApplyCluster, opts)
			}
			return cli.Run(cmd.Context(), runF, runApply, opts)
		},
	}
	fl := cmd.Flags()
	targetFlag(fl, &opts.To)
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print every command and API call the run would make; change nothing")
	fl.StringVar(&opts.Runbook, "runbook", "", "use this runbook file instead of the embedded upgrade.yaml")
	fl.StringSliceVar(&opts.Only, "only", nil, "run only these step ids (a parent id selects its children; finally-steps always run)")
	fl.StringSliceVar(&opts.SkipSteps, "skip-steps", nil, "skip these step ids")
	fl.StringSliceVar(&opts.IgnoreGates, "ignore-gate", nil, "skip an ignorable gate (step id or kind: "+strings.Join(steps.Ignorable, ", ")+")")
	cli.DurationVar(fl, &opts.RetryLock, "retry-lock", 0, "wait up to this long for the host lock held by another run")
	cli.DurationVar(fl, &opts.Window, "window", 0, "maintenance window: refuse to start unless the estimated upgrade + rollback fit; show the point of no return")
	fl.BoolVar(&opts.Guided, "guided", false, "pause after preflight, indexer, manager and validation and ask: continue, wait, roll back, stop here (needs a terminal)")
	cli.DurationVar(fl, &opts.Watch, "watch", 0, "after validation, watch the stack this long and roll back on a breach (e.g. 20m)")
	fl.BoolVar(&opts.Cluster, "cluster", false, "distributed deployment: the first phase of a rolling upgrade on this (indexer) host; then 'upgrade node' on each host and 'upgrade finish --cluster'")
	return cmd
}

// fillTarget is the RunE preamble of plan and apply: the global flags, -o,
// and the required --to.
func fillTarget(f *cli.Factory, c *runs.Common, to string) error {
	c.Fill(f)
	if err := cli.CheckOutput(f, "table", "json"); err != nil {
		return err
	}
	if to == "" {
		return cli.FlagErrorf("--to is required (e.g. --to 4.10.0)")
	}
	if err := upgrade.CheckTarget(to); err != nil {
		return &cli.FlagError{Err: fmt.Errorf("--to: %w", err)}
	}
	return nil
}

func targetFlag(fl *pflag.FlagSet, to *string) {
	fl.StringVar(to, "to", "", "target version: upstream (4.10.0) or exact package version (4.10.0-1)")
}

// stepFlags adds --only and --skip-steps, the step ids a run keeps or leaves out.
func stepFlags(fl *pflag.FlagSet, only, skip *[]string) {
	fl.StringSliceVar(only, "only", nil, "run only these step ids")
	fl.StringSliceVar(skip, "skip-steps", nil, "skip these step ids")
}

// prepare plans the upgrade (no side effect): the one session of plan and apply.
func prepare(ctx context.Context, c runs.Common, to, runbookPath string, sel engine.Selection, ignore []string) (*upgrade.Session, error) {
	deps, err := c.Deps(ctx)
	if err != nil {
		return nil, err
	}
	s, err := upgrade.Prepare(ctx, deps, upgrade.Request{To: to, Runbook: runbookPath, Selection: sel, IgnoreGates: ignore})
	if ig := (*upgrade.IgnoreGateError)(nil); errors.As(err, &ig) {
		return nil, &cli.FlagError{Err: ig.Err}
	}
	return s, err
}

func runApply(ctx context.Context, opts *ApplyOptions) error {
	p, err := prepare(ctx, opts.Common, opts.To, opts.Runbook, engine.Selection{Only: opts.Only, Skip: opts.SkipSteps}, opts.IgnoreGates)
	if err != nil {
		return err
	}
	cmdline := runs.CommandLine("upgrade", "apply", "--to", opts.To)
	if opts.Watch > 0 {
		if err := steps.RequestWatch(p.Plan, p.Seed, opts.Watch); err != nil {
			return &cli.FlagError{Err: err}
		}
		cmdline += " --watch " + opts.Watch.String()
	}
	r := runs.NewRunner(opts.Common, p, opts.RetryLock, cmdline, opts.DryRun)
	if opts.DryRun {
		fmt.Fprintf(opts.IO.Out, "upgrade to %s (dry run): %s\n", opts.To, p.Changes())
		_, err := r.Run(ctx, p.Plan, engine.RunOptions{Seed: p.Seed})
		return err
	}
	if opts.Guided {
		if err := needTerminal(opts.IO); err != nil {
			return err
		}
	}
	if opts.Window > 0 || opts.Guided {
		ck, err := newCockpit(ctx, opts.Common, p, opts.Window, opts.Guided)
		if err != nil {
			return err
		}
		ck.apply(r)
	}
	q := fmt.Sprintf("Upgrade to %s (%s): %d steps, services stop while it runs; %s. Proceed?", opts.To, p.Changes(), p.Plan.Total(), steps.DataSafetyPromise(p.Deps.Config))
	if err := opts.Common.Confirm(q); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "upgrade to %s: %s; %d steps\n", opts.To, p.Changes(), p.Plan.Total())
	ri, err := r.Run(ctx, p.Plan, engine.RunOptions{Seed: p.Seed})
	return runs.Finish(opts.Common, p.Deps.Config.StateDir, ri, err)
}
