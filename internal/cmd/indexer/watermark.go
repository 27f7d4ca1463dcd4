package indexer

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/output"
)

// WatermarkOptions are the inputs of `indexer watermark`.
type WatermarkOptions struct {
	IO      *output.IOStreams
	API     func(ctx context.Context) (cluster.API, error)
	Output  string
	Timeout time.Duration
	Recover bool
	Clear   bool
	Change  cli.Change
}

// NewCmdWatermark builds `indexer watermark [--recover|--clear]`.
func NewCmdWatermark(f *cli.Factory, runF func(context.Context, *WatermarkOptions) error) *cobra.Command {
	opts := &WatermarkOptions{IO: f.IO, API: apiFrom(f)}
	cmd := f.ChangeCommand(&cobra.Command{
		Use:   "watermark [--recover|--clear]",
		Short: "Show the disk watermarks; set or remove the temporary recovery override",
		Long: `Without flags: the disk watermarks in force (low, high, flood stage) and where each comes from.

--recover sets the usual temporary override as transient settings: low and high 95%, flood
stage 98%, so a nearly full node can allocate and accept writes while you free space.
--clear removes every transient watermark override (persistent ones stay). Both print the
values before and after, and verify the change is in force. Never leave the override on.
Both ask for confirmation on a terminal (--yes off one) and take the host lock (exit 6 while
an upgrade runs); --dry-run prints the request instead.`,
		Example: `  siemctl indexer watermark
  siemctl indexer watermark --recover --yes
  siemctl indexer watermark --clear --dry-run
  siemctl indexer watermark --clear -o json --yes`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		if opts.Recover && opts.Clear {
			return cli.FlagErrorf("--recover and --clear are mutually exclusive")
		}
		opts.Output, opts.Timeout, opts.Change = f.Global.Output, f.Global.Timeout, change
		return cli.Run(cmd.Context(), runF, runWatermark, opts)
	})
	cmd.Flags().BoolVar(&opts.Recover, "recover", false, "set the transient recovery override: low/high 95%, flood stage 98%")
	cmd.Flags().BoolVar(&opts.Clear, "clear", false, "remove the transient watermark overrides")
	return cmd
}

func runWatermark(ctx context.Context, opts *WatermarkOptions) error {
	ctx, api, cancel, err := cli.Connect(ctx, opts.Timeout, opts.API)
	if err != nil {
		return err
	}
	defer cancel()
	if !opts.Recover && !opts.Clear {
		st, err := cluster.Watermarks(ctx, api)
		if err != nil {
			return err
		}
		if opts.Output == "json" {
			return output.JSON(opts.IO.Out, st)
		}
		t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "watermark", "value", "source")
		t.Row("low", st.Watermarks.Low.Value, string(st.Watermarks.Low.Source))
		t.Row("high", st.Watermarks.High.Value, string(st.Watermarks.High.Source))
		t.Row("flood_stage", st.Watermarks.FloodStage.Value, string(st.Watermarks.FloodStage.Source))
		if err := t.Render(); err != nil {
			return err
		}
		if n := len(st.TransientOverrides()); n > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "%d transient watermark override(s) set; remove them after recovery: siemctl indexer watermark --clear\n", n)
		}
		return nil
	}
	q, calls := "Set the temporary disk watermark override (low/high 95%, flood stage 98%)?", cli.Calls(cluster.PlanRecoverWatermarks()...)
	if opts.Clear {
		q, calls = "Remove the transient disk watermark overrides?", func() ([]string, error) { return cluster.PlanClearWatermarks(ctx, api) }
	}
	release, proceed, err := opts.Change.Begin(ctx, q, calls)
	if !proceed {
		return err
	}
	defer release()
	var ch cluster.Change[cluster.WatermarkState]
	if opts.Recover {
		ch, err = cluster.RecoverWatermarks(ctx, api)
	} else {
		ch, err = cluster.ClearWatermarks(ctx, api)
	}
	if opts.Output == "json" {
		if jerr := output.JSON(opts.IO.Out, ch); jerr != nil {
			return jerr
		}
	} else if ch.After.Watermarks.Low.Key != "" {
		t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "watermark", "before", "after")
		b, a := ch.Before.Watermarks, ch.After.Watermarks
		t.Row("low", b.Low.Value+" ("+string(b.Low.Source)+")", a.Low.Value+" ("+string(a.Low.Source)+")")
		t.Row("high", b.High.Value+" ("+string(b.High.Source)+")", a.High.Value+" ("+string(a.High.Source)+")")
		t.Row("flood_stage", b.FloodStage.Value+" ("+string(b.FloodStage.Source)+")", a.FloodStage.Value+" ("+string(a.FloodStage.Source)+")")
		if rerr := t.Render(); rerr != nil {
			return rerr
		}
	}
	if err == nil && opts.Recover {
		fmt.Fprintln(opts.IO.ErrOut, "temporary override set: free disk space, then remove it with `siemctl indexer watermark --clear`")
	}
	if err == nil && opts.Clear && !ch.Changed {
		fmt.Fprintln(opts.IO.ErrOut, "no transient watermark override was set")
	}
	return err
}
