package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A cluster rollback (docs/distributed.md, issue 25 must-hold 4). An OpenSearch node
// cannot be downgraded once it ran the new version, so the indexer comes back as an old-version
// cluster formed afresh from the snapshot taken by `upgrade apply --cluster`: every indexer node
// stops, is downgraded and its data is set aside, the nodes start together, and the snapshot is
// restored once. The record lives in the cluster being wiped, so the run goes through these
// states:
//
//  1. Begin (on the host that starts the rollback, automatically on a no-go in `upgrade node` or
//     by `siemctl rollback --cluster`): phase rolling-back, the cause and the node it stopped at
//     in Record.Rollback; a held turn is taken back (its holder's next write is refused).
//  2. Every host keeps a copy of the record (SaveCopy) before the indexer nodes stop.
//  3. Once the fresh cluster is up and the snapshot restored, Reinstate writes the copy back as
//     ForRollbackTurns makes it: the indexer entries done (the waves rolled them back together),
//     the manager and dashboard entries pending again, each taken in its turn as in the upgrade
//     (the master first, its databases restored from its cold copy; the workers; the
//     dashboards). Hosts whose components were not upgraded yet take their turn too: the same
//     old version everywhere, no trace left.
//  4. End: every entry done, phase rolled-back.

// Rollback is why and where a run is rolled back.
type Rollback struct {
	// Cause is the no-go that started it, or "siemctl rollback --cluster".
	Cause string `json:"cause"`
	// Entry is the entry the roll stopped at ("" when started by hand between turns).
	Entry string `json:"entry,omitempty"`
	// Host is the host that started the rollback.
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	// From is the phase the run was in when the rollback began.
	From Phase `json:"from"`
	// Turns: the record was written back into the fresh cluster (Reinstate); the manager and
	// dashboard turns of the rollback are open.
	Turns bool `json:"turns,omitempty"`
	// Reinstated is when the record was written back.
	Reinstated time.Time `json:"reinstated,omitzero"`
}

// turnsOpen: hosts may take turns in r (the upgrade's roll, or the rollback's manager and
// dashboard turns once the record is back in the fresh cluster).
func turnsOpen(r Record) bool {
	return r.Phase == PhaseRolling || r.Phase == PhaseRollingBack && r.Rollback != nil && r.Rollback.Turns
}

// resumedPhase is the phase a failed run goes back to when its failed entry is taken again.
func resumedPhase(r Record) Phase {
	if r.Rollback != nil {
		return PhaseRollingBack
	}
	return PhaseRolling
}

// RollingBackError: a no-go after the point of no return in a host's turn moved the run to
// rolling-back; it names the entry, the reason and, where the node's log gives one, its last
// error (Diagnosis).
type RollingBackError struct {
	RunID     string
	Entry     string
	Reason    error
	Diagnosis []string
	// Mark is the error of writing phase rolling-back (nil: written).
	Mark error
}

func (e *RollingBackError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: no-go: %v", e.Entry, e.Reason)
	if len(e.Diagnosis) > 0 {
		fmt.Fprintf(&b, "\n  the node's log: %s", strings.Join(e.Diagnosis, "\n  "))
	}
	if e.Mark != nil {
		fmt.Fprintf(&b, "\nthe roll must be rolled back, but the record could not say so (%v): run siemctl rollback --cluster on this host", e.Mark)
	} else {
		fmt.Fprintf(&b, "\nrun %s is rolling back: the whole deployment goes back to the old version (ansible-playbook rollback.yml, or siemctl rollback --cluster step by step; siemctl upgrade status --cluster shows it)", e.RunID)
	}
	return b.String()
}

func (e *RollingBackError) Unwrap() error { return e.Reason }

// Begin moves run runID (empty: whatever run is in the cluster) to phase rolling-back, recording
// the cause, the entry it stopped at and the host; a held turn is taken back. A run already
// rolling back keeps its first cause (Begin is idempotent); a run rolled back is ErrPhase.
func (s *Store) Begin(ctx context.Context, runID, host, entry, cause string) (Record, error) {
	r, err := s.update(ctx, func(r *Record) error {
		if runID != "" && r.RunID != runID {
			return fmt.Errorf("%w: the cluster's run is %s, not %s", ErrPhase, r.RunID, runID)
		}
		switch r.Phase {
		case PhaseRollingBack:
			return errUnchangedRollback
		case PhaseRolledBack:
			return fmt.Errorf("%w: run %s is already rolled back", ErrPhase, r.RunID)
		}
		begin(r, host, entry, cause, s.now())
		return nil
	})
	if errors.Is(err, errUnchangedRollback) {
		return r, nil
	}
	return r, err
}

