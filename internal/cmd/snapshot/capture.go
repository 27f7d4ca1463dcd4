package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// DefaultCaptureTimeout bounds a capture when --timeout is not given: a
// capture pages through every agent and runs the health checks, more than
// the 10 s of a read-only command, and usually runs from a timer.
const DefaultCaptureTimeout = time.Minute

// CaptureOptions are the parsed inputs and dependencies of `snapshot capture`.
type CaptureOptions struct {
	IO *output.IOStreams
	// Live returns the live source and the capture's options for a label.
	Live func(ctx context.Context, label string) (*snapshot.Live, snapshot.CaptureOptions, error)
	// Store opens the snapshot store of state_dir.
	Store  func() (*snapshot.Store, error)
	Now    func() time.Time
	Output string
	// Timeout bounds the whole capture.
	Timeout        time.Duration
	Label          string
	Keep           int
	KeepDays       int
	PrometheusFile string
	// Change is the change policy of the retention rules (--keep,
	// --keep-days delete files): the prune takes the host lock, and
	// --dry-run prints what the capture would write and delete.
	Change cli.Change

	// Source builds the snapshot source (nil: the live one); Rand
	// feeds the id suffix (nil: crypto/rand). Tests replace them.
	Source func(l *snapshot.Live) snapshot.Source
	Rand   io.Reader
}

// NewCmdCapture builds `snapshot capture`; runF replaces the behaviour in tests.
func NewCmdCapture(f *cli.Factory, runF func(context.Context, *CaptureOptions) error) *cobra.Command {
	opts := &CaptureOptions{IO: f.IO, Live: liveFrom(f), Store: storeFunc(f), Now: f.Now}
	cmd := f.ChangeCommand(&cobra.Command{
		Annotations: map[string]string{cli.OutputsAnnotation: "prometheus"},
		Use:         "capture",
		Short:       "Capture the stack's state into a new snapshot",
		Long: `Read every part of the stack concurrently under one deadline and write the snapshot
atomically (temporary file, fsync, rename) under state_dir/snapshots/.

A component that is down is recorded as down in the snapshot: the capture still succeeds
(exit 0). --keep and --keep-days prune older snapshots afterwards (a snapshot either rule
keeps stays; the newest is never deleted). --textfile writes the snapshot's metrics
atomically for the node_exporter textfile collector; -o prometheus prints them.

Pruning is a change: it takes the host lock after the snapshot is saved (while an upgrade
holds it the prune is skipped with a warning naming the holder, and the next capture prunes)
and asks no confirmation (the rule on the command line is the consent: a timer runs it).
--dry-run reads nothing and writes nothing: it prints the files the capture would write and
the snapshots it would delete.

--timeout bounds the whole capture (default ` + DefaultCaptureTimeout.String() + ` for capture).`,
		Example: `  siemctl snapshot capture --label pre-upgrade
  siemctl snapshot capture -o json | jq -r .id
  siemctl snapshot capture --label timer --keep-days 30 \
      --textfile /var/lib/node_exporter/textfile_collector/siemctl.prom`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		opts.Output, opts.Change = f.Global.Output, change
		opts.Timeout = f.Global.Timeout
		if fl := cmd.Flags().Lookup("timeout"); fl == nil || !fl.Changed {
			opts.Timeout = DefaultCaptureTimeout
		}
		if change.DryRun && opts.Output == "prometheus" {
			return cli.FlagErrorf("--dry-run prints calls, not metrics: use -o table or -o json with it")
		}
		if err := snapshot.ValidateLabel(opts.Label); err != nil {
			return &cli.FlagError{Err: fmt.Errorf("--label: %w", err)}
		}
		if opts.Keep < 0 || opts.KeepDays < 0 {
			return cli.FlagErrorf("--keep and --keep-days must be 0 (no rule) or positive")
		}
		if opts.PrometheusFile != "" && !strings.HasSuffix(opts.PrometheusFile, ".prom") {
			return cli.FlagErrorf("--textfile %s: the textfile collector reads only *.prom files", opts.PrometheusFile)
		}
		return cli.Run(cmd.Context(), runF, runCapture, opts)
	})
	cmd.Flags().StringVar(&opts.Label, "label", "", "label of the snapshot (letters, digits, ._:+-), e.g. pre-upgrade")
	cmd.Flags().IntVar(&opts.Keep, "keep", 0, "after capturing, keep only the newest N snapshots (with --keep-days: either rule keeps)")
	cmd.Flags().IntVar(&opts.KeepDays, "keep-days", 0, "after capturing, delete snapshots older than D days")
	cmd.Flags().StringVar(&opts.PrometheusFile, "textfile", "", "also write the metrics atomically to this *.prom file (node_exporter textfile collector; the same flag as health's)")
	// The former name keeps working for existing timers (hidden: --textfile is the name).
	cmd.Flags().StringVar(&opts.PrometheusFile, "prometheus-file", "", "")
	_ = cmd.Flags().MarkHidden("prometheus-file")
	return cmd
}

