package upgrade

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/runbooks"
)

// A cluster rollback on this host (runbooks/cluster-rollback.yaml, one phase at a time): what it
// goes back to comes from this host's own runs of the roll and from the record's kept copy.

// NodeRunbook is the runbook name of `upgrade node`'s runs; ClusterRollbackRunbook the cluster
// rollback's.
const (
	NodeRunbook            = "node"
	ClusterRollbackRunbook = "cluster-rollback"
)

// KeyRolloutRun is the run data key of a cluster rollback phase's run: the roll's run id (the
// record's), so that a phase done on this host for that roll is not run twice.
const KeyRolloutRun = "rollout_run"

// ClusterRollbackSeed is the run data a phase of the cluster rollback starts with on this host:
// the versions and backups of this host's last `upgrade node` run (the versions before its turn,
// the cold copy of the manager's databases, the configs archive); for the components that run
// did not record (the roll had not reached them) the versions installed now, so their steps are
// skipped as already there; the run's snapshot from the record (kept: the copy this host took,
// nil before prepare), and, on the host that ran `upgrade apply --cluster`, that run's backups
// (the security configuration, the snapshot with the persistent settings recorded) and carried
// values. It returns the previous versions too (the session's planning).
func ClusterRollbackSeed(stateDir string, kept *rollout.Record, installed map[string]string) (map[string]string, map[string]any, error) {
	previous := map[string]string{}
	var b steps.Backups
	targets := map[string]string{}
	node, err := lastRun(stateDir, NodeRunbook)
	if err != nil {
		return nil, nil, err
	}
	if node != nil {
		rd, err := DecodeRunData(node.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("this host's node run %s: %w", node.ID, err)
		}
		maps.Copy(previous, rd.Previous)
		maps.Copy(targets, rd.Targets)
		b = rd.Backups
	}
	for c, v := range installed {
		if _, ok := previous[c]; !ok && v != "" {
			previous[c] = v
		}
	}
	seed := map[string]any{rundata.KeyPreviousVersions: previous, rundata.KeyExpectVersions: previous, rundata.KeyTargetVersions: targets}
	if kept != nil {
		seed[rundata.KeyTarget], seed[KeyRolloutRun] = kept.Target, kept.RunID
		if len(kept.Snapshot) > 0 {
			var snap steps.DataSnapshot
			if err := json.Unmarshal(kept.Snapshot, &snap); err != nil {
				return nil, nil, fmt.Errorf("the record's snapshot: %w", err)
			}
			b.IndexerSnapshot = &snap
		}
		if ri, err := engine.Status(stateDir, kept.RunID); err == nil && ri.Runbook.Name == steps.ApplyRunbook {
			rd, err := DecodeRunData(ri.Data)
			if err != nil {
				return nil, nil, fmt.Errorf("run %s: %w", ri.ID, err)
			}
			if rd.Backups.IndexerSecurity != "" {
				b.IndexerSecurity = rd.Backups.IndexerSecurity
			}
			if rd.Backups.IndexerSnapshot != nil {
				b.IndexerSnapshot = rd.Backups.IndexerSnapshot
			}
			for k, raw := range rd.Carried {
				seed[k] = raw
			}
		}
	}
	if kept != nil && b.IndexerDataAside == "" {
		// the data this host set aside in its indexer-down phase: the restore's proof that the
		// node starts empty (restore.indexer_snapshot restores only then)
		aside, err := asideOf(stateDir, kept.RunID)
		if err != nil {
			return nil, nil, err
		}
		b.IndexerDataAside = aside
	}
	if b.IndexerSnapshot != nil {
		b.DataSafety, b.DataSafetyWhy = "snapshot", "a cluster rollback: the old-version cluster is formed afresh from the run's snapshot"
	}
	seed[rundata.KeyBackups] = b
	return previous, seed, nil
}

// asideOf is where this host's cluster-rollback run of roll runID set its indexer data aside ("" when
// none did).
func asideOf(stateDir, runID string) (string, error) {
	ids, err := engine.Runs(stateDir)
	if err != nil {
		return "", err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		ri, err := engine.Status(stateDir, ids[i])
		if err != nil || ri.Runbook.Name != ClusterRollbackRunbook || ri.Status == engine.StatusDryRun {
			continue
		}
		var roll string
		if raw, ok := ri.Data[KeyRolloutRun]; !ok || json.Unmarshal(raw, &roll) != nil || roll != runID {
			continue
		}
		rd, err := DecodeRunData(ri.Data)
		if err != nil {
			continue
		}
		if rd.Backups.IndexerDataAside != "" {
			return rd.Backups.IndexerDataAside, nil
		}
	}
	return "", nil
}

// lastRun is this host's newest run of runbook name that did something (not a dry run, not a
// no-go), or nil.
func lastRun(stateDir, name string) (*engine.RunInfo, error) {
	ids, err := engine.Runs(stateDir)
	if err != nil {
		return nil, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		ri, err := engine.Status(stateDir, ids[i])
		if err != nil || ri.Runbook.Name != name || ri.Status == engine.StatusDryRun || ri.Status == engine.StatusNoGo {
			continue
		}
		return ri, nil
	}
	return nil, nil
}

// ClusterRollback is the session of one phase of the cluster rollback on this host: the plan of
// cluster-rollback.yaml narrowed to sel, seeded with seed (ClusterRollbackSeed).
func ClusterRollback(deps *steps.Deps, sel engine.Selection, previous map[string]string, seed map[string]any) (*Session, error) {
	s, err := newSession(deps, nil, previous)
	if err != nil {
		return nil, err
	}
	raw, err := runbooks.FS.ReadFile(runbooks.ClusterRollback)
	if err != nil {
		return nil, err
	}
	plan, err := s.parse(raw, runbooks.ClusterRollback, sel, nil)
	if err != nil {
		return nil, err
	}
	s.Plan, s.Seed = plan, seed
	return s, nil
}
