package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	agentscmd "github.com/siemctl/siemctl/internal/cmd/agents"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

// fixture agents: 001 active 4.9.0, 002 disconnected 4.8.2, 003 never
// connected, 004 active 4.10.0 (newer than the 4.9.0 manager).
func fixtureAgents() []managertest.Agent {
	return []managertest.Agent{
		{ID: "001", Name: "web-01", IP: "10.0.4.21", RegisterIP: "any", Status: "active", Version: "Wazuh v4.9.0", Manager: "siem01", NodeName: "node01",
			DateAdd: "2025-01-11T12:30:05Z", LastKeepAlive: "2025-03-02T09:14:00Z", Group: []string{"default"}, OS: managertest.OS{Name: "Debian GNU/Linux", Platform: "debian", Version: "12"}},
		{ID: "002", Name: "db-01", IP: "10.0.4.22", RegisterIP: "any", Status: "disconnected", Version: "Wazuh v4.8.2", Manager: "siem01", NodeName: "node01",
			DateAdd: "2025-01-11T12:31:00Z", LastKeepAlive: "2025-02-20T22:41:17Z", Group: []string{"default", "db"}, OS: managertest.OS{Name: "Ubuntu", Platform: "ubuntu", Version: "22.04"}},
		{ID: "003", Name: "new-01", RegisterIP: "any", Status: "never_connected", Manager: "siem01", NodeName: "node01", DateAdd: "2025-03-01T08:00:00Z"},
		{ID: "004", Name: "edge-01", IP: "10.0.9.1", RegisterIP: "any", Status: "active", Version: "Wazuh v4.10.0", Manager: "siem01", NodeName: "node01",
			DateAdd: "2025-02-01T00:00:00Z", LastKeepAlive: "2025-03-02T09:14:30Z", OS: managertest.OS{Name: "Rocky Linux", Platform: "rocky", Version: "9.3"}},
	}
}

const agentControl = `#!/bin/sh
case "$1" in
-l|-lc)
cat <<'X'

Wazuh agent_control. List of available agents:
   ID: 000, Name: siem01 (server), IP: 127.0.0.1, Active/Local
   ID: 001, Name: web-01, IP: any, Active
   ID: 002, Name: db-01, IP: any, Disconnected

List of agentless devices:

X
;;
-i)
cat <<'X'

Wazuh agent_control. Agent information:
   Agent ID:   001
   Agent Name: web-01
   IP address: any
   Status:     Active

   Operating system:    Linux |web-01 |5.15.0
   Client version:      Wazuh v4.9.0
   Last keep alive:     1740906944
X
;;
esac
`

// env is a config pointing at a manager API URL and a tools dir.
type env struct {
	cfg     string
	toolLog string
}

func newEnv(t *testing.T, apiURL, password string) env {
	t.Helper()
	d := t.TempDir()
	pw := clitest.WriteSecret(t, d, "pw", password)
	toolLog := filepath.Join(d, "tool.log")
	script := strings.Replace(agentControl, "#!/bin/sh\n", "#!/bin/sh\necho \"$@\" >> "+toolLog+"\n", 1)
	clitest.WriteFile(t, filepath.Join(d, "siem", "bin", "agent_control"), script, 0o755)
	cfg := clitest.WriteConfig(t, d, "state_dir: "+d+"/state\n"+
		"indexer: {url: \"http://127.0.0.1:9\", password_file: "+pw+"}\n"+
		"manager: {api_url: \""+apiURL+"\", username: wazuh, password_file: "+pw+", install_dir: "+d+"/siem}\n")
	return env{cfg: cfg, toolLog: toolLog}
}

func (e env) toolCalls() string {
	b, _ := os.ReadFile(e.toolLog)
	return strings.TrimSpace(string(b))
}

// stateDir is where the config keeps the host lock.
func (e env) stateDir() string { return filepath.Join(filepath.Dir(e.cfg), "state") }

// runCtx runs `siemctl agents --config e.cfg args...` off a terminal.
func runCtx(ctx context.Context, e env, args ...string) clitest.Result {
	return clitest.Main(ctx, clitest.Group(agentscmd.NewCmdAgents), false, "", append([]string{"agents", "--config", e.cfg}, args...)...)
}

