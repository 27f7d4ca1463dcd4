package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// budgetKind is a kind that asks for extra time (or fails to say how much) and runs run.
func budgetKind(name string, readOnly bool, extra time.Duration, why string, err error, run behaviour) Kind[string] {
	return Define(Spec[*fakeParams, string]{Name: name, ReadOnly: readOnly,
		New: func() *fakeParams { return &fakeParams{} },
		Run: func(ctx context.Context, env Env[string], _ *fakeParams) (Outcome, error) { return run(ctx, env) },
		Budget: func(context.Context, Env[string], *fakeParams) (time.Duration, string, error) {
			return extra, why, err
		}})
}

// A Budgeter kind's deadline is its runbook timeout plus the extra it asks for: a gate polls that
// long, the start event journals it and the progress line shows it. A failed ask leaves the
// runbook timeout, saying why; a kind that asks nothing journals no deadline.
func TestBudgetExtendsTheDeadline(t *testing.T) {
	const rb = `name: budget
steps:
  - {id: a/wait, kind: fake.budget, timeout: 1m}
`
	for _, tc := range []struct {
		name     string
		extra    time.Duration
		why      string
		err      error
		waited   string
		deadline *Deadline
	}{
		{"extra", 2 * time.Minute, "500ms × 240 primary shards", nil, "after 3m0s", &Deadline{Timeout: time.Minute, Extra: 2 * time.Minute, Why: "500ms × 240 primary shards"}},
		{"ask failed", time.Hour, "", errors.New("no count"), "after 1m0s", &Deadline{Timeout: time.Minute, Why: "no extra time: no count"}},
		{"nothing asked", 0, "", nil, "after 1m0s", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.reg = &Registry[string]{}
			if err := f.reg.Register(budgetKind("fake.budget", true, tc.extra, tc.why, tc.err, pending("primaries recovering"))); err != nil {
				t.Fatal(err)
			}
			f.r.Registry = f.reg
			p, err := ParsePlan([]byte(rb), "budget.yaml", f.reg, Selection{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ri, err := f.r.Run(context.Background(), p, RunOptions{})
			var ge *GateError
			if !errors.As(err, &ge) || !strings.Contains(ge.Reason, "still primaries recovering "+tc.waited) {
				t.Fatalf("got %v, want a gate error %s", err, tc.waited)
			}
			var start *Event
			for _, e := range events(t, f.dir, ri.ID) {
				if e.Type == EvStepStart {
					start = &e
				}
			}
			if start == nil || (start.Deadline == nil) != (tc.deadline == nil) || tc.deadline != nil && *start.Deadline != *tc.deadline {
				t.Fatalf("step-start deadline %+v, want %+v", start, tc.deadline)
			}
			if ps := f.log.of(EvStepStart); len(ps) != 1 || tc.deadline != nil && ps[0].Message != "deadline "+tc.deadline.String() || tc.deadline == nil && ps[0].Message != "" {
				t.Errorf("start progress %+v", ps)
			}
		})
	}
}

// An undo gets its kind's extra time too (a snapshot restore during a rollback).
func TestBudgetOfAnUndo(t *testing.T) {
	const rb = `name: budget
steps:
  - {id: a/change, kind: fake.change, undo: {kind: fake.restore, timeout: 2h}}
  - {id: b/fail, kind: fake.change, on_fail: rollback}
`
	f := newFixture(t)
	f.rec.on("run b/fail", fails("boom"))
	restore := budgetKind("fake.restore", false, 10*time.Minute, "500ms × 1200 primary shards", nil,
		func(ctx context.Context, _ Env[string]) (Outcome, error) {
			dl, _ := ctx.Deadline()
			if left := time.Until(dl); left < 2*time.Hour || left > 2*time.Hour+10*time.Minute {
				return Outcome{}, errors.New("undo context deadline " + left.String())
			}
			return Outcome{Message: "restored"}, nil
		})
	if err := f.reg.Register(restore); err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan([]byte(rb), "budget.yaml", f.reg, Selection{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := f.r.Run(context.Background(), p, RunOptions{})
	var rb2 *RolledBackError
	if !errors.As(err, &rb2) {
		t.Fatalf("got %v, want rolled back", err)
	}
	for _, e := range events(t, f.dir, ri.ID) {
		if e.Type == EvUndoStart {
			if want := (Deadline{Timeout: 2 * time.Hour, Extra: 10 * time.Minute, Why: "500ms × 1200 primary shards"}); e.Deadline == nil || *e.Deadline != want {
				t.Fatalf("undo-start deadline %+v, want %+v", e.Deadline, want)
			}
			return
		}
	}
	t.Fatal("no undo-start event")
}
