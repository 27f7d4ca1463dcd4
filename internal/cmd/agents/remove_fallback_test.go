package agents_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

// withManageAgents installs a manage_agents that answers -r as the real one
// does (the real outputs: 001/003 removed; 099 unknown with authd running:
// 9011 on stderr, exit 0) and logs its calls.
func withManageAgents(t *testing.T, e env) string {
	t.Helper()
	d := filepath.Dir(e.cfg)
	for name, rel := range map[string]string{
		"r001.txt": "manage_agents-r-001.txt", "r099.txt": "manage_agents-r-099-authd.txt", "r099.err": "manage_agents-r-099-authd.stderr.txt",
	} {
		clitest.WriteFile(t, filepath.Join(d, name), string(wazuhreal.Read(t, "tool-outputs", rel)), 0o644)
	}
	log := filepath.Join(d, "manage_agents.log")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\n[ \"$1\" = -r ] || exit 2\ncase \"$2\" in\n" +
		"001) cat " + d + "/r001.txt;;\n" +
		"003) sed \"s/'001' removed/'003' removed/\" " + d + "/r001.txt;;\n" +
		"*) cat " + d + "/r099.txt; cat " + d + "/r099.err >&2;;\nesac\nexit 0\n"
	clitest.WriteFile(t, filepath.Join(d, "siem", "bin", "manage_agents"), script, 0o755)
	return log
}

type removeJSON struct {
	Source string `json:"source"`
	Agents []struct {
		ID      string `json:"id"`
		OK      bool   `json:"ok"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"agents"`
	OK, Failed int
}

// TestRemoveFallsBackToManageAgents: with the manager API unreachable,
// `agents remove` removes through manage_agents -r, and an unknown id
// (authd's 9011, exit 0) is "agent not found", not a success.
func TestRemoveFallsBackToManageAgents(t *testing.T) {
	e := newEnv(t, clitest.ClosedURL(t), "Secr3t.Pass")
	log := withManageAgents(t, e)
	r := run(t, e, false, "", "remove", "001", "099", "--yes", "-o", "json")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1 (099 not removed)\n%s", r.Code, r.ErrOut)
	}
	var got removeJSON
	if err := json.Unmarshal([]byte(r.Out), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.Out)
	}
	if got.Source != "manage_agents" || len(got.Agents) != 2 || !got.Agents[0].OK || got.Agents[1].OK || got.Agents[1].Code != 1701 || !strings.Contains(got.Agents[1].Message, "agent not found") {
		t.Errorf("outcome %+v", got)
	}
	if !strings.Contains(r.ErrOut, "warning: removed with manage_agents: the manager API is down") {
		t.Errorf("stderr:\n%s", r.ErrOut)
	}
	if calls, _ := os.ReadFile(log); string(calls) != "-r 001\n-r 099\n" {
		t.Errorf("manage_agents calls %q", calls)
	}
}

// TestRemoveRetries9011WithManageAgents: an API answer whose failed item
// carries authd's 9011 is asked again through manage_agents; what the API
// removed is not touched again.
func TestRemoveRetries9011WithManageAgents(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	srv.Handle("DELETE /agents", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data": {"affected_items": ["001"], "total_affected_items": 1, "total_failed_items": 1, ` +
			`"failed_items": [{"error": {"code": 9011, "message": "Agent ID not found", "remediation": "Please, use GET /agents?select=id,name to find all available agents"}, "id": ["003"]}], ` +
			`"older_than": "0s"}, "message": "Some agents were not deleted", "error": 2}`))
	})
	e := newEnv(t, srv.URL, srv.Password())
	log := withManageAgents(t, e)
	r := run(t, e, false, "", "remove", "001", "003", "--yes", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.Code, r.Out, r.ErrOut)
	}
	var got removeJSON
	if err := json.Unmarshal([]byte(r.Out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Source != "manage_agents" || got.OK != 2 || got.Failed != 0 {
		t.Errorf("outcome %+v", got)
	}
	if calls, _ := os.ReadFile(log); string(calls) != "-r 003\n" {
		t.Errorf("manage_agents calls %q", calls)
	}
}
