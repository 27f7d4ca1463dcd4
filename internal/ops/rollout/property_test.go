package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// TestRecordProperty drives random sequences of takes (by the host whose turn it is and by
// others), elections (the elected cluster manager moving to any indexer node, any number of
// times, including right after the elected node's own turn), done, failed and given-back turns,
// kills (a siemctl killed mid-turn, its lease left to run out or resumed by the same host), the
// finish, and a rollback from wherever the sequence stopped, through the record and its
// validation. After every step the record validates and keeps its invariants; every sequence ends
// in a rollback that writes the record back into a fresh cluster and rolls back to the end
// (issue 34 must-hold 1: a rollback works from every state a roll can be in).
func TestRecordProperty(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 40
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { recordSequence(t, uint64(seed)) })
	}
}

// propHosts: one host per entry of threeNodeRecord, and indexer-1's host also runs the manager
// master (an all-in-one host owns two entries).
var propHosts = []rollout.Identity{
	host("h1", "indexer/indexer-1", "manager/manager-1"),
	host("h2", "indexer/indexer-2"),
	host("h3", "indexer/indexer-3"),
	host("m2", "manager/manager-2"),
	host("d1", "dashboard/127.0.0.31"),
}

func ownerOf(name string) rollout.Identity {
	for _, h := range propHosts {
		if slices.Contains(h.Names, name) {
			return h
		}
	}
	panic("no host owns " + name)
}

func recordSequence(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 34))
	s, _, clk := newStore(t)
	indexers := []string{"indexer-1", "indexer-2", "indexer-3"}
	elected := "indexer-3"
	s.Elected = func(context.Context) (string, error) { return elected, nil }
	rolling(t, s, threeNodeRecord())

	var (
		held  *rollout.Turn
		trail []string
		// doneAt keeps where each done entry stood and its role when it was first seen done.
		doneAt = map[string]string{}
	)
	check := func(op string) rollout.Record {
		t.Helper()
		trail = append(trail, op)
		r, err := s.Load(ctx)
		if err != nil {
			t.Fatalf("load after %v: %v", trail, err)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("after %v: %v\norder: %s", trail, err, orderString(r))
		}
		cur := r.Current()
		for i, e := range r.Order {
			if cur >= 0 && i > cur && e.State != rollout.Pending {
				t.Fatalf("after %v: %s is %s after the current entry %s\norder: %s", trail, e.Name, e.State, r.Order[cur].Name, orderString(r))
			}
			if e.State == rollout.Done {
				at := fmt.Sprintf("%d %s", i, e.Role)
				if was, ok := doneAt[e.Name]; ok && was != at {
					t.Fatalf("after %v: done entry %s moved or was relabeled: was %s, now %s", trail, e.Name, was, at)
				}
				doneAt[e.Name] = at
			}
		}
		if h := r.Holder; h != nil && (cur < 0 || h.Entry != r.Order[cur].Name) {
			t.Fatalf("after %v: the holder %s is not the current entry", trail, h.Entry)
		}
		return r
	}
	// allowed are the errors a step may meet in a sound run: not this host's turn, a turn taken
	// back or run out, a phase that does not allow it.
	allowed := func(op string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, rollout.ErrNotYourTurn) || errors.Is(err, rollout.ErrLostTurn) ||
			errors.Is(err, rollout.ErrLeaseExpired) || errors.Is(err, rollout.ErrPhase) {
			return
		}
		t.Fatalf("%s after %v: %v", op, trail, err)
	}

	for step := 0; step < 40; step++ {
		r := check(fmt.Sprintf("step %d", step))
		if r.Phase == rollout.PhaseDone {
			break
		}
		switch op := rng.IntN(10); {
		case op < 3: // the host whose turn it is takes it (as upgrade node does after Check)
			if held != nil {
				continue
			}
			e, _, err := s.Check(ctx, propHosts[0])
			_ = e
			var nyt *rollout.NotYourTurnError
			if errors.As(err, &nyt) && nyt.Whose != "" {
				held, err = s.Take(ctx, ownerOf(nyt.Whose), time.Minute)
				allowed("take "+nyt.Whose, err)
				trail = append(trail, "take "+nyt.Whose)
			} else if err == nil {
				held, err = s.Take(ctx, propHosts[0], time.Minute)
				allowed("take h1", err)
				trail = append(trail, "take h1")
			}
		case op == 3: // any host tries
			h := propHosts[rng.IntN(len(propHosts))]
			turn, err := s.Take(ctx, h, time.Minute)
			allowed("take by "+h.Host, err)
			if err == nil {
				if held != nil && held.Token != turn.Token {
					held = nil // taken over (same host resumes its own turn)
				}
				held = turn
			}
			trail = append(trail, "try "+h.Host)
		case op < 6: // the held turn ends
			if held == nil {
				continue
			}
			name := held.Entry().Name
			var err error
			switch rng.IntN(6) {
			case 0:
				err = held.Fail(ctx, errors.New("indexer/rejoined: not in the cluster"))
				trail = append(trail, "fail "+name)
			case 1:
				err = held.Release(ctx, "gates: nothing done")
				trail = append(trail, "release "+name)
			default:
				err = held.Done(ctx)
				trail = append(trail, "done "+name)
				// the elected cluster manager restarted in its turn: another node is elected
				if node := rollout.Node(name); err == nil && node == elected && strings.HasPrefix(name, "indexer/") {
					elected = indexers[rng.IntN(len(indexers))]
					trail = append(trail, "elected "+elected)
				}
			}
			allowed("end of "+name, err)
			held = nil
		case op == 6: // the election moves for another reason
			elected = indexers[rng.IntN(len(indexers))]
			trail = append(trail, "elected "+elected)
		case op == 7: // siemctl killed mid-turn; maybe its lease runs out
			if held != nil {
				trail = append(trail, "kill "+held.Entry().Name)
				held = nil
			}
			if rng.IntN(2) == 0 {
				clk.Add(2 * time.Minute)
				trail = append(trail, "lease runs out")
			}
		case op == 8: // upgrade finish --cluster
			if r.Phase == rollout.PhaseFinish {
				_, err := s.SetPhase(ctx, r.RunID, []rollout.Phase{rollout.PhaseFinish}, rollout.PhaseDone, "finished")
				allowed("finish", err)
				trail = append(trail, "finish")
			}
		case op == 9: // a rollback, from wherever the run is
			rollbackToEnd(t, s, clk, r, held != nil, trail)
			return
		}
	}
	r := check("end of the sequence")
	rollbackToEnd(t, s, clk, r, held != nil, trail)
}

