package manager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/process"
)

// Runner runs a tool (see process.Runner); tools get no secrets.
type Runner = process.Runner

// ExecRunner is the tools' default runner: stdout and stderr capped at
// limit bytes each (<= 0: process.DefaultMaxOutput). A stdout over the cap
// is an error naming the tool and the cap (a parser must never see a cut
// listing); a stderr over it keeps its tail.
func ExecRunner(limit int) Runner {
	return process.ExecRunner{MaxOutput: limit, WholeStdout: true}
}

// Tools runs the manager's command-line tools under InstallDir/bin.
type Tools struct {
	InstallDir  string // /var/ossec, /var/siem
	ControlName string // "siem-control" (profile siem) or "wazuh-control"; default wazuh-control
	// ConfigCheck is the offline configuration check's argv (manager.config_check);
	// a relative program is under InstallDir. Default: bin/<control> check.
	ConfigCheck []string
	Runner      Runner // default ExecRunner(0)
}

// ToolError is a tool that failed: its exit code and what it said.
type ToolError struct {
	Tool     string   // basename
	Args     []string // never secrets
	ExitCode int
	Lines    []string // "** …" lines, or the tail of the output
	kind     error
}

func (e *ToolError) Error() string {
	msg := strings.Join(e.Lines, "; ")
	if msg == "" {
		msg = "no output"
	}
	return fmt.Sprintf("%s %s: exit %d: %s", e.Tool, strings.Join(e.Args, " "), e.ExitCode, msg)
}

// Unwrap exposes a sentinel (ErrAgentNotFound, ErrUnsupported) when the
// output says so.
func (e *ToolError) Unwrap() error { return e.kind }

func (t Tools) path(name string) string { return filepath.Join(t.InstallDir, "bin", name) }

// run runs the tool name of InstallDir/bin.
func (t Tools) run(ctx context.Context, name string, args ...string) ([]byte, []byte, int, error) {
	return t.exec(ctx, t.path(name), args...)
}

// exec runs the program at path with the tools' runner.
func (t Tools) exec(ctx context.Context, path string, args ...string) ([]byte, []byte, int, error) {
	r := t.Runner
	if r == nil {
		r = ExecRunner(0)
	}
	if t.InstallDir == "" {
		return nil, nil, -1, errors.New("manager tools: no install_dir configured")
	}
	return r.Run(ctx, nil, path, args...)
}

func (t Tools) control() string {
	if t.ControlName != "" {
		return t.ControlName
	}
	return "wazuh-control"
}

