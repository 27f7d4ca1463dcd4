package upgrade

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rundata"
)

// PruneOptions are the inputs of `upgrade prune`.
type PruneOptions struct {
	IO     *output.IOStreams
	Config func() (*config.Config, error)
	Output string
	Change cli.Change
}

// NewCmdPrune builds `upgrade prune`.
func NewCmdPrune(f *cli.Factory, runF func(context.Context, *PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{IO: f.IO, Config: f.Config}
	return f.ChangeCommand(&cobra.Command{
		Use:   "prune",
		Short: "Remove the indexer data directories kept aside by earlier rollbacks",
		Long: `A snapshot-mode rollback sets the new version's indexer data directory aside as
<data_dir>.siemctl-<run-id> and keeps it (it may hold documents indexed after the snapshot).
prune removes those directories: only real directories named exactly so, next to
indexer.data_dir; a symlink is never followed nor removed, another name is left alone, and the
directory of the latest run is kept while that run may still be resumed or rolled back (running,
interrupted, failed or rollback-failed). Asks on a terminal (--yes off one), takes the host lock (exit 6
while an upgrade runs); --dry-run prints what it would remove. 'upgrade plan' warns when such
directories exist.`,
		Example: `  siemctl upgrade prune --dry-run
  siemctl upgrade prune --yes -o json`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Change = f.Global.Output, change
		return cli.Run(cmd.Context(), runF, runPrune, opts)
	})
}

// PruneResult is the output of prune.
type PruneResult struct {
	Removed []rundata.AsideDir `json:"removed"`
	Kept    []rundata.AsideDir `json:"kept"`
	// Freed is the bytes of the removed directories.
	Freed int64 `json:"freed_bytes"`
}

// protectLatest keeps the latest run's directory while that run has not
// ended for good (it may still be resumed or rolled back, and its restore
// may need the directory).
func protectLatest(stateDir string) (func(runID string) string, error) {
	ri, err := engine.Status(stateDir, "")
	if errors.Is(err, engine.ErrNoRuns) {
		return func(string) string { return "" }, nil
	}
	if err != nil {
		return nil, err
	}
	return func(runID string) string {
		if runID != ri.ID || ri.Terminal() {
			return ""
		}
		return fmt.Sprintf("belongs to the latest run %s (%s), which may still be resumed or rolled back", ri.ID, ri.Status)
	}, nil
}

func runPrune(ctx context.Context, opts *PruneOptions) error {
	c, err := opts.Config()
	if err != nil {
		return err
	}
	protect, err := protectLatest(c.StateDir)
	if err != nil {
		return err
	}
	dirs, err := rundata.AsideDirs(ctx, c.Indexer.DataDir, protect)
	if err != nil {
		return err
	}
	res := PruneResult{Removed: []rundata.AsideDir{}, Kept: []rundata.AsideDir{}}
	var doomed []rundata.AsideDir
	var calls []string
	for _, a := range dirs {
		if a.Refused != "" {
			res.Kept = append(res.Kept, a)
			continue
		}
		doomed = append(doomed, a)
		calls = append(calls, fmt.Sprintf("rm -r %s (%s, run %s)", a.Path, output.Bytes(a.Bytes), a.RunID))
	}
	if len(doomed) == 0 && !opts.Change.DryRun {
		return renderPrune(opts, res)
	}
	var total int64
	for _, a := range doomed {
		total += a.Bytes
	}
	release, proceed, err := opts.Change.Begin(ctx, fmt.Sprintf("Remove %d set-aside indexer data director%s (%s)?", len(doomed), plural(len(doomed)), output.Bytes(total)), cli.Calls(calls...))
	if !proceed {
		return err
	}
	defer release()
	// Under the lock: the latest run may have changed since the listing.
	if protect, err = protectLatest(c.StateDir); err != nil {
		return err
	}
	var errs []error
	for _, a := range doomed {
		if why := protect(a.RunID); why != "" {
			a.Refused = why
			res.Kept = append(res.Kept, a)
			continue
		}
		if err := rundata.RemoveAside(c.Indexer.DataDir, a); err != nil {
			errs = append(errs, err)
			a.Refused = err.Error()
			res.Kept = append(res.Kept, a)
			continue
		}
		res.Removed = append(res.Removed, a)
		res.Freed += a.Bytes
	}
	if err := renderPrune(opts, res); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func plural(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

func renderPrune(opts *PruneOptions, res PruneResult) error {
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, res)
	}
	if len(res.Removed)+len(res.Kept) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "nothing to prune: no set-aside indexer data directory")
		return nil
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "PATH", "RUN", "SIZE", "ACTION")
	for _, a := range res.Removed {
		t.Row(a.Path, output.Dash(a.RunID), output.Bytes(a.Bytes), "removed")
	}
	for _, a := range res.Kept {
		t.Row(a.Path, output.Dash(a.RunID), output.Bytes(a.Bytes), "kept: "+a.Refused)
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "removed %d director%s (%s freed), kept %d\n", len(res.Removed), plural(len(res.Removed)), output.Bytes(res.Freed), len(res.Kept))
	return nil
}
