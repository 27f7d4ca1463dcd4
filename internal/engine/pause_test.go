package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// script answers boundaries in order and records what it was shown.
type script struct {
	answers []string
	seen    []Boundary
}

func (s *script) pause(_ context.Context, b Boundary) (Decision, error) {
	s.seen = append(s.seen, b)
	if len(s.answers) == 0 {
		return Decision{}, errors.New("no answer")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return Decision{Choice: a, Operator: "alice"}, nil
}

func guided(f *fixture, answers ...string) *script {
	s := &script{answers: answers}
	f.r.Pause, f.r.PauseAfter = s.pause, []string{"pre", "a", "b"}
	return s
}

func TestGuidedContinueEverywhere(t *testing.T) {
	f := newFixture(t)
	s := guided(f, DecisionContinue, DecisionContinue, DecisionContinue)
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	if err != nil || ri.Status != StatusSucceeded {
		t.Fatalf("status %v err %v", ri.Status, err)
	}
	if got := f.rec.got(); !slices.Equal(got, all) {
		t.Errorf("calls %q", got)
	}
	var after []string
	for _, b := range s.seen {
		after = append(after, b.Phase+"@"+b.Step)
	}
	if want := []string{"pre@pre/gate", "a@a/two", "b@b/gate"}; !slices.Equal(after, want) {
		t.Errorf("boundaries %q, want %q", after, want)
	}
	// the evidence after b: both gates so far with their messages, the completed steps
	last := s.seen[2]
	if len(last.Gates) != 2 || last.Gates[1].Step != "b/gate" || last.Gates[1].Verdict != VerdictGo || last.Gates[1].Detail != "done run b/gate" {
		t.Errorf("gates at b: %+v", last.Gates)
	}
	if !slices.Equal(last.Done, []string{"pre/gate", "a/one", "a/two", "b/three", "b/gate"}) {
		t.Errorf("done at b: %q", last.Done)
	}
	if len(ri.Decisions) != 3 || ri.Decisions[1] != (DecisionInfo{Time: ri.Decisions[1].Time, Phase: "a", Step: "a/two", Decision: DecisionContinue, Operator: "alice"}) || ri.Decisions[1].Time.IsZero() {
		t.Errorf("decisions %+v", ri.Decisions)
	}
}

func TestGuidedStopHereIsResumable(t *testing.T) {
	f := newFixture(t)
	guided(f, DecisionContinue, DecisionStop)
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	var st *StoppedError
	if !errors.As(err, &st) || exitCode(err) != 130 || st.Operator != "alice" || st.Phase != "a" {
		t.Fatalf("err %T %v (exit %d)", err, err, exitCode(err))
	}
	if ri.Status != StatusInterrupted || !ri.Resumable() {
		t.Fatalf("status %s resumable %v", ri.Status, ri.Resumable())
	}
	if got := f.rec.got(); !slices.Equal(got, []string{"run pre/gate", "run a/one", "run a/two"}) {
		t.Errorf("calls before stop %q (finally must not run on a stop)", got)
	}
	// resume (not guided) goes on after the boundary, not repeating a/*
	f.r.Pause = nil
	ri, err = f.r.Resume(context.Background(), ri.ID)
	if err != nil || ri.Status != StatusSucceeded {
		t.Fatalf("resume: %v %v", ri.Status, err)
	}
	if got := f.rec.got()[3:]; !slices.Equal(got, []string{"run b/three", "run b/gate", "run c/four", "run final/check"}) {
		t.Errorf("calls after resume %q", got)
	}
	if len(ri.Decisions) != 2 || ri.Decisions[1].Decision != DecisionStop {
		t.Errorf("decisions %+v", ri.Decisions)
	}
}

func TestGuidedRollback(t *testing.T) {
	f := newFixture(t)
	guided(f, DecisionContinue, DecisionContinue, DecisionRollback)
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	var ob *OperatorRollbackError
	if exitCode(err) != 10 || !errors.As(err, &ob) || ob.Phase != "b" {
		t.Fatalf("err %v exit %d", err, exitCode(err))
	}
	want := []string{"run pre/gate", "run a/one", "run a/two", "run b/three", "run b/gate", "undo a/two", "undo a/one", "run final/check"}
	if got := f.rec.got(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	if ri.Status != StatusRolledBack {
		t.Errorf("status %s", ri.Status)
	}
}

func TestGuidedRollbackBeforeAnyChangeIsNoGo(t *testing.T) {
	f := newFixture(t)
	guided(f, DecisionRollback)
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	if exitCode(err) != 3 || ri.Status != StatusNoGo {
		t.Fatalf("err %v exit %d status %s", err, exitCode(err), ri.Status)
	}
	if got := f.rec.got(); !slices.Equal(got, []string{"run pre/gate"}) {
		t.Errorf("calls %q", got)
	}
}

func TestGuidedWaitReevaluates(t *testing.T) {
	f := newFixture(t)
	f.rec.on("run b/gate", nil, nogo("cluster red"))
	s := guided(f, DecisionContinue, DecisionContinue, DecisionWait, DecisionRollback)
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	if exitCode(err) != 10 {
		t.Fatalf("err %v", err)
	}
	if n := slices.Index(f.rec.got(), "undo a/two"); n < 0 || f.rec.got()[n-1] != "run b/gate" || f.rec.got()[n-2] != "run b/gate" {
		t.Errorf("b/gate not re-run before the rollback: %q", f.rec.got())
	}
	if len(s.seen) != 4 {
		t.Fatalf("asked %d times", len(s.seen))
	}
	g := s.seen[3].Gates
	if last := g[len(g)-1]; last.Step != "b/gate" || !last.Rechecked || last.Verdict != VerdictNoGo || last.Detail != "cluster red" {
		t.Errorf("re-evaluated verdict %+v", last)
	}
	var rechecks, decisions int
	for _, e := range events(t, f.dir, ri.ID) {
		switch e.Type {
		case EvRecheck:
			rechecks++
			if e.Status != VerdictNoGo || !e.NoGo {
				t.Errorf("recheck event %+v", e)
			}
		case EvDecision:
			decisions++
			if e.Operator != "alice" {
				t.Errorf("decision without operator %+v", e)
			}
		}
	}
	if rechecks != 1 || decisions != 4 {
		t.Errorf("journal: %d rechecks, %d decisions", rechecks, decisions)
	}
}

func TestGuidedNoAnswerStopsResumable(t *testing.T) {
	f := newFixture(t)
	guided(f) // no answers: the prompt fails (EOF)
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	if err == nil || ri.Status != StatusInterrupted || !ri.Resumable() {
		t.Fatalf("err %v status %s", err, ri.Status)
	}
}

func TestGuidedPhaseGroup(t *testing.T) {
	f := newFixture(t)
	f.rec.on("run b/gate", nil, nogo("late"))
	s := &script{answers: []string{DecisionWait, DecisionContinue}}
	f.r.Pause, f.r.PauseAfter = s.pause, []string{"b+c"}
	if _, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	// one boundary, after c/four (the last of b and c); wait re-ran b's gate
	if len(s.seen) != 2 || s.seen[0].Step != "c/four" || s.seen[0].Phase != "b+c" {
		t.Fatalf("boundaries %+v", s.seen)
	}
	g := s.seen[1].Gates
	if last := g[len(g)-1]; last.Step != "b/gate" || !last.Rechecked || last.Verdict != VerdictNoGo {
		t.Errorf("re-evaluated %+v", g)
	}
}

// TestGuidedAskOnFailure: in guided mode a failure that would roll back asks
// first; continue is not taken, wait runs the step again, stop leaves the
// run resumable, roll back rolls back.
func TestGuidedAskOnFailure(t *testing.T) {
	t.Run("wait then pass", func(t *testing.T) {
		f := newFixture(t)
		f.rec.on("run b/gate", nogo("breach: alerts stopped"), nil)
		s := guided(f, DecisionContinue, DecisionContinue, DecisionContinue, DecisionWait, DecisionContinue)
		f.r.PauseAfter = []string{"pre", "a", "c"}
		ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
		if err != nil || ri.Status != StatusSucceeded {
			t.Fatalf("status %v err %v", ri.Status, err)
		}
		var failure Boundary
		for _, b := range s.seen {
			if b.Failure != "" {
				failure = b
			}
		}
		if failure.Step != "b/gate" || !strings.Contains(failure.Failure, "alerts stopped") {
			t.Errorf("failure boundary %+v", failure)
		}
		// the continue offered at the failure was not taken: b/gate ran twice, nothing was undone
		want := []string{"run pre/gate", "run a/one", "run a/two", "run b/three", "run b/gate", "run b/gate", "run c/four", "run final/check"}
		if got := f.rec.got(); !slices.Equal(got, want) {
			t.Errorf("calls %q, want %q", got, want)
		}
		if n := len(ri.Decisions); n != 4 || ri.Decisions[2].Phase != "failure" || ri.Decisions[2].Decision != DecisionWait {
			t.Errorf("decisions %+v", ri.Decisions)
		}
	})
	t.Run("stop is resumable", func(t *testing.T) {
		f := newFixture(t)
		f.rec.on("run b/gate", nogo("breach"))
		guided(f, DecisionContinue, DecisionContinue, DecisionStop)
		ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
		var st *StoppedError
		if !errors.As(err, &st) || ri.Status != StatusInterrupted || !ri.Resumable() {
			t.Fatalf("err %v status %s", err, ri.Status)
		}
		if got := f.rec.got(); slices.Contains(got, "undo a/one") {
			t.Errorf("rolled back on stop: %q", got)
		}
	})
	t.Run("roll back", func(t *testing.T) {
		f := newFixture(t)
		f.rec.on("run b/gate", nogo("breach"))
		guided(f, DecisionContinue, DecisionContinue, DecisionRollback)
		ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
		if exitCode(err) != 10 || ri.Status != StatusRolledBack {
			t.Fatalf("err %v status %s", err, ri.Status)
		}
	})
}