var errUnchangedRollback = errors.New("unchanged")

// begin is Begin's change of r.
func begin(r *Record, host, entry, cause string, now time.Time) {
	r.Rollback = &Rollback{Cause: cause, Entry: entry, Host: host, Started: now, From: r.Phase}
	r.Holder = nil
	note := "rollback: " + cause
	if entry != "" {
		note = "rollback at " + entry + ": " + cause
		if i := r.indexOf(entry); i >= 0 && r.Order[i].State != Done {
			r.Order[i].State, r.Order[i].LastError = Failed, cause
		}
	}
	r.Phase, r.Note = PhaseRollingBack, note
}

// BeganHere is the record r (as this host last read it) moved to rolling-back as Begin would, for
// the host's kept copy when the cluster cannot be written from here (the indexer node it talks to
// is the one that does not rejoin): `rollback --cluster --phase prepare` on this host then finds
// it prepared, with the run's snapshot.
func BeganHere(r Record, host, entry, cause string, now time.Time) Record {
	c := r.clone()
	begin(&c, host, entry, cause, now.UTC())
	return c
}

// SetSnapshot records the run's snapshot (Record.Snapshot; kept when it is there already): every
// indexer host of a cluster rollback sets its data aside only for a snapshot.
func (s *Store) SetSnapshot(ctx context.Context, runID string, snapshot json.RawMessage) (Record, error) {
	if len(snapshot) == 0 || !json.Valid(snapshot) {
		return Record{}, fmt.Errorf("%w: no snapshot", ErrInvalid)
	}
	r, err := s.update(ctx, func(r *Record) error {
		switch {
		case r.RunID != runID:
			return fmt.Errorf("%w: the cluster's run is %s, not %s", ErrPhase, r.RunID, runID)
		case len(r.Snapshot) > 0:
			return errUnchangedRollback
		}
		r.Snapshot = slices.Clone(snapshot)
		return nil
	})
	if errors.Is(err, errUnchangedRollback) {
		return r, nil
	}
	return r, err
}

// ForRollbackTurns is the record as Reinstate writes it back into the fresh cluster: phase
// rolling-back with its turns open, every indexer entry done (rolled back by the waves, all nodes
// at once), every manager and dashboard entry pending with no attempt, no holder.
func ForRollbackTurns(r Record, now time.Time) Record {
	c := r.clone()
	c.Phase, c.Holder = PhaseRollingBack, nil
	if c.Rollback == nil {
		c.Rollback = &Rollback{Cause: "siemctl rollback --cluster", Started: now, From: r.Phase}
	}
	c.Rollback.Turns, c.Rollback.Reinstated = true, now
	for i := range c.Order {
		e := &c.Order[i]
		e.Attempts, e.Host, e.LastError, e.Started, e.Finished = 0, "", "", time.Time{}, time.Time{}
		if e.Role == RoleIndexer || e.Role == RoleIndexerManager {
			e.State, e.Finished = Done, now
			continue
		}
		e.State = Pending
	}
	c.Note = "indexer cluster formed afresh at " + c.From + " from the snapshot; the manager and dashboard turns of the rollback are open"
	return c
}

