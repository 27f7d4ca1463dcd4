package snapshot

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// DiffOptions are the parsed inputs and dependencies of `snapshot diff`.
type DiffOptions struct {
	IO     *output.IOStreams
	Config func() (*config.Config, error)
	Output string
	From   string
	To     string
	// Expect maps a component to the package version it should have in To.
	Expect        map[string]string
	IgnoreIndices []string
}

// NewCmdDiff builds `snapshot diff`; runF replaces the behaviour in tests.
func NewCmdDiff(f *cli.Factory, runF func(context.Context, *DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{IO: f.IO, Config: f.Config}
	var expect []string
	cmd := &cobra.Command{
		ValidArgsFunction: completeRefs(f, 2),
		Use:               "diff A B",
		Short:             "Compare two snapshots, most severe change first",
		Long: `Compare snapshot A (before) with snapshot B (after) and list every change ranked by
severity (critical, warning, info), then category and key.

Critical: an index or documents that disappeared, a unit no longer active, a component
that became unreachable, a red cluster or index, a lost alerts template, a package removed.
Warning: a version changed unexpectedly, allocation left at primaries, templates or
pipelines changed, agents lost, disk crossing thresholds.disk_warn_percent, …

--expect component=version (an upgrade's target) turns reaching that version into info
and any other version into a warning. --ignore-index GLOB turns the disappearance of
matching indices (e.g. retention cleanup) into info.

Exit codes: 0 nothing critical changed, 3 something critical changed.`,
		Example: `  siemctl snapshot diff previous latest
  siemctl snapshot diff label:pre-upgrade label:post-upgrade \
      --expect indexer=4.10.0-1 --expect manager=4.10.0-1 --expect dashboard=4.10.0-1
  siemctl snapshot diff previous latest --ignore-index 'siem-alerts-4.x-2024.*' -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Output, opts.From, opts.To = f.Global.Output, args[0], args[1]
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			m, err := parseExpect(expect)
			if err != nil {
				return err
			}
			opts.Expect = m
			for _, g := range opts.IgnoreIndices {
				if _, err := path.Match(g, ""); err != nil {
					return cli.FlagErrorf("--ignore-index %q: %v", g, err)
				}
			}
			return cli.Run(cmd.Context(), runF, runDiff, opts)
		},
	}
	cmd.Flags().StringArrayVar(&expect, "expect", nil, "component=version expected in B, e.g. manager=4.10.0-1 (repeatable)")
	cmd.Flags().StringArrayVar(&opts.IgnoreIndices, "ignore-index", nil, "glob of indices whose disappearance is expected (repeatable)")
	return cmd
}

func parseExpect(list []string) (map[string]string, error) {
	m := map[string]string{}
	known := snapshot.DefaultComponents()
	for _, e := range list {
		comp, ver, ok := strings.Cut(e, "=")
		comp, ver = strings.TrimSpace(comp), strings.TrimSpace(ver)
		if !ok || comp == "" || ver == "" {
			return nil, cli.FlagErrorf("--expect %q: use component=version, e.g. manager=4.10.0-1", e)
		}
		if !slices.Contains(known, comp) {
			return nil, cli.FlagErrorf("--expect %q: unknown component %q (one of %s)", e, comp, strings.Join(known, ", "))
		}
		if prev, dup := m[comp]; dup && prev != ver {
			return nil, cli.FlagErrorf("--expect: %s given twice (%s and %s)", comp, prev, ver)
		}
		m[comp] = ver
	}
	return m, nil
}

func runDiff(_ context.Context, opts *DiffOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	store, err := openStore(cfg, nil)
	if err != nil {
		return err
	}
	a, err := store.Get(opts.From)
	if err != nil {
		return refError(err)
	}
	b, err := store.Get(opts.To)
	if err != nil {
		return refError(err)
	}
	rep := snapshot.Diff(a, b, snapshot.DiffOptions{Expected: opts.Expect, IgnoreIndices: opts.IgnoreIndices,
		DiskWarnPercent: float64(cfg.Thresholds.DiskWarnPercent)})
	if opts.Output == "json" {
		if err := snapshot.RenderDiffJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else if err := renderDiffTable(opts.IO, rep); err != nil {
		return err
	}
	if rep.Critical() {
		return &cli.ExitError{Code: cli.ExitNoGo}
	}
	return nil
}

func renderDiffTable(io *output.IOStreams, rep snapshot.Report) error {
	p := io.Colors()
	c := rep.Counts()
	fmt.Fprintf(io.Out, "%s → %s: %s critical, %s warning, %d info\n", ref(rep.From), ref(rep.To),
		colorCount(c["critical"], p.Red), colorCount(c["warning"], p.Yellow), c["info"])
	if len(rep.Changes) == 0 {
		fmt.Fprintln(io.Out, "no changes")
		return nil
	}
	t := output.NewTable(io.Out, io.IsStdoutTTY(), "severity", "category", "key", "change")
	for _, ch := range rep.Changes {
		sev := ch.Severity.String()
		switch ch.Severity {
		case snapshot.Critical:
			sev = p.Red(sev)
		case snapshot.Warning:
			sev = p.Yellow(sev)
		default:
			sev = p.Gray(sev)
		}
		t.Row(sev, ch.Category, oneLine(ch.Key), oneLine(ch.Message))
	}
	return t.Render()
}

func colorCount(n int, paint func(string) string) string {
	s := fmt.Sprint(n)
	if n > 0 {
		return paint(s)
	}
	return s
}

func ref(r snapshot.Ref) string {
	if r.Label != "" {
		return r.ID + " (" + r.Label + ")"
	}
	return r.ID
}

func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(s)
}
