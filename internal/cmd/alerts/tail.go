package alerts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/output"
)

// TailOptions are the inputs of `alerts tail`.
type TailOptions struct {
	Common // Timeout bounds each poll
	// Wait sleeps between polls; tests replace it.
	Wait func(ctx context.Context, d time.Duration) error

	Query    string
	Last     int
	Interval time.Duration
	Overlap  time.Duration
	Once     bool
}

// NewCmdTail builds `alerts tail`.
func NewCmdTail(f *cli.Factory, runF func(context.Context, *TailOptions) error) *cobra.Command {
	opts := &TailOptions{Common: common(f), Wait: netclient.Sleep}
	var overlap string
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Follow new alerts as they are indexed",
		Long: `Print the newest alerts, then follow new ones as they become searchable, oldest
first, until interrupted (Ctrl-C exits 130).

Paging uses search_after on a stable sort [timestamp, _id], so nothing is printed
twice. Alerts are indexed a little after their timestamp, and several may share one
timestamp: every poll re-reads the last --overlap window and skips what it already
printed, so an alert indexed late (up to --overlap behind the newest one seen) is
still printed once.`,
		Example: `  siemctl alerts tail
  siemctl alerts tail -q 'rule.level:>=7' -n 0
  siemctl alerts tail -o json | jq .rule_id`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			d, err := cli.ParseDuration(overlap)
			if err != nil {
				return &cli.FlagError{Err: fmt.Errorf("--overlap: %w", err)}
			}
			opts.Overlap = d
			if opts.Last < 0 || opts.Last > indexer.MaxSearchSize {
				return cli.FlagErrorf("-n %d: use 0 to %d", opts.Last, indexer.MaxSearchSize)
			}
			return cli.Run(cmd.Context(), runF, RunTail, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Query, "query", "q", "", "query_string query; empty: every alert")
	cmd.Flags().IntVarP(&opts.Last, "limit", "n", 10, "print this many recent alerts first (-n is the number of alerts in search and tail alike)")
	cmd.Flags().IntVar(&opts.Last, "lines", 10, "")
	_ = cmd.Flags().MarkHidden("lines") // the former name of --limit
	cli.DurationVar(cmd.Flags(), &opts.Interval, "interval", 2*time.Second, "time between polls")
	cmd.Flags().StringVar(&overlap, "overlap", "2m", "re-read window for alerts indexed late")
	cmd.Flags().BoolVar(&opts.Once, "once", false, "print the recent alerts and one poll's worth of new ones, then exit")
	return cmd
}

// RunTail prints the recent alerts and follows new ones until ctx ends.
func RunTail(ctx context.Context, opts *TailOptions) error {
	cfg, ix, err := opts.open(ctx)
	if err != nil {
		return err
	}
	fl := &Follower{Search: ix.Search, Index: cfg.Indexer.AlertsIndexPrefix + "*", Query: opts.Query, Overlap: opts.Overlap}
	first := true
	emit := func(hits []indexer.Hit) error {
		alerts := make([]Alert, 0, len(hits))
		for _, h := range hits {
			alerts = append(alerts, alertOf(h))
		}
		if opts.Output == "json" {
			for _, a := range alerts {
				if err := output.JSONLine(opts.IO.Out, a); err != nil {
					return err
				}
			}
			return nil
		}
		if len(alerts) == 0 {
			return nil
		}
		// Aligned columns need every row up front: each batch is its own
		// table, the header only before the first.
		err := renderAlerts(opts.IO, alerts, first)
		first = false
		return err
	}
	poll := func(f func(context.Context) ([]indexer.Hit, error)) error {
		pctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		hits, err := f(pctx)
		if err != nil {
			return queryError(opts.Query, err)
		}
		return emit(hits)
	}
	interrupted := func(err error) error {
		if err != nil && ctx.Err() != nil {
			// Ctrl-C: what was printed is complete; exit 130 without a message.
			return &cli.ExitError{Code: cli.ExitInterrupted}
		}
		return err
	}
	if err := poll(func(c context.Context) ([]indexer.Hit, error) { return fl.Start(c, opts.Last, opts.Now()) }); err != nil {
		return interrupted(err)
	}
	for {
		if opts.Once {
			return interrupted(poll(fl.Poll))
		}
		if err := opts.Wait(ctx, opts.Interval); err != nil {
			return interrupted(err)
		}
		if err := poll(fl.Poll); err != nil {
			return interrupted(err)
		}
	}
}

