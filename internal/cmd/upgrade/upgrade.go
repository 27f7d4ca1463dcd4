// Package upgrade is `siemctl upgrade`: plan, apply, resume, status,
// abort, report and prune, thin doors onto internal/upgrade (the session that
// prepares each run, the budget, the evidence) and the engine; what it
// shares with rollback (options, runner, progress, the final report) is in
// internal/runs.
package upgrade

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/runs"
)

func common(f *cli.Factory) runs.Common {
	return runs.Common{IO: f.IO, Deps: runs.FactoryDeps(f), Logger: f.Logger, Now: f.Now, Health: FactoryHealth(f)}
}

// FactoryHealth runs the default health checks (those `siemctl health`
// runs) against the Factory's stack, under its own 10 s deadline.
func FactoryHealth(f *cli.Factory) func(ctx context.Context) (health.Report, error) {
	return func(ctx context.Context) (health.Report, error) {
		hs, err := cli.FromClients(f, health.Source.Health)(ctx)
		if err != nil {
			return health.Report{}, err
		}
		checks, err := health.Select(health.Catalogue(), health.Selection{})
		if err != nil {
			return health.Report{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return health.Run(ctx, &health.Env{Now: f.Now, Stack: hs}, checks), nil
	}
}

// NewCmdUpgrade wires the upgrade verbs.
func NewCmdUpgrade(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:   "upgrade",
		Short: "Plan, apply, resume and inspect an upgrade of the stack",
		Long: `Upgrade the stack to one exact version with the ordered runbook: preflight gates,
backups (configs, indexer security, a cold copy of the indexer data), a stop in reverse
order, the indexer first, then manager, shipper and dashboard, validation, and a
pre/post snapshot diff. Every transition is journaled under state_dir/runs/<run-id>/;
a crashed or interrupted run is resumed where it stopped; a gate marked on_fail:
rollback that says no-go rolls the stack back automatically.

Exit codes: 0 ok, 2 usage, 3 no-go (nothing changed), 6 locked, 10 failed and rolled
back, 11 rollback failed (manual action), 130 interrupted (resumable).`,
		Example: `  siemctl upgrade plan --to 4.10.0
  siemctl upgrade apply --to 4.10.0 --yes
  siemctl upgrade status -o json
  siemctl upgrade resume --yes`,
	}, NewCmdPlan(f, nil), NewCmdApply(f, nil), NewCmdResume(f, nil), NewCmdStatus(f, nil), NewCmdTurn(f, nil), NewCmdAbort(f, nil), NewCmdReport(f, nil), NewCmdPrune(f, nil), NewCmdNode(f, nil), NewCmdFinish(f, nil))
}
