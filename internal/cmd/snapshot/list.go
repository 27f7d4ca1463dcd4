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
  siemctl snapshot list -o json | jq -r '.[-1].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output = f.Global.Output
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
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
		t.Row(e.ID, e.TakenAt, dash(e.Label), p.Status(s.Status), up, dash(s.ClusterStatus),
			strconv.Itoa(s.Indices), strconv.FormatInt(s.Docs, 10), strconv.Itoa(s.Agents))
	}
	return t.Render()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