// run runs `siemctl agents --config e.cfg args...` (on a terminal when tty,
// which answers stdin).
func run(t *testing.T, e env, tty bool, stdin string, args ...string) clitest.Result {
	t.Helper()
	return clitest.Main(context.Background(), clitest.Group(agentscmd.NewCmdAgents), tty, stdin, append([]string{"agents", "--config", e.cfg}, args...)...)
}

func TestList(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	e := newEnv(t, srv.URL, srv.Password())
	tests := []struct {
		name string
		tty  bool
		args []string
	}{
		{"list_table", false, []string{"list"}},
		{"list_tty", true, []string{"list"}},
		{"list_json", false, []string{"list", "-o", "json"}},
		{"list_active_json", false, []string{"list", "--status", "active", "-o", "json"}},
		{"list_empty_json", false, []string{"list", "--status", "pending", "-o", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, e, tt.tty, "", tt.args...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.ErrOut)
			}
			golden.Assert(t, tt.name, []byte(r.Out))
			if strings.HasSuffix(tt.name, "json") {
				var v []map[string]any
				if err := json.Unmarshal([]byte(r.Out), &v); err != nil {
					t.Fatalf("not a JSON array: %v", err)
				}
			}
		})
	}
	t.Run("pagination and query", func(t *testing.T) {
		before := len(srv.SeenPath("GET /agents"))
		r := run(t, e, false, "", "list", "--page-size", "2", "--status", "active,disconnected", "--older-than", "1h", "-o", "json")
		if r.Code != 0 {
			t.Fatalf("exit %d %s", r.Code, r.ErrOut)
		}
		qs := srv.SeenPath("GET /agents")[before:]
		// 000, 001, 002, 004 match: two pages of two.
		if len(qs) != 2 || !strings.Contains(qs[0], "limit=2") || !strings.Contains(qs[1], "offset=2") ||
			!strings.Contains(qs[0], "status=active%2Cdisconnected") || !strings.Contains(qs[0], "older_than=1h") {
			t.Errorf("queries %v", qs)
		}
		var v []map[string]any
		_ = json.Unmarshal([]byte(r.Out), &v)
		if len(v) != 4 {
			t.Errorf("%d agents", len(v))
		}
	})
}

func TestListBadInputSendsNothing(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	e := newEnv(t, srv.URL, srv.Password())
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"list", "--status", "online"}, `status "online"`},
		{[]string{"list", "--older-than", "7 days"}, `--older-than "7 days"`},
		{[]string{"list", "--older-than", "1w"}, `--older-than "1w"`},
		{[]string{"list", "--older-than", "-5m"}, `--older-than "-5m"`},
		{[]string{"list", "--page-size", "0"}, "--page-size 0"},
		{[]string{"list", "-o", "yaml"}, "-o yaml is not supported"},
		{[]string{"show", "1"}, `invalid agent id "1"`},
		{[]string{"show", "0001"}, `invalid agent id "0001"`},
		{[]string{"show", "abc"}, `invalid agent id "abc"`},
		{[]string{"restart", "000"}, "cannot restart agent 000, it is the manager itself"},
		{[]string{"restart", "001", "1", "abc"}, `invalid agent id "1"`},
		{[]string{"restart"}, "give at least one agent id, or --all"},
		{[]string{"restart", "001", "--all"}, "not both"},
		{[]string{"remove", "000", "--yes"}, "cannot remove agent 000"},
		{[]string{"remove", "0001", "--yes"}, `invalid agent id "0001"`},
		{[]string{"outdated", "--than", "4.10"}, `version "4.10"`},
		{[]string{"outdated", "--than", "latest"}, `version "latest"`},
		{[]string{"outdated", "--than", "Wazuh v4.9.0"}, `version "Wazuh v4.9.0"`},
	}
	for _, tt := range tests {
		r := run(t, e, false, "", tt.args...)
		if r.Code != 2 || !strings.Contains(r.ErrOut, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, r.Code, r.ErrOut, tt.msg)
		}
	}
	if n := srv.Requests.Load(); n != 0 {
		t.Errorf("%d requests were sent for bad input: %v", n, srv.Seen())
	}
	if c := e.toolCalls(); c != "" {
		t.Errorf("tools ran: %s", c)
	}
}

