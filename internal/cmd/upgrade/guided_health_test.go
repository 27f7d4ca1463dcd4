package upgrade

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/output"
)

// operatorAnswers answers "c" at every prompt, taking think of the clock to do so.
type operatorAnswers struct {
	mu    *sync.Mutex
	now   *time.Time
	think time.Duration
}

func (o operatorAnswers) Read(b []byte) (int, error) {
	o.mu.Lock()
	*o.now = o.now.Add(o.think)
	o.mu.Unlock()
	return copy(b, "c\n"), nil
}

// guidedRun prepares a guided run of the embedded upgrade runbook on the fixture and returns its
// cockpit, the steps done at the end of the indexer phase, the terminal and the clock.
func guidedRun(t *testing.T, think time.Duration, hr func(context.Context) (health.Report, error)) (*cockpit, []string, *bytes.Buffer, func(time.Duration) time.Time) {
	t.Helper()
	fx := newFixture(t, "4.9.0-1")
	c := fx.common
	var mu sync.Mutex
	start := time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC)
	now := start
	c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var term bytes.Buffer
	c.IO, _, _, _ = output.Test()
	c.IO.In, c.IO.ErrOut = operatorAnswers{mu: &mu, now: &now, think: think}, &term
	c.Health = hr
	p, err := prepare(t.Context(), c, "4.10.0", "", engine.Selection{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := newCockpit(t.Context(), c, p, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, s := range p.Plan.Selected() {
		if s.ID == "manager/install" {
			break
		}
		if !s.Always {
			done = append(done, s.ID)
		}
	}
	at := func(d time.Duration) time.Time { mu.Lock(); defer mu.Unlock(); now = start.Add(d); return now }
	return ck, done, &term, at
}

// After the indexer phase the manager, the shipper and the dashboard are down on purpose: their
// checks are EXPECTED with the phase that starts them again; a real CRIT (a red cluster) stands
// out as the verdict (issue 26 §5a).
func TestGuidedHealthJudgedAgainstThePlan(t *testing.T) {
	afterIndexer := health.Report{Verdict: health.Crit, Results: []health.Result{
		{ID: "units", Component: "host", Status: health.Crit, Summary: "1/4 units active; not active: siem-manager.service, siem-dashboard.service, shipper.service"},
		{ID: "ports", Component: "host", Status: health.Crit, Summary: "not listening: 55000/tcp (manager API), 1514/tcp (agents), 443/tcp (dashboard)",
			Fix: "siemctl services restart manager; siemctl services restart dashboard"},
		{ID: "indexer.health", Component: "indexer", Status: health.Crit, Summary: "red: 1 primary shard unassigned"},
		{ID: "manager.api", Component: "manager", Status: health.Crit, Summary: "unreachable: connection refused"},
		{ID: "alerts.flow", Component: "alerts", Status: health.Warn, Summary: "no alerts indexed in the last 5 minutes"},
		{ID: "dashboard", Component: "dashboard", Status: health.Crit, Summary: "unreachable: connection refused"},
		{ID: "versions", Component: "stack", Status: health.OK},
	}}
	ck, done, term, at := guidedRun(t, time.Second, func(context.Context) (health.Report, error) { return afterIndexer, nil })
	if _, err := ck.guide.pause(t.Context(), engine.Boundary{Phase: "indexer", Step: done[len(done)-1], Done: done, Now: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	out := term.String()
	shows(t, "guided evidence", out,
		"Health now (siemctl health, judged against the plan): CRIT: 1 OK, 1 CRIT, 5 expected (stopped by the runbook)",
		"  CRIT      indexer.health  red: 1 primary shard unassigned\n",
		"EXPECTED  units           1/4 units active; not active: siem-manager.service, siem-dashboard.service, shipper.service: manager stopped by the runbook until the manager phase; dashboard stopped by the runbook until the dashboard phase; shipper stopped by the runbook until the shipper phase",
		"EXPECTED  manager.api     unreachable: connection refused: manager stopped by the runbook until the manager phase",
		"EXPECTED  ports ",
		"EXPECTED  alerts.flow ",
		"EXPECTED  dashboard ")
	if i, j := strings.Index(out, "CRIT      indexer.health"), strings.Index(out, "EXPECTED"); i < 0 || j < i {
		t.Errorf("the real CRIT is not listed first:\n%s", out)
	}
}

// Time spent waiting for the operator is shown apart and what is left comes from the clock: the
// budget less the time the run worked (issue 26 §5b).
func TestGuidedTimeLeftFromTheClock(t *testing.T) {
	ok := func(context.Context) (health.Report, error) { return health.Report{Verdict: health.OK}, nil }
	ck, done, term, at := guidedRun(t, 30*time.Second, ok)
	// the first pause at 10 s: the operator answers 30 s later
	if _, err := ck.guide.pause(t.Context(), engine.Boundary{Phase: "preflight", Step: "preflight/versions", Done: done[:1], Now: at(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	term.Reset()
	// the second at 54 s: 24 s of work, 30 s of waiting
	if _, err := ck.guide.pause(t.Context(), engine.Boundary{Phase: "indexer", Step: done[len(done)-1], Done: done, Now: at(54 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	want := "Time: 54s used: 24s working, 30s waiting for the operator;"
	left := "budget " + output.Duration(ck.budget.Total.D()) + " in all, about " + output.Duration(ck.budget.Total.D()-24*time.Second) + " left"
	if out := term.String(); !strings.Contains(out, want) || !strings.Contains(out, left) {
		t.Errorf("time line: want %q and %q:\n%s", want, left, out)
	}
}