// captureResult is the JSON output of capture.
type captureResult struct {
	ID             string               `json:"id"`
	Path           string               `json:"path"`
	Label          string               `json:"label"`
	TakenAt        string               `json:"taken_at"`
	Summary        snapshot.Summary     `json:"summary"`
	Errors         []snapshot.PartError `json:"errors"`
	Pruned         []string             `json:"pruned"`
	PrometheusFile string               `json:"prometheus_file"`
	DurationMS     int64                `json:"duration_ms"`
}

func runCapture(ctx context.Context, opts *CaptureOptions) error {
	start := opts.Now()
	ctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if opts.Change.DryRun {
		return captureDryRun(ctx, opts)
	}
	live, copts, err := opts.Live(ctx, opts.Label)
	if err != nil {
		return err
	}
	store, err := opts.Store()
	if err != nil {
		return err
	}
	var src snapshot.Source = live
	if opts.Source != nil {
		src = opts.Source(live)
	}
	copts.Now, copts.Rand = opts.Now, opts.Rand
	d, err := snapshot.Capture(ctx, src, copts)
	if err != nil {
		return err
	}
	path, err := store.Save(d)
	if err != nil {
		return err
	}
	res := captureResult{ID: d.ID, Path: path, Label: d.Label, TakenAt: d.TakenAt, Summary: d.Summary,
		Errors: d.Errors, Pruned: []string{}, PrometheusFile: opts.PrometheusFile}
	if opts.PrometheusFile != "" {
		if err := snapshot.WritePrometheus(opts.PrometheusFile, d); err != nil {
			return fmt.Errorf("snapshot %s saved, but: %w", d.ID, err)
		}
	}
	if opts.Keep > 0 || opts.KeepDays > 0 {
		if err := capturePrune(ctx, opts, store, &res); err != nil {
			return fmt.Errorf("snapshot %s saved, but: %w", d.ID, err)
		}
	}
	res.DurationMS = opts.Now().Sub(start).Milliseconds()

	switch opts.Output {
	case "json":
		return output.JSON(opts.IO.Out, res)
	case "prometheus":
		if err := snapshot.RenderPrometheus(opts.IO.Out, d); err != nil {
			return err
		}
	default:
		fmt.Fprintf(opts.IO.Out, "%s\t%s\n", d.ID, path)
		fmt.Fprintln(opts.IO.Out, summaryLine(d.Summary, opts.IO.Colors()))
		warnUnread(opts.IO, d)
	}
	if opts.PrometheusFile != "" {
		fmt.Fprintf(opts.IO.ErrOut, "wrote %s\n", opts.PrometheusFile)
	}
	if len(res.Pruned) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "pruned %d snapshot(s): %s\n", len(res.Pruned), strings.Join(res.Pruned, ", "))
	}
	return nil
}