func TestListFallbackToAgentControl(t *testing.T) {
	e := newEnv(t, clitest.ClosedURL(t), "Secr3t.Pass")
	r := run(t, e, false, "", "list", "--status", "active")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.ErrOut)
	}
	if !strings.Contains(r.ErrOut, "warning: the manager API is down") || !strings.Contains(r.ErrOut, "listed with agent_control") {
		t.Errorf("stderr does not say so: %s", r.ErrOut)
	}
	if e.toolCalls() != "-lc" {
		t.Errorf("tool calls %q", e.toolCalls())
	}
	golden.Assert(t, "list_fallback_table", []byte(r.Out))

	r = run(t, e, false, "", "show", "001", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Out, `"source": "agent_control"`) || !strings.Contains(r.ErrOut, "shown with agent_control") {
		t.Errorf("show fallback: exit %d\n%s\n%s", r.Code, r.Out, r.ErrOut)
	}
	r = run(t, e, false, "", "list", "--older-than", "7d")
	if r.Code != 5 || !strings.Contains(r.ErrOut, "agent_control cannot filter by --older-than") {
		t.Errorf("older-than without API: exit %d %s", r.Code, r.ErrOut)
	}
}

func TestListAuthFailureDoesNotFallBack(t *testing.T) {
	srv := managertest.New(t, managertest.Config{})
	e := newEnv(t, srv.URL, "Wrong.Pass1")
	r := run(t, e, false, "", "list")
	if r.Code != 4 || e.toolCalls() != "" || strings.Contains(r.Out+r.ErrOut, "Wrong.Pass1") {
		t.Errorf("exit %d tools %q\n%s", r.Code, e.toolCalls(), r.ErrOut)
	}
}

func TestShow(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	e := newEnv(t, srv.URL, srv.Password())
	for _, tc := range []struct{ name, format, id string }{{"show_table", "table", "002"}, {"show_json", "json", "001"}, {"show_manager_table", "table", "000"}} {
		r := run(t, e, false, "", "show", tc.id, "-o", tc.format)
		if r.Code != 0 {
			t.Fatalf("%s: exit %d %s", tc.name, r.Code, r.ErrOut)
		}
		golden.Assert(t, tc.name, []byte(r.Out))
	}
	r := run(t, e, false, "", "show", "099")
	if r.Code != 1 || !strings.Contains(r.ErrOut, "Agent does not exist") || !strings.Contains(r.ErrOut, "not registered") {
		t.Errorf("unknown agent: exit %d %s", r.Code, r.ErrOut)
	}
}

