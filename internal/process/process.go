// Package process runs external programs for the clients that drive
// command-line tools (the package manager, the shipper): context-bound, with
// the environment extended, and each output stream capped to its tail.
package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
)

// Runner runs one program. env holds extra NAME=value pairs added to the
// inherited environment. err is non-nil only when the program could not be
// run or ctx ended; a program that ran and failed returns its exit code with
// err nil.
//
// packages and shipper use it; tests substitute fakes.
type Runner interface {
	Run(ctx context.Context, env []string, name string, args ...string) (stdout, stderr []byte, exitCode int, err error)
}

// ExecRunner runs programs with os/exec, capturing at most MaxOutput bytes
// of each stream (default 1 MiB; the tail is kept).
type ExecRunner struct {
	MaxOutput int
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error) {
	limit := r.MaxOutput
	if limit <= 0 {
		limit = 1 << 20
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, stderr := &tailBuffer{max: limit}, &tailBuffer{max: limit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.Bytes(), stderr.Bytes(), ee.ExitCode(), nil
	}
	if err != nil {
		return stdout.Bytes(), stderr.Bytes(), -1, err
	}
	return stdout.Bytes(), stderr.Bytes(), 0, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
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
