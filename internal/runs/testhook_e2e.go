//go:build e2e

package runs

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
)

// testHook, in e2e test builds only, lets a test crash or disturb a run at
// an exact point:
//
//	SIEMCTL_TEST_KILL_AT=<step-id>[@<event>][+<delay>]   SIGKILL this process
//	SIEMCTL_TEST_EXEC_AT=<step-id>[@<event>]=<shell command>   run it first, synchronously
//
// <event> is a progress type (default step-start; e.g. step-ok). A delay
// kills that long after the event, while the step runs.
func testHook() func(engine.Progress) {
	kill := os.Getenv("SIEMCTL_TEST_KILL_AT")
	execAt, cmdline, _ := strings.Cut(os.Getenv("SIEMCTL_TEST_EXEC_AT"), "=")
	if kill == "" && execAt == "" {
		return nil
	}
	match := func(spec string, p engine.Progress) bool {
		step, ev, ok := strings.Cut(spec, "@")
		if !ok {
			ev = engine.EvStepStart
		}
		return p.Step == step && p.Type == ev
	}
	killSpec, delayText, _ := strings.Cut(kill, "+")
	delay, _ := time.ParseDuration(delayText)
	done := false
	return func(p engine.Progress) {
		if execAt != "" && !done && match(execAt, p) {
			done = true
			c := exec.Command("/bin/sh", "-c", cmdline)
			c.Stdout, c.Stderr = os.Stderr, os.Stderr
			_ = c.Run()
		}
		if killSpec != "" && match(killSpec, p) {
			if delay > 0 {
				time.AfterFunc(delay, func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) })
				return
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
