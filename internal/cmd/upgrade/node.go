package upgrade

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// NodeOptions are the inputs of `upgrade node`.
type NodeOptions struct {
	runs.Common
	To     string
	DryRun bool
	Only   []string
	Skip   []string
	// Turn is this host's turn in the roll's coordination record (internal/upgrade/roll); NoTurn
	// leaves the order to the operator or the fleet driver.
	Turn   roll.TurnOptions
	NoTurn bool
}

// NewCmdNode builds `upgrade node`.
func NewCmdNode(f *cli.Factory, runF func(context.Context, *NodeOptions) error) *cobra.Command {
	opts := &NodeOptions{Common: common(f), Turn: roll.TurnOptions{Roll: roll.NewDeps(f.Config, f.Indexer, f.Manager, f.Now, f.HostLock)}}
	cmd := &cobra.Command{
		Use:   "node --to VERSION",
		Short: "Upgrade this host's components in its turn of a rolling upgrade",
		Long: `Run this host's turn of a rolling upgrade of a distributed deployment (runbook node.yaml),
after 'siemctl upgrade apply --cluster' on the first host: only the components this host runs (the
components config key; the steps of the others are left out of the plan), with the journal,
resume, dry run and lock of a single-host upgrade.

Indexer node: allocation primaries, flush, stop, install, start; then the node back in _nodes at a
newer version, allocation back to all, and the cluster green or yellow only because replicas
cannot go to older nodes (node_version) while older nodes remain. Manager node: stop, cold copy of
its databases, install, start, the API at the target version, this node listed by the master at
the target version with a fresh keepalive. Shipper: install, module and template for the exact
version, start, test output. Dashboard: install, start, answers.

Order of the hosts: the indexer nodes one at a time with the elected cluster manager last, the
manager master, each worker right after it, then the dashboards. The order and the turns live in
the roll's coordination record in the indexer (created by 'upgrade apply --cluster'): this host
takes its turn (--wait: waits for it; exit 7 names whose turn it is otherwise), keeps it with a
lease while it works, and marks it done or failed. Run again after a failure or a crash, the same
command takes the turn back and resumes this host's journal. --no-turn leaves the order to the
operator. Afterwards, once: 'siemctl upgrade finish --cluster'.

Exit codes: 0 ok, 1 a step or gate failed (the run stops naming it; the same command resumes
it), 2 usage, 3 no-go (nothing changed), 6 locked, 7 not this host's turn, 10 failed and rolled
back, 130 interrupted.`,
		Example: `  siemctl upgrade node --to 4.10.0 --dry-run
  siemctl upgrade node --to 4.10.0 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fillTarget(f, &opts.Common, opts.To); err != nil {
				return err
			}
			if err := opts.Turn.Check(); err != nil {
				return cli.FlagErrorf("%v", err)
			}
			return cli.Run(cmd.Context(), runF, runNode, opts)
		},
	}
	fl := cmd.Flags()
	targetFlag(fl, &opts.To)
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print every command and API call this host's turn would make; change nothing")
	stepFlags(fl, &opts.Only, &opts.Skip)
	fl.BoolVar(&opts.NoTurn, "no-turn", false, "do not take a turn in the coordination record (the operator keeps the order)")
	opts.Turn.AddFlags(fl)
	return cmd
}

func runNode(ctx context.Context, opts *NodeOptions) error {
	return roll.Node(ctx, opts.Common, roll.NodeRequest{To: opts.To, DryRun: opts.DryRun, Only: opts.Only, Skip: opts.Skip, Turn: opts.Turn, NoTurn: opts.NoTurn})
}
