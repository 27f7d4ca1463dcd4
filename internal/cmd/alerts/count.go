package alerts

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/output"
)

// CountOptions are the inputs of `alerts count`.
type CountOptions struct {
	Common

	Query     string
	Since     time.Duration
	SinceText string
	By        time.Duration // >0: one count per interval (a bar chart on a terminal)
	ByText    string
}

// NewCmdCount builds `alerts count`.
func NewCmdCount(f *cli.Factory, runF func(context.Context, *CountOptions) error) *cobra.Command {
	opts := &CountOptions{Common: common(f)}
	cmd := &cobra.Command{
		Use:   "count",
		Short: "Count the alerts indexed recently",
		Example: `  siemctl alerts count                 # last 5 minutes
  siemctl alerts count --since 1d -q 'rule.level:>=10'
  siemctl alerts count -o json
  siemctl alerts count --since 24h --by 1h   # a bar per hour on a terminal, rows off one`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			d, err := cli.ParseDuration(opts.SinceText)
			if err != nil {
				return &cli.FlagError{Err: err}
			}
			opts.Since = d
			if opts.ByText != "" {
				if opts.By, err = cli.ParseDuration(opts.ByText); err != nil {
					return &cli.FlagError{Err: fmt.Errorf("--by: %w", err)}
				}
				if n := opts.Since / opts.By; n > indexer.MaxBuckets || opts.By > opts.Since {
					return &cli.FlagError{Err: fmt.Errorf("--since %s --by %s gives %d intervals: want 1 to %d (a longer --by)", opts.SinceText, opts.ByText, n, indexer.MaxBuckets)}
				}
			}
			return cli.Run(cmd.Context(), runF, runCount, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Query, "query", "q", "", "query_string query; empty: every alert")
	cmd.Flags().StringVar(&opts.SinceText, "since", "5m", "how far back: a whole number and s, m, h, d or w")
	cmd.Flags().StringVar(&opts.ByText, "by", "", "count per interval (e.g. 1h): a bar chart on a terminal, one row per interval off one")
	return cmd
}

func runCount(ctx context.Context, opts *CountOptions) error {
	ctx, cancel, cfg, ix, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	now := opts.Now()
	since := now.Add(-opts.Since)
	if opts.By > 0 {
		buckets, err := ix.Histogram(ctx, cfg.Indexer.AlertsIndexPrefix+"*", opts.Query, since, now, opts.By)
		if err != nil {
			return queryError(opts.Query, err)
		}
		return renderHistogram(opts, since, buckets)
	}
	n, err := ix.Count(ctx, cfg.Indexer.AlertsIndexPrefix+"*", opts.Query, since)
	if err != nil {
		return queryError(opts.Query, err)
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, struct {
			Count int64     `json:"count"`
			Since time.Time `json:"since"`
			Query string    `json:"query"`
		}{n, since.UTC(), opts.Query})
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "count", "since", "query")
	t.Row(strconv.FormatInt(n, 10), timeCell(since), output.Dash(opts.Query))
	return t.Render()
}

// renderHistogram prints the per-interval counts: JSON with every bucket, a bar chart on a terminal,
// tab-separated rows off one.
func renderHistogram(opts *CountOptions, since time.Time, buckets []indexer.Bucket) error {
	var total int64
	for _, b := range buckets {
		total += b.Count
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, struct {
			Count    int64            `json:"count"`
			Since    time.Time        `json:"since"`
			Query    string           `json:"query"`
			Interval string           `json:"interval"`
			Buckets  []indexer.Bucket `json:"buckets"`
		}{total, since.UTC(), opts.Query, opts.ByText, buckets})
	}
	if !opts.IO.IsStdoutTTY() {
		t := output.NewTable(opts.IO.Out, false, "start", "count")
		for _, b := range buckets {
			t.Row(timeCell(b.Start), strconv.FormatInt(b.Count, 10))
		}
		return t.Render()
	}
	layout := "Jan 02 15:04"
	if opts.By >= 24*time.Hour {
		layout = "Mon Jan 02"
	} else if opts.By < time.Minute {
		layout = "15:04:05"
	}
	bars := make([]output.Bar, len(buckets))
	for i, b := range buckets {
		bars[i] = output.Bar{Label: b.Start.UTC().Format(layout), Value: b.Count}
	}
	if err := output.BarChart(opts.IO.Out, bars, opts.IO.TerminalWidth(), opts.IO.Colors()); err != nil {
		return err
	}
	q := ""
	if opts.Query != "" {
		q = " matching " + opts.Query
	}
	_, err := fmt.Fprintf(opts.IO.Out, "%d alerts%s since %s (UTC), per %s\n", total, q, timeCell(since), opts.ByText)
	return err
}
