package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rundata"
)

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

func gateDataSafetyKind() Kind {
	return engine.Define(Spec[*noParams]{Name: "gate.data_safety", ReadOnly: true, Traits: roleDataSafety, Run: runGateDataSafety,
		New: simple(func(pl *Planning) []string {
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
	data, err := filetree.Bytes(ctx, d.Config.Indexer.DataDir)
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
		_, newer, err := filetree.BytesSince(ctx, d.Config.Indexer.DataDir, last)
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
	dirs, err := rundata.AsideDirs(ctx, d.Config.Indexer.DataDir, nil)
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
