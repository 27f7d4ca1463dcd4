package indexer

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/repository"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/steps"
)

// RepositoryAPI is what `indexer repository` asks the indexer.
type RepositoryAPI interface {
	steps.SnapshotAPI
	Snapshots(ctx context.Context, repo string) ([]indexer.SnapshotInfo, error)
	Health(ctx context.Context, hr indexer.HealthRequest) (indexer.Health, error)
}

// RepositoryUnits is what `indexer repository prepare` asks systemd to
// restart the indexer (the services operations).
type RepositoryUnits = services.Units

// RepositoryOptions are the inputs of `indexer repository show|prepare`.
type RepositoryOptions struct {
	IO      *output.IOStreams
	Config  func() (*config.Config, error)
	API     func(ctx context.Context) (RepositoryAPI, error)
	Units   func(ctx context.Context) (RepositoryUnits, error)
	Output  string
	Timeout time.Duration
	// Prepare: prepare the repository (else show it).
	Prepare bool
	// prepare: the lock, confirmation and --dry-run policy of every change
	Location string
	Change   cli.Change
	// Wait bounds the indexer restart (default 3m); Poll its polling (1s).
	Wait time.Duration
	Poll time.Duration
	Now  func() time.Time
}

// RepositoryReport is the output of show and prepare.
type RepositoryReport = repository.Report

// NewCmdRepository builds `indexer repository show|prepare`.
func NewCmdRepository(f *cli.Factory, runF func(context.Context, *RepositoryOptions) error) *cobra.Command {
	opts := &RepositoryOptions{IO: f.IO, Config: f.Config, Now: time.Now,
		API: func(ctx context.Context) (RepositoryAPI, error) {
			return f.Indexer(ctx)
		},
		Units: func(ctx context.Context) (RepositoryUnits, error) {
			u, err := f.Units(ctx)
			if err != nil {
				return nil, err
			}
			return u, nil
		}}
	cmd := f.ChangeCommand(&cobra.Command{
		Use:   "repository [show|prepare]",
		Short: "Show or prepare the snapshot repository of indexer.data_safety: snapshot",
		Long: `show (the default) prints the indexer's path.repo, the repository indexer.snapshot_repository
(type, location), whether the node verifies it, and its snapshots.

prepare makes snapshot mode usable, once, outside an upgrade: when path.repo does not cover the
location (--location, else indexer.snapshot_location, else <first path.repo>/siemctl, else
<data_dir>-snapshots/siemctl) it adds the directory to <indexer config_dir>/opensearch.yml (the old
file is kept in <backup_dir>/repository-<time>/, the new one written atomically, never through a
symlink), creates the location owned by the indexer's user, restarts the indexer and waits until it
answers; then it registers the fs repository and verifies it. It takes the host lock, asks for
confirmation on a terminal (--yes in scripts) and --dry-run prints what it would do.

Exit codes: 0 done (or nothing to do), 2 usage, 4 not allowed, 5 indexer unreachable, 6 locked.`,
		Example: `  siemctl indexer repository
  siemctl indexer repository prepare --dry-run
  siemctl indexer repository prepare --location /srv/snapshots/siemctl --yes`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"show", "prepare"},
	}, func(cmd *cobra.Command, args []string, change cli.Change) error {
		opts.Output, opts.Timeout, opts.Change = f.Global.Output, f.Global.Timeout, change
		verb := "show"
		if len(args) == 1 {
			verb = args[0]
		}
		opts.Prepare = verb == "prepare"
		if opts.Location != "" && (!filepath.IsAbs(opts.Location) || filepath.Clean(opts.Location) == "/") {
			return cli.FlagErrorf("--location %q: use an absolute directory path", opts.Location)
		}
		switch verb {
		case "show":
			if opts.Location != "" || change.DryRun {
				return cli.FlagErrorf("--location and --dry-run belong to prepare")
			}
		case "prepare":
		default:
			return cli.FlagErrorf("repository %q: use show or prepare", verb)
		}
		return cli.Run(cmd.Context(), runF, runRepository, opts)
	})
	cmd.Flags().StringVar(&opts.Location, "location", "", "prepare: repository directory (default: indexer.snapshot_location, else <first path.repo>/siemctl)")
	return cmd
}

