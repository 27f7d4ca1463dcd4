package rollout_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// TestClusterRollback: a no-go at indexer-2 moves the run to rolling-back (the held turn is
// taken back: its holder cannot write); every host keeps a copy; the record is written back into
// a fresh cluster (a new, empty indexer) with the indexer entries done and the manager and
// dashboard turns open; those turns go in the upgrade's order; the end is rolled-back.
func TestClusterRollback(t *testing.T) {
	ctx := context.Background()
	s, _, clk := rollingStore(t)
	t1 := takeFirst(t, s)
	if err := t1.Done(ctx); err != nil {
		t.Fatal(err)
	}
	t2, err := s.Take(ctx, host("h2", "indexer/indexer-2"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	r, err := s.Begin(ctx, "", "h2", "indexer/indexer-2", "indexer/rejoined: indexer-2 not in the cluster after 5m")
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if r.Phase != rollout.PhaseRollingBack || r.Holder != nil || r.Rollback == nil || r.Rollback.Entry != "indexer/indexer-2" || r.Rollback.From != rollout.PhaseRolling {
		t.Fatalf("after Begin: phase %s holder %v rollback %+v", r.Phase, r.Holder, r.Rollback)
	}
	if !strings.Contains(r.Note, "indexer-2") {
		t.Errorf("note %q does not name the node", r.Note)
	}
	if err := t2.Done(ctx); !errors.Is(err, rollout.ErrLostTurn) {
		t.Errorf("the holder's write after the rollback began: %v, want ErrLostTurn", err)
	}
	// a second Begin (the playbook's, after the node's own) keeps the first cause
	again, err := s.Begin(ctx, r.RunID, "h1", "", "siemctl rollback --cluster")
	if err != nil || again.Rollback.Cause != r.Rollback.Cause {
		t.Errorf("Begin again: %v, cause %q, want the first one kept", err, again.Rollback.Cause)
	}
	// no turn while the indexers are being rolled back
	if _, err := s.Take(ctx, host("m1", "manager/manager-1"), time.Minute); !errors.Is(err, rollout.ErrNotYourTurn) {
		t.Errorf("a manager turn before the record is written back: %v, want not your turn", err)
	}

	// every host keeps a copy; the indexer is wiped (a new store over an empty cluster)
	dir := t.TempDir()
	if err := rollout.SaveCopy(dir, r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, rollout.CopyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the copy: %v %v, want mode 0600", fi, err)
	}
	fresh, docs, _ := newStore(t)
	fresh.Now = clk.Now
	if _, err := fresh.Load(ctx); !errors.Is(err, rollout.ErrNoRun) {
		t.Fatalf("fresh cluster: %v", err)
	}
	kept, err := rollout.LoadCopy(dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := fresh.Reinstate(ctx, kept)
	if err != nil {
		t.Fatalf("Reinstate: %v", err)
	}
	if !back.Rollback.Turns || back.Phase != rollout.PhaseRollingBack {
		t.Fatalf("written back: phase %s rollback %+v", back.Phase, back.Rollback)
	}
	for _, e := range back.Order {
		want := rollout.Pending
		if strings.HasPrefix(e.Name, "indexer/") {
			want = rollout.Done
		}
		if e.State != want || e.Attempts != 0 {
			t.Errorf("%s: %s (%d attempts), want %s with none", e.Name, e.State, e.Attempts, want)
		}
	}
	writes := docs.Writes()
	// written back again (a resumed restore, or a second host): unchanged
	if again, err := fresh.Reinstate(ctx, kept); err != nil || again.SeqNo != back.SeqNo || docs.Writes() != writes {
		t.Errorf("Reinstate again: %v (seq %d, want %d; writes %d, want %d)", err, again.SeqNo, back.SeqNo, docs.Writes(), writes)
	}

	if _, err := fresh.End(ctx, back.RunID); !errors.Is(err, rollout.ErrPhase) || !strings.Contains(err.Error(), "manager/manager-1") {
		t.Errorf("End with turns left: %v, want ErrPhase naming manager/manager-1", err)
	}
	// the turns: the worker waits for the master; the master, the worker, the dashboard
	if _, err := fresh.Take(ctx, host("m2", "manager/manager-2"), time.Minute); !errors.Is(err, rollout.ErrNotYourTurn) {
		t.Errorf("the worker before the master: %v", err)
	}
	for _, h := range []rollout.Identity{host("m1", "manager/manager-1"), host("m2", "manager/manager-2"), host("d1", "dashboard/127.0.0.31")} {
		turn, err := fresh.Take(ctx, h, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", h.Host, err)
		}
		if err := turn.Done(ctx); err != nil {
			t.Fatal(err)
		}
	}
	end, err := fresh.End(ctx, back.RunID)
	if err != nil || end.Phase != rollout.PhaseRolledBack {
		t.Fatalf("End: %v, phase %s", err, end.Phase)
	}
	if !end.Phase.Ended() {
		t.Error("rolled-back is not an ended phase")
	}
	if _, err := fresh.Begin(ctx, "", "h1", "", "again"); !errors.Is(err, rollout.ErrPhase) {
		t.Errorf("Begin on a rolled-back run: %v, want ErrPhase", err)
	}
}

// TestRollbackTurnFailedResumes: a rollback turn that fails stops the run (phase failed); taken
// again by its host, the run goes back to rolling-back, not to the upgrade's rolling.
func TestRollbackTurnFailedResumes(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newStore(t)
	rec := threeNodeRecord()
	rec.Phase = rollout.PhaseRollingBack
	rec.Rollback = &rollout.Rollback{Cause: "siemctl rollback --cluster", Host: "h1"}
	back, err := s.Reinstate(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if back.Rollback.Reinstated != clk.Now() {
		t.Errorf("reinstated at %v, want %v", back.Rollback.Reinstated, clk.Now())
	}
	turn, err := s.Take(ctx, host("m1", "manager/manager-1"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := turn.Fail(ctx, errors.New("manager/api: 4.9.0 expected")); err != nil {
		t.Fatal(err)
	}
	turn, err = s.Take(ctx, host("m1", "manager/manager-1"), time.Minute)
	if err != nil {
		t.Fatalf("the failed rollback turn taken again: %v", err)
	}
	if r := turn.Record(); r.Phase != rollout.PhaseRollingBack {
		t.Errorf("resumed into phase %s, want rolling-back", r.Phase)
	}
}

// TestReinstateRefuses: the kept copy must be rolling back; another run in progress in the
// cluster is not overwritten; a missing or non-regular copy is named.
func TestReinstateRefuses(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	rec := threeNodeRecord()
	rec.Phase = rollout.PhaseRolling
	if _, err := s.Reinstate(ctx, rec); !errors.Is(err, rollout.ErrPhase) {
		t.Errorf("a rolling copy: %v, want ErrPhase", err)
	}
	other := threeNodeRecord()
	other.RunID = "20261128T020000Z-def456"
	rolling(t, s, other)
	rec.Phase = rollout.PhaseRollingBack
	var exists *rollout.RunExistsError
	if _, err := s.Reinstate(ctx, rec); !errors.As(err, &exists) || exists.RunID != other.RunID {
		t.Errorf("another run in the cluster: %v, want RunExistsError naming it", err)
	}

	dir := t.TempDir()
	if _, err := rollout.LoadCopy(dir); !errors.Is(err, rollout.ErrNoRun) {
		t.Errorf("no copy: %v, want ErrNoRun", err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, rollout.CopyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := rollout.LoadCopy(dir); !errors.Is(err, rollout.ErrInvalid) {
		t.Errorf("a symlinked copy: %v, want ErrInvalid", err)
	}
	if err := rollout.SaveCopy(dir, rec); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, rollout.CopyFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("SaveCopy over a symlink: %v %v, want the link replaced by a file", fi, err)
	}
	if b, _ := os.ReadFile("/etc/hostname"); strings.Contains(string(b), rec.RunID) {
		t.Error("SaveCopy wrote through the symlink")
	}
}

// TestRollingBackError: exit 10, naming the node, the reason, the node's log's last error and
// what to run.
func TestRollingBackError(t *testing.T) {
	err := &rollout.RollingBackError{RunID: "r1", Entry: "indexer/indexer-2", Reason: errors.New("indexer/rejoined: not in the cluster"),
		Diagnosis: []string{"cause: the node cannot join: master not discovered yet"}}
	msg := err.Error()
	for _, want := range []string{"indexer/indexer-2", "not in the cluster", "master not discovered", "rollback.yml", "siemctl rollback --cluster"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}