// rollbackToEnd rolls the run back as rollback --cluster does: prepare (Begin, a copy kept), the
// indexer wiped, the copy written back into a fresh cluster, the rollback's turns in order, the end.
func rollbackToEnd(t *testing.T, s *rollout.Store, clk *clock, r rollout.Record, midTurn bool, trail []string) {
	t.Helper()
	ctx := context.Background()
	entry := ""
	if midTurn && r.Current() >= 0 {
		entry = r.Order[r.Current()].Name // a no-go in that turn
	}
	began, err := s.Begin(ctx, r.RunID, "h1", entry, "siemctl rollback --cluster")
	if err != nil {
		t.Fatalf("Begin after %v (phase %s): %v", trail, r.Phase, err)
	}
	dir := t.TempDir()
	if err := rollout.SaveCopy(dir, began); err != nil {
		t.Fatal(err)
	}
	kept, err := rollout.LoadCopy(dir)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, _ := newStore(t)
	fresh.Now = clk.Now
	back, err := fresh.Reinstate(ctx, kept)
	if err != nil {
		t.Fatalf("Reinstate after %v: %v\norder: %s", trail, err, orderString(kept))
	}
	for {
		back, err = fresh.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := back.Current()
		if i < 0 {
			break
		}
		turn, err := fresh.Take(ctx, ownerOf(back.Order[i].Name), time.Minute)
		if err != nil {
			t.Fatalf("rollback turn %s after %v: %v", back.Order[i].Name, trail, err)
		}
		if err := turn.Done(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if end, err := fresh.End(ctx, r.RunID); err != nil || end.Phase != rollout.PhaseRolledBack {
		t.Fatalf("End after %v: %v (phase %s)", trail, err, end.Phase)
	}
}

func orderString(r rollout.Record) string {
	var b []string
	for _, e := range r.Order {
		b = append(b, fmt.Sprintf("%s:%s:%s", e.Node, e.Role, e.State))
	}
	return string(r.Phase) + " " + strings.Join(b, " ")
}

// TestElectionMovedAfterTheLastIndexer is issue 34's completed roll: the elected cluster manager
// restarts in the last indexer turn, another node is elected, the next take re-orders; the done
// entries keep their roles and the record validates, so the rollback after the finish writes it
// back. A copy kept by an older siemctl, with the roles relabeled, is repaired on the way back.
func TestElectionMovedAfterTheLastIndexer(t *testing.T) {
	ctx := context.Background()
	s, _, clk := rollingStore(t)
	elected := "indexer-3"
	s.Elected = func(context.Context) (string, error) { return elected, nil }
	for _, h := range propHosts[:3] {
		turn, err := s.Take(ctx, h, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := turn.Done(ctx); err != nil {
			t.Fatal(err)
		}
	}
	elected = "indexer-2"
	turn, err := s.Take(ctx, host("h1", "manager/manager-1"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := turn.Record()
	if err := r.Validate(); err != nil || r.Order[2].Role != rollout.RoleIndexerManager || r.Order[1].Role != rollout.RoleIndexer {
		t.Fatalf("after the election moved: %v\norder: %s", err, orderString(r))
	}
	if r.ElectedManager != "indexer-2" {
		t.Errorf("elected manager %q, want the one elected now", r.ElectedManager)
	}
	rollbackToEnd(t, s, clk, r, false, []string{"three indexer turns", "elected indexer-2", "master taken"})

	// the copy an older siemctl kept: indexer-2 relabeled the elected one, before indexer-3
	old := r
	old.Phase = rollout.PhaseRollingBack
	old.Rollback = &rollout.Rollback{Cause: "siemctl rollback --cluster", Host: "h1", From: rollout.PhaseDone}
	old.Order = slices.Clone(r.Order)
	old.Order[1].Role, old.Order[2].Role = rollout.RoleIndexerManager, rollout.RoleIndexer
	if err := old.Validate(); err == nil || !strings.Contains(err.Error(), "after a later role") {
		t.Fatalf("the old copy validates: %v", err)
	}
	fresh, _, _ := newStore(t)
	back, err := fresh.Reinstate(ctx, old)
	if err != nil {
		t.Fatalf("Reinstate of the relabeled copy: %v", err)
	}
	if !strings.Contains(back.Note, "repaired: indexer/indexer-2") || back.Validate() != nil {
		t.Errorf("written back: note %q, valid %v", back.Note, back.Validate())
	}

	// a copy that cannot be repaired names what to do
	bad := old
	bad.Order = append(slices.Clone(old.Order), old.Order[0])
	if _, err := fresh.Reinstate(ctx, bad); err == nil || !strings.Contains(err.Error(), "siemctl rollback --cluster --phase restore") {
		t.Errorf("an unrepairable copy: %v, want the way out named", err)
	}
}
