//go:build e2e

package agents_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/lab/e2e"
)

type e2eRun struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	Agents map[string]struct {
		State    string `json:"state"`
		Evidence string `json:"evidence"`
		Failure  *struct {
			Code  int    `json:"code"`
			Cause string `json:"cause"`
		} `json:"failure"`
	} `json:"agents"`
	Requests int `json:"requests"`
}

func (r e2eRun) count(state string) int {
	n := 0
	for _, a := range r.Agents {
		if a.State == state {
			n++
		}
	}
	return n
}

// TestE2EAgentUpgrade upgrades the lab manager's agents to its version (4.9.0) in waves, through the
// emulator's upgrade module (sends of 1 s, restarts of 2 s): a canary without a WPK stops the run with
// the cause, resume after the fix finishes and `agents outdated` agrees; a task reported Timeout for an
// agent that upgraded counts as upgraded; disconnected agents are recorded pending and resume sends
// them once they are back.
func TestE2EAgentUpgrade(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 260})
	home := l.Path(l.Profile.InstallDir)
	conf := home + "/etc/ossec.conf"
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	timing := "<emulator>\n    <upgrade_send_time>1s</upgrade_send_time>\n    <upgrade_restart_time>2s</upgrade_restart_time>\n    <upgrade_task_timeout>60s</upgrade_task_timeout>"
	if err := os.WriteFile(conf, []byte(strings.Replace(string(b), "<emulator>", timing, 1)), 0o640); err != nil {
		t.Fatal(err)
	}
	// 40 agents (28 active, a third of them already at 4.9.0), seeded again before each scenario.
	reseed := func(t *testing.T) {
		t.Helper()
		out, err := exec.Command(home+"/bin/siem-managerd", "--home", home, "--seed-agents", "40", "--reseed", "--seed-only").CombinedOutput()
		if err != nil {
			t.Fatalf("reseed: %v %s", err, out)
		}
	}
	status := func(t *testing.T) e2eRun {
		t.Helper()
		r := l.Siemctl("agents", "upgrade", "status", "-o", "json")
		var run e2eRun
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &run) != nil {
			t.Fatalf("status: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
		return run
	}
	apply := []string{"agents", "upgrade", "apply", "--canary", "1", "--waves", "50%,100%", "--poll", "1s", "--agent-wait", "30s", "--yes"}

	t.Run("canary failure, fix, resume", func(t *testing.T) {
		reseed(t)
		l.MustSiemlab("fault", "upgrade-no-wpk")
		r := l.Siemctl(apply...)
		if r.Code != 1 || !strings.Contains(r.Stdout, "1819") || !strings.Contains(r.Stdout, "wpk_repo") || !strings.Contains(r.Stderr, "siemctl agents upgrade resume") {
			t.Fatalf("canary: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if run := status(t); run.State != "stopped" || run.Requests != 1 || run.count("failed") != 1 || run.count("upgraded") != 0 {
			t.Fatalf("after the canary: %+v", run)
		}
		l.MustSiemlab("heal", "upgrade-no-wpk")
		if r := l.Siemctl("agents", "upgrade", "resume", "--poll", "1s", "--yes"); r.Code != 0 {
			t.Fatalf("resume: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		run := status(t)
		if run.State != "done" || run.count("upgraded") < 10 || run.count("failed") != 0 {
			t.Fatalf("after resume: %s %s upgraded %d failed %d", run.State, run.Reason, run.count("upgraded"), run.count("failed"))
		}
		// agents outdated agrees: the agents older than 4.9.0 left are the ones that are not active.
		for _, a := range listJSON(t, l) {
			if a.ID != "000" && a.Status == "active" && a.Version != "Wazuh v4.9.0" {
				t.Errorf("agent %s active at %s after the run", a.ID, a.Version)
			}
		}
	})

	t.Run("timeout but upgraded", func(t *testing.T) {
		reseed(t)
		l.MustSiemlab("fault", "upgrade-timeout-upgraded")
		defer l.MustSiemlab("heal", "upgrade-timeout-upgraded")
		if r := l.Siemctl(apply...); r.Code != 0 {
			t.Fatalf("apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		run := status(t)
		timedOut := 0
		for _, a := range run.Agents {
			if a.State == "upgraded" && strings.Contains(a.Evidence, "the task says Timeout") {
				timedOut++
			}
		}
		if run.State != "done" || timedOut == 0 || run.count("failed") != 0 {
			t.Fatalf("%s: %d upgraded agents whose task said Timeout, %d failed", run.State, timedOut, run.count("failed"))
		}
	})

	t.Run("disconnected agents pending, then back", func(t *testing.T) {
		reseed(t)
		l.MustSiemlab("fault", "agents-disconnected")
		if r := l.Siemctl("agents", "upgrade", "plan"); r.Code != 0 || !strings.Contains(r.Stdout, "pending, disconnected") {
			t.Fatalf("plan: exit %d\n%s", r.Code, r.Stdout)
		}
		if r := l.Siemctl(apply...); r.Code != 0 {
			t.Fatalf("apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		run := status(t)
		pending := run.count("pending")
		if pending < 10 || run.Requests != 0 || !strings.Contains(run.Reason, "pending") {
			t.Fatalf("apply while disconnected: %+v", run)
		}
		l.MustSiemlab("heal", "agents-disconnected")
		if r := l.Siemctl("agents", "upgrade", "resume", "--poll", "1s", "--yes"); r.Code != 0 {
			t.Fatalf("resume: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		after := status(t)
		// The agents stored disconnected stay pending; those the fault hid are upgraded.
		if after.count("upgraded") < pending-after.count("pending") || after.count("upgraded") == 0 || after.Requests == 0 {
			t.Fatalf("after resume: upgraded %d pending %d of %d", after.count("upgraded"), after.count("pending"), pending)
		}
	})
}
