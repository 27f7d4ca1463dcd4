package snapshot

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// ListOptions are the parsed inputs and dependencies of `snapshot list`.
type ListOptions struct {
	IO     *output.IOStreams
	Store  func() (*snapshot.Store, error)
	Output string
	Trend  string // docs | disk | agents | indices: one bar per snapshot
}

// trendMetrics are the values `snapshot list --trend` can chart.
var trendMetrics = map[string]func(snapshot.Summary) int64{
	"docs":    func(s snapshot.Summary) int64 { return s.Docs },
	"disk":    func(s snapshot.Summary) int64 { return s.StoreBytes },
	"agents":  func(s snapshot.Summary) int64 { return int64(s.Agents) },
	"indices": func(s snapshot.Summary) int64 { return int64(s.Indices) },
}

// NewCmdList builds `snapshot list`; runF replaces the behaviour in tests.
func NewCmdList(f *cli.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Store: storeFunc(f)}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the stored snapshots, oldest first",
		Long: `List the snapshots under state_dir/snapshots with their health verdict, components up,
cluster status, index, document and agent counts. Files that are not complete snapshots
(e.g. left by a capture killed while writing) are skipped with a warning.`,
		Example: `  siemctl snapshot list
  siemctl snapshot list --trend docs     # documents across snapshots, a bar each on a terminal
  siemctl snapshot list -o json | jq -r '.[-1].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output = f.Global.Output
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			if _, ok := trendMetrics[opts.Trend]; opts.Trend != "" && !ok {
				return &cli.FlagError{Err: fmt.Errorf("--trend %q: want docs, disk, agents or indices", opts.Trend)}
			}
			return cli.Run(cmd.Context(), runF, runList, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Trend, "trend", "", "chart one value across the snapshots: docs, disk, agents or indices")
	return cmd
}

func runList(_ context.Context, opts *ListOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	entries, err := store.List()
	if err != nil {
		return err
	}
	if opts.Trend != "" {
		return renderTrend(opts, entries)
	}
	if opts.Output == "json" {
		return snapshot.RenderListJSON(opts.IO.Out, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no snapshots in %s: take one with `siemctl snapshot capture`\n", store.Dir)
		return nil
	}
	p := opts.IO.Colors()
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "id", "taken at", "label", "health", "up", "cluster", "indices", "docs", "agents")
	for _, e := range entries {
		s := e.Summary
		up := fmt.Sprintf("%d/%d", s.ComponentsUp, s.ComponentsTotal)
		if len(s.Down) > 0 {
			up += " " + p.Red("down:"+strings.Join(s.Down, ","))
		}
		t.Row(e.ID, e.TakenAt, output.Dash(e.Label), p.Status(s.Status), up, output.Dash(s.ClusterStatus),
			strconv.Itoa(s.Indices), strconv.FormatInt(s.Docs, 10), strconv.Itoa(s.Agents))
	}
	return t.Render()
}

// renderTrend prints one value per snapshot, oldest first: JSON points, a bar chart on a terminal,
// tab-separated rows off one.
func renderTrend(opts *ListOptions, entries []snapshot.Entry) error {
	value := trendMetrics[opts.Trend]
	type point struct {
		ID      string `json:"id"`
		TakenAt string `json:"taken_at"`
		Label   string `json:"label"`
		Value   int64  `json:"value"`
	}
	points := make([]point, 0, len(entries))
	for _, e := range entries {
		points = append(points, point{e.ID, e.TakenAt, e.Label, value(e.Summary)})
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, struct {
			Metric string  `json:"metric"`
			Points []point `json:"points"`
		}{opts.Trend, points})
	}
	if !opts.IO.IsStdoutTTY() {
		t := output.NewTable(opts.IO.Out, false, "id", "taken at", "label", opts.Trend)
		for _, p := range points {
			t.Row(p.ID, p.TakenAt, output.Dash(p.Label), strconv.FormatInt(p.Value, 10))
		}
		return t.Render()
	}
	bars := make([]output.Bar, len(points))
	for i, p := range points {
		l := p.TakenAt
		if p.Label != "" {
			l += " " + p.Label
		}
		bars[i] = output.Bar{Label: l, Value: p.Value}
	}
	if err := output.BarChart(opts.IO.Out, bars, opts.IO.TerminalWidth(), opts.IO.Colors()); err != nil {
		return err
	}
	unit := map[string]string{"docs": "documents", "disk": "bytes on disk", "agents": "agents", "indices": "indices"}[opts.Trend]
	_, err := fmt.Fprintf(opts.IO.Out, "%s across %d snapshots\n", unit, len(points))
	return err
}
