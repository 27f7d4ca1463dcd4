package alerts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cleanup"
	"github.com/siemctl/siemctl/internal/output"
)

// CleanupOptions are the inputs of `alerts cleanup`.
type CleanupOptions struct {
	Common
	Change cli.Change

	Criteria cleanup.Criteria
	PlanFile string // where to write the plan ("" = state_dir/cleanup/plan-<time>.json)
	Apply    string // plan to apply
}

// NewCmdCleanup builds `alerts cleanup`.
func NewCmdCleanup(f *cli.Factory, runF func(context.Context, *CleanupOptions) error) *cobra.Command {
	opts := &CleanupOptions{Common: common(f)}
	var olderThan string
	var diskAbove int
	cmd := f.ChangeCommand(&cobra.Command{
		Use:   "cleanup (--older-than AGE | --disk-above PERCENT) [--plan-file F] | --apply PLAN",
		Short: "Plan, then apply, the deletion of old daily alerts indices",
		Long: `Two steps. First, a plan: the exact alerts indices (prefix + YYYY.MM.DD) to delete with
their date, size and document count, written to a file with a checksum; nothing is
deleted. Then --apply PLAN deletes exactly those names, after a confirmation.

  --older-than AGE      indices whose day ended at least AGE ago (e.g. 90d, 12h)
  --disk-above PERCENT  the oldest indices until the projected disk usage from
                        _cat/allocation falls below PERCENT (e.g. 85, health's disk alarm)

Never deleted: today's index, future-dated indices, and any index whose name does not
parse as prefix + YYYY.MM.DD. Apply refuses a plan whose checksum or signature (HMAC
under state_dir/cleanup/plan.key) does not match, that is not owned by root or you or is
writable by group/others, that lists an index newer than its own cutoff or without UUID;
it re-verifies each index right before deleting it (it must still exist with the same
UUID and document count); a changed index stops the run. One literal name per delete
request, never a wildcard.

--apply takes the host lock (exit 6 while an upgrade runs); --apply PLAN --dry-run prints
each delete request it would send after verifying the plan, and deletes nothing.

Exit codes: 0 done (or plan written), 2 bad flags, a plan file that does not exist or no
confirmation without a terminal, 3 plan refused (tampered, invalid or stale: nothing
deleted), 6 locked.`,
		Example: `  siemctl alerts cleanup --older-than 90d
  siemctl alerts cleanup --disk-above 85 --plan-file /tmp/cleanup.json
  siemctl alerts cleanup --apply /var/lib/siemctl/cleanup/plan-20250310T120000Z.json
  siemctl alerts cleanup --apply /tmp/cleanup.json --dry-run
  siemctl alerts cleanup --apply /tmp/cleanup.json --yes`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Timeout, opts.Change = f.Global.Output, f.Global.Timeout, change
		fl := cmd.Flags()
		planning := fl.Changed("older-than") || fl.Changed("disk-above")
		switch {
		case opts.Apply != "" && planning:
			return cli.FlagErrorf("--apply takes a plan made earlier: do not combine it with --older-than or --disk-above")
		case opts.Apply != "" && opts.PlanFile != "":
			return cli.FlagErrorf("--plan-file names where a new plan is written: do not combine it with --apply")
		case fl.Changed("apply") && opts.Apply == "":
			return cli.FlagErrorf("--apply needs the plan file")
		case opts.Apply == "" && !planning:
			return cli.FlagErrorf("give --older-than AGE (e.g. 90d) or --disk-above PERCENT (e.g. 85) to make a plan, or --apply PLAN")
		case fl.Changed("older-than") && fl.Changed("disk-above"):
			return cli.FlagErrorf("give either --older-than or --disk-above, not both")
		case change.DryRun && opts.Apply == "":
			return cli.FlagErrorf("--dry-run goes with --apply PLAN: making a plan changes nothing anyway")
		}
		if fl.Changed("older-than") {
			d, err := cli.ParseDuration(olderThan)
			if err != nil {
				return &cli.FlagError{Err: fmt.Errorf("--older-than: %w", err)}
			}
			opts.Criteria = cleanup.Criteria{OlderThan: d, OlderThanText: olderThan}
		}
		if fl.Changed("disk-above") {
			if diskAbove < 1 || diskAbove > 99 {
				return cli.FlagErrorf("--disk-above %d: use a percentage from 1 to 99", diskAbove)
			}
			opts.Criteria = cleanup.Criteria{DiskAbove: diskAbove}
		}
		return cli.Run(cmd.Context(), runF, runCleanup, opts)
	})
	cmd.Flags().StringVar(&olderThan, "older-than", "", "plan: indices whose day ended at least this long ago (e.g. 90d, 12h)")
	cmd.Flags().IntVar(&diskAbove, "disk-above", 0, "plan: oldest indices until projected disk usage is below this percentage")
	cmd.Flags().StringVar(&opts.PlanFile, "plan-file", "", "plan: write the plan here (default state_dir/cleanup/plan-<time>.json)")
	cmd.Flags().StringVar(&opts.Apply, "apply", "", "delete exactly the indices of this plan file")
	return cmd
}

