package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/manager/managertest"
)

// The report lists each wave with its agents, times, outcome per agent and gate verdict: a canary
// that fails stops the run (no-go, the cause named, the next waves not started), the disconnected
// agents wait outside the waves with why.
func TestUpgradeReport(t *testing.T) {
	e := newUpgradeEnv(t)
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome {
		return managertest.TaskOutcome{Status: "Error", ErrorMsg: "The WPK for this platform is not available"}
	})
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 1, Waves: []float64{0.5, 1}}), e.now)
	if err := e.runner().Run(context.Background(), r); !errors.Is(err, ErrWaveFailed) {
		t.Fatalf("run: %v", err)
	}
	rep := r.Report()
	if len(rep.Waves) != 3 || len(rep.Pending) != 5 {
		t.Fatalf("%d waves, %d pending", len(rep.Waves), len(rep.Pending))
	}
	c := rep.Waves[0]
	if !c.Canary || c.State != WaveFailed || len(c.Agents) != 1 || len(c.Failed) != 1 || c.Failed[0].Cause.Code != 1819 ||
		c.Started.IsZero() || c.Ended.IsZero() || c.Gate.Verdict != "no-go" || c.Gate.Line != "no-go: 1 of 1 failed, at most 0 allowed" {
		t.Errorf("canary: %+v", c)
	}
	if w := rep.Waves[1]; w.Canary || w.Gate.Verdict != "not started" || len(w.Pending) != 4 || w.Pending[0].Why != "not sent yet" || !w.Started.IsZero() {
		t.Errorf("wave 2: %+v", w)
	}
	for _, p := range rep.Pending {
		if p.State != AgentPending || !strings.Contains(p.Why, "disconnected") {
			t.Errorf("pending %+v", p)
		}
	}

	// The fix, resume: every wave passes (go), each agent upgraded is listed in its wave.
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome { return upgraded })
	rn := e.runner()
	if err := rn.Resume(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := rn.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	rep = r.Report()
	n := 0
	for _, w := range rep.Waves {
		n += len(w.Upgraded)
		if w.Gate.Verdict != "go" || len(w.Failed) != 0 || len(w.Pending) != 0 || w.Ended.Before(w.Started) {
			t.Errorf("wave %d: %+v", w.Wave, w)
		}
	}
	if n != 10 {
		t.Errorf("%d upgraded in the waves", n)
	}
}

// An agent held out of its wave (its node cut from the master) is pending in that wave's report with
// the cause, and in the run's.
func TestUpgradeReportHeld(t *testing.T) {
	e := newUpgradeEnv(t)
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome { return upgraded })
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 1, Waves: []float64{1}}), e.now)
	w := r.Waves[1]
	id := w.Agents[0]
	rn := e.runner()
	rn.holdNode(r, w, "worker1", []string{id}, 3022)
	rep := r.Report()
	var held *PendingAgent
	for i, p := range rep.Waves[1].Pending {
		if p.ID == id {
			held = &rep.Waves[1].Pending[i]
		}
	}
	if held == nil || held.Code != 3022 || !strings.Contains(held.Why, "worker1") || held.State != AgentPending {
		t.Fatalf("held: %+v in %+v", held, rep.Waves[1])
	}
	found := false
	for _, p := range rep.Pending {
		found = found || p.ID == id && p.Code == 3022
	}
	if !found {
		t.Errorf("the run's pending: %+v", rep.Pending)
	}
}
