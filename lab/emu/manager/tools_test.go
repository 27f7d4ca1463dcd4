package manager

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/golden"
)

func toolEnv(h Home, out, errb *bytes.Buffer) ToolEnv {
	return ToolEnv{Home: h, Hostname: "siem01", Now: func() time.Time { return testNow }, Stdout: out, Stderr: errb, FaultsDir: filepath.Join(h.Dir, "no-faults")}
}

func TestToolGoldens(t *testing.T) {
	h := newHome(t, 6)
	// agent_control -i 099 and wazuh-control status (running) print what the real tools print,
	// byte for byte: TestToolsMatchRealOutputs compares them with the real outputs in place of a
	// golden here (a golden would be a copy of those files).
	tests := []struct {
		name    string
		running bool
		run     func(ctx context.Context, e ToolEnv, args []string) int
		args    []string
		rc      int
	}{
		{"agent_control_l", false, AgentControl, []string{"-l"}, 0},
		{"agent_control_lc", false, AgentControl, []string{"-lc"}, 0},
		{"agent_control_ln", false, AgentControl, []string{"-ln"}, 0},
		{"agent_control_l_s", false, AgentControl, []string{"-l", "-s"}, 0},
		{"agent_control_l_j", false, AgentControl, []string{"-l", "-j"}, 0},
		{"agent_control_i_001", false, AgentControl, []string{"-i", "001"}, 0},
		{"agent_control_i_000", false, AgentControl, []string{"-i", "000"}, 0},
		{"agent_control_R_down", false, AgentControl, []string{"-R", "-u", "002"}, 1},
		{"agent_control_R_up", true, AgentControl, []string{"-R", "-u", "002"}, 0},
		{"agent_control_R_inactive", true, AgentControl, []string{"-R", "-u", "003"}, 1},
		{"agent_control_R_all", true, AgentControl, []string{"-R", "-a"}, 0},
		{"control_status_down", false, Control, []string{"status"}, 1},
		{"control_status_j", true, Control, []string{"-j", "status"}, 1},
		{"control_info", false, Control, []string{"info"}, 0},
		{"control_info_v", false, Control, []string{"info", "-v"}, 0},
		{"control_info_r", false, Control, []string{"info", "-r"}, 0},
		{"control_info_j", false, Control, []string{"-j", "info"}, 0},
		{"control_check_ok", false, Control, []string{"check"}, 0},
		{"manage_agents_l", false, ManageAgents, []string{"-l"}, 0},
		{"manage_agents_r_099", false, ManageAgents, []string{"-r", "099"}, 1},
		{"manage_agents_r_005", false, ManageAgents, []string{"-r", "005"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.running {
				markRunning(t, h)
				defer removePidfiles(h, os.Getpid())
			}
			var out, errb bytes.Buffer
			rc := tc.run(context.Background(), toolEnv(h, &out, &errb), tc.args)
			if rc != tc.rc {
				t.Fatalf("exit %d, want %d\n%s%s", rc, tc.rc, out.String(), errb.String())
			}
			golden.Assert(t, tc.name, out.Bytes())
		})
	}
	// manage_agents -r really removed 005 (API and client.keys see it).
	agents, _ := NewAgentStore(h).Agents()
	for _, a := range agents {
		if a.ID == 5 {
			t.Fatal("agent 005 still present")
		}
	}
}

func TestControlCheckBroken(t *testing.T) {
	h := newHome(t, 1)
	b, _ := os.ReadFile(h.OssecConf())
	_ = os.WriteFile(h.OssecConf(), []byte(strings.Replace(string(b), "<jsonout_output>yes<", "<jsonout_output>maybe<", 1)), 0o644)
	var out, errb bytes.Buffer
	if rc := Control(context.Background(), toolEnv(h, &out, &errb), []string{"check"}); rc != 1 {
		t.Fatalf("exit %d", rc)
	}
	golden.Assert(t, "control_check_broken_stdout", out.Bytes())
	golden.Assert(t, "control_check_broken_stderr", errb.Bytes())
	// start refuses too, without spawning anything.
	out.Reset()
	errb.Reset()
	if rc := Control(context.Background(), toolEnv(h, &out, &errb), []string{"start"}); rc != 1 || !strings.Contains(out.String(), "wazuh-analysisd: Configuration error. Exiting") {
		t.Fatalf("start: %d %s", rc, out.String())
	}
}

func TestToolsSeeFaults(t *testing.T) {
	h := newHome(t, 6)
	var out, errb bytes.Buffer
	e := toolEnv(h, &out, &errb)
	e.FaultsDir = filepath.Join(t.TempDir(), "faults")
	if err := os.MkdirAll(e.FaultsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(e.FaultsDir, "agents-disconnected"), nil, 0o644)
	AgentControl(context.Background(), e, []string{"-lc", "-s"})
	if got := out.String(); got != "000,siem01 (server),127.0.0.1,Active/Local,\n" {
		t.Fatalf("active agents with fault: %q", got)
	}
}