// Reinstate writes the record kept by this host (local: a copy taken before the indexer nodes
// stopped, phase rolling-back) into the fresh cluster as ForRollbackTurns makes it. The record
// already written back (the same run with its turns open: another host, or this one before a
// crash) is returned as it is; a different run that has not ended is a *RunExistsError.
func (s *Store) Reinstate(ctx context.Context, local Record) (Record, error) {
	if local.Phase != PhaseRollingBack {
		return Record{}, fmt.Errorf("%w: the kept record of run %s is %s, not rolling-back", ErrPhase, local.RunID, local.Phase)
	}
	local = local.clone()
	repaired := repairIndexerRoles(&local)
	if err := local.Validate(); err != nil {
		return Record{}, fmt.Errorf("%w; the copy kept in this host's state directory (%s) cannot be written back: every host of the run kept one at siemctl rollback --cluster --phase prepare: copy another host's %s over it and run siemctl rollback --cluster --phase restore again", err, CopyFile, CopyFile)
	}
	now := s.now()
	r := ForRollbackTurns(local, now)
	if len(repaired) > 0 {
		r.Note += "; repaired: " + strings.Join(repaired, ", ") + " marked as a plain indexer node (not the last indexer entry)"
	}
	r.Updated = now
	if written, exists, err := s.putNew(ctx, r, "write the rollout record back"); err != nil || !exists {
		return written, err
	}
	old, err := s.Load(ctx)
	if err != nil {
		return Record{}, err
	}
	switch {
	case old.RunID == local.RunID && (old.Phase == PhaseRolledBack || old.Rollback != nil && old.Rollback.Turns):
		return old, nil // written back already
	case old.RunID != local.RunID && !old.Phase.Ended():
		return Record{}, &RunExistsError{RunID: old.RunID, Phase: old.Phase, Target: old.Target}
	}
	r.SeqNo, r.PrimaryTerm = old.SeqNo, old.PrimaryTerm
	return s.write(ctx, r)
}

// End moves run runID from rolling-back to rolled-back once every entry is done; entries not
// done are named (ErrPhase).
func (s *Store) End(ctx context.Context, runID string) (Record, error) {
	r, err := s.update(ctx, func(r *Record) error {
		if runID != "" && r.RunID != runID {
			return fmt.Errorf("%w: the cluster's run is %s, not %s", ErrPhase, r.RunID, runID)
		}
		switch {
		case r.Phase == PhaseRolledBack:
			return errUnchangedRollback
		case r.Phase != PhaseRollingBack || r.Rollback == nil || !r.Rollback.Turns:
			return fmt.Errorf("%w: run %s is %s (the rollback's turns are not open: siemctl rollback --cluster --phase restore writes the record back)", ErrPhase, r.RunID, r.Phase)
		}
		var left []string
		for _, e := range r.Order {
			if e.State != Done {
				left = append(left, e.Name+" "+string(e.State))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%w: run %s: entries not rolled back yet: %s (siemctl rollback --cluster --phase node on each, in the order)", ErrPhase, r.RunID, strings.Join(left, ", "))
		}
		r.Phase, r.Holder, r.Note = PhaseRolledBack, nil, "rolled back to "+r.From
		return nil
	})
	if errors.Is(err, errUnchangedRollback) {
		return r, nil
	}
	return r, err
}

// CopyFile is the name of the record's copy in a host's state directory.
const CopyFile = "rollout-record.json"

// SaveCopy keeps r in dir/CopyFile (0600, written whole then renamed: a symlink there is replaced,
// never written through), with its concurrency tokens dropped: the copy is written back with
// Reinstate, not with the old tokens.
func SaveCopy(dir string, r Record) error {
	if r.RunID == "" {
		return fmt.Errorf("%w: a record without a run id", ErrInvalid)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".rollout-record-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(data, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("keep the rollout record in %s: %w", dir, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, CopyFile)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("keep the rollout record in %s: %w", dir, err)
	}
	return nil
}

// LoadCopy reads the copy SaveCopy kept in dir (ErrNoRun when there is none).
func LoadCopy(dir string) (Record, error) {
	path := filepath.Join(dir, CopyFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("%w: no copy of the record in %s (siemctl rollback --cluster --phase prepare keeps one)", ErrNoRun, dir)
	}
	if err != nil {
		return Record{}, err
	}
	if !fi.Mode().IsRegular() {
		return Record{}, fmt.Errorf("%w: %s is not a regular file", ErrInvalid, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	return r, nil
}

// RollbackCalls are the record's requests of a cluster rollback, for dry runs.
func RollbackCalls() map[string][]string {
	create, read, write := Calls()
	return map[string][]string{
		"prepare": {read, write + " (phase rolling-back, the cause and the node; the held turn taken back; once)",
			read + " (every host: a copy kept in its state directory, " + CopyFile + ")"},
		"restore": {create[0], create[1] + " (the kept copy written back: indexer entries done, manager and dashboard turns open)"},
		"node":    {read, write + " (take the rollback turn)", write + " (renew the lease every lease/3)", write + " (done or failed)"},
		"finish":  {read, write + " (every entry done: phase rolled-back)"},
	}
}
