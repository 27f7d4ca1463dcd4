// Package rollback is `siemctl rollback`: put the versions recorded by the
// last upgrade run back, with the indexer data copy and the configs.
package rollback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// Options are the inputs of `siemctl rollback`.
type Options struct {
	runs.Common
	Run       string
	DryRun    bool
	RetryLock time.Duration
	// Cluster: the rollback of a rolling upgrade (--cluster --phase P), internal/upgrade/roll.
	Cluster bool
	Phase   string
}

// NewCmdRollback builds `siemctl rollback`.
func NewCmdRollback(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Common: runs.Common{IO: f.IO, Deps: runs.FactoryDeps(f), Logger: f.Logger, Now: f.Now}}
	co := &roll.RollbackRequest{Turn: roll.TurnOptions{Roll: roll.NewDeps(f.Config, f.Indexer, f.Manager, f.Now, f.HostLock), Lease: roll.DefaultLease, Poll: roll.DefaultTurnPoll}}
	cmd := &cobra.Command{
		Use:   "rollback [RUN]",
		Short: "Put the previous version back, with its data",
		Long: `Roll the stack back to the exact package versions the last upgrade run recorded
before it installed anything.

- A finished upgrade (succeeded or aborted) is rolled back with runbooks/rollback.yaml:
  stop in reverse order, downgrade dashboard, shipper, manager and indexer, restore the
  indexer data copy and the configs, re-apply the indexer security config, start in
  start order, validate, snapshot and diff against the pre-upgrade snapshot.
- A stopped upgrade (interrupted or failed) is rolled back through its own undos, in
  reverse order, then its finally-steps.
- An interrupted rollback run is resumed.
- --cluster: the rollback of a rolling upgrade of a distributed deployment, one
  phase at a time on the hosts it names (ansible/rollback.yml drives them):
  prepare (every host: the record rolling-back, a copy kept here), indexer-down
  and indexer-up (every indexer host at once: stop, downgrade, data set aside;
  the old version started empty), restore (once, where upgrade apply --cluster
  ran: security, the snapshot, allocation, green, the record written back),
  node (each manager and dashboard host in its turn, exit 7 when it is another
  host's), finish (once: rolled-back). --dry-run without --phase prints every
  call of every phase.

Documents indexed after the data copy was taken are not in the restored indexer data.

Exit codes: 0 rolled back, 2 usage, 3 nothing to roll back (no upgrade run, or it was
already rolled back: nothing changed), 6 locked, 11 rollback failed (manual action;
'siemctl rollback' again continues), 130 interrupted.`,
		Example: `  siemctl rollback --dry-run
  siemctl rollback --yes
  siemctl rollback 20250301T100000Z-a1b2c3 --yes -o json
  siemctl rollback --cluster --dry-run
  siemctl rollback --cluster --phase node --wait 30m --yes`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: runs.CompleteRuns(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			// RUN is positional, like every upgrade verb
			if err := opts.FillRun(f, args, &opts.Run); err != nil {
				return err
			}
			if opts.Cluster {
				if opts.Run != "" {
					return cli.FlagErrorf("--cluster rolls back the run in the cluster's record: no RUN")
				}
				co.Common, co.Phase, co.DryRun = opts.Common, opts.Phase, opts.DryRun
				return roll.Rollback(cmd.Context(), co)
			}
			if opts.Phase != "" || cmd.Flags().Changed("wait") || cmd.Flags().Changed("lease") {
				return cli.FlagErrorf("--phase, --wait and --lease go with --cluster")
			}
			return cli.Run(cmd.Context(), runF, runRollback, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Cluster, "cluster", false, "roll back the rolling upgrade of a distributed deployment (with --phase; ansible/rollback.yml runs every phase)")
	cmd.Flags().StringVar(&opts.Phase, "phase", "", "the cluster rollback's phase on this host: "+strings.Join(roll.RollbackPhaseNames(), ", "))
	co.Turn.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&opts.Run, "run", "", "the upgrade run to roll back (default: the latest upgrade run)")
	_ = cmd.RegisterFlagCompletionFunc("run", runs.CompleteRuns(f))
	_ = cmd.Flags().MarkHidden("run") // the run is an argument, as with upgrade status|resume|report RUN
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print every command and API call the rollback would make; change nothing")
	cli.DurationVar(cmd.Flags(), &opts.RetryLock, "retry-lock", 0, "wait up to this long for the host lock")
	return cmd
}

// ErrNothingToRollBack means no upgrade run can be rolled back.
var ErrNothingToRollBack = errors.New("nothing to roll back")

// nothingError: no upgrade run can be rolled back, so nothing was changed.
type nothingError struct{ reason string }

func (e *nothingError) Error() string        { return ErrNothingToRollBack.Error() + ": " + e.reason }
func (e *nothingError) Is(target error) bool { return target == ErrNothingToRollBack }

// nothing is a no-go, like any refusal that changes nothing.
func nothing(reason string) error {
	return &cli.ExitError{Code: cli.ExitNoGo, Err: &nothingError{reason}}
}

