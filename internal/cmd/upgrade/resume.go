package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// ResumeOptions are the inputs of `upgrade resume` and `upgrade abort`.
type ResumeOptions struct {
	runs.Common
	Run       string
	DryRun    bool
	RetryLock time.Duration
}

func newRunCmd(f *cli.Factory, use, short, long, example string, runF, run func(context.Context, *ResumeOptions) error) *cobra.Command {
	opts := &ResumeOptions{Common: common(f)}
	cmd := &cobra.Command{
		ValidArgsFunction: runs.CompleteRuns(f),
		Use:               use, Short: short, Long: long, Example: example,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.FillRun(f, args, &opts.Run); err != nil {
				return err
			}
			return cli.Run(cmd.Context(), runF, run, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would run; change nothing")
	cli.DurationVar(cmd.Flags(), &opts.RetryLock, "retry-lock", 0, "wait up to this long for the host lock")
	return cmd
}

// NewCmdResume builds `upgrade resume [RUN]`.
func NewCmdResume(f *cli.Factory, runF func(context.Context, *ResumeOptions) error) *cobra.Command {
	return newRunCmd(f, "resume [RUN]", "Continue an interrupted or failed upgrade run",
		`Continue the latest (or the named) run where it stopped: the interrupted step is
verified first (an install that completed is not repeated), completed steps are not run
again, then the finally-steps restore "no trace left".

Exit codes as for apply.`,
		"  siemctl upgrade resume --yes\n  siemctl upgrade resume 20250301T100000Z-a1b2c3 --yes", runF, runResume)
}

// NewCmdAbort builds `upgrade abort [RUN]`.
func NewCmdAbort(f *cli.Factory, runF func(context.Context, *ResumeOptions) error) *cobra.Command {
	return newRunCmd(f, "abort [RUN]", "End a stopped upgrade run without undoing it",
		`Mark an interrupted or failed run aborted and run its finally-steps (allocation back to
all, every unit started, no temporary settings left). Installed packages stay as they
are: use 'siemctl rollback' to go back to the recorded versions.`,
		"  siemctl upgrade abort --yes", runF, runAbort)
}

func reopen(ctx context.Context, opts *ResumeOptions, verb string) (*engine.Runner[*steps.Deps], *engine.RunInfo, error) {
	deps, err := opts.Deps(ctx)
	if err != nil {
		return nil, nil, err
	}
	ri, err := engine.Status(deps.Config.StateDir, opts.Run)
	if err != nil {
		return nil, nil, err
	}
	sess, err := upgrade.Reopen(deps, ri)
	if err != nil {
		return nil, nil, err
	}
	return runs.NewRunner(opts.Common, sess, opts.RetryLock, runs.CommandLine("upgrade", verb, ri.ID), opts.DryRun), ri, nil
}

func runResume(ctx context.Context, opts *ResumeOptions) error {
	r, ri, err := reopen(ctx, opts, "resume")
	if err != nil {
		return err
	}
	if !ri.Resumable() {
		return fmt.Errorf("run %s is %s: %w", ri.ID, ri.Status, engine.ErrNotResumable)
	}
	if !opts.DryRun {
		deps, err := opts.Deps(ctx)
		if err != nil {
			return err
		}
		ck, err := resumeCockpit(opts.Common, deps, r, ri)
		if err != nil {
			return err
		}
		if ck != nil {
			ck.apply(r)
		}
	}
	if !opts.DryRun {
		if err := opts.Common.Confirm(fmt.Sprintf("Resume run %s (%s, stopped: %s)?", ri.ID, ri.Runbook.Name, output.Dash(ri.Error))); err != nil {
			return err
		}
	}
	out, err := r.Resume(ctx, ri.ID)
	if opts.DryRun {
		return err
	}
	return runs.Finish(opts.Common, r.StateDir, out, err)
}

func runAbort(ctx context.Context, opts *ResumeOptions) error {
	r, ri, err := reopen(ctx, opts, "abort")
	if err != nil {
		return err
	}
	if !opts.DryRun {
		if err := opts.Common.Confirm(fmt.Sprintf("Abort run %s (%s)? Installed packages stay as they are.", ri.ID, ri.Status)); err != nil {
			return err
		}
	}
	out, err := r.Abort(ctx, ri.ID)
	if opts.DryRun {
		return err
	}
	return runs.Finish(opts.Common, r.StateDir, out, err)
}

// StatusOptions are the inputs of `upgrade status`.
type StatusOptions struct {
	runs.Common
	Run string
	// ClusterMode: --cluster, the rolling upgrade's record (roll.ReadStatus).
	ClusterMode bool
	Cluster     roll.Deps
}

// NewCmdStatus builds `upgrade status [RUN]`.
func NewCmdStatus(f *cli.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{Common: common(f), Cluster: roll.NewDeps(f.Config, f.Indexer, f.Manager, f.Now, f.HostLock)}
	cmd := &cobra.Command{
		ValidArgsFunction: runs.CompleteRuns(f),
		Use:               "status [RUN]",
		Short:             "Show a run's state from its journal (latest by default)",
		Long: `Show the latest (or the named) run: status, versions, backups, snapshot diff, every
step with its duration, and how the time split between waiting on the components and
siemctl's own work. A run whose process died is reported interrupted.

With --cluster, from any host of a distributed deployment: the rolling upgrade's
coordination record in the indexer: its phase, every entry of the order with its state,
attempts, host, times and last error, and the holder of the current turn with its lease.`,
		Example: "  siemctl upgrade status\n  siemctl upgrade status 20250301T100000Z-a1b2c3 -o json\n  siemctl upgrade status --cluster -o json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.FillRun(f, args, &opts.Run); err != nil {
				return err
			}
			if opts.ClusterMode {
				if opts.Run != "" {
					return cli.FlagErrorf("--cluster shows the cluster's one run; RUN names a run of this host")
				}
				return cli.Run(cmd.Context(), runF, runStatusCluster, opts)
			}
			return cli.Run(cmd.Context(), runF, runStatus, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.ClusterMode, "cluster", false, "the rolling upgrade of the distributed deployment: every node's state, the holder and its lease")
	return cmd
}

func runStatus(ctx context.Context, opts *StatusOptions) error {
	deps, err := opts.Deps(ctx)
	if err != nil {
		return err
	}
	ri, err := engine.Status(deps.Config.StateDir, opts.Run)
	if err != nil {
		return err
	}
	return runs.Finish(opts.Common, deps.Config.StateDir, ri, nil)
}
