// Package shipper runs the Filebeat-like shipper binary's operational
// commands (test config, test output, setup --pipelines, setup
// --index-management) and parses what they print.
//
// Every command runs as `<binary> [--path.home H --path.data D]
// --path.config <configDir> [-e] …` (home and data as the package's unit
// passes them, where set) with
// stdout and stderr captured (size-capped). Credentials live in the
// shipper's own keystore/config, never on its argv.
package shipper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/process"
)

// Op is one of the shipper commands this package runs.
type Op string

// The shipper operations.
const (
	OpTestConfig           Op = "test config"
	OpTestOutput           Op = "test output"
	OpSetupPipelines       Op = "setup pipelines"
	OpSetupIndexManagement Op = "setup index-management"
)

// Markers the shipper prints on success.
const (
	markConfigOK      = "Config OK"
	markPipelines     = "Loaded Ingest pipelines"
	markIndexFinished = "Index setup finished."
)

// ErrFailed matches every *Error.
var ErrFailed = errors.New("shipper command failed")

// Error is a shipper command that failed or did not print its success
// marker.
type Error struct {
	Op       Op
	Argv     []string
	ExitCode int
	// Exiting is the shipper's own reason ("Exiting: …" line), if it gave one.
	Exiting string
	// Tail is the last lines of stderr (or stdout) when there was no
	// Exiting line.
	Tail string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("shipper %s: exit status %d", e.Op, e.ExitCode)
	switch {
	case e.Exiting != "":
		msg += ": " + e.Exiting
	case e.Tail != "":
		msg += ": " + strings.ReplaceAll(e.Tail, "\n", "; ")
	}
	return msg
}

// Is makes every *Error match ErrFailed.
func (e *Error) Is(target error) bool { return target == ErrFailed }

// Shipper runs one shipper binary against one config directory.
type Shipper struct {
	binary    string
	configDir string
	home      string
	data      string
	run       Runner
	env       []string
}

// New returns a Shipper. A nil runner means ExecRunner{}. env is extra
// NAME=value environment for the binary (optional).
func New(binary, configDir string, runner Runner, env ...string) (*Shipper, error) {
	if binary == "" {
		return nil, errors.New("shipper: no binary configured")
	}
	if runner == nil {
		runner = ExecRunner{}
	}
	return &Shipper{binary: binary, configDir: configDir, run: runner, env: env}, nil
}

// WithPaths sets --path.home (where the module directory is) and
// --path.data (the registry and the keystore), as the package's unit passes
// them to a binary that is not a wrapper; empty values are not passed.
func (s *Shipper) WithPaths(home, data string) *Shipper {
	s.home, s.data = home, data
	return s
}

// Describe returns the exact argv op runs (for plans and --dry-run).
func (s *Shipper) Describe(op Op) []string {
	argv := []string{s.binary}
	if s.home != "" {
		argv = append(argv, "--path.home", s.home)
	}
	if s.data != "" {
		argv = append(argv, "--path.data", s.data)
	}
	if s.configDir != "" {
		argv = append(argv, "--path.config", s.configDir)
	}
	switch op {
	case OpTestConfig:
		return append(argv, "test", "config")
	case OpTestOutput:
		return append(argv, "test", "output")
	case OpSetupPipelines:
		return append(argv, "-e", "setup", "--pipelines")
	case OpSetupIndexManagement:
		return append(argv, "-e", "setup", "--index-management", "-E", "output.logstash.enabled=false")
	}
	return nil
}

type runResult struct {
	argv           []string
	stdout, stderr string
	code           int
}

func (s *Shipper) exec(ctx context.Context, op Op) (runResult, error) {
	argv := s.Describe(op)
	if argv == nil {
		return runResult{}, fmt.Errorf("shipper: unknown operation %q", op)
	}
	stdout, stderr, code, err := s.run.Run(ctx, s.env, argv[0], argv[1:]...)
	r := runResult{argv: argv, stdout: string(stdout), stderr: string(stderr), code: code}
	if err != nil {
		return r, fmt.Errorf("shipper %s: %w", op, err)
	}
	return r, nil
}

func (r runResult) fail(op Op) *Error {
	e := &Error{Op: op, Argv: r.argv, ExitCode: r.code, Exiting: ExitingLine(r.stderr)}
	if e.Exiting == "" {
		e.Exiting = ExitingLine(r.stdout)
	}
	if e.Exiting == "" {
		e.Tail = process.Tail(r.stdout, r.stderr, 5)
	}
	return e
}

// TestConfig runs `test config`. ok is true when the shipper printed
// "Config OK" and exited 0; otherwise message is its reason (the
// "Exiting: …" text). err is only for a shipper that could not be run.
func (s *Shipper) TestConfig(ctx context.Context) (ok bool, message string, err error) {
	r, err := s.exec(ctx, OpTestConfig)
	if err != nil {
		return false, "", err
	}
	if r.code == 0 && strings.Contains(r.stdout+r.stderr, markConfigOK) {
		return true, markConfigOK, nil
	}
	e := r.fail(OpTestConfig)
	if e.Exiting != "" {
		return false, e.Exiting, nil
	}
	return false, e.Error(), nil
}

// TestOutput runs `test output` and parses its transcript. A failed
// connection is a Report with OK false (its steps say where it broke), not
// an error; err is for a shipper that could not be run or printed no host
// block at all (then a *Error with its Exiting reason).
func (s *Shipper) TestOutput(ctx context.Context) (Report, error) {
	r, err := s.exec(ctx, OpTestOutput)
	if err != nil {
		return Report{Hosts: []HostReport{}}, err
	}
	rep := ParseTestOutput(r.stdout)
	if rep.Exiting == "" {
		rep.Exiting = ExitingLine(r.stderr)
	}
	if len(rep.Hosts) == 0 {
		return rep, r.fail(OpTestOutput)
	}
	if r.code != 0 {
		rep.OK = false
	}
	return rep, nil
}

// SetupPipelines runs `setup --pipelines` and checks for "Loaded Ingest
// pipelines".
func (s *Shipper) SetupPipelines(ctx context.Context) error {
	return s.setup(ctx, OpSetupPipelines, markPipelines)
}

// SetupIndexManagement runs `setup --index-management -E
// output.logstash.enabled=false` and checks for "Index setup finished.".
func (s *Shipper) SetupIndexManagement(ctx context.Context) error {
	return s.setup(ctx, OpSetupIndexManagement, markIndexFinished)
}

func (s *Shipper) setup(ctx context.Context, op Op, marker string) error {
	r, err := s.exec(ctx, op)
	if err != nil {
		return err
	}
	if r.code == 0 && strings.Contains(r.stdout, marker) {
		return nil
	}
	e := r.fail(op)
	if r.code == 0 && e.Exiting == "" {
		e.Tail = fmt.Sprintf("no %q in its output", marker)
	}
	return e
}
