package indexer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/output"
)

// ShardsOptions are the inputs of `indexer shards`.
type ShardsOptions struct {
	IO           *output.IOStreams
	API          func(ctx context.Context) (cluster.API, error)
	Output       string
	Timeout      time.Duration
	Unassigned   bool
	ExplainLimit int
}

// NewCmdShards builds `indexer shards [--unassigned]`.
func NewCmdShards(f *cli.Factory, runF func(context.Context, *ShardsOptions) error) *cobra.Command {
	opts := &ShardsOptions{IO: f.IO, API: apiFrom(f)}
	cmd := &cobra.Command{
		Use:   "shards [--unassigned]",
		Short: "List shards; explain why unassigned ones are",
		Long: `List the shards (index, shard, primary/replica, state, node, unassigned reason). Each
unassigned shard is explained with the allocation explain API: what the node decided and
which decider said no (up to --explain-limit shards), followed by the fix.`,
		Example: `  siemctl indexer shards
  siemctl indexer shards --unassigned
  siemctl indexer shards --unassigned -o json | jq '.shards[].explanation.deciders'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			if opts.ExplainLimit < 1 {
				return cli.FlagErrorf("--explain-limit must be at least 1")
			}
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			return cli.Run(cmd.Context(), runF, runShards, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Unassigned, "unassigned", false, "only unassigned shards, each with its allocation explanation")
	cmd.Flags().IntVar(&opts.ExplainLimit, "explain-limit", cluster.DefaultExplainLimit, "explain at most this many unassigned shards")
	return cmd
}

func runShards(ctx context.Context, opts *ShardsOptions) error {
	ctx, api, cancel, err := cli.Connect(ctx, opts.Timeout, opts.API)
	if err != nil {
		return err
	}
	defer cancel()
	rep, err := cluster.Shards(ctx, api, opts.Unassigned, opts.ExplainLimit)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, rep)
	}
	p := opts.IO.Colors()
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "index", "shard", "prirep", "state", "node", "reason")
	for _, s := range rep.Shards {
		state := s.State
		switch state {
		case "STARTED":
			state = p.Green(state)
		case "UNASSIGNED":
			state = p.Red(state)
		default:
			state = p.Yellow(state)
		}
		t.Row(s.Index, fmt.Sprint(s.Shard.Shard), s.PriRep, state, output.Dash(s.Node), output.Dash(s.UnassignedReason))
	}
	if err := t.Render(); err != nil {
		return err
	}
	w := opts.IO.Out
	for _, s := range rep.Shards {
		if s.Explanation == nil && s.ExplainErr == "" {
			continue
		}
		kind := "replica"
		if s.PriRep == "p" {
			kind = "primary"
		}
		fmt.Fprintf(w, "\n%s[%d] %s: ", s.Index, s.Shard.Shard, kind)
		if s.ExplainErr != "" {
			fmt.Fprintf(w, "no explanation: %s\n", s.ExplainErr)
			continue
		}
		e := s.Explanation
		fmt.Fprintf(w, "%s (can_allocate: %s)\n", output.Dash(e.AllocateExplanation), output.Dash(e.CanAllocate))
		if e.UnassignedDetails != "" {
			fmt.Fprintf(w, "  details: %s\n", e.UnassignedDetails)
		}
		for _, d := range e.Blocking() {
			fmt.Fprintf(w, "  %s on %s: %s\n", d.Decider, d.Node, d.Explanation)
		}
	}
	if rep.Unexplained > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "%d more unassigned shards not explained (--explain-limit %d)\n", rep.Unexplained, opts.ExplainLimit)
	}
	summary := []string{}
	for _, st := range []string{"STARTED", "INITIALIZING", "RELOCATING", "UNASSIGNED"} {
		if n := rep.States[st]; n > 0 {
			summary = append(summary, fmt.Sprintf("%d %s", n, strings.ToLower(st)))
		}
	}
	fmt.Fprintf(opts.IO.ErrOut, "shards: %s\n", strings.Join(summary, ", "))
	for _, h := range rep.Hints {
		fmt.Fprintf(opts.IO.ErrOut, "fix: %s\n", h)
	}
	return nil
}