// capturePrune applies the retention rules under the host lock. The rule
// on the command line is the consent (no question: a timer runs it); while
// an upgrade holds the lock the prune waits for the next capture.
func capturePrune(ctx context.Context, opts *CaptureOptions, store *snapshot.Store, res *captureResult) error {
	change := opts.Change
	change.Yes = true
	release, _, err := change.Begin(ctx, "", nil)
	if errors.Is(err, lock.ErrHeld) {
		fmt.Fprintf(opts.IO.ErrOut, "warning: pruning skipped: %v; the next capture prunes\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer release()
	removed, err := store.Prune(opts.Keep, opts.KeepDays, opts.Now())
	for _, e := range removed {
		res.Pruned = append(res.Pruned, e.ID)
	}
	return err
}

// captureDryRun prints what the capture would write and delete, reading
// nothing from the stack and writing nothing.
func captureDryRun(ctx context.Context, opts *CaptureOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	calls := []string{fmt.Sprintf("read the stack (indexer, manager API, units, shipper) within %s", opts.Timeout),
		"write a new snapshot under " + store.Dir + " (temporary file, fsync, rename)"}
	if opts.PrometheusFile != "" {
		calls = append(calls, "write "+opts.PrometheusFile+" (temporary file, rename)")
	}
	if opts.Keep > 0 || opts.KeepDays > 0 {
		doomed, err := store.PrunableAfterSave(opts.Keep, opts.KeepDays, opts.Now())
		if err != nil {
			return err
		}
		for _, e := range doomed {
			calls = append(calls, "remove "+e.Path)
		}
		calls = append(calls, "remove temporary snapshot files older than an hour in "+store.Dir)
	}
	_, _, err = opts.Change.Begin(ctx, "", cli.Calls(calls...))
	return err
}

// warnUnread names, on stderr, each part the capture could not read and
// why (an answer too large, a component down), so a cron mail says more
// than a count.
func warnUnread(io *output.IOStreams, d *snapshot.Document) {
	for _, e := range d.Errors {
		fmt.Fprintf(io.ErrOut, "warning: %s not read: %s\n", e.Part, e.Error)
	}
	for _, sec := range []struct {
		name string
		errs map[string]string
	}{{"indexer", d.Indexer.Errors}, {"manager", d.Manager.Errors}} {
		keys := make([]string, 0, len(sec.errs))
		for k := range sec.errs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(io.ErrOut, "warning: %s %s not read: %s\n", sec.name, k, sec.errs[k])
		}
	}
}

// summaryLine is the one-line digest of a snapshot.
func summaryLine(s snapshot.Summary, p *output.Palette) string {
	parts := []string{"health " + p.Status(s.Status)}
	up := fmt.Sprintf("%d/%d components up", s.ComponentsUp, s.ComponentsTotal)
	if len(s.Down) > 0 {
		up += " (" + p.Red("down: "+strings.Join(s.Down, ", ")) + ")"
	}
	parts = append(parts, up)
	if s.ClusterStatus != "" {
		parts = append(parts, "cluster "+s.ClusterStatus)
	}
	parts = append(parts, fmt.Sprintf("%d indices, %d docs, %s", s.Indices, s.Docs, output.Bytes(s.StoreBytes)),
		fmt.Sprintf("%d agents", s.Agents))
	if s.PartErrors > 0 {
		parts = append(parts, p.Yellow(fmt.Sprintf("%d part(s) not read", s.PartErrors)))
	}
	return strings.Join(parts, ", ")
}

// liveSource is the client set's live snapshot source (internal/factory's
// Clients).
type liveSource interface {
	LiveSnapshot(label string) (*snapshot.Live, snapshot.CaptureOptions)
}

// liveFrom returns the live source over the factory's client set and the
// options of a capture labelled label.
func liveFrom(f *cli.Factory) func(ctx context.Context, label string) (*snapshot.Live, snapshot.CaptureOptions, error) {
	return func(ctx context.Context, label string) (*snapshot.Live, snapshot.CaptureOptions, error) {
		s, err := cli.ClientsAs[liveSource](ctx, f)
		if err != nil {
			return nil, snapshot.CaptureOptions{}, err
		}
		live, opts := s.LiveSnapshot(label)
		return live, opts, nil
	}
}
