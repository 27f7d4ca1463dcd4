package indexer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
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

// RepositoryReport is the output of show and prepare.
type RepositoryReport struct {
	Mode        string                 `json:"data_safety"`
	PathRepo    []string               `json:"path_repo"`
	Repository  string                 `json:"repository"`
	Registered  bool                   `json:"registered"`
	Type        string                 `json:"type,omitempty"`
	Location    string                 `json:"location,omitempty"`
	Verified    bool                   `json:"verified"`
	VerifyError string                 `json:"verify_error,omitempty"`
	Snapshots   []indexer.SnapshotInfo `json:"snapshots"`
	// Actions are what prepare did.
	Actions []string `json:"actions,omitempty"`
}

func repositoryState(ctx context.Context, c *config.Config, api RepositoryAPI) (RepositoryReport, error) {
	rep := RepositoryReport{Mode: c.Indexer.DataSafety, Repository: c.Indexer.SnapshotRepository, PathRepo: []string{}, Snapshots: []indexer.SnapshotInfo{}}
	pr, err := api.PathRepo(ctx)
	if err != nil {
		return rep, err
	}
	rep.PathRepo = append(rep.PathRepo, pr...)
	repo, err := api.GetRepository(ctx, rep.Repository)
	if errors.Is(err, indexer.ErrRepositoryMissing) {
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	rep.Registered, rep.Type, rep.Location = true, repo.Type, repo.Location
	if _, err := api.VerifyRepository(ctx, rep.Repository); err != nil {
		rep.VerifyError = err.Error()
	} else {
		rep.Verified = true
	}
	if snaps, err := api.Snapshots(ctx, rep.Repository); err == nil {
		rep.Snapshots = snaps
	} else if rep.VerifyError == "" {
		return rep, err
	}
	return rep, nil
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
	rep, err := repositoryState(ctx, c, api)
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
		repo = rep.Type + " at " + rep.Location
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

// prepareLocation picks the repository directory and the path.repo entry
// that must cover it.
func prepareLocation(c *config.Config, flag string, pathRepo []string) (location, repoDir string) {
	switch {
	case flag != "":
		location = filepath.Clean(flag)
	case c.Indexer.SnapshotLocation != "":
		location = filepath.Clean(c.Indexer.SnapshotLocation)
	case len(pathRepo) > 0:
		location = steps.RepositoryLocation(c, pathRepo)
	default:
		location = filepath.Join(filepath.Clean(c.Indexer.DataDir)+"-snapshots", "siemctl")
	}
	if steps.UnderPathRepo(location, pathRepo) {
		return location, ""
	}
	if len(pathRepo) == 0 && flag == "" && c.Indexer.SnapshotLocation == "" {
		return location, filepath.Dir(location)
	}
	return location, location
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
	rep, err := repositoryState(qctx, c, api)
	cancel()
	if err != nil {
		return err
	}
	location, addRepo := prepareLocation(c, opts.Location, rep.PathRepo)
	yml := filepath.Join(c.Indexer.ConfigDir, "opensearch.yml")
	unit := c.Units()["indexer"]
	var plan []string
	if addRepo != "" {
		plan = append(plan, fmt.Sprintf("add %s to path.repo in %s (old file kept in %s/repository-<time>/)", addRepo, yml, c.BackupDir))
	}
	if fi, err := os.Stat(location); err != nil || !fi.IsDir() {
		plan = append(plan, "create "+location+" (owner of "+c.Indexer.DataDir+", mode 0750)")
	}
	if addRepo != "" {
		plan = append(plan, "restart "+unit+" (the indexer reads path.repo at start) and wait until it answers")
	}
	if !rep.Registered || rep.Type != "fs" || filepath.Clean(rep.Location) != location {
		plan = append(plan, fmt.Sprintf("PUT /_snapshot/%s {type: fs, location: %s}", rep.Repository, location))
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
		backup, err := addPathRepo(yml, addRepo, filepath.Join(c.BackupDir, "repository-"+opts.now().UTC().Format("20060102T150405Z")))
		if err != nil {
			return fail(err)
		}
		say(fmt.Sprintf("added %s to path.repo in %s (old file: %s)", addRepo, yml, backup))
	}
	if err := makeRepoDir(location, c.Indexer.DataDir); err != nil {
		return fail(err)
	}
	say("directory " + location + " ready (owner of " + c.Indexer.DataDir + ")")
	if addRepo != "" {
		u, err := opts.Units(ctx)
		if err != nil {
			return fail(err)
		}
		took, err := restartIndexer(ctx, opts, u, api, unit)
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
	rep, err = repositoryState(qctx, c, api)
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

var pathRepoLine = regexp.MustCompile(`^path\.repo[ \t]*:(.*)$`)

// addPathRepo adds dir to path.repo in the opensearch.yml at file: the old
// file is copied into backupDir first, the new one replaces it atomically
// with the old owner and mode. A symlink is refused, never written through.
// It returns the backup's path.
func addPathRepo(file, dir, backupDir string) (string, error) {
	fi, err := os.Lstat(file)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (a symlink is not written through): add path.repo: [%q] by hand", file, dir)
	}
	old, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	updated, err := withPathRepo(old, dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if err := os.MkdirAll(backupDir, 0o700); err != nil {
		return "", err
	}
	backup := filepath.Join(backupDir, filepath.Base(file))
	if err := os.WriteFile(backup, old, 0o600); err != nil {
		return "", err
	}
	pf, err := renameio.NewPendingFile(file, renameio.WithPermissions(fi.Mode().Perm()))
	if err != nil {
		return "", err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(updated); err != nil {
		return "", err
	}
	if uid, gid, ok := fileOwner(fi); ok {
		if err := pf.Chown(uid, gid); err != nil {
			return "", err
		}
	}
	if err := pf.Chmod(fi.Mode().Perm()); err != nil {
		return "", err
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return "", err
	}
	return backup, nil
}

// withPathRepo returns the YAML with dir added to a top-level flat
// path.repo key (created at the end when absent). Other layouts (a nested
// path: map) are left to the operator.
func withPathRepo(src []byte, dir string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if p, ok := doc["path"].(map[string]any); ok && p["repo"] != nil {
		return nil, fmt.Errorf("path.repo is set in a nested path: block; add %q to it by hand", dir)
	}
	var have []string
	lines := strings.Split(string(src), "\n")
	at := -1
	for i, l := range lines {
		if pathRepoLine.MatchString(l) {
			at = i
		}
	}
	quoted := strconv.Quote(dir)
	switch {
	case at < 0:
		out := strings.TrimRight(string(src), "\n") + "\n\n# added by siemctl indexer repository prepare: snapshot repositories\npath.repo: [" + quoted + "]\n"
		return checkPathRepo([]byte(out), dir)
	default:
		v := doc["path.repo"]
		switch t := v.(type) {
		case string:
			have = strings.Split(t, ",")
		case []any:
			for _, e := range t {
				have = append(have, fmt.Sprint(e))
			}
		case nil:
		default:
			return nil, fmt.Errorf("path.repo has an unexpected form (%T); add %q by hand", v, dir)
		}
		rest := strings.TrimSpace(pathRepoLine.FindStringSubmatch(lines[at])[1])
		if rest == "" && at+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[at+1]), "-") {
			// block list: drop its items, rewritten as one flow list
			j := at + 1
			for j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "-") {
				j++
			}
			lines = append(lines[:at+1], lines[j:]...)
		}
		var items []string
		for _, h := range have {
			if h = strings.TrimSpace(h); h != "" && !slices.Contains(items, strconv.Quote(h)) {
				items = append(items, strconv.Quote(h))
			}
		}
		items = append(items, quoted)
		lines[at] = "path.repo: [" + strings.Join(items, ", ") + "]"
		return checkPathRepo([]byte(strings.Join(lines, "\n")), dir)
	}
}

func checkPathRepo(b []byte, dir string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("the edited file would not be valid YAML: %w", err)
	}
	list, _ := doc["path.repo"].([]any)
	for _, e := range list {
		if fmt.Sprint(e) == dir {
			return b, nil
		}
	}
	return nil, fmt.Errorf("the edited file does not list %q in path.repo; add it by hand", dir)
}

// makeRepoDir creates location (and missing parents) owned by the owner of
// the data directory (the indexer's user); an existing symlink is refused.
func makeRepoDir(location, dataDir string) error {
	di, err := os.Stat(dataDir)
	if err != nil {
		return fmt.Errorf("indexer data directory: %w", err)
	}
	uid, gid, _ := fileOwner(di)
	var create []string
	for p := location; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err == nil {
			if p == location && !fi.IsDir() {
				return fmt.Errorf("%s exists and is not a directory (a symlink is not followed)", p)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		create = append(create, p)
		if p == "/" {
			break
		}
	}
	for i := len(create) - 1; i >= 0; i-- {
		if err := os.Mkdir(create[i], 0o750); err != nil {
			return err
		}
		if err := os.Lchown(create[i], uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", create[i], err)
		}
	}
	if len(create) == 0 {
		fi, err := os.Stat(location)
		if err != nil {
			return err
		}
		if u, _, ok := fileOwner(fi); ok && u != uid {
			return fmt.Errorf("%s belongs to uid %d, the indexer runs as uid %d: chown it or choose another --location", location, u, uid)
		}
	}
	return nil
}

// restartIndexer stops the indexer (its processes gone), starts it and
// waits until it answers yellow, all within opts.Wait: the services
// operation with the indexer's HTTP as its readiness.
func restartIndexer(ctx context.Context, opts *RepositoryOptions, u RepositoryUnits, api RepositoryAPI, unit string) (time.Duration, error) {
	limit := cmp.Or(opts.Wait, 3*time.Minute)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	r := &services.Runner{Units: u, ProcessWait: limit, ProcessPoll: cmp.Or(opts.Poll, time.Second), Now: opts.now,
		Ready: func(ctx context.Context, _ services.Component) error {
			_, err := api.Health(ctx, indexer.HealthRequest{WaitForStatus: "yellow", Timeout: 5 * time.Second})
			return err
		}}
	comps := []services.Component{{Name: "indexer", Unit: unit, Wait: limit}}
	start := opts.now()
	if _, err := r.Stop(ctx, comps); err != nil {
		return 0, err
	}
	if _, err := r.Start(ctx, comps); err != nil {
		return 0, fmt.Errorf("%w; the old opensearch.yml is in the backup directory", err)
	}
	return opts.now().Sub(start), nil
}

func fileOwner(fi fs.FileInfo) (int, int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