// findRuns returns the run to act on: the newest rollback run if it is
// stopped, else the named or newest upgrade run.
func findRuns(stateDir, want string) (upgradeRun, pendingRollback *engine.RunInfo, err error) {
	if want != "" {
		ri, err := engine.Status(stateDir, want)
		if err != nil {
			return nil, nil, err
		}
		if ri.Runbook.Name == "rollback" {
			return nil, ri, nil
		}
		return ri, nil, nil
	}
	ids, err := engine.Runs(stateDir)
	if err != nil {
		return nil, nil, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		ri, err := engine.Status(stateDir, ids[i])
		if err != nil {
			continue
		}
		switch ri.Runbook.Name {
		case "rollback":
			if pendingRollback == nil && i == len(ids)-1 && (ri.Resumable() || ri.Status == engine.StatusRunning) {
				return nil, ri, nil
			}
		case "upgrade":
			if ri.Status == engine.StatusNoGo || ri.Status == engine.StatusDryRun {
				continue
			}
			return ri, nil, nil
		}
	}
	return nil, nil, nothing(fmt.Sprintf("no upgrade run in %s (a rollback undoes a run of `siemctl upgrade apply`; `siemctl upgrade status` lists them)", stateDir))
}

func runRollback(ctx context.Context, opts *Options) error {
	deps, err := opts.Deps(ctx)
	if err != nil {
		return err
	}
	stateDir := deps.Config.StateDir
	up, pending, err := findRuns(stateDir, opts.Run)
	if err != nil {
		return err
	}
	if pending != nil {
		return resumeRollback(ctx, opts, deps, pending)
	}
	sess, err := upgrade.Reopen(deps, up)
	if err != nil {
		return err
	}
	rd := sess.Data
	switch {
	case up.Status == engine.StatusRolledBack:
		return nothing(fmt.Sprintf("run %s was already rolled back", up.ID))
	case up.Resumable() || up.Status == engine.StatusRollbackFailed:
		// A stopped upgrade: its own undos know exactly what it changed.
		r := runs.NewRunner(opts.Common, sess, opts.RetryLock, "siemctl rollback "+up.ID, opts.DryRun)
		if !opts.DryRun {
			if err := opts.Confirm(fmt.Sprintf("Roll back the stopped run %s (%s) through its undos?", up.ID, up.Status)); err != nil {
				return err
			}
		}
		ri, err := r.Rollback(ctx, up.ID)
		if opts.DryRun {
			return err
		}
		return runs.Finish(opts.Common, stateDir, ri, rollbackErr(err))
	}
	if err := sess.RollbackOf(up); err != nil {
		return err
	}
	plan, seed := sess.Plan, sess.Seed
	r := runs.NewRunner(opts.Common, sess, opts.RetryLock, "siemctl rollback "+up.ID, opts.DryRun)
	if opts.DryRun {
		fmt.Fprintf(opts.IO.Out, "rollback of run %s (dry run): back to %s\n", up.ID, versions(rd.Previous))
		_, err := r.Run(ctx, plan, engine.RunOptions{Seed: seed, Parent: up.ID})
		return err
	}
	q := fmt.Sprintf("Roll back run %s to %s, %s?", up.ID, versions(rd.Previous), steps.RollbackBrings(rd.Backups))
	if err := opts.Confirm(q); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "rollback of run %s to %s; %d steps\n", up.ID, versions(rd.Previous), plan.Total())
	ri, err := r.Run(ctx, plan, engine.RunOptions{Seed: seed, Parent: up.ID})
	return runs.Finish(opts.Common, stateDir, ri, rollbackErr(err))
}

func resumeRollback(ctx context.Context, opts *Options, deps *steps.Deps, ri *engine.RunInfo) error {
	sess, err := upgrade.Reopen(deps, ri)
	if err != nil {
		return err
	}
	r := runs.NewRunner(opts.Common, sess, opts.RetryLock, "siemctl rollback (resume "+ri.ID+")", opts.DryRun)
	if !opts.DryRun {
		if err := opts.Confirm(fmt.Sprintf("Continue the stopped rollback run %s?", ri.ID)); err != nil {
			return err
		}
	}
	out, err := r.Resume(ctx, ri.ID)
	if opts.DryRun {
		return err
	}
	return runs.Finish(opts.Common, deps.Config.StateDir, out, rollbackErr(err))
}

// rollbackErr: a rollback that stopped on a failure needs manual action (11).
func rollbackErr(err error) error {
	var fe *engine.FailedError
	var fin *engine.FinallyError
	if errors.As(err, &fe) || errors.As(err, &fin) {
		return &cli.ExitError{Code: cli.ExitRollbackFailed, Err: err} // the rollback stopped
	}
	return err
}

func versions(m map[string]string) string {
	s := ""
	for _, c := range steps.Components {
		if v := m[c]; v != "" {
			if s != "" {
				s += ", "
			}
			s += c + " " + v
		}
	}
	if s == "" {
		return "the recorded versions"
	}
	return s
}
