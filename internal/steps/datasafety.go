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
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/repository"
	"github.com/siemctl/siemctl/internal/output"
)

// SnapshotAPI is the snapshot-repository part of *indexer.Client (the kinds
// reach it through Deps.Indexer).
type SnapshotAPI interface {
	PathRepo(ctx context.Context) ([]string, error)
	GetRepository(ctx context.Context, name string) (indexer.Repository, error)
	PutFSRepository(ctx context.Context, name, location string) error
	VerifyRepository(ctx context.Context, name string) ([]string, error)
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
	ix, err := d.indexer()
	if err != nil {
		return nil, err
	}
	s, ok := ix.(SnapshotAPI)
	if !ok {
		return nil, fmt.Errorf("indexer client %T cannot take snapshots", ix)
	}
	return s, nil
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

// --- indexer.snapshot_take / restore.indexer_snapshot -----------------------------

func dataSafetyKinds(pl *Planning) []Kind {
	return []Kind{
		gateDataSafetyKind(pl),
		engine.Define(Spec[*noParams]{Name: "indexer.snapshot_take", Run: runSnapshotTake,
			New: simple(pl, func(pl *Planning) []string {
				repo, pattern := "<indexer.snapshot_repository>", "<alerts_index_prefix>*"
				first := "GET /_nodes/settings (path.repo), GET /_snapshot/" + repo + " (not registered but under path.repo: PUT /_snapshot/" + repo + " {type: fs}), POST /_snapshot/" + repo + "/_verify"
				if c := pl.cfg(); c != nil {
					repo, pattern = c.Indexer.SnapshotRepository, alertsPattern(c)
					switch dataSafety(c) {
					case config.DataSafetySnapshot:
					case config.DataSafetyAuto:
						first = "indexer.data_safety auto: only when preflight/data-safety chose snapshot; " + first
					default:
						return []string{"skipped: indexer.data_safety is " + dataSafety(c) + " (snapshot mode only)"}
					}
				}
				return []string{first,
					"GET /_cluster/settings: record the persistent settings (not " + shortKey(indexer.KeyAllocationEnable) + ", " + shortKeys(recoverySettings) + " nor archived.*: put back by their own steps, or obsolete)",
					"PUT /_snapshot/" + repo + "/siemctl-<run-id> {indices: " + pattern + ", include_global_state: true}",
					"GET /_snapshot/" + repo + "/siemctl-<run-id>/_status until done (incremental bytes, percent)",
					"GET /_snapshot/" + repo + "/siemctl-<run-id>: state SUCCESS, every shard, every alert index listed"}
			}),
			Skip: func(ctx context.Context, env Env, _ *noParams) (string, bool, error) {
				d := env.Deps()
				m, err := runMode(ctx, env, d)
				if err != nil {
					return "", false, err
				}
				if m != config.DataSafetySnapshot {
					return "data safety is " + m + ": no snapshot (backup.indexer_data secures the data)", true, nil
				}
				ok, msg, err := snapshotTaken(ctx, env, d)
				if err != nil || !ok {
					return "", false, err
				}
				return msg, true, nil
			},
			Verify: func(ctx context.Context, env Env, _ *noParams) (bool, error) {
				ok, _, err := snapshotTaken(ctx, env, env.Deps())
				return ok, err
			}}),
		engine.Define(Spec[*restoreSnapshotParams]{Name: "restore.indexer_snapshot", Run: runSnapshotRestore,
			New: func() *restoreSnapshotParams { return &restoreSnapshotParams{pl: pl} },
			Skip: func(ctx context.Context, env Env, _ *restoreSnapshotParams) (string, bool, error) {
				return snapshotRestoreSkip(ctx, env, env.Deps())
			},
			Budget: func(ctx context.Context, env Env, p *restoreSnapshotParams) (time.Duration, string, error) {
				return p.budget(ctx, env, true)
			}}),
		recoveriesKind(pl),
	}
}

// restoreSnapshotParams are restore.indexer_snapshot's: recoveries raises the recovery settings
// of the empty cluster before the restore (recovery.go), timeout_per_primary gives the step time
// for each shard of the snapshot.
type restoreSnapshotParams struct {
	pl                 *Planning
	Recoveries         int `yaml:"recoveries"`
	primariesAllowance `yaml:",inline"`
}

func (p *restoreSnapshotParams) Validate() error {
	if p.Recoveries < 0 || p.Recoveries > 1000 {
		return fmt.Errorf("recoveries %d: want 1 to 1000 (0: leave the settings)", p.Recoveries)
	}
	return p.validate()
}

func (p *restoreSnapshotParams) raise() map[string]int {
	return map[string]int{keyInitialPrimaries: p.Recoveries, keyConcurrentRecoveries: p.Recoveries}
}

func (p *restoreSnapshotParams) Describe() []string {
	repo := "<indexer.snapshot_repository>"
	if c := p.pl.cfg(); c != nil {
		repo = c.Indexer.SnapshotRepository
		if m := dataSafety(c); m != config.DataSafetySnapshot && m != config.DataSafetyAuto {
			return []string{"skipped: indexer.data_safety is " + m + " (snapshot mode only)"}
		}
	}
	lines := []string{"wait until the (old) indexer answers on its empty data directory",
		"security not initialised: copy <backup>/" + securityDir + " into <indexer config_dir>/opensearch-security; " + strings.Join(securityInit(p.pl), " ") + " (no options)",
		"PUT /_snapshot/" + repo + " {type: fs, location: <recorded>} (the new cluster state does not know it)",
		"PUT /_template/<shipper template> from the shipper's template file (the empty cluster has none)",
		"shipper setup --pipelines (the ingest pipelines are global state too)",
		"PUT /_cluster/settings {persistent: <the settings recorded before the upgrade that differ>} (global state too), read back"}
	if p.Recoveries > 0 {
		lines = append(lines, describeRaise(p.raise(), "the restore's primaries come back that many at a time instead of 4")...)
	}
	return p.describe(append(lines,
		"POST /_snapshot/"+repo+"/siemctl-<run-id>/_restore {indices: <the snapshot's alert indices>, include_global_state: false} (no security index, no global state: the security plugin forbids both)",
		"GET /_cluster/health?wait_for_status=yellow until every restored index is allocated"))
}

// snapshotTaken: the run recorded a snapshot and the repository still
// lists it complete.
func snapshotTaken(ctx context.Context, env Env, d *Deps) (bool, string, error) {
	b, err := backups(env)
	if err != nil || b.IndexerSnapshot == nil {
		return false, "", err
	}
	sa, err := d.snapshots()
	if err != nil {
		return false, "", err
	}
	info, err := sa.GetSnapshot(ctx, b.IndexerSnapshot.Repository, b.IndexerSnapshot.Name)
	if err != nil || !info.Complete() {
		return false, "", nil
	}
	return true, fmt.Sprintf("snapshot %s/%s already taken (%d indices, %d shards, SUCCESS)", info.Name, b.IndexerSnapshot.Repository, len(info.Indices), info.ShardsTotal), nil
}

// alertIndices lists the alert indices the node holds now (from _cat/shards).
func alertIndices(ctx context.Context, d *Deps) ([]string, error) {
	ix, err := d.indexer()
	if err != nil {
		return nil, err
	}
	shards, err := ix.CatShards(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range shards {
		if strings.HasPrefix(s.Index, d.Config.Indexer.AlertsIndexPrefix) && !slices.Contains(out, s.Index) {
			out = append(out, s.Index)
		}
	}
	sort.Strings(out)
	return out, nil
}

func runSnapshotTake(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	repo, _, err := snapshotReady(ctx, d, true)
	if err != nil {
		return engine.Outcome{}, err
	}
	sa, _ := d.snapshots()
	want, err := alertIndices(ctx, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	name := SnapshotName(env.RunID())
	rname := d.Config.Indexer.SnapshotRepository
	start := d.now()
	// A snapshot of this name from an interrupted attempt is followed, not retaken.
	if _, err := sa.GetSnapshot(ctx, rname, name); errors.Is(err, indexer.ErrSnapshotMissing) {
		if err := sa.CreateSnapshot(ctx, indexer.SnapshotRequest{Repository: rname, Name: name, Indices: []string{alertsPattern(d.Config)}, IncludeGlobalState: true}); err != nil {
			return engine.Outcome{}, fmt.Errorf("start snapshot %s: %w", name, err)
		}
	} else if err != nil {
		return engine.Outcome{}, err
	}
	var (
		prog indexer.SnapshotProgress
		info indexer.SnapshotInfo
	)
	// _status reports the shards done before the snapshot is finalised:
	// the snapshot itself must leave IN_PROGRESS too.
	err = wait(ctx, env, d.poll(), "snapshot "+name, func() (bool, error) {
		p, err := sa.SnapshotStatus(ctx, rname, name)
		if err != nil {
			return false, err
		}
		prog = p
		env.Report(snapshotMeasure("snapshot", p))
		switch p.State {
		case "SUCCESS":
			if info, err = sa.GetSnapshot(ctx, rname, name); err != nil {
				return false, err
			}
			if info.State != "IN_PROGRESS" {
				return true, nil
			}
			env.Waiting("snapshot %s: shards done, finalising", name)
			return false, nil
		case "FAILED", "ABORTED", "PARTIAL":
			return false, fmt.Errorf("snapshot %s ended %s (%d of %d shards failed)", name, p.State, p.ShardsFailed, p.ShardsTotal)
		}
		env.Waiting("snapshot %s: %.0f%% of %s incremental, %d/%d shards", name, p.Percent(), output.Bytes(p.IncrementalBytes), p.ShardsDone, p.ShardsTotal)
		return false, nil
	})
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := verifySnapshot(info, want); err != nil {
		return engine.Outcome{}, err
	}
	persistent, err := siteSettings(ctx, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	rec := &DataSnapshot{Repository: rname, Location: repo.Location, Name: name, UUID: info.UUID, Version: info.Version, Indices: info.Indices,
		Shards: info.ShardsTotal, IncrementalBytes: prog.IncrementalBytes, TotalBytes: prog.TotalBytes, TookMillis: d.now().Sub(start).Milliseconds(),
		Persistent: persistent}
	if err := setBackups(env, func(b *Backups) { b.IndexerSnapshot = rec }); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("snapshot %s/%s SUCCESS: %d indices, %d shards, %s copied (incremental) of %s, in %s",
		rname, name, len(info.Indices), info.ShardsTotal, output.Bytes(prog.IncrementalBytes), output.Bytes(prog.TotalBytes), d.now().Sub(start).Round(time.Millisecond)),
		Data: map[string]any{"snapshot": name, "repository": rname, "indices": len(info.Indices), "shards": info.ShardsTotal,
			"incremental_bytes": prog.IncrementalBytes, "total_bytes": prog.TotalBytes}}, nil
}

// verifySnapshot: SUCCESS, every shard, every alert index listed.
func verifySnapshot(info indexer.SnapshotInfo, want []string) error {
	if !info.Complete() {
		msg := fmt.Sprintf("snapshot %s is %s with %d/%d shards (%d failed)", info.Name, info.State, info.ShardsOK, info.ShardsTotal, info.ShardsFailed)
		if len(info.Failures) > 0 {
			msg += ": " + strings.Join(info.Failures, "; ")
		}
		return errors.New(msg)
	}
	var missing []string
	for _, ix := range want {
		if !slices.Contains(info.Indices, ix) {
			missing = append(missing, ix)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("snapshot %s does not list %d alert indices: %s", info.Name, len(missing), strings.Join(firstN(missing, 5), ", "))
	}
	return nil
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("… (%d more)", len(s)-n))
}

func snapshotRestoreSkip(ctx context.Context, env Env, d *Deps) (string, bool, error) {
	b, err := backups(env)
	if err != nil {
		return "", false, err
	}
	m := cmp.Or(b.Mode(), dataSafety(d.Config))
	if m != config.DataSafetySnapshot {
		return "data safety is " + m + ": restore.indexer_data brought the data back", true, nil
	}
	if b.IndexerDataAside == "" {
		return "the data directory was not replaced (no indexer data set aside): the indexer still has its own data", true, nil
	}
	if b.IndexerSnapshot == nil {
		return "", false, errors.New("the run recorded no snapshot (run data backups.indexer_snapshot): nothing to restore the alert indices from")
	}
	ix, err := d.indexer()
	if err != nil {
		return "", false, err
	}
	shards, err := ix.CatShards(ctx)
	if err != nil {
		return "", false, nil // not answering yet: run, which waits
	}
	have := map[string]bool{}
	for _, s := range shards {
		if s.PriRep == "p" && s.State == "STARTED" {
			have[s.Index] = true
		}
	}
	for _, i := range b.IndexerSnapshot.Indices {
		if !have[i] {
			return "", false, nil
		}
	}
	return fmt.Sprintf("all %d indices of snapshot %s are allocated", len(b.IndexerSnapshot.Indices), b.IndexerSnapshot.Name), true, nil
}

func runSnapshotRestore(ctx context.Context, env Env, p *restoreSnapshotParams) (engine.Outcome, error) {
	d, b, err := depsAndBackups(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	rec := b.IndexerSnapshot
	if rec == nil {
		return engine.Outcome{}, errors.New("the run recorded no snapshot (run data backups.indexer_snapshot)")
	}
	sa, err := d.snapshots()
	if err != nil {
		return engine.Outcome{}, err
	}
	ix, _ := d.indexer()
	if err := waitIndexerAnswers(ctx, env, d); err != nil {
		return engine.Outcome{}, err
	}
	var msgs []string
	// On an empty data directory the security index does not exist yet.
	if _, err := ix.Health(ctx, indexer.HealthRequest{}); errors.Is(err, indexer.ErrSecurityNotInitialized) {
		if b.IndexerSecurity == "" {
			return engine.Outcome{}, errors.New("security is not initialised and the run recorded no security backup (run data backups.indexer_security)")
		}
		n, err := installSecurity(b.IndexerSecurity, filepath.Join(d.Config.Indexer.ConfigDir, "opensearch-security"))
		if err != nil {
			return engine.Outcome{}, err
		}
		if _, err := runSecurityApply(ctx, env, nil); err != nil {
			return engine.Outcome{}, fmt.Errorf("re-initialise security: %w", err)
		}
		msgs = append(msgs, fmt.Sprintf("security re-initialised from %s (%d files)", b.IndexerSecurity, n))
	} else if err != nil {
		return engine.Outcome{}, err
	}
	if _, err := sa.GetRepository(ctx, rec.Repository); errors.Is(err, indexer.ErrRepositoryMissing) {
		if err := sa.PutFSRepository(ctx, rec.Repository, rec.Location); err != nil {
			return engine.Outcome{}, fmt.Errorf("register repository %s at %s: %w", rec.Repository, rec.Location, err)
		}
	} else if err != nil {
		return engine.Outcome{}, err
	}
	info, err := sa.GetSnapshot(ctx, rec.Repository, rec.Name)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := verifySnapshot(info, rec.Indices); err != nil {
		return engine.Outcome{}, err
	}
	// Indices the node already holds (a retry) are not restored again.
	have := map[string]bool{}
	shards, err := ix.CatShards(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	for _, s := range shards {
		have[s.Index] = true
	}
	var todo []string
	for _, i := range rec.Indices {
		if !have[i] {
			todo = append(todo, i)
		}
	}
	// …nor the site's persistent settings: put back what the take recorded.
	if msg, err := putBackSettings(ctx, ix, rec.Persistent); err != nil {
		return engine.Outcome{}, err
	} else if msg != "" {
		msgs = append(msgs, msg)
	}
	// The empty cluster has no alerts template: load the one the shipper
	// has on disk (the previous version's by now) before indices appear.
	if c := d.Config.Shipper; c.TemplateName != "" {
		if body, err := os.ReadFile(TemplatePath(c.ConfigDir, c.TemplateName)); err == nil {
			if err := ix.PutLegacyTemplate(ctx, c.TemplateName, body); err != nil {
				return engine.Outcome{}, fmt.Errorf("PUT /_template/%s: %w", c.TemplateName, err)
			}
			msgs = append(msgs, "template "+c.TemplateName+" loaded from "+TemplatePath(c.ConfigDir, c.TemplateName))
		}
	}
	// …nor the shipper's ingest pipelines (global state too).
	sh, err := d.shipper()
	if err != nil {
		return engine.Outcome{}, err
	}
	env.Waiting("loading the shipper's ingest pipelines into the empty cluster")
	if err := sh.SetupPipelines(ctx); err != nil {
		return engine.Outcome{}, fmt.Errorf("shipper pipelines: %w", err)
	}
	msgs = append(msgs, "shipper pipelines loaded")
	start := d.now()
	if len(todo) > 0 && p.Recoveries > 0 {
		out, err := raiseRecoveries(ctx, env, ix, p.raise())
		if err != nil {
			return engine.Outcome{}, err
		}
		msgs = append(msgs, out.Message)
	}
	if len(todo) > 0 {
		// Without the global state: the security plugin refuses to restore
		// it (HTTP 403 "no permissions for []" for admin on 2.11.1).
		if err := sa.RestoreSnapshot(ctx, indexer.RestoreRequest{Repository: rec.Repository, Name: rec.Name, Indices: todo}); err != nil {
			return engine.Outcome{}, fmt.Errorf("restore snapshot %s: %w", rec.Name, err)
		}
	}
	restored := map[string]bool{}
	for _, i := range rec.Indices {
		restored[i] = true
	}
	stop := watchRecovery(ctx, env, d, "restore", alertsPattern(d.Config), false, func(r indexer.ShardRecovery) bool {
		return r.Type == "snapshot" && restored[r.Index]
	})
	defer stop()
	err = wait(ctx, env, d.poll(), "restored indices to be allocated", func() (bool, error) {
		shards, err := ix.CatShards(ctx)
		if err != nil {
			return false, err
		}
		started := map[string]bool{}
		for _, s := range shards {
			if s.PriRep == "p" && s.State == "STARTED" {
				started[s.Index] = true
			}
		}
		n := 0
		for _, i := range rec.Indices {
			if started[i] {
				n++
			}
		}
		if n < len(rec.Indices) {
			env.Waiting("restoring snapshot %s: %d/%d indices allocated", rec.Name, n, len(rec.Indices))
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return engine.Outcome{}, err
	}
	msgs = append(msgs, fmt.Sprintf("restored %d indices from snapshot %s/%s in %s (the new version's data is kept in %s)",
		len(rec.Indices), rec.Repository, rec.Name, d.now().Sub(start).Round(time.Millisecond), b.IndexerDataAside))
	return engine.Outcome{Message: strings.Join(msgs, "; "), Data: map[string]any{"indices": len(rec.Indices), "snapshot": rec.Name}}, nil
}

// siteSetting: a persistent setting the snapshot-mode rollback puts back. Not the ones a run
// changes itself (allocation, the recovery settings: their own steps put them back to what the
// run found), not archived.* (settings the node no longer knows: refused on a PUT).
func siteSetting(k string) bool {
	return k != indexer.KeyAllocationEnable && !slices.Contains(recoverySettings, k) && !strings.HasPrefix(k, "archived.")
}

// siteSettings reads the persistent cluster settings a rollback puts back.
func siteSettings(ctx context.Context, d *Deps) (map[string]string, error) {
	ix, err := d.indexer()
	if err != nil {
		return nil, err
	}
	s, err := ix.Settings(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("record the persistent cluster settings (a rollback puts them back): %w", err)
	}
	out := map[string]string{}
	for k, v := range s.Persistent {
		if siteSetting(k) {
			out[k] = v
		}
	}
	return out, nil
}

// settingValue is a flat setting's value for a PUT: a list setting reads as a JSON array.
func settingValue(v string) any {
	var list []any
	if strings.HasPrefix(v, "[") && json.Unmarshal([]byte(v), &list) == nil {
		return list
	}
	return v
}

// putBackSettings sets the recorded persistent settings that differ on the cluster now and
// reads them back; "" when there was nothing to do.
func putBackSettings(ctx context.Context, ix IndexerAPI, rec map[string]string) (string, error) {
	if len(rec) == 0 {
		return "", nil
	}
	now, err := ix.Settings(ctx, false)
	if err != nil {
		return "", fmt.Errorf("read the persistent cluster settings: %w", err)
	}
	upd := map[string]any{}
	for k, v := range rec {
		if siteSetting(k) && now.Persistent[k] != v {
			upd[k] = settingValue(v)
		}
	}
	if len(upd) == 0 {
		return fmt.Sprintf("the %d persistent settings recorded before the upgrade are in place", len(rec)), nil
	}
	keys := slices.Sorted(maps.Keys(upd))
	if _, err := ix.PutSettings(ctx, indexer.SettingsUpdate{Persistent: upd}); err != nil {
		return "", fmt.Errorf("put back the persistent settings recorded before the upgrade (%s): %w", strings.Join(keys, ", "), err)
	}
	after, err := ix.Settings(ctx, false)
	if err != nil {
		return "", fmt.Errorf("read back the persistent settings put back: %w", err)
	}
	var bad []string
	for _, k := range keys {
		if after.Persistent[k] != rec[k] {
			bad = append(bad, fmt.Sprintf("%s reads %q, recorded %q", k, after.Persistent[k], rec[k]))
		}
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("persistent settings put back do not read back: %s", strings.Join(bad, "; "))
	}
	return fmt.Sprintf("%d persistent settings put back as recorded before the upgrade: %s", len(keys), strings.Join(keys, ", ")), nil
}

// --- backup.indexer_data / restore.indexer_data per mode ---------------------------

func backupDataDescribe(pl *Planning) []string {
	c := pl.cfg()
	snap := "indexer.data_safety snapshot: no copy; record the snapshot indexer/snapshot took (the data directory stays as it is)"
	switch dataSafety(c) {
	case config.DataSafetySnapshot:
		return []string{snap}
	case config.DataSafetyCommand:
		return []string{"check " + pl.unit("indexer") + " is stopped",
			"run " + strings.Join(c.Indexer.DataHookTake, " ") + " with SIEMCTL_RUN_ID, SIEMCTL_DATA_DIR=" + c.Indexer.DataDir + " (output recorded; non-zero exit fails the step)"}
	case config.DataSafetyAuto:
		return append([]string{"indexer.data_safety auto: the mode preflight/data-safety chose", "snapshot: " + snap, "copy:"}, copyDescribe(pl)...)
	}
	return copyDescribe(pl)
}

func backupIndexerData(ctx context.Context, env Env, p *noParams) (engine.Outcome, error) {
	d := env.Deps()
	mode, err := runMode(ctx, env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	switch mode {
	case config.DataSafetySnapshot:
		b, err := backups(env)
		if err != nil {
			return engine.Outcome{}, err
		}
		if b.IndexerSnapshot == nil {
			return engine.Outcome{}, errors.New("indexer.data_safety is snapshot but the run recorded no snapshot (step indexer/snapshot must run first)")
		}
		if err := setBackups(env, func(b *Backups) { b.IndexerDataMode = mode }); err != nil {
			return engine.Outcome{}, err
		}
		return engine.Outcome{Message: fmt.Sprintf("data safety by snapshot %s/%s (%d indices); no copy of %s", b.IndexerSnapshot.Repository, b.IndexerSnapshot.Name, len(b.IndexerSnapshot.Indices), d.Config.Indexer.DataDir)}, nil
	case config.DataSafetyCommand:
		if err := requireStopped(ctx, d, "indexer", dataCopied); err != nil {
			return engine.Outcome{}, err
		}
		run, err := runDataHook(ctx, env, d, d.Config.Indexer.DataHookTake)
		if serr := setBackups(env, func(b *Backups) { b.IndexerDataMode, b.IndexerDataHook = mode, &run }); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return engine.Outcome{}, fmt.Errorf("data hook take: %w", err)
		}
		return engine.Outcome{Message: "data hook take: " + hookSummary(run), Data: map[string]any{"argv": run.Argv, "exit_code": run.ExitCode, "output": run.Output}}, nil
	}
	if err := setBackups(env, func(b *Backups) { b.IndexerDataMode = config.DataSafetyCopy }); err != nil {
		return engine.Outcome{}, err
	}
	return runBackupData(ctx, env, p)
}

// backupDataDone is the Skip/Verify of backup.indexer_data in every mode.
func backupDataDone(ctx context.Context, env Env) (bool, string, error) {
	d, b, err := depsAndBackups(env)
	if err != nil {
		return false, "", err
	}
	mode, err := runMode(ctx, env, d)
	if err != nil {
		return false, "", err
	}
	switch mode {
	case config.DataSafetySnapshot:
		if b.IndexerDataMode == config.DataSafetySnapshot && b.IndexerSnapshot != nil {
			return true, "data safety by snapshot " + b.IndexerSnapshot.Name + " (recorded)", nil
		}
		return false, "", nil
	case config.DataSafetyCommand:
		if b.IndexerDataHook != nil && b.IndexerDataHook.ExitCode == 0 && b.IndexerDataMode == config.DataSafetyCommand {
			return true, "data hook take already succeeded", nil
		}
		return false, "", nil
	}
	return dataBackupOK(ctx, env)
}

// restoreMode is the mode the upgrade run used (recorded), else the config's.
func restoreMode(env Env, d *Deps) (Backups, string, error) {
	b, err := backups(env)
	if err != nil {
		return b, "", err
	}
	if m := b.Mode(); m != "" {
		return b, m, nil
	}
	if m := dataSafety(d.Config); m != config.DataSafetyAuto {
		return b, m, nil
	}
	return b, config.DataSafetyCopy, nil // nothing secured yet: copy mode's restore refuses without a copy
}

func restoreDataDescribe(pl *Planning) []string {
	c := pl.cfg()
	dd := pl.dataDir()
	snap := []string{"systemctl stop " + pl.unit("indexer") + " (if running)",
		"rename " + dd + " → " + dd + ".siemctl-<run-id> (the new version's data, kept; " + PruneCommand + " removes it later); create an empty " + dd + " (owner and mode kept)",
		"the old indexer then starts empty; restore.indexer_snapshot brings the alert indices back"}
	switch dataSafety(c) {
	case config.DataSafetySnapshot:
		return snap
	case config.DataSafetyAuto:
		return append(append([]string{"in the mode the upgrade run chose (indexer.data_safety auto)", "snapshot:"}, snap...), append([]string{"copy:"}, copyRestoreDescribe(pl)...)...)
	case config.DataSafetyCommand:
		return []string{"systemctl stop " + pl.unit("indexer") + " (if running)",
			"run " + strings.Join(c.Indexer.DataHookRestore, " ") + " with SIEMCTL_RUN_ID, SIEMCTL_DATA_DIR=" + dd + " (output recorded)"}
	}
	return copyRestoreDescribe(pl)
}

func restoreIndexerData(ctx context.Context, env Env, p *noParams) (engine.Outcome, error) {
	d := env.Deps()
	b, mode, err := restoreMode(env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	if mode == config.DataSafetyCopy {
		return runRestoreData(ctx, env, p)
	}
	if err := stopIndexer(ctx, env, d); err != nil {
		return engine.Outcome{}, err
	}
	if mode == config.DataSafetyCommand {
		run, err := runDataHook(ctx, env, d, d.Config.Indexer.DataHookRestore)
		if err != nil {
			return engine.Outcome{}, fmt.Errorf("data hook restore: %w", err)
		}
		return engine.Outcome{Message: "data hook restore: " + hookSummary(run), Data: map[string]any{"argv": run.Argv, "exit_code": run.ExitCode, "output": run.Output}}, nil
	}
	if b.IndexerSnapshot == nil {
		return engine.Outcome{}, errors.New("the run recorded no snapshot (run data backups.indexer_snapshot): the data directory is left as it is")
	}
	target := filepath.Clean(d.Config.Indexer.DataDir)
	aside := AsidePath(target, env.RunID())
	fi, err := os.Lstat(target)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("data directory: %w", err)
	}
	if !fi.IsDir() {
		return engine.Outcome{}, fmt.Errorf("%s is not a directory (a symlink is not followed): set it aside by hand", target)
	}
	if _, err := os.Lstat(aside); err == nil {
		return engine.Outcome{}, fmt.Errorf("%s already exists: move it away first (it may hold data)", aside)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return engine.Outcome{}, err
	}
	if err := os.Rename(target, aside); err != nil {
		return engine.Outcome{}, fmt.Errorf("set %s aside: %w", target, err)
	}
	if err := setBackups(env, func(b *Backups) { b.IndexerDataAside = aside }); err != nil {
		return engine.Outcome{}, err
	}
	uid, gid := filetree.Owner(fi)
	if err := os.Mkdir(target, 0o700); err != nil {
		return engine.Outcome{}, fmt.Errorf("create the empty data directory (the old data is in %s): %w", aside, err)
	}
	if err := filetree.ApplyMeta(target, filetree.Entry{Mode: filetree.ModeBits(fi.Mode()), UID: uid, GID: gid}); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("%s set aside as %s (kept); %s is empty for the old version, snapshot %s restores the alert indices", target, aside, target, b.IndexerSnapshot.Name),
		Data: map[string]any{"aside": aside}}, nil
}

// restoreDataDone is the Skip of restore.indexer_data in every mode.
func restoreDataDone(ctx context.Context, env Env, _ *noParams) (string, bool, error) {
	d := env.Deps()
	b, mode, err := restoreMode(env, d)
	if err != nil {
		return "", false, err
	}
	switch mode {
	case config.DataSafetySnapshot:
		if b.IndexerDataAside == "" {
			return "", false, nil
		}
		if _, err := os.Lstat(b.IndexerDataAside); err != nil {
			return "", false, nil
		}
		return "the new version's data is already set aside in " + b.IndexerDataAside, true, nil
	case config.DataSafetyCommand:
		return "", false, nil // the hook decides; it is run again
	}
	ok, err := dataRestored(ctx, env)
	if err != nil || !ok {
		return "", false, err
	}
	return "the data directory already matches the copy", true, nil
}

func stopIndexer(ctx context.Context, env Env, d *Deps) error {
	if err := stopUnit(ctx, env, "indexer", "before replacing its data"); err != nil {
		return err
	}
	return requireStopped(ctx, d, "indexer", dataCopied)
}

// runDataHook runs a site hook with the run id and the data path in its
// environment. A non-zero exit is an error quoting the hook's last lines.
func runDataHook(ctx context.Context, env Env, d *Deps, argv []string) (DataHookRun, error) {
	run := DataHookRun{Argv: slices.Clone(argv)}
	if len(argv) == 0 {
		return run, errors.New("indexer.data_safety is command but the hook is not configured (indexer.data_hook_take / data_hook_restore)")
	}
	if d.Exec == nil {
		return run, errors.New("no program runner configured")
	}
	env.Waiting("running data hook %s", strings.Join(argv, " "))
	vars := []string{"SIEMCTL_RUN_ID=" + env.RunID(), "SIEMCTL_DATA_DIR=" + d.Config.Indexer.DataDir, "SIEMCTL_INDEXER_UNIT=" + unitOf(d, "indexer")}
	stdout, stderr, code, err := d.Exec.Run(ctx, vars, argv[0], argv[1:]...)
	run.ExitCode = code
	run.Output = d.redact(lastLines(string(stdout)+string(stderr), 40))
	if err != nil {
		return run, fmt.Errorf("%s: %w", argv[0], err)
	}
	if code != 0 {
		return run, fmt.Errorf("%s exited %d: %s", strings.Join(argv, " "), code, lastLines(run.Output, 4))
	}
	return run, nil
}

func hookSummary(r DataHookRun) string {
	s := strings.Join(r.Argv, " ") + " exited 0"
	if o := lastLines(r.Output, 2); o != "" {
		s += ": " + o
	}
	return s
}

// --- gate.data_safety ----------------------------------------------------------------

// DataSafetyMode is the configured indexer.data_safety (copy when unset).
func DataSafetyMode(c *config.Config) string { return dataSafety(c) }

// DataSafetyCost is what the chosen mode costs (gate.data_safety's data).
type DataSafetyCost struct {
	Mode string `json:"mode"`
	// DataBytes is the size of the data directory.
	DataBytes int64 `json:"data_bytes"`
	// NeedBytes is the free space the mode needs in Where (0: none).
	NeedBytes int64  `json:"need_bytes"`
	FreeBytes int64  `json:"free_bytes"`
	Where     string `json:"where,omitempty"`
	// Rollback says what a rollback brings back and what not.
	Rollback string `json:"rollback"`
}

func gateDataSafetyKind(pl *Planning) Kind {
	return engine.Define(Spec[*noParams]{Name: "gate.data_safety", ReadOnly: true, Run: runGateDataSafety,
		New: simple(pl, func(pl *Planning) []string {
			c := pl.cfg()
			switch dataSafety(c) {
			case config.DataSafetySnapshot:
				return []string{"GET /_nodes/settings (path.repo), GET /_snapshot/<repository>, POST /_snapshot/<repository>/_verify",
					"statfs <repository location>: room for the data not yet in the repository (first snapshot: the data size) + 64 MiB"}
			case config.DataSafetyCommand:
				return []string{"the take and restore hooks exist and are executable (their cost is the site's)"}
			case config.DataSafetyAuto:
				return []string{"indexer.data_safety auto: snapshot when the repository is usable (GET /_nodes/settings path.repo, GET /_snapshot/<repository> or its location under path.repo, POST /_snapshot/<repository>/_verify) and statfs <repository location> has room for the data not yet in it + 64 MiB",
					"else copy when du <indexer data_dir> + 10% + 64 MiB is free in <backup_dir>; else no-go naming " + PrepareCommand,
					"the choice is recorded for the run (and its rollback)"}
			}
			return []string{"du <indexer data_dir>; statfs <backup_dir>: data + 10% + 64 MiB free for the cold copy"}
		})})
}

// dirBytes sums the regular files under root; files vanishing meanwhile
// (a running indexer merges segments) are ignored.
func dirBytes(ctx context.Context, root string) (int64, error) {
	n, _, err := dirBytesSince(ctx, root, time.Time{})
	return n, err
}

// dirBytesSince sums the regular files under root, and those modified
// after since (OpenSearch segments are immutable: the files written since
// the last snapshot are what an incremental snapshot copies).
func dirBytesSince(ctx context.Context, root string, since time.Time) (n, newer int64, err error) {
	err = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil {
				n += fi.Size()
				if fi.ModTime().After(since) {
					newer += fi.Size()
				}
			}
		}
		return nil
	})
	return n, newer, err
}

// existingParent is path or its nearest existing parent (statfs needs one).
func existingParent(p string) string {
	for p != "/" && p != "." {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		p = filepath.Dir(p)
	}
	return p
}

func runGateDataSafety(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Config == nil || d.Disk == nil {
		return engine.Outcome{}, errors.New("disk usage is not available")
	}
	data, err := dirBytes(ctx, d.Config.Indexer.DataDir)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("size of the data directory: %w", err)
	}
	var (
		cost      DataSafetyCost
		msg, why  string
		configred = dataSafety(d.Config)
	)
	switch configred {
	case config.DataSafetyCommand:
		for _, argv := range [][]string{d.Config.Indexer.DataHookTake, d.Config.Indexer.DataHookRestore} {
			if len(argv) == 0 {
				return engine.Outcome{}, engine.NoGo("data safety command: indexer.data_hook_take and data_hook_restore must both be set")
			}
			fi, err := os.Stat(argv[0])
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
				return engine.Outcome{}, engine.NoGo("data safety command: hook %s is not an executable file", argv[0])
			}
		}
		cost = DataSafetyCost{Mode: config.DataSafetyCommand, DataBytes: data, Rollback: RollbackBrings(Backups{IndexerDataMode: config.DataSafetyCommand})}
		msg = fmt.Sprintf("data safety command: site hook %s (cost: the site's), %s of data", d.Config.Indexer.DataHookTake[0], output.Bytes(data))
		if err := setBackups(env, func(b *Backups) { b.DataSafety, b.DataSafetyWhy = cost.Mode, "indexer.data_safety is command" }); err != nil {
			return engine.Outcome{}, err
		}
		return engine.Outcome{Message: msg + asideNote(ctx, d), Data: map[string]any{"cost": cost}}, nil
	case config.DataSafetySnapshot:
		if cost, msg, err = snapshotCost(ctx, d, data); err != nil {
			return engine.Outcome{}, engine.NoGo("data safety snapshot: %s", err.Error())
		}
		msg, why = "data safety "+msg, "indexer.data_safety is snapshot"
		if cost.FreeBytes < cost.NeedBytes {
			return engine.Outcome{}, engine.NoGo("%s: %s free, %s needed; free space on the repository's filesystem or prepare another location (%s --location DIR)%s",
				msg, output.Bytes(cost.FreeBytes), output.Bytes(cost.NeedBytes), PrepareCommand, asideNote(ctx, d))
		}
	case config.DataSafetyCopy:
		if cost, msg, err = copyCost(d, data); err != nil {
			return engine.Outcome{}, err
		}
		msg, why = "data safety "+msg, "indexer.data_safety is copy"
		if cost.FreeBytes < cost.NeedBytes {
			return engine.Outcome{}, engine.NoGo("%s: %s free, %s needed; free space or point backup_dir elsewhere, or use a snapshot (%s)%s",
				msg, output.Bytes(cost.FreeBytes), output.Bytes(cost.NeedBytes), PrepareCommand, asideNote(ctx, d))
		}
	default: // auto: snapshot when usable and it fits, else copy when it fits
		scost, smsg, serr := snapshotCost(ctx, d, data)
		if serr == nil && scost.FreeBytes >= scost.NeedBytes {
			cost, msg, why = scost, "data safety auto → "+smsg, "indexer.data_safety auto: the snapshot repository is usable and has room"
			break
		}
		notSnap := "no usable snapshot repository: "
		if serr != nil {
			notSnap += serr.Error()
		} else {
			notSnap = fmt.Sprintf("the snapshot repository lacks room (%s free, %s needed)", output.Bytes(scost.FreeBytes), output.Bytes(scost.NeedBytes))
		}
		if cost, msg, err = copyCost(d, data); err != nil {
			return engine.Outcome{}, err
		}
		if cost.FreeBytes < cost.NeedBytes {
			return engine.Outcome{}, engine.NoGo("data safety auto: %s; and %s: %s free, %s needed. Make snapshots usable with %s (it adds path.repo to the indexer's opensearch.yml, restarts it once, registers and verifies the repository), or free space in %s%s",
				notSnap, msg, output.Bytes(cost.FreeBytes), output.Bytes(cost.NeedBytes), PrepareCommand, cost.Where, asideNote(ctx, d))
		}
		msg, why = "data safety auto → "+msg+" ("+notSnap+")", "indexer.data_safety auto: "+notSnap
	}
	if err := setBackups(env, func(b *Backups) { b.DataSafety, b.DataSafetyWhy = cost.Mode, why }); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("%s; %s needed, %s free%s", msg, output.Bytes(cost.NeedBytes), output.Bytes(cost.FreeBytes), asideNote(ctx, d)), Data: map[string]any{"cost": cost}}, nil
}