// runCleanup applies the plan --apply names, or makes one.
func runCleanup(ctx context.Context, opts *CleanupOptions) error {
	if opts.Apply != "" {
		return runCleanupApply(ctx, opts)
	}
	return runCleanupPlan(ctx, opts)
}

func runCleanupPlan(ctx context.Context, opts *CleanupOptions) error {
	ctx, cancel, cfg, ix, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	prefix := cfg.Indexer.AlertsIndexPrefix
	in := cleanup.Input{Prefix: prefix, ExtraPrefixes: cfg.Indexer.CleanupPrefixes, IndexerURL: ix.URL(), Criteria: opts.Criteria, Now: opts.Now()}
	for _, pr := range append([]string{prefix}, in.ExtraPrefixes...) {
		got, err := ix.CatIndices(ctx, pr+"*")
		if err != nil {
			return err
		}
		in.Indices = append(in.Indices, got...)
	}
	if opts.Criteria.DiskAbove > 0 {
		if in.Allocation, err = ix.CatAllocation(ctx); err != nil {
			return err
		}
	}
	plan, err := cleanup.Build(in)
	if err != nil {
		return err
	}
	path := opts.PlanFile
	if path == "" {
		path = cleanup.DefaultPlanPath(cfg.StateDir, opts.Now())
	}
	key, err := cleanup.Key(cfg.StateDir)
	if err != nil {
		return err
	}
	if err := cleanup.Write(path, &plan, key); err != nil {
		return err
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, struct {
			PlanFile string `json:"plan_file"`
			cleanup.Plan
		}{path, plan})
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "index", "date", "docs", "size")
	for _, pi := range plan.Indices {
		t.Row(pi.Name, pi.Date, strconv.FormatInt(pi.DocsCount, 10), output.Bytes(pi.StoreBytes))
	}
	if err := t.Render(); err != nil {
		return err
	}
	e := opts.IO.ErrOut
	for _, s := range plan.Skipped {
		fmt.Fprintf(e, "not touched: %s (%s)\n", s.Name, s.Reason)
	}
	if plan.Disk != nil {
		fmt.Fprintf(e, "disk: %.1f%% used, %.1f%% after the plan (threshold %d%%)\n", plan.Disk.Percent, plan.Disk.ProjectedPercent, plan.DiskAbove)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(e, "warning: %s\n", w)
	}
	fmt.Fprintf(e, "plan: delete %d indices (%d documents, %s), keep %d; written to %s (%s)\n",
		len(plan.Indices), plan.TotalDocs, output.Bytes(plan.TotalBytes), plan.Kept, path, plan.Checksum)
	if len(plan.Indices) > 0 {
		fmt.Fprintf(e, "apply it with: siemctl alerts cleanup --apply %s\n", path)
	}
	return nil
}

