package snapshot

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// PruneOptions are the parsed inputs and dependencies of `snapshot prune`.
type PruneOptions struct {
	IO       *output.IOStreams
	Store    func() (*snapshot.Store, error)
	Now      func() time.Time
	Output   string
	Keep     int
	KeepDays int
	Change   cli.Change
}

// NewCmdPrune builds `snapshot prune`; runF replaces the behaviour in tests.
func NewCmdPrune(f *cli.Factory, runF func(context.Context, *PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{IO: f.IO, Store: storeFunc(f), Now: f.Now}
	cmd := f.ChangeCommand(&cobra.Command{
		Use:   "prune",
		Short: "Delete old snapshots by retention rules",
		Long: `Delete the snapshots that no retention rule keeps: --keep N keeps the newest N,
--keep-days D keeps those taken in the last D days; a snapshot either rule keeps stays and
the newest is never deleted. Temporary files older than an hour, left by a capture killed
while writing, are removed too; corrupt snapshot files are left alone (and listed by
'snapshot list' warnings). Asks for confirmation on a terminal (--yes off one) and takes the
host lock (exit 6 while an upgrade runs); --dry-run prints each file it would remove.
(The timer's 'snapshot capture --keep-days' prunes its own snapshots without asking.)`,
		Example: `  siemctl snapshot prune --keep 48 --dry-run
  siemctl snapshot prune --keep 48 --yes
  siemctl snapshot prune --keep 10 --keep-days 30 -o json --yes`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Change = f.Global.Output, change
		if opts.Keep < 0 || opts.KeepDays < 0 {
			return cli.FlagErrorf("--keep and --keep-days must be positive")
		}
		if opts.Keep == 0 && opts.KeepDays == 0 {
			return cli.FlagErrorf("give a retention rule: --keep N and/or --keep-days D")
		}
		return cli.Run(cmd.Context(), runF, runPrune, opts)
	})
	cmd.Flags().IntVar(&opts.Keep, "keep", 0, "keep the newest N snapshots")
	cmd.Flags().IntVar(&opts.KeepDays, "keep-days", 0, "keep the snapshots of the last D days")
	return cmd
}

// pruneResult is the JSON output of prune.
type pruneResult struct {
	Removed []snapshot.Entry `json:"removed"`
	Kept    int              `json:"kept"`
}

func runPrune(ctx context.Context, opts *PruneOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	now := opts.Now()
	doomed, err := store.Prunable(opts.Keep, opts.KeepDays, now)
	if err != nil {
		return err
	}
	calls := make([]string, 0, len(doomed)+1)
	for _, e := range doomed {
		calls = append(calls, "remove "+e.Path)
	}
	calls = append(calls, "remove temporary snapshot files older than an hour in "+store.Dir)
	release, proceed, err := opts.Change.Begin(ctx, fmt.Sprintf("Delete %d snapshot(s) from %s?", len(doomed), store.Dir), cli.Calls(calls...))
	if !proceed {
		return err
	}
	defer release()
	removed, err := store.Prune(opts.Keep, opts.KeepDays, now)
	if err != nil {
		return err
	}
	left, err := store.List()
	if err != nil {
		return err
	}
	if removed == nil {
		removed = []snapshot.Entry{}
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, pruneResult{Removed: removed, Kept: len(left)})
	}
	if len(removed) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "nothing to prune: %d snapshot(s) kept\n", len(left))
		return nil
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "removed", "taken at", "label")
	for _, e := range removed {
		t.Row(e.ID, e.TakenAt, output.Dash(e.Label))
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "pruned %d snapshot(s), %d kept\n", len(removed), len(left))
	return nil
}
