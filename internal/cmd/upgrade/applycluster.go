package upgrade

import (
	"context"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
	"github.com/siemctl/siemctl/runbooks"
)

// runApplyCluster is `upgrade apply --cluster`: the first host's phase. It runs on an indexer host
// (the security backup and the snapshot are taken there).
func runApplyCluster(ctx context.Context, opts *ApplyOptions) error {
	_, here, err := roll.HostSkips(ctx, opts.Common)
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
		// a second apply --cluster while the cluster's record holds a run that has not ended: exit 3,
		// nothing run, no run journaled on this host
		if err := roll.RunInProgress(ctx, opts.Roll); err != nil {
			return &cli.ExitError{Code: cli.ExitNoGo, Reason: "no-go: " + err.Error()}
		}
	}
	return roll.RunPhase(ctx, opts.Common, roll.Phase{Name: "apply --cluster", Runbook: runbooks.ClusterApply, To: opts.To, Only: opts.Only, Skip: opts.SkipSteps,
		DryRun: opts.DryRun, Cmdline: runs.CommandLine("upgrade", "apply", "--cluster", "--to", opts.To),
		Question: "Prepare the rolling upgrade to " + opts.To + ": cluster-wide preflight, backups, snapshot, allocation primaries, flush"}, nil)
}