func runCleanupApply(ctx context.Context, opts *CleanupOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	key, err := cleanup.Key(cfg.StateDir)
	if err != nil {
		return err
	}
	plan, err := cleanup.Load(opts.Apply, key)
	if errors.Is(err, fs.ErrNotExist) {
		return cli.FlagErrorf("--apply %s: no such plan file; make one with --older-than AGE or --disk-above PERCENT", opts.Apply)
	}
	if err != nil {
		return err
	}
	ix, err := opts.Indexer(ctx)
	if err != nil {
		return err
	}
	if prefix := cfg.Indexer.AlertsIndexPrefix; plan.Prefix != prefix {
		return &cleanup.RefusedError{Reasons: []string{fmt.Sprintf("the plan is for prefix %q, the configured alerts prefix is %q", plan.Prefix, prefix)}}
	}
	for _, pr := range plan.ExtraPrefixes {
		if !slices.Contains(cfg.Indexer.CleanupPrefixes, pr) {
			return &cleanup.RefusedError{Reasons: []string{fmt.Sprintf("the plan covers prefix %q, which indexer.cleanup_prefixes no longer lists (%s); make a new plan", pr, strings.Join(cfg.Indexer.CleanupPrefixes, ", "))}}
		}
	}
	vctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
	v, verr := cleanup.Verify(vctx, ix, plan, opts.Now())
	cancel()
	if verr != nil && !errors.Is(verr, cleanup.ErrRefused) {
		return verr
	}
	if verr != nil {
		_ = renderItems(opts, v.Items)
		return verr
	}
	ready := v.Ready()
	var docs, size int64
	for _, it := range v.Items {
		if it.Status == cleanup.StatusReady {
			docs += it.DocsCount
			size += it.StoreBytes
		}
	}
	if len(ready) == 0 {
		if err := renderApplied(opts, v.Items); err != nil {
			return err
		}
		fmt.Fprintln(opts.IO.ErrOut, "nothing to delete: every index of the plan is already gone")
		return nil
	}
	if opts.Output != "json" {
		if err := renderItems(opts, v.Items); err != nil {
			return err
		}
	}
	q := fmt.Sprintf("delete %d alerts indices (%d documents, %s) from %s?", len(ready), docs, output.Bytes(size), ix.URL())
	calls := make([]string, len(ready))
	for i, name := range ready {
		calls[i] = indexer.DeleteIndexCall(name)
	}
	release, proceed, err := opts.Change.Begin(ctx, q, cli.Calls(calls...))
	if !proceed {
		return err
	}
	defer release()
	actx, cancel := cli.WithTimeout(ctx, opts.Timeout+time.Duration(len(ready))*opts.Timeout/4)
	defer cancel()
	items, aerr := cleanup.Apply(actx, ix, plan, v, opts.Now(), func(it cleanup.Item) {
		fmt.Fprintf(opts.IO.ErrOut, "%s %s\n", it.Status, it.Name)
	})
	if opts.Output == "json" {
		if err := renderApplied(opts, items); err != nil {
			return err
		}
	}
	deleted := 0
	for _, it := range items {
		if it.Status == cleanup.StatusDeleted {
			deleted++
		}
	}
	fmt.Fprintf(opts.IO.ErrOut, "deleted %d of %d planned indices\n", deleted, len(items))
	if aerr != nil && ctx.Err() != nil {
		return &cli.ExitError{Code: cli.ExitInterrupted, Reason: fmt.Sprintf("interrupted after deleting %d indices", deleted)}
	}
	return aerr
}

func renderItems(opts *CleanupOptions, items []cleanup.Item) error {
	if opts.Output == "json" {
		return renderApplied(opts, items)
	}
	p := opts.IO.Colors()
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "index", "date", "docs", "size", "status", "detail")
	for _, it := range items {
		st := it.Status
		switch st {
		case cleanup.StatusChanged, cleanup.StatusUnsafe, cleanup.StatusFailed:
			st = p.Red(st)
		case cleanup.StatusMissing:
			st = p.Yellow(st)
		}
		t.Row(it.Name, it.Date, strconv.FormatInt(it.DocsCount, 10), output.Bytes(it.StoreBytes), st, output.Dash(it.Detail))
	}
	return t.Render()
}

func renderApplied(opts *CleanupOptions, items []cleanup.Item) error {
	if items == nil {
		items = []cleanup.Item{}
	}
	if opts.Output != "json" {
		return renderItems(opts, items)
	}
	return output.JSON(opts.IO.Out, struct {
		PlanFile string         `json:"plan_file"`
		Items    []cleanup.Item `json:"items"`
	}{opts.Apply, items})
}
