package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/rundata"
)

// The cluster rollback's record steps (runbooks/cluster-rollback.yaml, internal/ops/rollout
// rollback.go): prepare (phase rolling-back, the run's snapshot, a copy kept on this host), the
// copy written back into the fresh cluster, the end (rolled-back).

// ApplyRunbook is the runbook name of `upgrade apply --cluster`'s run: its id is the roll's run id,
// its data the snapshot a cluster rollback restores.
const ApplyRunbook = "cluster-apply"

// RunSnapshot is the snapshot recorded by run runID of this host's state directory, when that run
// is the roll's `upgrade apply --cluster` (nil, nil when this host did not run it).
func RunSnapshot(stateDir, runID string) (*DataSnapshot, error) {
	ri, err := engine.Status(stateDir, runID)
	if err != nil || ri.Runbook.Name != ApplyRunbook {
		return nil, nil //nolint:nilerr // another host's run: not here
	}
	var b Backups
	if raw, ok := ri.Data[rundata.KeyBackups]; ok {
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("run %s: backups: %w", runID, err)
		}
	}
	return b.IndexerSnapshot, nil
}

func rolloutBackKinds() []Kind {
	calls := rollout.RollbackCalls()
	return []Kind{
		engine.Define(Spec[*noParams]{Name: "rollout.rollback_prepare", Run: runRollbackPrepare,
			New: simple(func(*Planning) []string {
				return append(calls["prepare"][:2:2],
					"on the host that ran upgrade apply --cluster: its run's snapshot (repository, name, the persistent settings recorded) put in the record",
					calls["prepare"][2])
			})}),
		engine.Define(Spec[*noParams]{Name: "rollout.snapshot", Run: runRolloutSnapshot,
			New: simple(func(*Planning) []string {
				_, read, write := rollout.Calls()
				return []string{read, write + " (the run's snapshot: repository, name, the persistent settings recorded; a cluster rollback restores it)"}
			})}),
		engine.Define(Spec[*noParams]{Name: "rollout.rollback_reinstate", Run: runRollbackReinstate,
			New: simple(func(*Planning) []string {
				return append([]string{"read this host's copy of the record (" + rollout.CopyFile + " in the state directory)"}, calls["restore"]...)
			})}),
		engine.Define(Spec[*noParams]{Name: "rollout.rollback_end", Run: runRollbackEnd,
			New: simple(func(*Planning) []string { return calls["finish"] })}),
	}
}

func runRollbackPrepare(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	s, err := rolloutStore(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	r, err := s.Load(ctx)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("%w (a cluster rollback rolls back the run of upgrade apply --cluster)", err)
	}
	host, _ := os.Hostname()
	if r, err = s.Begin(ctx, r.RunID, host, "", "siemctl rollback --cluster"); err != nil {
		return engine.Outcome{}, err
	}
	snap, err := RunSnapshot(d.Config.StateDir, r.RunID)
	if err != nil {
		return engine.Outcome{}, err
	}
	if snap != nil && len(r.Snapshot) == 0 {
		raw, err := json.Marshal(snap)
		if err != nil {
			return engine.Outcome{}, err
		}
		if r, err = s.SetSnapshot(ctx, r.RunID, raw); err != nil {
			return engine.Outcome{}, err
		}
	}
	if len(r.Snapshot) == 0 {
		return engine.Outcome{}, fmt.Errorf("run %s's snapshot is recorded on the host that ran upgrade apply --cluster (%s): run siemctl rollback --cluster --phase prepare there first", r.RunID, r.CreatedBy)
	}
	if err := rollout.SaveCopy(d.Config.StateDir, r); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("run %s is rolling back (%s); the record kept in %s", r.RunID, r.Note, d.Config.StateDir),
		Data: map[string]any{"run_id": r.RunID, "cause": r.Rollback.Cause, "entry": r.Rollback.Entry}}, nil
}

// runRolloutSnapshot puts the snapshot this run took (indexer.snapshot_take) in the record: every
// host's copy of the record then holds it, even one whose indexer node cannot reach the cluster.
func runRolloutSnapshot(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	b, err := backups(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if b.IndexerSnapshot == nil {
		return engine.Outcome{Message: "no snapshot taken (data safety is not snapshot): a cluster rollback has none to restore"}, nil
	}
	raw, err := json.Marshal(b.IndexerSnapshot)
	if err != nil {
		return engine.Outcome{}, err
	}
	s, err := rolloutStore(env.Deps())
	if err != nil {
		return engine.Outcome{}, err
	}
	if _, err := s.SetSnapshot(ctx, env.RunID(), raw); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("snapshot %s/%s in the record of run %s", b.IndexerSnapshot.Repository, b.IndexerSnapshot.Name, env.RunID())}, nil
}

func runRollbackReinstate(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	kept, err := rollout.LoadCopy(d.Config.StateDir)
	if err != nil {
		return engine.Outcome{}, err
	}
	s, err := rolloutStore(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	r, err := s.Reinstate(ctx, kept)
	if err != nil {
		return engine.Outcome{}, err
	}
	var turns []string
	for _, e := range r.Order {
		if e.State != rollout.Done {
			turns = append(turns, e.Name)
		}
	}
	return engine.Outcome{Message: fmt.Sprintf("the record of run %s is back in the fresh cluster (phase %s); the rollback's turns: %v", r.RunID, r.Phase, turns)}, nil
}

func runRollbackEnd(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	s, err := rolloutStore(env.Deps())
	if err != nil {
		return engine.Outcome{}, err
	}
	r, err := s.End(ctx, "")
	if errors.Is(err, rollout.ErrPhase) {
		return engine.Outcome{}, engine.NoGo("%v", err)
	}
	if err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("run %s is %s: back to %s", r.RunID, r.Phase, r.From)}, nil
}
