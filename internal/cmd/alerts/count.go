package alerts

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/stack"
)

// CountOptions are the inputs of `alerts count`.
type CountOptions struct {
	IO      *output.IOStreams
	Stack   func(ctx context.Context) (*stack.Stack, error)
	Now     func() time.Time
	Output  string
	Timeout time.Duration

	Query     string
	Since     time.Duration
	SinceText string
}

// NewCmdCount builds `alerts count`.
func NewCmdCount(f *cli.Factory, runF func(context.Context, *CountOptions) error) *cobra.Command {
	opts := &CountOptions{IO: f.IO, Stack: f.Stack, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "count",
		Short: "Count the alerts indexed recently",
		Example: `  siemctl alerts count                 # last 5 minutes
  siemctl alerts count --since 1d -q 'rule.level:>=10'
  siemctl alerts count -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			d, err := ParseDuration(opts.SinceText)
			if err != nil {
				return &cli.FlagError{Err: err}
			}
			opts.Since = d
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCount(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Query, "query", "q", "", "query_string query; empty: every alert")
	cmd.Flags().StringVar(&opts.SinceText, "since", "5m", "how far back: a whole number and s, m, h, d or w")
	return cmd
}

func runCount(ctx context.Context, opts *CountOptions) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	st, err := opts.Stack(ctx)
	if err != nil {
		return err
	}
	ix, err := st.NeedIndexer()
	if err != nil {
		return err
	}
	since := opts.Now().Add(-opts.Since)
	n, err := ix.Count(ctx, st.AlertsPattern(), opts.Query, since)
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
	t.Row(strconv.FormatInt(n, 10), timeCell(since), orDash(opts.Query))
	return t.Render()
}