func tail(stdout, stderr []byte, n int) []string {
	all := append(lines(stdout), lines(stderr)...)
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

// ControlInfo runs `<control> info`.
func (t Tools) ControlInfo(ctx context.Context) (ControlInfo, error) {
	out, errOut, code, err := t.run(ctx, t.control(), "info")
	if err != nil {
		return ControlInfo{}, err
	}
	info, ok := ParseControlInfo(out)
	if !ok {
		return ControlInfo{}, &ToolError{Tool: t.control(), Args: []string{"info"}, ExitCode: code, Lines: tail(out, errOut, 3),
			kind: errors.New("no <PRODUCT>_VERSION line")}
	}
	return info, nil
}

// ControlStatus runs `<control> status` and parses the daemon lines; its
// exit code is ignored (1 whenever an optional daemon is stopped).
func (t Tools) ControlStatus(ctx context.Context) (ControlStatus, error) {
	out, errOut, code, err := t.run(ctx, t.control(), "status")
	if err != nil {
		return ControlStatus{}, err
	}
	st := ParseControlStatus(out)
	if len(st.Daemons) == 0 {
		return st, &ToolError{Tool: t.control(), Args: []string{"status"}, ExitCode: code, Lines: tail(out, errOut, 3),
			kind: errors.New("no daemon lines")}
	}
	return st, nil
}

// CheckResult is the outcome of a configuration check.
type CheckResult struct {
	OK       bool      `json:"ok"`
	Problems []LogLine `json:"problems"`
}

// configCheck returns the check's program (absolute) and arguments.
func (t Tools) configCheck() (string, []string) {
	argv := t.ConfigCheck
	if len(argv) == 0 {
		argv = []string{filepath.Join("bin", t.control()), "check"}
	}
	prog := argv[0]
	if !filepath.IsAbs(prog) {
		prog = filepath.Join(t.InstallDir, prog)
	}
	return prog, argv[1:]
}

// ConfigCheckCommand is the check's command line as it runs (for messages
// and fixes).
func (t Tools) ConfigCheckCommand() string {
	prog, args := t.configCheck()
	return strings.TrimSpace(prog + " " + strings.Join(args, " "))
}

// ControlCheck runs the offline configuration check (manager.config_check:
// `wazuh-analysisd -t` on Wazuh, whose wazuh-control has no `check`; the
// siem profile's `<control> check`). Exit 0 without ERROR or
// CRITICAL lines is valid; those lines (the daemon's `-t` output, e.g.
// "wazuh-analysisd: ERROR: (1230): Invalid element …" then "CRITICAL:
// (1202): Configuration error at 'etc/ossec.conf'.") are the problems. A
// control tool that answers with its usage (no `check` command) is
// ErrUnsupported: configure manager.config_check or use
// Client.ValidateConfig.
func (t Tools) ControlCheck(ctx context.Context) (CheckResult, error) {
	prog, args := t.configCheck()
	tool := filepath.Base(prog)
	out, errOut, code, err := t.exec(ctx, prog, args...)
	if err != nil {
		return CheckResult{}, err
	}
	problems := ParseCheck(append(append([]byte{}, out...), append([]byte("\n"), errOut...)...))
	if len(problems) > 0 {
		return CheckResult{OK: false, Problems: problems}, nil
	}
	if code == 0 {
		return CheckResult{OK: true, Problems: []LogLine{}}, nil
	}
	if bytes.Contains(out, []byte("Usage:")) || bytes.Contains(errOut, []byte("Usage:")) {
		return CheckResult{}, &ToolError{Tool: tool, Args: args, ExitCode: code,
			Lines: []string{tool + " has no " + strings.Join(args, " ") + " command (set manager.config_check, e.g. [bin/wazuh-analysisd, -t])"}, kind: ErrUnsupported}
	}
	msg := tail(out, errOut, 3)
	if len(msg) == 0 {
		msg = []string{fmt.Sprintf("exit status %d without output", code)}
	}
	lines := make([]LogLine, 0, len(msg))
	for _, m := range msg {
		lines = append(lines, LogLine{Tag: tool, Level: "ERROR", Message: m})
	}
	return CheckResult{OK: false, Problems: lines}, nil
}

// AgentListFilter selects agent_control's list.
type AgentListFilter int

// The list variants.
const (
	ListAll          AgentListFilter = iota // -l
	ListActive                              // -lc
	ListDisconnected                        // -ln
)

func (f AgentListFilter) flag() string {
	switch f {
	case ListActive:
		return "-lc"
	case ListDisconnected:
		return "-ln"
	default:
		return "-l"
	}
}

// AgentList runs `agent_control -l|-lc|-ln`.
func (t Tools) AgentList(ctx context.Context, f AgentListFilter) ([]ToolAgent, error) {
	out, errOut, code, err := t.run(ctx, "agent_control", f.flag())
	if err != nil {
		return nil, err
	}
	agents, toolErrs := ParseAgentList(out)
	toolErrs = append(toolErrs, toolErrorLines(errOut)...)
	if code != 0 || len(toolErrs) > 0 {
		if len(toolErrs) == 0 {
			toolErrs = tail(out, errOut, 3)
		}
		return agents, &ToolError{Tool: "agent_control", Args: []string{f.flag()}, ExitCode: code, Lines: toolErrs}
	}
	return agents, nil
}

// AgentInfo runs `agent_control -i ID`.
func (t Tools) AgentInfo(ctx context.Context, id string) (ToolAgentInfo, error) {
	if err := ValidateAgentID(id); err != nil {
		return ToolAgentInfo{}, err
	}
	args := []string{"-i", id}
	out, errOut, code, err := t.run(ctx, "agent_control", args...)
	if err != nil {
		return ToolAgentInfo{}, err
	}
	info, ok, toolErrs := ParseAgentInfo(out)
	toolErrs = append(toolErrs, toolErrorLines(errOut)...)
	if ok && len(toolErrs) == 0 {
		return info, nil
	}
	return ToolAgentInfo{}, toolFailure("agent_control", args, code, toolErrs, out, errOut)
}

// toolFailure builds a ToolError, recognising "not found" outputs.
func toolFailure(tool string, args []string, code int, toolErrs []string, out, errOut []byte) error {
	e := &ToolError{Tool: tool, Args: args, ExitCode: code, Lines: toolErrs}
	if len(e.Lines) == 0 {
		e.Lines = tail(out, errOut, 3)
	}
	for _, l := range e.Lines {
		if strings.HasPrefix(l, "** Invalid agent id") || strings.Contains(l, "ID is not present") ||
			strings.Contains(l, "ERROR: 9011:") || strings.Contains(l, "Agent ID not found") {
			e.kind = ErrAgentNotFound
		}
	}
	return e
}

// RestartAgent runs `agent_control -R -u ID` (never for 000).
func (t Tools) RestartAgent(ctx context.Context, id string) error {
	if err := validateActionIDs("restart", []string{id}); err != nil {
		return err
	}
	args := []string{"-R", "-u", id}
	out, errOut, code, err := t.run(ctx, "agent_control", args...)
	if err != nil {
		return err
	}
	toolErrs := append(toolErrorLines(out), toolErrorLines(errOut)...)
	if code == 0 && len(toolErrs) == 0 && bytes.Contains(out, []byte("Restarting agent: "+id)) {
		return nil
	}
	return toolFailure("agent_control", args, code, toolErrs, out, errOut)
}

// RemoveAgent runs `manage_agents -r ID` (never for 000).
func (t Tools) RemoveAgent(ctx context.Context, id string) error {
	if err := validateActionIDs("remove", []string{id}); err != nil {
		return err
	}
	args := []string{"-r", id}
	out, errOut, code, err := t.run(ctx, "manage_agents", args...)
	if err != nil {
		return err
	}
	// With authd running the removal goes through it, and an unknown id is
	// only an ERROR line on stderr ("manage_agents: ERROR: 9011: Agent ID not
	// found") with exit 0.
	toolErrs := append(toolErrorLines(out), toolErrorLines(errOut)...)
	for _, l := range ParseCheck(errOut) {
		toolErrs = append(toolErrs, l.String())
	}
	if code == 0 && len(toolErrs) == 0 && bytes.Contains(out, []byte("Agent '"+id+"' removed")) {
		return nil
	}
	return toolFailure("manage_agents", args, code, toolErrs, out, errOut)
}
