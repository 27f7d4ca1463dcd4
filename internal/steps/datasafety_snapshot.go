package steps

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/output"
)

// --- indexer.snapshot_take / restore.indexer_snapshot -----------------------------

func dataSafetyKinds() []Kind {
	return []Kind{
		gateDataSafetyKind(),
		engine.Define(Spec[*noParams]{Name: "indexer.snapshot_take", Estimate: estimateSnapshotTake, Traits: roleSnapshotTake, Run: runSnapshotTake,
			New: simple(func(pl *Planning) []string {
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
					"GET /_cluster/settings: record the persistent settings (not " + cluster.ShortKey(indexer.KeyAllocationEnable) + ", " + cluster.ShortKeys(cluster.RecoverySettings) + " nor archived.*: put back by their own steps, or obsolete)",
					"PUT /_snapshot/" + repo + "/siemctl-<run-id> {indices: " + pattern + ", include_global_state: true}",
					"GET /_snapshot/" + repo + "/siemctl-<run-id>/_status until done (incremental bytes, percent)",
					"GET /_snapshot/" + repo + "/siemctl-<run-id>: state SUCCESS, every shard, every alert index listed"}
			}),
			Skip: snapshotSkip,
			Verify: func(ctx context.Context, env Env, _ *noParams) (bool, error) {
				ok, _, err := snapshotTaken(ctx, env, env.Deps())
				return ok, err
			}}),
		engine.Define(Spec[*noParams]{Name: "indexer.snapshot_start", Estimate: estimateSnapshotStart, Traits: roleSnapshotStart, Run: runSnapshotStart,
			New: simple(func(pl *Planning) []string {
				repo := "<indexer.snapshot_repository>"
				if c := pl.cfg(); c != nil {
					repo = c.Indexer.SnapshotRepository
					if m := dataSafety(c); m != config.DataSafetySnapshot && m != config.DataSafetyAuto {
						return []string{"skipped: indexer.data_safety is " + m + " (snapshot mode only)"}
					}
				}
				return []string{"as indexer.snapshot_take: the repository checked (registered where needed), then PUT /_snapshot/" + repo + "/siemctl-<run-id> (not there yet) and return at once",
					"the steps up to indexer.snapshot_take run while it copies; that step follows it to the end and verifies it"}
			}),
			Skip: snapshotSkip}),
		engine.Define(Spec[*restoreSnapshotParams]{Name: "restore.indexer_snapshot", Estimate: estimateRestoreSnapshot, Traits: roleRestoreData, Run: runSnapshotRestore,
			New: func() *restoreSnapshotParams { return &restoreSnapshotParams{} },
			Skip: func(ctx context.Context, env Env, _ *restoreSnapshotParams) (string, bool, error) {
				return snapshotRestoreSkip(ctx, env, env.Deps())
			},
			Budget: func(ctx context.Context, env Env, p *restoreSnapshotParams) (time.Duration, string, error) {
				return p.budget(ctx, env, true)
			}}),
		recoveriesKind(),
	}
}

// restoreSnapshotParams are restore.indexer_snapshot's: recoveries raises the recovery settings
// of the empty cluster before the restore (recovery.go), timeout_per_primary gives the step time
// for each shard of the snapshot.
type restoreSnapshotParams struct {
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
	return map[string]int{cluster.KeyInitialPrimaries: p.Recoveries, cluster.KeyConcurrentRecoveries: p.Recoveries}
}

func (p *restoreSnapshotParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	repo := "<indexer.snapshot_repository>"
	if c := pl.cfg(); c != nil {
		repo = c.Indexer.SnapshotRepository
		if m := dataSafety(c); m != config.DataSafetySnapshot && m != config.DataSafetyAuto {
			return []string{"skipped: indexer.data_safety is " + m + " (snapshot mode only)"}
		}
	}
	lines := []string{"wait until the (old) indexer answers on its empty data directory",
		"security not initialised: copy <backup>/" + securityDir + " into <indexer config_dir>/opensearch-security; " + strings.Join(securityInit(pl), " ") + " (no options)",
		"PUT /_snapshot/" + repo + " {type: fs, location: <recorded>} (the new cluster state does not know it)",
		"PUT /_template/<shipper template> from the shipper's template file (the empty cluster has none)",
		"shipper setup --pipelines (the ingest pipelines are global state too)",
		"PUT /_cluster/settings {persistent: <the settings recorded before the upgrade that differ>} (global state too), read back"}
	if p.Recoveries > 0 {
		lines = append(lines, cluster.DescribeRaise(p.raise(), "the restore's primaries come back that many at a time instead of 4")...)
	}
	return p.describe(append(lines,
		"POST /_snapshot/"+repo+"/siemctl-<run-id>/_restore {indices: <the snapshot's alert indices>, include_global_state: false} (no security index, no global state: the security plugin forbids both)",
		"GET /_cluster/health?wait_for_status=yellow until every restored index is allocated"))
}