func TestRestart(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	e := newEnv(t, srv.URL, srv.Password())
	// Every restart asks: off a terminal without --yes nothing is sent; a
	// dry run prints the request; an upgrade holding the host lock means exit 6.
	if r := run(t, e, false, "", "restart", "001"); r.Code != 2 || !strings.Contains(r.ErrOut, "--yes") || len(srv.SeenPath("PUT /agents/restart")) != 0 {
		t.Fatalf("restart 001 off a tty: exit %d %s", r.Code, r.ErrOut)
	}
	if r := run(t, e, true, "n\n", "restart", "001"); r.Code != 1 || !strings.Contains(r.ErrOut, "Restart agent(s) 001? [y/N]") || len(srv.SeenPath("PUT /agents/restart")) != 0 {
		t.Fatalf("restart 001 declined: exit %d %s", r.Code, r.ErrOut)
	}
	if r := run(t, e, false, "", "restart", "001", "004", "001", "--dry-run"); r.Code != 0 || r.Out != "PUT /agents/restart?agents_list=001%2C004\n" || len(srv.SeenPath("PUT /agents/restart")) != 0 {
		t.Fatalf("dry run: exit %d %q %s", r.Code, r.Out, r.ErrOut)
	}
	if r := run(t, e, false, "", "restart", "--all", "--dry-run"); r.Code != 0 || r.Out != "PUT /agents/restart\n" || len(srv.SeenPath("PUT /agents/restart")) != 0 {
		t.Fatalf("dry run --all: exit %d %q %s", r.Code, r.Out, r.ErrOut)
	}
	held := clitest.HoldLock(t, e.stateDir())
	if r := run(t, e, false, "", "restart", "001", "--yes"); r.Code != 6 || !strings.Contains(r.ErrOut, "siemctl upgrade apply --to 4.10.0") || len(srv.SeenPath("PUT /agents/restart")) != 0 {
		t.Fatalf("locked: exit %d %s", r.Code, r.ErrOut)
	}
	_ = held.Release()

	r := run(t, e, false, "", "restart", "001", "004", "--yes")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "restart_ok_table", []byte(r.Out))
	if q := srv.SeenPath("PUT /agents/restart"); len(q) != 1 || q[0] != "agents_list=001%2C004" {
		t.Errorf("queries %v", q)
	}

	// partial: 002 disconnected (1707), 099 unknown (1701)
	r = run(t, e, false, "", "restart", "001", "002", "099", "--yes")
	if r.Code != 1 || !strings.Contains(r.ErrOut, "restart failed for 2 of 3 agents") {
		t.Errorf("partial: exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "restart_partial_table", []byte(r.Out))
	r = run(t, e, false, "", "restart", "001", "002", "099", "-o", "json", "--yes")
	if r.Code != 1 {
		t.Errorf("partial json: exit %d", r.Code)
	}
	golden.Assert(t, "restart_partial_json", []byte(r.Out))

	// --all: confirmation
	before := len(srv.SeenPath("PUT /agents/restart"))
	if r := run(t, e, false, "", "restart", "--all"); r.Code != 2 || !strings.Contains(r.ErrOut, "--yes") {
		t.Errorf("--all without tty: exit %d %s", r.Code, r.ErrOut)
	}
	if r := run(t, e, true, "no\n", "restart", "--all"); r.Code != 1 {
		t.Errorf("--all declined: exit %d", r.Code)
	}
	if n := len(srv.SeenPath("PUT /agents/restart")); n != before {
		t.Errorf("restart sent without confirmation")
	}
	r = run(t, e, true, "y\n", "restart", "--all")
	if r.Code != 0 || !strings.Contains(r.Out, "001") || !strings.Contains(r.Out, "004") {
		t.Errorf("--all: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	if q := srv.SeenPath("PUT /agents/restart"); len(q) != before+1 || q[before] != "" {
		t.Errorf("restart all query %v", q[before:])
	}
}

func TestRemove(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	e := newEnv(t, srv.URL, srv.Password())
	if r := run(t, e, false, "", "remove", "001"); r.Code != 2 {
		t.Errorf("no --yes without tty: exit %d", r.Code)
	}
	if r := run(t, e, true, "n\n", "remove", "001"); r.Code != 1 || !strings.Contains(r.ErrOut, "Remove agent(s) 001") {
		t.Errorf("declined: exit %d %s", r.Code, r.ErrOut)
	}
	if r := run(t, e, false, "", "remove", "001", "--dry-run"); r.Code != 0 || r.Out != "DELETE /agents?agents_list=001&older_than=0s&purge=false&status=all\n" {
		t.Errorf("dry run: exit %d %q %s", r.Code, r.Out, r.ErrOut)
	}
	held := clitest.HoldLock(t, e.stateDir())
	if r := run(t, e, false, "", "remove", "001", "--yes"); r.Code != 6 || !strings.Contains(r.ErrOut, "run 20261121T101500Z-3f9a1c") {
		t.Errorf("locked: exit %d %s", r.Code, r.ErrOut)
	}
	_ = held.Release()
	if n := srv.Requests.Load(); n != 0 {
		t.Fatalf("requests before confirmation, in a dry run or under the lock: %v", srv.Seen())
	}
	// 001 is active: the API's default older_than=7d would refuse it (1731).
	r := run(t, e, false, "", "remove", "001", "099", "--yes")
	if r.Code != 1 {
		t.Errorf("partial remove: exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "remove_partial_table", []byte(r.Out))
	q := srv.SeenPath("DELETE /agents")
	if len(q) != 1 || !strings.Contains(q[0], "status=all") || !strings.Contains(q[0], "older_than=0s") || !strings.Contains(q[0], "agents_list=001%2C099") {
		t.Errorf("delete query %v", q)
	}
	r = run(t, e, true, "y\n", "remove", "002", "-o", "json")
	if r.Code != 0 {
		t.Errorf("remove: exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "remove_json", []byte(r.Out))
}

func TestOutdated(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	e := newEnv(t, srv.URL, srv.Password())
	r := run(t, e, false, "", "outdated")
	if r.Code != 0 || !strings.Contains(r.ErrOut, "1 of 3 agents newer than the manager (4.9.0); 1 without a known version") {
		t.Errorf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "outdated_table", []byte(r.Out))
	r = run(t, e, false, "", "outdated", "--than", "v4.10.0", "-o", "json")
	if r.Code != 0 {
		t.Errorf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "outdated_than_json", []byte(r.Out))
}

// TestListIdleTimeout: --timeout bounds each page. An API that hangs until that deadline is down:
// agent_control still runs, with its own budget (not what the API left of it, which is nothing),
// and returns the agents; stderr says why. When the tool fails too, the error names both.
func TestListIdleTimeout(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	e := newEnv(t, srv.URL, srv.Password())
	r := run(t, e, false, "", "list", "--timeout", "200ms")
	if r.Code != 0 || e.toolCalls() != "-l" {
		t.Fatalf("exit %d, tool calls %q: %s", r.Code, e.toolCalls(), r.ErrOut)
	}
	if !strings.Contains(r.ErrOut, "no answer from the manager for 200ms") || !strings.Contains(r.ErrOut, "listed with agent_control") {
		t.Errorf("stderr does not say why: %s", r.ErrOut)
	}
	for _, id := range []string{"000", "001", "002"} {
		if !strings.Contains(r.Out, "\n"+id+"\t") {
			t.Errorf("agent %s missing from the fallback listing:\n%s", id, r.Out)
		}
	}

	// the tool hangs as well: bounded by its own --timeout, and the error names both
	bin := filepath.Join(filepath.Dir(e.cfg), "siem", "bin", "agent_control")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = run(t, e, false, "", "list", "--timeout", "200ms")
	if r.Code == 0 || !strings.Contains(r.ErrOut, "200ms") || !strings.Contains(r.ErrOut, "agent_control") {
		t.Errorf("exit %d %s", r.Code, r.ErrOut)
	}
	_ = fmt.Sprint()
}

// A never-connected agent shown through agent_control (the real v4.9.0 output, read at test time):
// its "(null)" fields are absent, "-" in the table and left out of the JSON.
func TestShowNeverConnectedWithAgentControl(t *testing.T) {
	real := wazuhreal.Path(t, "tool-outputs", "agent_control-i-011-never-connected.txt")
	if _, err := os.Stat(real); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, clitest.ClosedURL(t), "Secr3t.Pass")
	bin := filepath.Join(filepath.Dir(e.cfg), "siem", "bin", "agent_control")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\ncat '"+real+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, e, false, "", "show", "011", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.ErrOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.Out), &got); err != nil {
		t.Fatal(err)
	}
	if got["id"] != "011" || got["status"] != "never_connected" || got["source"] != "agent_control" {
		t.Fatalf("json %v", got)
	}
	for _, k := range []string{"version", "os", "config_hash", "last_keep_alive"} {
		if v, ok := got[k]; ok && v != nil {
			t.Errorf("%s = %v, want absent", k, v)
		}
	}
	r = run(t, e, false, "", "show", "011")
	if r.Code != 0 || strings.Contains(r.Out, "(null)") {
		t.Fatalf("exit %d\n%s", r.Code, r.Out)
	}
	for _, k := range []string{"Version", "OS", "Last keep-alive"} {
		found := false
		for _, l := range strings.Split(r.Out, "\n") {
			if f := strings.Fields(strings.TrimPrefix(l, k+":")); strings.HasPrefix(l, k) && len(f) > 0 && f[len(f)-1] == "-" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is not shown as absent:\n%s", k, r.Out)
		}
	}
}
