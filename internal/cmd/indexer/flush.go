package indexer

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/output"
)

// FlushOptions are the inputs of `indexer flush`.
type FlushOptions struct {
	IO      *output.IOStreams
	API     func(ctx context.Context) (cluster.API, error)
	Output  string
	Timeout time.Duration
	Change  cli.Change
}

// NewCmdFlush builds `indexer flush`.
func NewCmdFlush(f *cli.Factory, runF func(context.Context, *FlushOptions) error) *cobra.Command {
	opts := &FlushOptions{IO: f.IO, API: apiFrom(f)}
	return f.ChangeCommand(&cobra.Command{
		Use:   "flush",
		Short: "Flush, then synced flush (partial failure tolerated and reported)",
		Long: `POST _flush, then POST _flush/synced, as the upgrade does before stopping the indexer.
A synced flush that fails on some shards (409) is acceptable and reported; on OpenSearch 2.x it
is a deprecated alias of a normal flush. Exit 1 only when the flush itself fails.
Asks for confirmation on a terminal (--yes off one), takes the host lock (exit 6 while an
upgrade runs); --dry-run prints the requests instead.`,
		Example: `  siemctl indexer flush
  siemctl indexer flush -o json --timeout 2m --yes
  siemctl indexer flush --dry-run`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Timeout, opts.Change = f.Global.Output, f.Global.Timeout, change
		return cli.Run(cmd.Context(), runF, runFlush, opts)
	})
}

func runFlush(ctx context.Context, opts *FlushOptions) error {
	ctx, api, cancel, err := cli.Connect(ctx, opts.Timeout, opts.API)
	if err != nil {
		return err
	}
	defer cancel()
	release, proceed, err := opts.Change.Begin(ctx, "Flush every index (POST _flush, then _flush/synced)?", cli.Calls(indexer.FlushCalls()...))
	if !proceed {
		return err
	}
	defer release()
	rep, err := cluster.Flush(ctx, api, cluster.FlushOptions{Plain: true, Synced: true})
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, rep)
	}
	p := opts.IO.Colors()
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "operation", "result", "shards", "successful", "failed")
	row := func(op string, s indexer.ShardsSummary, partial bool) {
		res := p.Green("OK")
		if partial || s.Failed > 0 {
			res = p.Yellow("PARTIAL")
		}
		t.Row(op, res, fmt.Sprint(s.Total), fmt.Sprint(s.Successful), fmt.Sprint(s.Failed))
	}
	row("flush", rep.Flush, false)
	switch {
	case rep.SyncedUnsupported:
		t.Row("synced flush", p.Gray("UNSUPPORTED"), "-", "-", "-")
	case rep.Synced != nil:
		row("synced flush", *rep.Synced, rep.SyncedPartial)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, f := range rep.Flush.Failures {
		fmt.Fprintf(opts.IO.ErrOut, "flush failed on %s\n", f)
	}
	if rep.Synced != nil {
		for _, f := range rep.Synced.Failures {
			fmt.Fprintf(opts.IO.ErrOut, "synced flush failed on %s\n", f)
		}
		if rep.SyncedPartial {
			fmt.Fprintln(opts.IO.ErrOut, "synced flush partially failed: acceptable (shards with ongoing indexing are not sync-flushed; the normal flush covered them)")
		}
	}
	if rep.SyncedUnsupported {
		fmt.Fprintln(opts.IO.ErrOut, "this node has no synced flush; the normal flush did the work")
	}
	return nil
}
