// Package repository prepares and reads the indexer's fs snapshot
// repository (the snapshot data-safety mode): where it lives (Location,
// PrepareLocation, UnderPathRepo), its state on the node (State), and the
// host changes `siemctl indexer repository prepare` makes: path.repo added
// to opensearch.yml (AddPathRepo: old file kept, symlinks refused, owner
// and mode kept), the directory created for the indexer's user (MakeDir),
// the indexer restarted until it answers (RestartIndexer).
package repository

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
	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/services"
)

// Calls are the indexer's repository calls (path.repo, read, register,
// verify): the repository operations make them, and so do the upgrade's
// snapshot steps.
type Calls interface {
	PathRepo(ctx context.Context) ([]string, error)
	GetRepository(ctx context.Context, name string) (indexer.Repository, error)
	PutFSRepository(ctx context.Context, name, location string) error
	VerifyRepository(ctx context.Context, name string) ([]string, error)
}

// API is what the repository operations ask the indexer.
type API interface {
	Calls
	Snapshots(ctx context.Context, repo string) ([]indexer.SnapshotInfo, error)
	Health(ctx context.Context, hr indexer.HealthRequest) (indexer.Health, error)
}

// Report is the snapshot repository as the indexer and siemctl.yaml see it.
type Report struct {
	Mode       string   `json:"data_safety"`
	PathRepo   []string `json:"path_repo"`
	Repository string   `json:"repository"`
	Registered bool     `json:"registered"`
	Type       string   `json:"type,omitempty"`
	Location   string   `json:"location,omitempty"`
	// SnapshotRate is the registration's max_snapshot_bytes_per_sec ("":
	// the node's default, 40 MB/s).
	SnapshotRate string                 `json:"max_snapshot_bytes_per_sec,omitempty"`
	Verified     bool                   `json:"verified"`
	VerifyError  string                 `json:"verify_error,omitempty"`
	Snapshots    []indexer.SnapshotInfo `json:"snapshots"`
	// Actions are what prepare did.
	Actions []string `json:"actions,omitempty"`
}

// State reads the repository named in c from the indexer: path.repo, the registration, a verification and its snapshots.
func State(ctx context.Context, c *config.Config, api API) (Report, error) {
	rep := Report{Mode: c.Indexer.DataSafety, Repository: c.Indexer.SnapshotRepository, PathRepo: []string{}, Snapshots: []indexer.SnapshotInfo{}}
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
	rep.Registered, rep.Type, rep.Location, rep.SnapshotRate = true, repo.Type, repo.Location, repo.SnapshotRate
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

// Location returns where the fs repository lives: the configured
// location, or a siemctl directory under the first path.repo ("" when the
// node has no path.repo and none is configured).
func Location(c *config.Config, pathRepo []string) string {
	if c.Indexer.SnapshotLocation != "" {
		return filepath.Clean(c.Indexer.SnapshotLocation)
	}
	if len(pathRepo) == 0 {
		return ""
	}
	return filepath.Join(pathRepo[0], "siemctl")
}

// UnderPathRepo reports whether location is one of the path.repo
// directories or below one.
func UnderPathRepo(location string, pathRepo []string) bool {
	for _, p := range pathRepo {
		p = filepath.Clean(p)
		if location == p || strings.HasPrefix(location, p+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// PrepareLocation picks the repository directory and the path.repo entry
// that must cover it.
func PrepareLocation(c *config.Config, flag string, pathRepo []string) (location, repoDir string) {
	switch {
	case flag != "":
		location = filepath.Clean(flag)
	case c.Indexer.SnapshotLocation != "":
		location = filepath.Clean(c.Indexer.SnapshotLocation)
	case len(pathRepo) > 0:
		location = Location(c, pathRepo)
	default:
		location = filepath.Join(filepath.Clean(c.Indexer.DataDir)+"-snapshots", "siemctl")
	}
	if UnderPathRepo(location, pathRepo) {
		return location, ""
	}
	if len(pathRepo) == 0 && flag == "" && c.Indexer.SnapshotLocation == "" {
		return location, filepath.Dir(location)
	}
	return location, location
}

// MissingDir reports whether location is not a directory yet (MakeDir creates it).
func MissingDir(location string) bool {
	fi, err := os.Stat(location)
	return err != nil || !fi.IsDir()
}

var pathRepoLine = regexp.MustCompile(`^path\.repo[ \t]*:(.*)$`)

// AddPathRepo adds dir to path.repo in the opensearch.yml at file: the old
// file is copied into backupDir first, the new one replaces it atomically
// with the old owner and mode. A symlink is refused, never written through.
// It returns the backup's path.
func AddPathRepo(file, dir, backupDir string) (string, error) {
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

// MakeDir creates location (and missing parents) owned by the owner of
// the data directory (the indexer's user); an existing symlink is refused.
func MakeDir(location, dataDir string) error {
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

// RestartIndexer stops the indexer (its processes gone), starts it and
// waits until it answers yellow, all within wait (default 3m), polling the
// processes every poll (default 1s): the services operation with the
// indexer's HTTP as its readiness. It returns how long that took.
func RestartIndexer(ctx context.Context, u services.Units, api API, unit string, wait, poll time.Duration, now func() time.Time) (time.Duration, error) {
	limit := cmp.Or(wait, 3*time.Minute)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	r := &services.Runner{Units: u, ProcessWait: limit, ProcessPoll: cmp.Or(poll, time.Second), Now: now,
		Ready: func(ctx context.Context, _ services.Component) error {
			_, err := api.Health(ctx, indexer.HealthRequest{WaitForStatus: "yellow", Timeout: 5 * time.Second})
			return err
		}}
	comps := []services.Component{{Name: "indexer", Unit: unit, Wait: limit}}
	start := now()
	if _, err := r.Stop(ctx, comps); err != nil {
		return 0, err
	}
	if _, err := r.Start(ctx, comps); err != nil {
		return 0, fmt.Errorf("%w; the old opensearch.yml is in the backup directory", err)
	}
	return now().Sub(start), nil
}

func fileOwner(fi fs.FileInfo) (int, int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
