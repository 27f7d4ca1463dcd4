package upgrade

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/upgrade"
)

type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

// A budget of three steps: a/one (undo 10m), b/two (undo 20m), finally 1m.
var windowBudget = upgrade.Budget{Steps: []upgrade.StepBudget{
	{Step: "indexer/one", Phase: "indexer", Estimate: 600, Undo: 600},
	{Step: "manager/two", Phase: "manager", Estimate: 600, Undo: 1200},
	{Step: "finally/x", Phase: "finally", Estimate: 60, Finally: true},
}}

func TestWindowWatchPointOfNoReturn(t *testing.T) {
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	clk := &fakeNow{t: start}
	var out bytes.Buffer
	ww := newWindowWatch(&out, false, clk.now, upgrade.WindowRecord{Start: start, End: start.Add(time.Hour), Length: "1h0m0s"}, windowBudget, nil)
	if ww.lead != 15*time.Minute {
		t.Fatalf("lead %s", ww.lead)
	}
	step := func(typ, id string) string {
		out.Reset()
		ww.Observe(engine.Progress{Type: typ, Step: id})
		return out.String()
	}
	// nothing done: only the finally-steps (1m) → point of no return 01:59
	if got := step(engine.EvStepStart, "indexer/one"); !strings.Contains(got, "point of no return 01:59:00 UTC (in 59m") {
		t.Errorf("phase start: %q", got)
	}
	if got := step(engine.ProgressWait, "indexer/one"); got != "" {
		t.Errorf("mid-phase, far from it: %q", got)
	}
	// 40 minutes later indexer/one is done: rollback 11m → 01:49, 9m away: warn once
	clk.t = start.Add(40 * time.Minute)
	got := step(engine.EvStepOK, "indexer/one")
	if !strings.Contains(got, "WARNING the point of no return is at 01:49:00 UTC, in 9m") || !strings.Contains(got, "est. 11m") {
		t.Errorf("warning: %q", got)
	}
	if got := step(engine.ProgressWait, "indexer/one"); got != "" {
		t.Errorf("warned twice in one phase: %q", got)
	}
	// the next phase warns again
	clk.t = start.Add(42 * time.Minute)
	if got := step(engine.EvStepStart, "manager/two"); !strings.Contains(got, "WARNING") || !strings.Contains(got, "in 7m") {
		t.Errorf("warning at the next phase: %q", got)
	}
	// manager/two done at 01:45: rollback 31m → 01:29, passed: said once
	clk.t = start.Add(45 * time.Minute)
	if got := step(engine.EvStepOK, "manager/two"); !strings.Contains(got, "PAST the point of no return (01:29:00 UTC)") || !strings.Contains(got, "est. 31m") {
		t.Errorf("passed: %q", got)
	}
	if got := step(engine.ProgressWait, "manager/two"); got != "" {
		t.Errorf("said twice: %q", got)
	}
	// a rollback silences it
	step(engine.EvUndoStart, "manager/two")
	if got := step(engine.EvStepStart, "zzz/next"); got != "" {
		t.Errorf("after the rollback began: %q", got)
	}
}

func TestCheckWindow(t *testing.T) {
	b := upgrade.Budget{Total: 3600, Rollback: 1800, WindowMin: 5400, WindowMax: 7200}
	if err := checkWindow(2*time.Hour, b); err != nil {
		t.Fatal(err)
	}
	err := checkWindow(80*time.Minute, b)
	if cli.ExitCode(err) != 3 {
		t.Fatalf("exit %d: %v", cli.ExitCode(err), err)
	}
	for _, want := range []string{"1h20m window", "upgrade (1h00m)", "rollback (30m)", "= 1h30m", "at least 1h30m", "1h30m–2h00m"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
}

func TestApplyWindowRefusesWhenItDoesNotFit(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, Window: 30 * time.Second})
	var ee *cli.ExitError
	if !errors.As(err, &ee) || cli.ExitCode(err) != 3 || !strings.Contains(err.Error(), "does not hold the estimated upgrade") {
		t.Fatalf("%v (exit %d)", err, cli.ExitCode(err))
	}
	if fx.apt.installed["siem-indexer"] != "4.9.0-1" {
		t.Fatal("installed despite the no-go")
	}
	if _, err := os.Stat(filepath.Join(fx.state, "runs")); !os.IsNotExist(err) {
		t.Fatal("a refused window started a run")
	}
}

func TestApplyWindowJournaledAndShown(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	if err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, Window: 3 * time.Hour}); err != nil {
		t.Fatalf("%v\n%s", err, fx.errOut)
	}
	if !strings.Contains(fx.errOut.String(), "window: indexer ends at") || !strings.Contains(fx.errOut.String(), "point of no return") {
		t.Errorf("progress lacks the window:\n%s", fx.errOut)
	}
	ri, err := engine.Status(fx.state, "latest")
	if err != nil {
		t.Fatal(err)
	}
	rep := upgrade.NewRunReport(ri, nil)
	if rep.Window == nil || rep.Window.Length != "3h0m0s" || rep.Window.End.Sub(rep.Window.Start) != 3*time.Hour {
		t.Fatalf("journaled window %+v", rep.Window)
	}
	if !strings.Contains(fx.out.String(), "window:") {
		t.Errorf("report lacks the window:\n%s", fx.out)
	}
}

func TestGuidedNeedsATerminal(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, Guided: true})
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "needs a terminal") {
		t.Fatalf("%v (exit %d)", err, cli.ExitCode(err))
	}
	if fx.apt.installed["siem-indexer"] != "4.9.0-1" {
		t.Fatal("ran without a terminal")
	}
}

func TestOperatorName(t *testing.T) {
	env := map[string]string{"USER": "root", "SUDO_USER": "alice"}
	if got := operatorName(func(k string) string { return env[k] }); got != "alice" {
		t.Errorf("got %s", got)
	}
	delete(env, "SUDO_USER")
	if got := operatorName(func(k string) string { return env[k] }); got != "root" {
		t.Errorf("got %s", got)
	}
}
