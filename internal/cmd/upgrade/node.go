package upgrade

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/runbooks"
)

// NodeOptions are the inputs of `upgrade node`.
type NodeOptions struct {
	runs.Common
	To     string
	DryRun bool
	Only   []string
	Skip   []string
}

// TurnHook waits for or refuses this host's turn in the roll before its node.yaml runs (nil: no
// coordination, the operator or the fleet driver keeps the order). The rollout package's turn
// taking (coordination record in the indexer, lease, order) plugs in here.
var TurnHook func(ctx context.Context, opts *NodeOptions) error

// NewCmdNode builds `upgrade node`.
func NewCmdNode(f *cli.Factory, runF func(context.Context, *NodeOptions) error) *cobra.Command {
	opts := &NodeOptions{Common: common(f)}
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
manager master, each worker right after it, then the dashboards. Afterwards, once:
'siemctl upgrade finish --cluster'.

Exit codes: 0 ok, 2 usage, 3 no-go (nothing changed), 4 a gate failed (the run stops naming it;
'siemctl upgrade resume' continues), 6 locked, 10 failed and rolled back, 130 interrupted.`,
		Example: `  siemctl upgrade node --to 4.10.0 --dry-run
  siemctl upgrade node --to 4.10.0 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fillTarget(f, &opts.Common, opts.To); err != nil {
				return err
			}
			return cli.Run(cmd.Context(), runF, runNode, opts)
		},
	}
	fl := cmd.Flags()
	targetFlag(fl, &opts.To)
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print every command and API call this host's turn would make; change nothing")
	fl.StringSliceVar(&opts.Only, "only", nil, "run only these step ids")
	fl.StringSliceVar(&opts.Skip, "skip-steps", nil, "skip these step ids")
	return cmd
}

func runNode(ctx context.Context, opts *NodeOptions) error {
	notHere, _, err := hostSkips(opts.Common, ctx)
	if err != nil {
		return err
	}
	if TurnHook != nil && !opts.DryRun {
		if err := TurnHook(ctx, opts); err != nil {
			return err
		}
	}
	return runPhase(ctx, opts.Common, phase{name: "node", runbook: runbooks.Node, to: opts.To, only: opts.Only, skip: opts.Skip,
		dryRun: opts.DryRun, cmdline: commandLine("upgrade", "node", "--to", opts.To),
		question: "Upgrade this host's components to " + opts.To + " (its turn of the rolling upgrade)"}, notHere)
}
