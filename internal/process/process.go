// Package process runs external programs: the one exec runner of every
// client that drives a command-line tool (the package manager, the shipper,
// the manager's tools, the security plugin's tools, a password_command).
// A program runs without a shell, bound to a context, in its own process
// group (killed as a group when the context ends), with each output stream
// capped (the tail is kept; a stream that must be whole fails naming the
// cap). Secrets reach a program only through its environment, never argv.
// Callers hold the narrow Runner interface; tests substitute fakes
// (RunnerFunc). Tail renders what a failed program said, for its error.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Runner runs one program. env holds extra NAME=value pairs added to the
// inherited environment (the only way a secret reaches a program). err is
// non-nil only when the program could not be run to completion (not found,
// ctx ended, an output over its cap); a program that ran and failed returns
// its exit code with err nil.
type Runner interface {
	Run(ctx context.Context, env []string, name string, args ...string) (stdout, stderr []byte, exitCode int, err error)
}

// RunnerFunc adapts a function to Runner (fakes in tests).
type RunnerFunc func(ctx context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error)

// Run implements Runner.
func (f RunnerFunc) Run(ctx context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error) {
	return f(ctx, env, name, args...)
}

// Output caps of the callers (bytes kept of stdout and of stderr each).
const (
	// DefaultMaxOutput: the manager's and the security plugin's tools, the shipper.
	DefaultMaxOutput = int(netclient.MaxToolOutput)
	// PackageMaxOutput: the package manager (only the tail is ever shown).
	PackageMaxOutput = 256 << 10
	// SecretMaxOutput: a password_command (its first line is the password).
	SecretMaxOutput = 64 << 10
)

// DefaultWaitDelay is how long Run waits, after the program exited or was
// killed, for its output pipes to close (a child that inherited them must
// not keep siemctl waiting).
const DefaultWaitDelay = 2 * time.Second

// ExecRunner runs programs with os/exec. The zero value keeps the last
// DefaultMaxOutput bytes of each stream, gives no stdin, and runs the
// program in its own process group, killed as a whole when ctx ends.
type ExecRunner struct {
	// MaxOutput caps each stream in bytes (<= 0: DefaultMaxOutput).
	MaxOutput int
	// WholeStdout makes a stdout over MaxOutput an error naming the program
	// and the cap (*netclient.TooLargeError): a parser must never see a cut
	// listing. Otherwise the tail is kept silently.
	WholeStdout bool
	// DiscardStderr drops stderr unread (it may echo a secret).
	DiscardStderr bool
	// Stdin is the program's standard input; nil means none (/dev/null).
	Stdin []byte
	// WaitDelay bounds the wait for the output pipes after exit
	// (<= 0: DefaultWaitDelay). A program that exited 0 while a child
	// still held its pipes counts as exit 0 with what it printed.
	WaitDelay time.Duration
	// KillGroupOnExit kills the process group after a normal exit too, so
	// nothing the program started outlives it (a password_command's agent).
	KillGroupOnExit bool
	// SameGroup keeps the program in siemctl's process group, and a cancel
	// kills only the program: the package manager, so that a dpkg or rpm it
	// started gets the terminal's Ctrl-C and finishes or stops on its own
	// terms (a SIGKILL mid-unpack leaves a half-installed package).
	SameGroup bool
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error) {
	limit := r.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	wait := r.WaitDelay
	if wait <= 0 {
		wait = DefaultWaitDelay
	}
	base := filepath.Base(name)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	if r.Stdin != nil {
		cmd.Stdin = bytes.NewReader(r.Stdin)
	}
	stdout, stderr := &tailBuffer{max: limit}, &tailBuffer{max: limit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if r.DiscardStderr {
		cmd.Stderr = io.Discard
	}
	if !r.SameGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error {
			// the process group this program leads, by its id
			return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	cmd.WaitDelay = wait
	err := cmd.Run()
	if r.KillGroupOnExit && !r.SameGroup && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, fmt.Errorf("%s: %w", base, ctx.Err())
	}
	if r.WholeStdout && stdout.over {
		what := strings.TrimSpace(base + " " + strings.Join(args, " ") + " stdout")
		return stdout.Bytes(), stderr.Bytes(), -1, &netclient.TooLargeError{What: what, Limit: int64(limit)}
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.Bytes(), stderr.Bytes(), ee.ExitCode(), nil
	case errors.Is(err, exec.ErrWaitDelay):
		// exited 0; a left-behind child held the pipes and was not waited for
		return stdout.Bytes(), stderr.Bytes(), 0, nil
	case err != nil:
		return stdout.Bytes(), stderr.Bytes(), -1, fmt.Errorf("run %s: %w", base, err)
	}
	return stdout.Bytes(), stderr.Bytes(), 0, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max  int
	buf  bytes.Buffer
	over bool // more than max bytes were written
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if t.buf.Len()+len(p) > t.max {
		t.over = true
	}
	if len(p) >= t.max {
		t.buf.Reset()
		t.buf.Write(p[len(p)-t.max:])
		return n, nil
	}
	if over := t.buf.Len() + len(p) - t.max; over > 0 {
		rest := append([]byte(nil), t.buf.Bytes()[over:]...)
		t.buf.Reset()
		t.buf.Write(rest)
	}
	t.buf.Write(p)
	return n, nil
}

func (t *tailBuffer) Bytes() []byte { return t.buf.Bytes() }

// Tail is what a failed program said, for its error: the last n non-empty
// lines (trimmed) of its stderr, or of its stdout when stderr holds none,
// one per line.
func Tail(stdout, stderr string, n int) string {
	if t := lastLines(stderr, n); t != "" {
		return t
	}
	return lastLines(stdout, n)
}

// lastLines returns the last n non-empty lines of s, trimmed.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append(keep, l)
		}
	}
	slices.Reverse(keep)
	return strings.Join(keep, "\n")
}