// snapshotSkip skips the snapshot steps outside snapshot mode and once the run recorded its
// snapshot complete.
func snapshotSkip(ctx context.Context, env Env, _ *noParams) (string, bool, error) {
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

// startSnapshot registers the repository where needed and starts the run's snapshot of the
// alert indices, unless one of that name is there already (started by indexer.snapshot_start or
// an interrupted attempt: followed, not retaken). It returns the repository, the alert indices
// the snapshot must list and whether it started the snapshot now.
func startSnapshot(ctx context.Context, env Env, d *Deps) (repo indexer.Repository, want []string, started bool, err error) {
	if repo, _, err = snapshotReady(ctx, d, true); err != nil {
		return repo, nil, false, err
	}
	sa, _ := d.snapshots()
	if want, err = alertIndices(ctx, d); err != nil {
		return repo, nil, false, err
	}
	name, rname := SnapshotName(env.RunID()), d.Config.Indexer.SnapshotRepository
	if _, err := sa.GetSnapshot(ctx, rname, name); !errors.Is(err, indexer.ErrSnapshotMissing) {
		return repo, want, false, err
	}
	if err := sa.CreateSnapshot(ctx, indexer.SnapshotRequest{Repository: rname, Name: name, Indices: []string{alertsPattern(d.Config)}, IncludeGlobalState: true}); err != nil {
		return repo, nil, false, fmt.Errorf("start snapshot %s: %w", name, err)
	}
	return repo, want, true, nil
}

// runSnapshotStart starts the snapshot and returns at once: the steps between it and
// indexer.snapshot_take (which follows it to the end and verifies it) run while it copies.
func runSnapshotStart(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	_, want, started, err := startSnapshot(ctx, env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	name := d.Config.Indexer.SnapshotRepository + "/" + SnapshotName(env.RunID())
	if !started {
		return engine.Outcome{Message: fmt.Sprintf("snapshot %s already started: indexer/snapshot follows it", name)}, nil
	}
	return engine.Outcome{Message: fmt.Sprintf("snapshot %s started (%d alert indices): the next steps run while it copies, indexer/snapshot follows it to the end", name, len(want)),
		Data: map[string]any{"snapshot": SnapshotName(env.RunID()), "repository": d.Config.Indexer.SnapshotRepository}}, nil
}

func runSnapshotTake(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	start := d.now()
	repo, want, _, err := startSnapshot(ctx, env, d)
	if err != nil {
		return engine.Outcome{}, err
	}
	sa, _ := d.snapshots()
	name := SnapshotName(env.RunID())
	rname := d.Config.Indexer.SnapshotRepository
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
	// Started by indexer.snapshot_start: the snapshot took what the node says, not this step's share.
	took := max(d.now().Sub(start), time.Duration(info.DurationMilli)*time.Millisecond)
	rec := &DataSnapshot{Repository: rname, Location: repo.Location, Name: name, UUID: info.UUID, Version: info.Version, Indices: info.Indices,
		Shards: info.ShardsTotal, IncrementalBytes: prog.IncrementalBytes, TotalBytes: prog.TotalBytes, TookMillis: took.Milliseconds(),
		Persistent: persistent}
	if err := setBackups(env, func(b *Backups) { b.IndexerSnapshot = rec }); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("snapshot %s/%s SUCCESS: %d indices, %d shards, %s copied (incremental) of %s, in %s",
		rname, name, len(info.Indices), info.ShardsTotal, output.Bytes(prog.IncrementalBytes), output.Bytes(prog.TotalBytes), took.Round(time.Millisecond)),
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
		n, err := secadmin.InstallBackup(b.IndexerSecurity, filepath.Join(d.Config.Indexer.ConfigDir, "opensearch-security"))
		if err != nil {
			return engine.Outcome{}, err
		}
		if _, err := applySecurity(ctx, env, d); err != nil {
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
	// …nor the shipper's ingest pipelines (global state too). An indexer host of a distributed
	// deployment runs no shipper: the manager hosts' turns of the cluster rollback load them.
	if d.Config.Runs("shipper") {
		sh, err := d.shipper()
		if err != nil {
			return engine.Outcome{}, err
		}
		env.Waiting("loading the shipper's ingest pipelines into the empty cluster")
		if err := sh.SetupPipelines(ctx); err != nil {
			return engine.Outcome{}, fmt.Errorf("shipper pipelines: %w", err)
		}
		msgs = append(msgs, "shipper pipelines loaded")
	} else {
		msgs = append(msgs, "no shipper on this host: its template and pipelines come with the manager hosts")
	}
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
	return k != indexer.KeyAllocationEnable && !slices.Contains(cluster.RecoverySettings, k) && !strings.HasPrefix(k, "archived.")
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
