package rules_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	rulescmd "github.com/siemctl/siemctl/internal/cmd/rules"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/stack"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const goodRules = "<group name=\"local,\">\n  <rule id=\"100001\" level=\"5\">\n    <if_sid>5716</if_sid>\n  </rule>\n</group>\n"
const badRules = "<group name=\"local,\">\n  <rule id=\"100001\" level=\"5\">\n    <if_sid>100002</if_sid>\n  </rule>\n  <rule id=\"100001\" level=\"3\"/>\n  <rule id=\"99\" level=\"3\"/>\n</group>\n"
const badDecoders = "<decoder name=\"app\">\n  <parent>nosuch</parent>\n  <regex>(\\S+) (\\S+)</regex>\n  <order>user</order>\n</decoder>\n"

// checkRunner fakes the control tool's `check`.
func checkRunner(out string, code int) manager.Runner {
	return func(_ context.Context, name string, args ...string) ([]byte, []byte, int, error) {
		if filepath.Base(name) != "siem-control" || strings.Join(args, " ") != "check" {
			return nil, []byte("unexpected " + name), 1, nil
		}
		return []byte(out), nil, code, nil
	}
}

func run(t *testing.T, st *stack.Stack, mode string, args ...string) (string, string, int) {
	t.Helper()
	io, _, out, errOut := output.Test()
	f := cli.NewFactory(io, nil)
	f.Global.Output, f.Global.Timeout = mode, 5*time.Second
	f.Stack = func(context.Context) (*stack.Stack, error) { return st, nil }
	cmd := rulescmd.NewCmdCheck(f, nil)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(append([]string{}, args...))
	err := cmd.Execute()
	return strings.ReplaceAll(out.String(), st.Config.Manager.InstallDir, "INSTALL"), errOut.String(), cli.ExitCode(err)
}

func TestRulesCheck(t *testing.T) {
	tests := []struct {
		name     string
		rules    string
		decoders string
		check    string
		code     int
		mode     string
	}{
		{"ok", goodRules, "", "", 0, "table"},
		{"problems", badRules, badDecoders, "", 3, "table"},
		{"problems-json", badRules, badDecoders, "", 3, "json"},
		{"manager-invalid", goodRules, "", "2025/03/02 09:20:11 siem-analysisd: ERROR: (1230): Invalid element in the configuration: 'log_alert_lvl'.\n2025/03/02 09:20:11 siem-analysisd: CRITICAL: (1202): Configuration error at 'etc/ossec.conf'.\n", 3, "table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			install := t.TempDir()
			write(t, filepath.Join(install, "etc", "rules", "local_rules.xml"), tt.rules)
			if tt.decoders != "" {
				write(t, filepath.Join(install, "etc", "decoders", "local_decoder.xml"), tt.decoders)
			}
			write(t, filepath.Join(install, "ruleset", "decoders", "0310-ssh_decoders.xml"), "<decoder name=\"sshd\"/>")
			code := 0
			if tt.check != "" {
				code = 1
			}
			st := &stack.Stack{Config: &config.Config{Manager: config.Manager{InstallDir: install}}, ManagerErr: os.ErrNotExist,
				Tools: manager.Tools{InstallDir: install, ControlName: "siem-control", Runner: checkRunner(tt.check, code)}}
			out, errOut, exit := run(t, st, tt.mode)
			if exit != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", exit, tt.code, out, errOut)
			}
			golden.Assert(t, "check-"+tt.name, []byte(out))
			if tt.code == 0 && !strings.Contains(errOut, "ok") {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
}

func TestRulesCheckDir(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "rules", "x.xml"), "<group name=\"x\">\n<rule id=\"100001\" level=\"3\">\n</group>\n")
	ran := false
	st := &stack.Stack{Config: &config.Config{Manager: config.Manager{InstallDir: t.TempDir()}},
		Tools: manager.Tools{InstallDir: "/nonexistent", Runner: func(context.Context, string, ...string) ([]byte, []byte, int, error) {
			ran = true
			return nil, nil, 0, nil
		}}}
	out, _, code := run(t, st, "table", "--dir", dir)
	if code != 3 || !strings.Contains(out, "rules/x.xml\t3\terror\tnot well-formed XML: element <rule> closed by </group>") || ran {
		t.Errorf("exit %d ran=%v\n%s", code, ran, out)
	}
	if _, _, code := run(t, st, "table", "--dir", filepath.Join(dir, "missing")); code != 1 {
		t.Errorf("missing dir: exit %d, want 1", code)
	}
	if _, errOut, code := run(t, st, "yaml"); code != 2 {
		t.Errorf("-o yaml: exit %d %s", code, errOut)
	}
	if _, _, code := run(t, st, "table", "--dir", ""); code != 2 {
		t.Errorf("--dir '': exit %d", code)
	}
}
