package upgrade

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// TurnCmdOptions are the inputs of `upgrade turn`.
type TurnCmdOptions struct {
	runs.Common
	Turn roll.TurnOptions
}

// NewCmdTurn builds `upgrade turn`: whether it is this host's turn in the rolling upgrade, read
// only (what `upgrade node` would take).
func NewCmdTurn(f *cli.Factory, runF func(context.Context, *TurnCmdOptions) error) *cobra.Command {
	opts := &TurnCmdOptions{Common: common(f), Turn: roll.TurnOptions{Roll: roll.NewDeps(f.Config, f.Indexer, f.Manager, f.Now, f.HostLock)}}
	cmd := &cobra.Command{
		Use:   "turn",
		Short: "Say whether it is this host's turn in the rolling upgrade (read only)",
		Long: `Read the rolling upgrade's coordination record in the indexer (siemctl-rollout) and say
whether it is this host's turn now: the first entry of the order not done is one of this
host's own (its indexer node: node.name of its opensearch.yml; its manager node: <node_name>
of its ossec.conf's <cluster>; its dashboard: the host of dashboard.url; per the components
key) and nobody else holds it with a live lease. Nothing is written: 'siemctl upgrade node'
takes the turn. With --wait it asks again until the turn comes.

Exit codes: 0 this host's turn (its entry is printed), 7 another host's turn (whose, its
state and its holder are named), 1 no run in the cluster.`,
		Example: "  siemctl upgrade turn\n  siemctl upgrade turn --wait 30m -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Fill(f)
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			if err := opts.Turn.Check(); err != nil {
				return cli.FlagErrorf("%v", err)
			}
			return cli.Run(cmd.Context(), runF, runTurn, opts)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&opts.Turn.Wait, "wait", 0, "ask again until this host's turn comes, up to this long (0: answer now)")
	fl.DurationVar(&opts.Turn.Poll, "turn-poll", roll.DefaultTurnPoll, "how often a waiting host asks")
	_ = fl.MarkHidden("turn-poll")
	opts.Turn.Lease = roll.DefaultLease // not used: nothing is taken
	return cmd
}

// TurnAnswer is `upgrade turn`'s output.
type TurnAnswer struct {
	RunID  string        `json:"run_id"`
	Target string        `json:"target"`
	Host   string        `json:"host"`
	Mine   []string      `json:"mine"`
	Entry  rollout.Entry `json:"entry"`
}

func runTurn(ctx context.Context, opts *TurnCmdOptions) error {
	who, e, rec, err := roll.CheckTurn(ctx, opts.Turn)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, TurnAnswer{RunID: rec.RunID, Target: rec.Target, Host: who.Host, Mine: who.Names, Entry: e})
	}
	_, err = fmt.Fprintf(opts.IO.Out, "this host's turn: %s (%s: %s, %s) in run %s to %s\n", e.Name, e.Role, strings.Join(e.Components, ", "), e.State, rec.RunID, rec.Target)
	return err
}
