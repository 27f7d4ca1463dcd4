package steps

// Data safety modes (config indexer.data_safety): how the upgrade secures the
// data an OpenSearch node cannot take back after a downgrade.
//
//   - copy: backup.indexer_data copies the data directory while the indexer is
//     stopped; restore.indexer_data copies it back (backup.go).
//   - snapshot: indexer.snapshot_take takes an OpenSearch snapshot of the alert
//     indices and the global state after the flush, while the old version still
//     runs; backup.indexer_data only records the mode. On rollback
//     restore.indexer_data sets the new version's data directory aside (kept)
//     and leaves an empty one, the old indexer starts on it, and
//     restore.indexer_snapshot re-initialises security from the run's backup,
//     puts back the persistent cluster settings the take recorded (the
//     restore cannot bring the global state back) and restores the
//     snapshot's alert indices.
//   - command: backup.indexer_data runs the site's take hook (LVM, ZFS, btrfs,
//     hypervisor API) with the indexer stopped; restore.indexer_data runs the
//     restore hook. Both get the run id and the data path in the environment;
//     their output is recorded in the journal.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/repository"
)

// SnapshotAPI is the snapshot-repository part of *indexer.Client (the kinds
// reach it through Deps.Indexer).
type SnapshotAPI interface {
	repository.Calls
	CreateSnapshot(ctx context.Context, sr indexer.SnapshotRequest) error
	SnapshotStatus(ctx context.Context, repo, name string) (indexer.SnapshotProgress, error)
	GetSnapshot(ctx context.Context, repo, name string) (indexer.SnapshotInfo, error)
	RestoreSnapshot(ctx context.Context, rr indexer.RestoreRequest) error
}

// DataSnapshot is the snapshot a run took (run data backups.indexer_snapshot).
type DataSnapshot struct {
	Repository       string   `json:"repository"`
	Location         string   `json:"location"`
	Name             string   `json:"name"`
	UUID             string   `json:"uuid"`
	Version          string   `json:"version"`
	Indices          []string `json:"indices"`
	Shards           int      `json:"shards"`
	IncrementalBytes int64    `json:"incremental_bytes"`
	TotalBytes       int64    `json:"total_bytes"`
	TookMillis       int64    `json:"took_ms"`
	// Persistent: the site's persistent cluster settings when the snapshot was taken (flat;
	// without the ones the run changes itself and archived.*), put back by the restore.
	Persistent map[string]string `json:"persistent_settings,omitempty"`
}

// DataHookRun is what a command-mode hook did (run data backups.indexer_data_hook).
type DataHookRun struct {
	Argv     []string `json:"argv"`
	ExitCode int      `json:"exit_code"`
	Output   string   `json:"output"`
}

func (d *Deps) snapshots() (SnapshotAPI, error) {
	return clientset.As[SnapshotAPI](d.Indexer).Need("indexer")
}

// dataSafety is the configured mode (auto when unset).
func dataSafety(c *config.Config) string {
	if c == nil || c.Indexer.DataSafety == "" {
		return config.DataSafetyAuto
	}
	return c.Indexer.DataSafety
}

// runMode is the mode this run uses: the one it recorded (gate.data_safety
// resolves auto and records it), else the configured one; auto not yet
// resolved is resolved now (snapshot when the repository is usable or can
// be registered, else copy) and recorded, so every later step and the
// rollback agree.
func runMode(ctx context.Context, env Env, d *Deps) (string, error) {
	b, err := backups(env)
	if err != nil {
		return "", err
	}
	if b.DataSafety != "" {
		return b.DataSafety, nil
	}
	m := dataSafety(d.Config)
	if m != config.DataSafetyAuto {
		return m, nil
	}
	mode, why := config.DataSafetySnapshot, "indexer.data_safety auto: the snapshot repository is usable"
	if _, _, err := snapshotReady(ctx, d, false); err != nil {
		mode, why = config.DataSafetyCopy, "indexer.data_safety auto: no usable snapshot repository ("+err.Error()+")"
	}
	return mode, setBackups(env, func(b *Backups) { b.DataSafety, b.DataSafetyWhy = mode, why })
}

// SnapshotName is the snapshot a run takes: derived from the run id.
func SnapshotName(runID string) string {
	return "siemctl-" + strings.ToLower(runID)
}

// alertsPattern is the index pattern of the alert indices.
func alertsPattern(c *config.Config) string { return c.Indexer.AlertsIndexPrefix + "*" }

// PrepareCommand is the command that prepares the snapshot repository.
const PrepareCommand = "siemctl indexer repository prepare"

// snapshotReady checks the repository is usable: path.repo covers it, it is
// registered as fs at that location, and the node verifies it. A
// repository not registered yet whose location (indexer.snapshot_location,
// else <first path.repo>/siemctl) path.repo covers is usable too: with
// register it is registered now, without it the result says pending. The
// error names the prepare command and how to add path.repo.
func snapshotReady(ctx context.Context, d *Deps, register bool) (repo indexer.Repository, pending bool, err error) {
	sa, err := d.snapshots()
	if err != nil {
		return indexer.Repository{}, false, err
	}
	name := d.Config.Indexer.SnapshotRepository
	pr, err := sa.PathRepo(ctx)
	if err != nil {
		return indexer.Repository{}, false, err
	}
	if len(pr) == 0 {
		return indexer.Repository{}, false, fmt.Errorf("the indexer has no path.repo: snapshot mode needs a file-system repository; run %s (it adds path.repo to opensearch.yml and restarts the indexer once), or add `path.repo: [<dir>]` to <indexer config_dir>/opensearch.yml yourself and restart it", PrepareCommand)
	}
	repo, err = sa.GetRepository(ctx, name)
	if errors.Is(err, indexer.ErrRepositoryMissing) {
		loc := repository.Location(d.Config, pr)
		if !repository.UnderPathRepo(loc, pr) {
			return repo, false, fmt.Errorf("snapshot repository %q is not registered and its location %s is not under path.repo %s; run %s", name, loc, strings.Join(pr, ", "), PrepareCommand)
		}
		repo = indexer.Repository{Name: name, Type: "fs", Location: loc}
		if !register {
			return repo, true, nil
		}
		if err := sa.PutFSRepository(ctx, name, loc); err != nil {
			return repo, false, fmt.Errorf("register snapshot repository %q at %s: %w", name, loc, err)
		}
	} else if err != nil {
		return repo, false, err
	}
	if repo.Type != "fs" || !repository.UnderPathRepo(filepath.Clean(repo.Location), pr) {
		return repo, false, fmt.Errorf("snapshot repository %q is %s at %q, not an fs repository under path.repo %s; run %s", name, repo.Type, repo.Location, strings.Join(pr, ", "), PrepareCommand)
	}
	if _, err := sa.VerifyRepository(ctx, name); err != nil {
		return repo, false, fmt.Errorf("snapshot repository %q does not verify: %w", name, err)
	}
	return repo, false, nil
}