// Follower pages through new alerts with search_after on [timestamp, _id]
// and never returns a document twice. Each poll starts Overlap before the
// newest timestamp seen, so documents indexed late with equal or slightly
// older timestamps are not lost; documents already returned are skipped.
type Follower struct {
	Search  func(ctx context.Context, sr indexer.SearchRequest) (indexer.SearchResult, error)
	Index   string
	Query   string
	Overlap time.Duration
	Page    int // default 500

	newest  int64 // ms of the newest timestamp returned
	started bool  // newest is valid
	floorMS int64 // history ends here: [floorMS, floorID] and older are never new
	floorID string
	seen    map[string]int64 // index/_id → timestamp ms, inside the overlap window
}

func (f *Follower) page() int {
	if f.Page <= 0 {
		return 500
	}
	return f.Page
}

func key(h indexer.Hit) string { return h.Index + "/" + h.ID }

// sortMillis is the first sort value (the timestamp in epoch ms).
func sortMillis(h indexer.Hit) (int64, bool) {
	if len(h.Sort) == 0 {
		return 0, false
	}
	switch v := h.Sort[0].(type) {
	case float64:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// Start returns the last n alerts (oldest first) and positions the follower
// after them (at now when there are none).
func (f *Follower) Start(ctx context.Context, n int, now time.Time) ([]indexer.Hit, error) {
	f.seen = map[string]int64{}
	f.newest, f.started = now.UnixMilli(), true
	f.floorMS, f.floorID = f.newest, ""
	if n == 0 {
		return nil, nil
	}
	res, err := f.Search(ctx, indexer.SearchRequest{Index: f.Index, Query: f.Query, Size: n,
		Sort: []indexer.SortField{{Field: indexer.DefaultTimeField, Order: "desc"}, {Field: "_id", Order: "desc"}}})
	if err != nil {
		return nil, err
	}
	hits := slices.Clone(res.Hits)
	slices.Reverse(hits)
	if len(hits) > 0 {
		f.newest = 0
		f.floorMS, _ = sortMillis(hits[0])
		f.floorID = hits[0].ID
	}
	for _, h := range hits {
		ms, _ := sortMillis(h)
		f.seen[key(h)] = ms
		f.newest = max(f.newest, ms)
	}
	return hits, nil
}

// Poll returns the alerts that became searchable since the last call,
// oldest first.
func (f *Follower) Poll(ctx context.Context) ([]indexer.Hit, error) {
	if !f.started {
		f.seen, f.started = map[string]int64{}, true
	}
	from := time.UnixMilli(f.newest - f.Overlap.Milliseconds())
	var out []indexer.Hit
	var after []any
	for {
		res, err := f.Search(ctx, indexer.SearchRequest{Index: f.Index, Query: f.Query, Since: from, Size: f.page(), SearchAfter: after,
			Sort: []indexer.SortField{{Field: indexer.DefaultTimeField, Order: "asc"}, {Field: "_id", Order: "asc"}}})
		if err != nil {
			return out, err
		}
		for _, h := range res.Hits {
			ms, ok := sortMillis(h)
			if _, dup := f.seen[key(h)]; dup {
				continue
			}
			if ok && (ms < f.floorMS || ms == f.floorMS && h.ID <= f.floorID) {
				continue // before what tail started from: history, not new
			}
			f.seen[key(h)] = ms
			if ok && ms > f.newest {
				f.newest = ms
			}
			out = append(out, h)
		}
		if len(res.Hits) < f.page() {
			break
		}
		after = res.Hits[len(res.Hits)-1].Sort
		if len(after) == 0 {
			return out, errors.New("the indexer returned no sort values: cannot page")
		}
	}
	// Forget what fell out of the window: it cannot be returned again.
	cut := f.newest - f.Overlap.Milliseconds()
	for k, ms := range f.seen {
		if ms < cut {
			delete(f.seen, k)
		}
	}
	return out, nil
}
