package rules_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/clientset"
	rulescmd "github.com/siemctl/siemctl/internal/cmd/rules"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/process"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	clitest.WriteFile(t, path, content, 0o644)
}

const goodRules = "<group name=\"local,\">\n  <rule id=\"100001\" level=\"5\">\n    <if_sid>5716</if_sid>\n    <description>x</description>\n  </rule>\n</group>\n"

// badRules: an if_sid that is not loaded (7617, 7619), a duplicate id
// (7612), a rule without description (an error).
const badRules = "<group name=\"local,\">\n  <rule id=\"100001\" level=\"5\">\n    <if_sid>100002</if_sid>\n    <description>x</description>\n  </rule>\n  <rule id=\"100003\" level=\"3\">\n    <if_sid>5716</if_sid>\n    <description>y</description>\n  </rule>\n  <rule id=\"100003\" level=\"3\">\n    <if_sid>5716</if_sid>\n    <description>z</description>\n  </rule>\n  <rule id=\"100004\" level=\"3\">\n    <if_sid>5716</if_sid>\n  </rule>\n</group>\n"

// badDecoders: an unknown parent (2101), a '|' inside parentheses (1452),
// an <order> longer than the captures.
const badDecoders = "<decoder name=\"app\">\n  <parent>nosuch</parent>\n  <regex>(\\S+)</regex>\n  <order>user</order>\n</decoder>\n<decoder name=\"sshd-x\">\n  <parent>sshd</parent>\n  <regex>(a|b)</regex>\n  <order>user</order>\n</decoder>\n<decoder name=\"sshd-y\">\n  <parent>sshd</parent>\n  <regex>^(\\S+)</regex>\n  <order>user, srcip</order>\n</decoder>\n"

// stock writes a minimal stock ruleset (rules 5700, 5716; decoder sshd).
func stock(t *testing.T, install string) {
	write(t, filepath.Join(install, "ruleset", "decoders", "0310-ssh_decoders.xml"), "<decoder name=\"sshd\">\n  <program_name>^sshd</program_name>\n</decoder>\n")
	write(t, filepath.Join(install, "ruleset", "rules", "0095-sshd_rules.xml"), "<group name=\"sshd,\">\n  <rule id=\"5700\" level=\"0\">\n    <decoded_as>sshd</decoded_as>\n    <description>sshd</description>\n  </rule>\n  <rule id=\"5716\" level=\"5\">\n    <if_sid>5700</if_sid>\n    <description>sshd failure</description>\n  </rule>\n</group>\n")
}

// checkRunner fakes the control tool's `check`.
func checkRunner(out string, code int) manager.Runner {
	return process.RunnerFunc(func(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
		if filepath.Base(name) != "siem-control" || strings.Join(args, " ") != "check" {
			return nil, []byte("unexpected " + name), 1, nil
		}
		return []byte(out), nil, code, nil
	})
}

func run(t *testing.T, st *factory.Clients, mode string, args ...string) (string, string, int) {
	t.Helper()
	io, _, out, errOut := output.Test()
	f := clitest.Factory(io, st)
	f.Global.Output = mode
	err := clitest.Exec(rulescmd.NewCmdCheck(f, nil), args...)
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
			stock(t, install)
			code := 0
			if tt.check != "" {
				code = 1
			}
			st := &factory.Clients{Config: &config.Config{Manager: config.Manager{InstallDir: install}}, Manager: clientset.Missing[*manager.Client](os.ErrNotExist),
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
	st := &factory.Clients{Config: &config.Config{Manager: config.Manager{InstallDir: t.TempDir()}},
		Tools: manager.Tools{InstallDir: "/nonexistent", Runner: process.RunnerFunc(func(context.Context, []string, string, ...string) ([]byte, []byte, int, error) {
			ran = true
			return nil, nil, 0, nil
		})}}
	out, _, code := run(t, st, "table", "--dir", dir)
	if code != 3 || !strings.Contains(out, "rules/x.xml\t3\terror\t1226\terror reading XML: XMLERR: Element 'rule' not closed.") || ran {
		t.Errorf("exit %d ran=%v\n%s", code, ran, out)
	}
	if _, _, code := run(t, st, "table", "--dir", filepath.Join(dir, "missing")); code != 1 {
		t.Errorf("missing dir: exit %d, want 1", code)
	}
	for _, args := range [][]string{{"--dir", ""}, {"--stock", ""}, {"--as-stock", "--stock", dir}} {
		if _, errOut, code := run(t, st, "table", args...); code != 2 {
			t.Errorf("%v: exit %d %s", args, code, errOut)
		}
	}
	if _, errOut, code := run(t, st, "yaml"); code != 2 {
		t.Errorf("-o yaml: exit %d %s", code, errOut)
	}
}

// TestRulesCheckStockFlags: --stock points at another stock ruleset (a
// local id that collides with a stock id above 100000 is found); --as-stock
// checks {install_dir}/ruleset itself, without the manager's check.
func TestRulesCheckStockFlags(t *testing.T) {
	install, other := t.TempDir(), t.TempDir()
	stock(t, install)
	write(t, filepath.Join(other, "rules", "0330-sysmon_rules.xml"), "<group name=\"sysmon,\">\n  <rule id=\"184665\" level=\"0\">\n    <category>windows</category>\n    <description>sysmon</description>\n  </rule>\n</group>\n")
	etc := t.TempDir()
	write(t, filepath.Join(etc, "rules", "local_rules.xml"), "<group name=\"local,\">\n  <rule id=\"184665\" level=\"3\">\n    <match>x</match>\n    <description>x</description>\n  </rule>\n</group>\n")
	ran := false
	st := &factory.Clients{Config: &config.Config{Manager: config.Manager{InstallDir: install}},
		Tools: manager.Tools{InstallDir: install, Runner: process.RunnerFunc(func(context.Context, []string, string, ...string) ([]byte, []byte, int, error) {
			ran = true
			return nil, nil, 0, nil
		})}}
	out, errOut, code := run(t, st, "table", "--dir", etc, "--stock", other)
	if code != 0 || !strings.Contains(out, "rules/local_rules.xml\t2\twarning\t7612\trule id 184665 is already defined by the stock ruleset at ") {
		t.Errorf("--stock: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, st, "json", "--as-stock")
	if code != 0 || ran || !strings.Contains(out, `"as_stock": true`) || !strings.Contains(out, `"rules": 2`) || strings.Contains(out, `"manager"`) {
		t.Errorf("--as-stock: exit %d ran=%v\n%s%s", code, ran, out, errOut)
	}
	write(t, filepath.Join(install, "ruleset", "rules", "0095-sshd_rules.xml"), "<group name=\"sshd,\">\n  <rule id=\"5700\" level=\"0\">\n    <regex>(a|b)</regex>\n    <description>sshd</description>\n  </rule>\n</group>\n")
	if out, _, code = run(t, st, "table", "--as-stock"); code != 3 || !strings.Contains(out, "rules/0095-sshd_rules.xml\t3\terror\t5107\t") {
		t.Errorf("--as-stock broken stock: exit %d\n%s", code, out)
	}
}