// dataMargin is the room a data safety mode keeps beyond its estimate.
const dataMargin = 64 << 20

// snapshotCost is the snapshot mode's cost: the repository must be usable
// (or registrable under path.repo); the first snapshot copies up to the
// whole data, later ones only the segments the repository lacks.
func snapshotCost(ctx context.Context, d *Deps, data int64) (DataSafetyCost, string, error) {
	cost := DataSafetyCost{Mode: config.DataSafetySnapshot, DataBytes: data}
	repo, pending, err := snapshotReady(ctx, d, false)
	if err != nil {
		return cost, "", err
	}
	cost.Where = repo.Location
	// The repository's index-N file is rewritten by every snapshot: its
	// time is the last snapshot's.
	var last time.Time
	if ents, err := os.ReadDir(repo.Location); err == nil {
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "index-") && fi.ModTime().After(last) {
				last = fi.ModTime()
			}
		}
	}
	cost.NeedBytes = dataMargin + data
	kind := "first snapshot: up to the whole data"
	if !last.IsZero() {
		_, newer, err := dirBytesSince(ctx, d.Config.Indexer.DataDir, last)
		if err != nil {
			return cost, "", fmt.Errorf("size of the data directory: %w", err)
		}
		cost.NeedBytes = dataMargin + newer
		kind = fmt.Sprintf("incremental: about %s written since the last snapshot (%s)", output.Bytes(newer), last.UTC().Format(time.RFC3339))
	}
	cost.Rollback = RollbackBrings(Backups{IndexerDataMode: config.DataSafetySnapshot})
	reg := "registered and verified"
	if pending {
		reg = "not registered yet: registered by indexer/snapshot (under path.repo)"
	}
	u, err := d.Disk(existingParent(cost.Where))
	if err != nil {
		return cost, "", err
	}
	cost.FreeBytes = int64(u.FreeBytes)
	return cost, fmt.Sprintf("snapshot into %s at %s: %s of data, %s (repository %s)", repo.Name, repo.Location, output.Bytes(data), kind, reg), nil
}

