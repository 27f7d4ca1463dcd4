//go:build e2e

package agents_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/lab/e2e"
)

type e2eAgent struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Version string `json:"version"`
}

func listJSON(t *testing.T, l *e2e.Lab, args ...string) []e2eAgent {
	t.Helper()
	r := l.Siemctl(append([]string{"agents", "list", "-o", "json"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("agents list %v: exit %d\n%s", args, r.Code, r.Stderr)
	}
	var out []e2eAgent
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, r.Stdout)
	}
	return out
}

// TestE2EAgents runs every agents command against the lab's manager
// emulator: listing (table, JSON, filters, fallback to agent_control with
// the API stopped), show, restart (partial), remove, outdated, bad input.
func TestE2EAgents(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 250})

	all := listJSON(t, l)
	if len(all) < 4 || all[0].ID != "000" {
		t.Fatalf("agents: %+v", all)
	}
	var active, inactive string
	for _, a := range all[1:] {
		if a.Status == "active" && active == "" {
			active = a.ID
		}
		if a.Status != "active" && inactive == "" {
			inactive = a.ID
		}
	}
	if active == "" || inactive == "" {
		t.Fatalf("need an active and an inactive agent: %+v", all)
	}

	t.Run("list", func(t *testing.T) {
		r := l.Siemctl("agents", "list")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "id\tname\tip\tstatus") || strings.Count(r.Stdout, "\n") != len(all)+1 {
			t.Errorf("table: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, a := range listJSON(t, l, "--status", "active", "--page-size", "2") {
			if a.Status != "active" {
				t.Errorf("--status active listed %+v", a)
			}
		}
		if got := listJSON(t, l, "--status", "disconnected", "--older-than", "3650d"); len(got) != 0 {
			t.Errorf("--older-than 3650d: %+v", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, args := range [][]string{{"show", "1"}, {"show", "0001"}, {"show", "abc"}, {"restart", "000"}, {"remove", "000", "--yes"},
			{"list", "--older-than", "7x"}, {"list", "--status", "up"}, {"outdated", "--than", "4.9"}} {
			r := l.Siemctl(append([]string{"agents"}, args...)...)
			if r.Code != 2 || r.Stdout != "" {
				t.Errorf("%v: exit %d\n%s%s", args, r.Code, r.Stdout, r.Stderr)
			}
		}
	})
	t.Run("show", func(t *testing.T) {
		r := l.Siemctl("agents", "show", active, "-o", "json")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"id": "`+active+`"`) || !strings.Contains(r.Stdout, `"source": "api"`) {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = l.Siemctl("agents", "show", "999")
		if r.Code != 1 || !strings.Contains(r.Stderr, "1701") {
			t.Errorf("unknown: exit %d %s", r.Code, r.Stderr)
		}
	})
	t.Run("restart", func(t *testing.T) {
		if r := l.Siemctl("agents", "restart", active); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
			t.Errorf("restart of one agent without --yes: exit %d %s", r.Code, r.Stderr)
		}
		r := l.Siemctl("agents", "restart", active, "--yes")
		if r.Code != 0 || !strings.Contains(r.Stdout, active+"\trestarted") {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = l.Siemctl("agents", "restart", active, inactive, "999", "-o", "json", "--yes")
		if r.Code != 1 || !strings.Contains(r.Stdout, `"code": 1707`) || !strings.Contains(r.Stdout, `"code": 1701`) {
			t.Errorf("partial: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := l.Siemctl("agents", "restart", "--all"); r.Code != 2 {
			t.Errorf("--all without --yes: exit %d", r.Code)
		}
	})
	t.Run("outdated", func(t *testing.T) {
		r := l.Siemctl("agents", "outdated", "-o", "json")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"count": 0`) {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("fault", "agent-newer")
		r = l.Siemctl("agents", "outdated")
		if r.Code != 0 || strings.Count(r.Stdout, "\n") != 2 || !strings.Contains(r.Stderr, "upgrade the manager first") {
			t.Errorf("agent-newer: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "agent-newer")
		r = l.Siemctl("agents", "outdated", "--than", "99.0.0", "-o", "json")
		if r.Code != 0 || strings.Contains(r.Stdout, `"count": 0`) {
			t.Errorf("--than 99.0.0: exit %d\n%s", r.Code, r.Stdout)
		}
	})
	t.Run("fallback to agent_control", func(t *testing.T) {
		l.MustSiemlab("fault", "unit-stopped:"+l.Profile.Manager)
		defer l.MustSiemlab("heal", "unit-stopped:"+l.Profile.Manager)
		r := l.Siemctl("agents", "list", "-o", "json")
		if r.Code != 0 || !strings.Contains(r.Stderr, "listed with agent_control") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		var got []e2eAgent
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || len(got) != len(all) {
			t.Errorf("fallback listed %d of %d: %v", len(got), len(all), err)
		}
	})
	t.Run("remove", func(t *testing.T) {
		if r := l.Siemctl("agents", "remove", inactive); r.Code != 2 {
			t.Errorf("without --yes: exit %d", r.Code)
		}
		r := l.Siemctl("agents", "remove", inactive, "--yes")
		if r.Code != 0 || !strings.Contains(r.Stdout, inactive+"\tremoved") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, a := range listJSON(t, l) {
			if a.ID == inactive {
				t.Errorf("%s still listed", inactive)
			}
		}
	})
}
