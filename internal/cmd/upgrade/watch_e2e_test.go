//go:build e2e

package upgrade_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/lab/e2e"
	"github.com/siemctl/siemctl/runbooks"
)

// watchPortOffset: the watch window's lab (between the upgrade's 550 and
// the data-safety 600 labs' offsets and theirs + 100).
const watchPortOffset = 650

// labRunbook is the embedded upgrade runbook with lab-sized waits: the
// watch judges every 5 s, the alert rate over the last minute, the probe
// every probeEvery ("0s": off) with 15 s to see its event (the shortest
// window: 1m); the agents gate waits agentsWait.
func labRunbook(t *testing.T, probeEvery, agentsWait string) string {
	t.Helper()
	raw, err := runbooks.FS.ReadFile(runbooks.Upgrade)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, r := range [][2]string{
		{"with: {interval: 30s, cluster_breach: red, alert_rate_min: 0.1, alert_rate_over: 5m, alert_rate_intervals: 3,",
			"with: {interval: 5s, cluster_breach: red, alert_rate_min: 0.1, alert_rate_over: 1m, alert_rate_intervals: 3,"},
		{"probe_every: 5m, probe_failures: 2, probe_timeout: 30s}", "probe_every: " + probeEvery + ", probe_failures: 2, probe_timeout: 15s}"},
		{"    with: {min_ratio: 0.95}\n    timeout: 10m\n", "    with: {min_ratio: 0.95}\n    timeout: " + agentsWait + "\n"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("embedded runbook has no %q: update labRunbook", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	p := filepath.Join(t.TempDir(), "upgrade-lab.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// watchReport is the part of the run report the watch cases read.
type watchReport struct {
	Status string `json:"status"`
	Fleet  *struct {
		Before *snapshot.Agents `json:"before"`
		After  *snapshot.Agents `json:"after"`
	} `json:"fleet"`
	Watch *watch.State `json:"watch"`
	Steps []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Note   string `json:"note"`
	} `json:"steps"`
}

func reportOf(t *testing.T, r e2e.Result) watchReport {
	t.Helper()
	var rep watchReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("report: %v\n%s\n%s", err, r.Stdout, tail(r.Stderr, 3000))
	}
	return rep
}

func stepStatus(rep watchReport, id string) (string, string) {
	for _, s := range rep.Steps {
		if s.ID == id {
			return s.Status, s.Note
		}
	}
	return "", ""
}

// TestE2EWatch: on one lab, a quiet stack passes a 1 min watch window; a
// kill -9 in the window is resumed with the remaining window; each fault
// injected as the window starts (alerts stop, agents that do not come back
// after a manager restart, a flapping unit) rolls back automatically to
// the old versions with the documents kept; and the agents gate says no-go
// when agents do not reconnect after the manager upgrade.
func TestE2EWatch(t *testing.T) {
	l := upOld(t, watchPortOffset)
	c := newLabClient(t, l.Dir)
	before := c.alertCounts(t)
	siemlab := filepath.Join(binDir, "siemlab") + " fault --dir " + l.Dir + " "
	rb := labRunbook(t, "15s", "30s")
	apply := func(t *testing.T, env []string, runbook string, extra ...string) e2e.Result {
		t.Helper()
		args := append([]string{"upgrade", "apply", "--to", "4.10.0", "--yes", "-o", "json", "--runbook", runbook}, extra...)
		return siemctlEnv(t, l, env, args...)
	}
	// oldAgain puts the stack back at 4.9.0 when a case left it upgraded or
	// stopped (a failed case must not fail the next ones).
	oldAgain := func(t *testing.T) {
		t.Cleanup(func() {
			if packageVersions(t, l.Dir)["siem-manager"] == "4.9.0-1" && packageVersions(t, l.Dir)["siem-indexer"] == "4.9.0-1" {
				return
			}
			t.Logf("case left the stack upgraded: rolling back")
			if r := l.Siemctl("rollback", "--yes"); r.Code != 0 {
				t.Errorf("cleanup rollback: exit %d\n%s", r.Code, tail(r.Stderr, 2000))
			}
		})
	}
	rolledBack := func(t *testing.T, r e2e.Result, crit string) {
		t.Helper()
		mustCode(t, r, 10, "apply with a fault in the watch window")
		rep := reportOf(t, r)
		if rep.Status != engine.StatusRolledBack || rep.Watch == nil || rep.Watch.Breach == nil || rep.Watch.Breach.Criterion != crit {
			t.Fatalf("status %s, watch %+v: want rolled-back on a %s breach\n%s", rep.Status, rep.Watch, crit, tail(r.Stderr, 4000))
		}
		t.Logf("breach: %s: %s", rep.Watch.Breach.Criterion, rep.Watch.Breach.Reason)
		t.Logf("automatic rollback:\n%s", lines(r.Stderr, "watch/window", "undo ", "run "))
		wantPackages(t, l.Dir, "4.9.0-1")
		if v := c.openSearchVersion(t); v != "2.11.1" {
			t.Errorf("OpenSearch %s after the automatic rollback, want 2.11.1", v)
		}
		noLoss(t, before, c.alertCounts(t))
	}

	t.Run("quiet-window-passes", func(t *testing.T) {
		oldAgain(t)
		r := apply(t, nil, rb, "--watch", "1m")
		mustCode(t, r, 0, "apply --watch 1m on a quiet stack")
		rep := reportOf(t, r)
		if st, note := stepStatus(rep, "watch/window"); st != engine.StepOK || !strings.Contains(note, "no breach") {
			t.Errorf("watch/window %s: %s", st, note)
		}
		if rep.Watch == nil || rep.Watch.Intervals < 5 || rep.Watch.Breach != nil {
			t.Errorf("watch state %+v", rep.Watch)
		}
		if rep.Fleet == nil || rep.Fleet.Before == nil || rep.Fleet.After == nil || rep.Fleet.Before.ByStatus["active"] == 0 ||
			rep.Fleet.After.ByStatus["active"] != rep.Fleet.Before.ByStatus["active"] {
			t.Errorf("fleet before/after: %+v", rep.Fleet)
		}
		if st, note := stepStatus(rep, "manager/agents-back"); st != engine.StepOK {
			t.Errorf("manager/agents-back %s: %s", st, note)
		}
		if !strings.Contains(r.Stderr, "watch window") || !strings.Contains(r.Stderr, "alert_rate") {
			t.Errorf("no live watch progress:\n%s", tail(r.Stderr, 3000))
		}
		t.Logf("watch progress:\n%s", tail(lines(r.Stderr, "watch/window"), 1500))
		mustCode(t, l.Siemctl("rollback", "--yes"), 0, "rollback after the watched upgrade")
		wantPackages(t, l.Dir, "4.9.0-1")
	})

	t.Run("kill-in-window-resumes-remaining", func(t *testing.T) {
		oldAgain(t)
		r := apply(t, []string{"SIEMCTL_TEST_KILL_AT=watch/window+12s"}, rb, "--watch", "1m")
		if r.Code == 0 || r.Code == 10 || r.Code == 11 {
			t.Fatalf("apply killed in the window exited %d: not killed\n%s", r.Code, tail(r.Stderr, 3000))
		}
		killedAt := time.Now()
		time.Sleep(5 * time.Second)
		r = l.Siemctl("upgrade", "resume", "--yes", "-o", "json")
		mustCode(t, r, 0, "resume in the watch window")
		rep := reportOf(t, r)
		if rep.Watch == nil || rep.Watch.Resumes != 1 {
			t.Fatalf("watch state after resume: %+v", rep.Watch)
		}
		// The window started before the kill and ended 1 min after that start, not 1 min after the resume.
		if !rep.Watch.Start.Before(killedAt.Add(-10*time.Second)) || time.Since(rep.Watch.Start) > 3*time.Minute {
			t.Errorf("window start %s, killed at %s", rep.Watch.Start, killedAt)
		}
		mustCode(t, l.Siemctl("rollback", "--yes"), 0, "rollback after the resumed watch")
		wantPackages(t, l.Dir, "4.9.0-1")
	})

	// A window of the shortest length the runbook allows judges the data flow all the same
	// (issue 26 §1): a window too short is refused before anything changes; the shipper
	// stalled as the window starts fails the probe twice, and the run rolls back.
	t.Run("shipper-stalls-in-the-shortest-window", func(t *testing.T) {
		oldAgain(t)
		r := apply(t, nil, rb, "--watch", "59s")
		mustCode(t, r, 2, "apply --watch 59s")
		if !strings.Contains(r.Stderr, "give at least --watch 1m0s") {
			t.Errorf("the refusal does not name the least window:\n%s", tail(r.Stderr, 1500))
		}
		wantPackages(t, l.Dir, "4.9.0-1")
		r = apply(t, []string{"SIEMCTL_TEST_EXEC_AT=watch/window=" + siemlab + "shipper-stalled"}, rb, "--watch", "1m")
		l.MustSiemlab("heal", "shipper-stalled")
		rolledBack(t, r, watch.CritProbe)
	})

	t.Run("alerts-stop", func(t *testing.T) {
		oldAgain(t)
		// The probe is off so that the alert rate is the criterion that sees it.
		r := apply(t, []string{"SIEMCTL_TEST_EXEC_AT=watch/window=" + siemlab + "alerts-stopped"}, labRunbook(t, "0s", "30s"), "--watch", "4m")
		l.MustSiemlab("heal", "alerts-stopped")
		rolledBack(t, r, watch.CritAlerts)
	})

	t.Run("agents-do-not-come-back", func(t *testing.T) {
		oldAgain(t)
		// The manager restarts in the window and a tenth of the agents stay away.
		inject := siemlab + "agents-no-reconnect && " + siemlab + "unit-stopped:siem-manager && " +
			filepath.Join(binDir, "siemlab") + " heal --dir " + l.Dir + " unit-stopped:siem-manager"
		r := apply(t, []string{"SIEMCTL_TEST_EXEC_AT=watch/window=" + inject}, rb, "--watch", "3m")
		l.MustSiemlab("heal", "agents-no-reconnect")
		rolledBack(t, r, watch.CritAgents)
	})

	t.Run("unit-flapping", func(t *testing.T) {
		oldAgain(t)
		r := apply(t, []string{"SIEMCTL_TEST_EXEC_AT=watch/window=" + siemlab + "unit-flapping:siem-dashboard"}, rb, "--watch", "3m")
		l.MustSiemlab("heal", "unit-flapping:siem-dashboard")
		rolledBack(t, r, watch.CritUnits)
	})

	t.Run("agents-gate-no-go", func(t *testing.T) {
		oldAgain(t)
		l.MustSiemlab("fault", "agents-no-reconnect")
		r := apply(t, nil, rb)
		l.MustSiemlab("heal", "agents-no-reconnect")
		mustCode(t, r, 10, "apply with agents that do not reconnect after the manager upgrade")
		rep := reportOf(t, r)
		st, note := stepStatus(rep, "manager/agents-back")
		if st != engine.StepFailed || !strings.Contains(note, "< 95%") || !strings.Contains(note, "last keep-alive") {
			t.Errorf("manager/agents-back %s: %s", st, note)
		}
		if st, _ := stepStatus(rep, "watch/window"); st != "" && st != engine.StepPending && st != engine.StepSkipped {
			t.Errorf("watch/window %s after the gate's no-go", st)
		}
		t.Logf("agents gate: %s", note)
		wantPackages(t, l.Dir, "4.9.0-1")
		noLoss(t, before, c.alertCounts(t))
	})
	healthOK(t, l)
}