// runRepository prepares the repository or shows it.
func runRepository(ctx context.Context, opts *RepositoryOptions) error {
	if opts.Prepare {
		return runRepositoryPrepare(ctx, opts)
	}
	return runRepositoryShow(ctx, opts)
}

func runRepositoryShow(ctx context.Context, opts *RepositoryOptions) error {
	c, err := opts.Config()
	if err != nil {
		return err
	}
	ctx, api, cancel, err := cli.Connect(ctx, opts.Timeout, opts.API)
	if err != nil {
		return err
	}
	defer cancel()
	rep, err := repository.State(ctx, c, api)
	if err != nil {
		return err
	}
	return renderRepository(opts, rep)
}

func renderRepository(opts *RepositoryOptions, rep RepositoryReport) error {
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, rep)
	}
	p := opts.IO.Colors()
	pathRepo := p.Yellow("(none: snapshot mode needs it; siemctl indexer repository prepare)")
	if len(rep.PathRepo) > 0 {
		pathRepo = strings.Join(rep.PathRepo, ", ")
	}
	repo := p.Yellow("not registered")
	if rep.Registered {
		repo = rep.Type + " at " + rep.Location + ", snapshots " + snapshotRate(rep.SnapshotRate)
	}
	verified := p.Green("yes")
	switch {
	case !rep.Registered:
		verified = "-"
	case !rep.Verified:
		verified = p.Red("no: " + rep.VerifyError)
	}
	pairs := [][2]string{{"data_safety", rep.Mode}, {"path.repo", pathRepo}, {"repository " + rep.Repository, repo}, {"verified", verified},
		{"snapshots", strconv.Itoa(len(rep.Snapshots))}}
	if err := output.KV(opts.IO.Out, pairs...); err != nil {
		return err
	}
	if len(rep.Snapshots) > 0 {
		fmt.Fprintln(opts.IO.Out)
		t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "SNAPSHOT", "STATE", "INDICES", "SHARDS", "STARTED", "TOOK")
		for _, s := range rep.Snapshots {
			t.Row(s.Name, s.State, strconv.Itoa(len(s.Indices)), fmt.Sprintf("%d/%d", s.ShardsOK, s.ShardsTotal),
				time.UnixMilli(s.StartMillis).UTC().Format(time.RFC3339), (time.Duration(s.DurationMilli) * time.Millisecond).String())
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(rep.Actions) > 0 {
		fmt.Fprintln(opts.IO.ErrOut, "done:")
		for _, a := range rep.Actions {
			fmt.Fprintln(opts.IO.ErrOut, "  "+a)
		}
	}
	return nil
}

