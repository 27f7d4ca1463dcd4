package upgrade

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
	"github.com/siemctl/siemctl/runbooks"
)

// FinishOptions are the inputs of `upgrade finish --cluster`.
type FinishOptions struct {
	runs.Common
	To      string
	Cluster bool
	DryRun  bool
	Only    []string
	Skip    []string
	Watch   time.Duration
}

// NewCmdFinish builds `upgrade finish --cluster`.
func NewCmdFinish(f *cli.Factory, runF func(context.Context, *FinishOptions) error) *cobra.Command {
	opts := &FinishOptions{Common: common(f)}
	cmd := &cobra.Command{
		Use:   "finish --cluster --to VERSION",
		Short: "End a rolling upgrade once every host ran its turn",
		Long: `End a rolling upgrade of a distributed deployment (runbook cluster-finish.yaml), once, after
every host's 'siemctl upgrade node': the security init tool once for the cluster (run it on an
indexer host), the shipper's pipelines and index management (when this host runs the shipper),
allocation back to all, the cluster green, every node of both clusters on one version, the watch
window (--watch), and no trace left.

Exit codes: 0 ok, 1 a step or gate failed ('siemctl upgrade resume' continues), 2 usage, 3 no-go,
6 locked, 130 interrupted.`,
		Example: `  siemctl upgrade finish --cluster --to 4.10.0 --yes
  siemctl upgrade finish --cluster --to 4.10.0 --yes --watch 20m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fillTarget(f, &opts.Common, opts.To); err != nil {
				return err
			}
			if !opts.Cluster {
				return cli.FlagErrorf("upgrade finish ends a rolling upgrade of a distributed deployment: give --cluster (a single host's upgrade ends with its own apply)")
			}
			if opts.Watch < 0 || opts.Watch > watch.MaxWindow {
				return cli.FlagErrorf("--watch %s: want a window up to %s, e.g. --watch 20m", opts.Watch, watch.MaxWindow)
			}
			return cli.Run(cmd.Context(), runF, runFinish, opts)
		},
	}
	fl := cmd.Flags()
	targetFlag(fl, &opts.To)
	fl.BoolVar(&opts.Cluster, "cluster", false, "end the rolling upgrade of the distributed deployment (required)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print every command and API call; change nothing")
	stepFlags(fl, &opts.Only, &opts.Skip)
	cli.DurationVar(fl, &opts.Watch, "watch", 0, "after validation, watch the deployment this long (e.g. 20m)")
	return cmd
}

func runFinish(ctx context.Context, opts *FinishOptions) error {
	notHere, _, err := roll.HostSkips(ctx, opts.Common)
	if err != nil {
		return err
	}
	return roll.RunPhase(ctx, opts.Common, roll.Phase{Name: "finish --cluster", Runbook: runbooks.ClusterFinish, To: opts.To, Only: opts.Only, Skip: opts.Skip,
		DryRun: opts.DryRun, Watch: opts.Watch, Cmdline: runs.CommandLine("upgrade", "finish", "--cluster", "--to", opts.To),
		Question: "End the rolling upgrade to " + opts.To + ": security once, allocation all, validation on every node"}, notHere)
}