// copyCost is the copy mode's cost: the data + 10% + a margin in backup_dir.
func copyCost(d *Deps, data int64) (DataSafetyCost, string, error) {
	cost := DataSafetyCost{Mode: config.DataSafetyCopy, DataBytes: data, Where: d.Config.BackupDir,
		NeedBytes: data + data/10 + dataMargin, Rollback: RollbackBrings(Backups{IndexerDataMode: config.DataSafetyCopy})}
	u, err := d.Disk(existingParent(cost.Where))
	if err != nil {
		return cost, "", err
	}
	cost.FreeBytes = int64(u.FreeBytes)
	return cost, fmt.Sprintf("copy: %s to copy into %s with the indexer stopped", output.Bytes(data), cost.Where), nil
}

// PruneCommand removes kept set-aside data directories.
const PruneCommand = "siemctl upgrade prune"

// asideNote warns of set-aside data directories eating disk ("" when none).
func asideNote(ctx context.Context, d *Deps) string {
	dirs, err := AsideDirs(ctx, d.Config.Indexer.DataDir, nil)
	if err != nil {
		return ""
	}
	n, total := 0, int64(0)
	for _, a := range dirs {
		if a.Refused == "" {
			n++
			total += a.Bytes
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; warning: %d set-aside data director%s (%s.siemctl-<run-id>) kept from earlier rollbacks, %s: see %s --dry-run",
		n, map[bool]string{true: "y", false: "ies"}[n == 1], d.Config.Indexer.DataDir, output.Bytes(total), PruneCommand)
}

// RollbackBrings says what a rollback of a run with these backups restores
// of the indexer data and what it does not (confirmations, reports).
func RollbackBrings(b Backups) string {
	const after = "documents indexed after it are not brought back by the indexer (they return only where the shipper sends them again from its read position)"
	switch b.IndexerDataMode {
	case config.DataSafetySnapshot:
		name := "<none recorded>"
		if b.IndexerSnapshot != nil {
			name = b.IndexerSnapshot.Name
		}
		return "restoring the alert indices as of snapshot " + name + " (taken while the old version still ran); " + after +
			"; the new version's data directory is kept aside (" + PruneCommand + " removes it later)"
	case config.DataSafetyCommand:
		return "restoring the indexer data through the site's restore hook (what comes back is the hook's; siemctl brings back nothing indexed after its take)"
	}
	return "restoring the indexer data directory exactly as copied when the indexer stopped for the upgrade; " + after
}

// DataSafetyPromise says, before an upgrade, how the indexer data is made
// safe and what a rollback will and will not bring back (the confirmation).
func DataSafetyPromise(c *config.Config) string {
	switch m := dataSafety(c); m {
	case config.DataSafetyAuto:
		return "data safety auto (preflight/data-safety picks a snapshot when the repository is usable, else a cold copy): a rollback brings back the indexer data as of that snapshot or copy, not documents indexed after it"
	case config.DataSafetySnapshot, config.DataSafetyCopy, config.DataSafetyCommand:
		return "data safety " + m + ": a rollback means " + RollbackBrings(Backups{IndexerDataMode: m, IndexerSnapshot: &DataSnapshot{Name: SnapshotName("<run-id>")}})
	default:
		return "data safety " + m
	}
}

// --- set-aside data directories (upgrade prune) -----------------------------------

// asideRE is the exact name suffix of a set-aside data directory:
// ".siemctl-" and a lowercased run id.
var asideRE = regexp.MustCompile(`^\.siemctl-(\d{8}t\d{6}z-[0-9a-f]{6})$`)

// AsidePath is where restore.indexer_data sets a run's data directory aside.
func AsidePath(dataDir, runID string) string {
	return filepath.Clean(dataDir) + ".siemctl-" + strings.ToLower(runID)
}

// AsideDir is an entry next to the data directory named like a set-aside
// data directory. Refused says why prune leaves it alone ("" when it may go).
type AsideDir struct {
	Path    string `json:"path"`
	RunID   string `json:"run_id,omitempty"`
	Bytes   int64  `json:"bytes"`
	Refused string `json:"refused,omitempty"`
}

// AsideDirs lists the entries of the data directory's parent whose name is
// <base>.siemctl-<something>: those matching the exact pattern and being
// real directories may be pruned; a symlink, a file or another name is
// listed as refused. protect gives the reason to keep a run's directory
// ("" to let it go); RunID is spelt as the engine writes it.
func AsideDirs(ctx context.Context, dataDir string, protect func(runID string) string) ([]AsideDir, error) {
	dataDir = filepath.Clean(dataDir)
	parent, base := filepath.Dir(dataDir), filepath.Base(dataDir)
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return []AsideDir{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []AsideDir{}
	for _, e := range ents {
		suffix, ok := strings.CutPrefix(e.Name(), base)
		if !ok || !strings.HasPrefix(suffix, ".siemctl-") {
			continue
		}
		a := AsideDir{Path: filepath.Join(parent, e.Name())}
		m := asideRE.FindStringSubmatch(suffix)
		switch {
		case m == nil:
			a.Refused = "not named " + base + ".siemctl-<run-id>: not a set-aside data directory of siemctl"
		case e.Type()&fs.ModeSymlink != 0:
			a.Refused = "a symlink: never followed nor removed"
		case !e.IsDir():
			a.Refused = "not a directory"
		}
		if m != nil {
			id := m[1] // 20261120t100000z-3d4e5f: the engine's id, lowercased
			a.RunID = id[:8] + "T" + id[9:15] + "Z" + id[16:]
			if a.Refused == "" && protect != nil {
				a.Refused = protect(a.RunID)
			}
		}
		if a.Refused == "" || e.IsDir() {
			if a.Bytes, err = dirBytes(ctx, a.Path); err != nil {
				return nil, err
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// RemoveAside removes a set-aside data directory without following a link:
// its parent is reached with filetree.OpenDirNoFollow, the entry must still be a
// real directory with the exact name, and the tree is removed entry by
// entry with unlinkat (a symlink inside is removed, never followed).
func RemoveAside(dataDir string, a AsideDir) error {
	parent, name := filepath.Dir(a.Path), filepath.Base(a.Path)
	base := filepath.Base(filepath.Clean(dataDir))
	if parent != filepath.Dir(filepath.Clean(dataDir)) || !strings.HasPrefix(name, base) || !asideRE.MatchString(strings.TrimPrefix(name, base)) {
		return fmt.Errorf("%s is not a set-aside data directory of %s: left alone", a.Path, dataDir)
	}
	pfd, err := filetree.OpenDirNoFollow(parent, nil, false)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	st, err := filetree.LstatAt(pfd, name)
	if err != nil {
		return &os.PathError{Op: "lstat", Path: a.Path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &filetree.LinkError{Path: a.Path, Reason: "is not a directory (a symlink is never followed)"}
	}
	return removeAllAt(pfd, name, a.Path)
}

// removeAllAt removes name inside dirfd and, when it is a directory,
// everything below it, never following a symlink.
func removeAllAt(dirfd int, name, full string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &os.PathError{Op: "unlink", Path: full, Err: err}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: full, Err: err}
	}
	d := os.NewFile(uintptr(fd), full)
	names, err := d.Readdirnames(-1)
	if err != nil {
		d.Close()
		return err
	}
	for _, n := range names {
		if err := removeAllAt(int(d.Fd()), n, filepath.Join(full, n)); err != nil {
			d.Close()
			return err
		}
	}
	d.Close()
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "rmdir", Path: full, Err: err}
	}
	return nil
}