func runRepositoryPrepare(ctx context.Context, opts *RepositoryOptions) error {
	c, err := opts.Config()
	if err != nil {
		return err
	}
	api, err := opts.API(ctx)
	if err != nil {
		return err
	}
	qctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
	rep, err := repository.State(qctx, c, api)
	cancel()
	if err != nil {
		return err
	}
	location, addRepo := repository.PrepareLocation(c, opts.Location, rep.PathRepo)
	yml := filepath.Join(c.Indexer.ConfigDir, "opensearch.yml")
	unit := c.Units()["indexer"]
	var plan []string
	if addRepo != "" {
		plan = append(plan, fmt.Sprintf("add %s to path.repo in %s (old file kept in %s/repository-<time>/)", addRepo, yml, c.BackupDir))
	}
	if repository.MissingDir(location) {
		plan = append(plan, "create "+location+" (owner of "+c.Indexer.DataDir+", mode 0750)")
	}
	if addRepo != "" {
		plan = append(plan, "restart "+unit+" (the indexer reads path.repo at start) and wait until it answers")
	}
	// A registration without a snapshot rate copies at the node's default 40 MB/s: registered
	// again, unthrottled (a rate the site set is kept).
	if !rep.Registered || rep.Type != "fs" || filepath.Clean(rep.Location) != location || rep.SnapshotRate == "" {
		plan = append(plan, fmt.Sprintf("PUT /_snapshot/%s {type: fs, location: %s, max_snapshot_bytes_per_sec: %s (unthrottled; the node's default is 40 MB/s)}",
			rep.Repository, location, indexer.UnthrottledSnapshots))
	}
	plan = append(plan, "POST /_snapshot/"+rep.Repository+"/_verify")
	if len(plan) == 1 && rep.Verified && !opts.Change.DryRun {
		rep.Actions = []string{"nothing to do: repository " + rep.Repository + " is registered at " + rep.Location + " and verified"}
		return renderRepository(opts, rep)
	}
	q := "Prepare snapshot repository " + rep.Repository + " at " + location + "?"
	if addRepo != "" {
		q = fmt.Sprintf("Add %s to path.repo in %s and restart %s (the SIEM cannot search meanwhile), then register repository %s?", addRepo, yml, unit, rep.Repository)
	}
	release, proceed, err := opts.Change.Begin(ctx, q, cli.Calls(plan...))
	if !proceed {
		return err
	}
	defer release()
	var done []string
	say := func(s string) {
		done = append(done, s)
		if opts.Output != "json" {
			fmt.Fprintln(opts.IO.ErrOut, s)
		}
	}
	fail := func(err error) error {
		if len(done) > 0 {
			return fmt.Errorf("%w (done so far: %s)", err, strings.Join(done, "; "))
		}
		return err
	}
	if addRepo != "" {
		backup, err := repository.AddPathRepo(yml, addRepo, filepath.Join(c.BackupDir, "repository-"+opts.now().UTC().Format("20060102T150405Z")))
		if err != nil {
			return fail(err)
		}
		say(fmt.Sprintf("added %s to path.repo in %s (old file: %s)", addRepo, yml, backup))
	}
	if err := repository.MakeDir(location, c.Indexer.DataDir); err != nil {
		return fail(err)
	}
	say("directory " + location + " ready (owner of " + c.Indexer.DataDir + ")")
	if addRepo != "" {
		u, err := opts.Units(ctx)
		if err != nil {
			return fail(err)
		}
		took, err := repository.RestartIndexer(ctx, u, api, unit, opts.Wait, opts.Poll, opts.now)
		if err != nil {
			return fail(err)
		}
		say(fmt.Sprintf("restarted %s; it answers again after %s", unit, took.Round(time.Millisecond)))
	}
	qctx, cancel = cli.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := api.PutFSRepository(qctx, rep.Repository, location); err != nil {
		return fail(fmt.Errorf("register repository %s: %w", rep.Repository, err))
	}
	if _, err := api.VerifyRepository(qctx, rep.Repository); err != nil {
		return fail(fmt.Errorf("repository %s registered at %s but does not verify: %w", rep.Repository, location, err))
	}
	say("repository " + rep.Repository + " registered at " + location + " and verified")
	rep, err = repository.State(qctx, c, api)
	if err != nil {
		return fail(err)
	}
	rep.Actions = done
	if err := renderRepository(opts, rep); err != nil {
		return err
	}
	if m := c.Indexer.DataSafety; m != config.DataSafetySnapshot && m != config.DataSafetyAuto && opts.Output != "json" {
		fmt.Fprintf(opts.IO.ErrOut, "indexer.data_safety is %s: the upgrade uses the repository once it is auto or snapshot (siemctl.yaml or SIEMCTL_INDEXER_DATA_SAFETY=auto)\n", m)
	}
	return nil
}

func (o *RepositoryOptions) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// snapshotRate says a registration's max_snapshot_bytes_per_sec: a zero
// in any unit (0, 0b, 0mb, …) is no limit.
func snapshotRate(r string) string {
	switch {
	case r == "":
		return "at the node's default 40 MB/s (prepare lifts it)"
	case strings.TrimRight(strings.ToLower(r), "bkmgtp") == "0":
		return "unthrottled"
	}
	return "at most " + r + "/s"
}
