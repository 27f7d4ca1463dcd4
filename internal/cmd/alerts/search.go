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

// SearchOptions are the inputs of `alerts search`.
type SearchOptions struct {
	Common

	Query string
	Since time.Duration
	Limit int
}

// NewCmdSearch builds `alerts search`.
func NewCmdSearch(f *cli.Factory, runF func(context.Context, *SearchOptions) error) *cobra.Command {
	opts := &SearchOptions{Common: common(f)}
	var since string
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Search recent alerts, newest first",
		Long: `Search the alerts indices with a query_string query (Lucene syntax), newest first:
time, rule id and level, agent, description. The query travels in the JSON request
body, so quotes, brackets and slashes reach the indexer unchanged; a query the
indexer cannot parse is reported as a usage error (exit 2).`,
		Example: `  siemctl alerts search --since 1h
  siemctl alerts search -q 'rule.id:5710 AND data.srcip:"192.0.2.10"'
  siemctl alerts search -q 'rule.level:[10 TO *]' -n 50 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			d, err := cli.ParseDuration(since)
			if err != nil {
				return &cli.FlagError{Err: err}
			}
			opts.Since = d
			if opts.Limit < 1 || opts.Limit > indexer.MaxSearchSize {
				return cli.FlagErrorf("-n %d: use 1 to %d", opts.Limit, indexer.MaxSearchSize)
			}
			return cli.Run(cmd.Context(), runF, runSearch, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Query, "query", "q", "", "query_string query (Lucene syntax); empty: every alert")
	cmd.Flags().StringVar(&since, "since", "15m", "how far back: a whole number and s, m, h, d or w (e.g. 15m, 12h, 7d)")
	cmd.Flags().IntVarP(&opts.Limit, "limit", "n", 20, "at most this many alerts")
	return cmd
}

// searchOutput is the JSON shape of `alerts search`.
type searchOutput struct {
	Query         string    `json:"query"`
	Since         time.Time `json:"since"`
	Total         int64     `json:"total"`
	TotalRelation string    `json:"total_relation"`
	Alerts        []Alert   `json:"alerts"`
}

func runSearch(ctx context.Context, opts *SearchOptions) error {
	ctx, cancel, cfg, ix, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	since := opts.Now().Add(-opts.Since)
	res, err := ix.Search(ctx, indexer.SearchRequest{Index: cfg.Indexer.AlertsIndexPrefix + "*", Query: opts.Query, Since: since, Size: opts.Limit,
		Sort: []indexer.SortField{{Field: indexer.DefaultTimeField, Order: "desc"}}})
	if err != nil {
		return queryError(opts.Query, err)
	}
	out := searchOutput{Query: opts.Query, Since: since.UTC(), Total: res.Total, TotalRelation: res.TotalRelation, Alerts: make([]Alert, 0, len(res.Hits))}
	for _, h := range res.Hits {
		out.Alerts = append(out.Alerts, alertOf(h))
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, out)
	}
	if err := renderAlerts(opts.IO, out.Alerts, true); err != nil {
		return err
	}
	more := ""
	if res.Total > int64(len(out.Alerts)) {
		more = " (raise -n to see more)"
	}
	if res.TotalRelation == "gte" {
		more = "+" + more
	}
	fmt.Fprintf(opts.IO.ErrOut, "%d of %d%s alerts since %s\n", len(out.Alerts), res.Total, more, timeCell(since))
	return nil
}

// renderAlerts prints alert rows as a table.
func renderAlerts(io *output.IOStreams, alerts []Alert, header bool) error {
	var hdr []string
	if header {
		hdr = []string{"time", "rule", "level", "agent", "description"}
	}
	t := output.NewTable(io.Out, io.IsStdoutTTY(), hdr...)
	p := io.Colors()
	for _, a := range alerts {
		lvl := strconv.Itoa(a.RuleLevel)
		if a.RuleID == "" && a.RuleLevel == 0 {
			lvl = "-"
		}
		switch {
		case a.RuleLevel >= 12:
			lvl = p.Red(lvl)
		case a.RuleLevel >= 7:
			lvl = p.Yellow(lvl)
		}
		t.Row(timePtrCell(a.Time), output.Dash(a.RuleID), lvl, agentCell(a), output.Dash(a.Description))
	}
	return t.Render()
}
