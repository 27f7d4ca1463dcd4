package agents_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/ops/fleet"
)

// TestUpgradeCommands: plan, a dry run, a canary that fails (exit 1 with the cause and the fix), the
// fix, resume to the end, status.
func TestUpgradeCommands(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Version: "4.10.0", Agents: managertest.GenerateAgents(12)})
	e := newEnv(t, srv.URL, srv.Password())

	r := run(t, e, false, "", "upgrade", "plan", "--canary", "1", "-o", "json")
	var plan struct {
		Target      string
		Eligible    []struct{ ID string }
		Pending     []struct{ ID string }
		NotEligible []struct{ ID, Reason string } `json:"not_eligible"`
		Waves       [][]string
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Out), &plan) != nil {
		t.Fatalf("plan: %d %s %s", r.Code, r.Out, r.ErrOut)
	}
	if plan.Target != "4.10.0" || len(plan.Eligible) != 6 || len(plan.Pending) != 3 || len(plan.Waves[0]) != 1 {
		t.Fatalf("plan %+v", plan)
	}
	if r := run(t, e, false, "", "upgrade", "plan"); r.Code != 0 || !strings.Contains(r.Out, "6 eligible, 3 pending") || !strings.Contains(r.Out, "(canary)") {
		t.Errorf("plan table: %s", r.Out)
	}
	// Bad input: exit 2, nothing sent.
	for _, args := range [][]string{{"--waves", "50%"}, {"--max-failed", "x"}, {"--to", "4.11.0"}, {"--concurrency", "-1"}} {
		if r := run(t, e, false, "", append([]string{"upgrade", "plan"}, args...)...); r.Code != 2 {
			t.Errorf("%v: exit %d %s", args, r.Code, r.ErrOut)
		}
	}
	if r := run(t, e, false, "", "upgrade", "apply", "--dry-run"); r.Code != 0 || !strings.Contains(r.Out, "PUT /agents/upgrade?agents_list=") || len(srv.SeenPath("PUT /agents/upgrade")) != 0 {
		t.Errorf("dry run: %d %s", r.Code, r.Out)
	}

	srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome {
		return managertest.TaskOutcome{Status: "Error", ErrorMsg: "Send lock restart error"}
	})
	r = run(t, e, false, "", "upgrade", "apply", "--yes", "--poll", "10ms", "--concurrency", "2")
	if r.Code != 1 || !strings.Contains(r.Out, "1828") || !strings.Contains(r.Out, "--concurrency") || !strings.Contains(r.ErrOut, "agents upgrade resume") {
		t.Fatalf("canary failure: exit %d\n%s\n%s", r.Code, r.Out, r.ErrOut)
	}
	// The report: the canary wave's gate said no-go, the failed agent with its cause, the waves not
	// started, the disconnected agents pending with why.
	for _, want := range []string{"1 (canary)", "no-go: 1 of 1 failed, at most 0 allowed", "not started: at most 0 of 2 may fail", "Failed:", "Pending:", "disconnected: not sent"} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("the report says no %q:\n%s", want, r.Out)
		}
	}
	if n := len(srv.SeenPath("PUT /agents/upgrade")); n != 1 {
		t.Errorf("the canary's failure must stop the run: %d requests", n)
	}
	srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome {
		return managertest.TaskOutcome{Status: "Updated", Version: "Wazuh v4.10.0"}
	})
	if r := run(t, e, false, "", "upgrade", "resume", "--yes", "--poll", "10ms"); r.Code != 0 || !strings.Contains(r.Out, "done") {
		t.Fatalf("resume: exit %d\n%s\n%s", r.Code, r.Out, r.ErrOut)
	}
	r = run(t, e, false, "", "upgrade", "status", "-o", "json")
	var st struct {
		State  string
		Agents map[string]struct{ State string }
		Report struct {
			Waves []struct {
				Wave     int
				Started  string
				Upgraded []string
				Gate     struct{ Verdict string }
			}
			Pending []struct{ ID, Why string }
		}
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Out), &st) != nil || st.State != "done" {
		t.Fatalf("status: %d %s", r.Code, r.Out)
	}
	inWaves := 0
	for _, w := range st.Report.Waves {
		inWaves += len(w.Upgraded)
		if w.Gate.Verdict != "go" || w.Started == "" {
			t.Errorf("wave %d in the JSON report: %+v", w.Wave, w)
		}
	}
	if inWaves != 6 || len(st.Report.Pending) != 3 {
		t.Errorf("JSON report: %d upgraded in the waves, %d pending", inWaves, len(st.Report.Pending))
	}
	n := 0
	for _, a := range st.Agents {
		if a.State == "upgraded" {
			n++
		}
	}
	if n != 6 {
		t.Errorf("%d upgraded: %s", n, r.Out)
	}
	// No more than two agents in any request (--concurrency 2).
	for _, s := range srv.SeenPath("PUT /agents/upgrade") {
		if strings.Count(s, "%2C") > 1 {
			t.Errorf("request beyond --concurrency: %s", s)
		}
	}
	// The journal: apply's start, the canary's failure, the resume, the end; abort appends its line.
	if r := run(t, e, false, "", "upgrade", "abort", "--yes"); r.Code != 0 {
		t.Fatalf("abort: exit %d %s", r.Code, r.ErrOut)
	}
	var id string
	if err := json.Unmarshal([]byte(run(t, e, false, "", "upgrade", "status", "-o", "json").Out), &struct{ ID *string }{&id}); err != nil {
		t.Fatal(err)
	}
	evs, err := fleet.ReadJournal(e.stateDir(), id)
	if err != nil || len(evs) < 6 {
		t.Fatalf("journal of %s: %v %+v", id, err, evs)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		seen[ev.Type] = true
	}
	if evs[0].Type != fleet.JournalRunStart || evs[len(evs)-1].Type != fleet.JournalAbort || !seen[fleet.JournalFailed] || !seen[fleet.JournalRunResume] || !seen[fleet.JournalRunEnd] {
		t.Errorf("journal: %+v", evs)
	}
}
