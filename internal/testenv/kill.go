package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// KillHelperAt runs the test named test of this test binary in a child
// process, with env ("NAME=value") added to its environment, reads the
// first line it prints, and SIGKILLs it there: the way to see what a crash
// in the middle of an operation leaves behind. The child prints a line
// starting with ready once it is where it should die (reached: what that is,
// for the failure message). It returns that line; the test fails when the
// child did not get there or was not killed by the signal.
func KillHelperAt(t testing.TB, test, env, ready, reached string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ready) {
		t.Fatalf("helper did not reach %s: %q %v", reached, line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want killed by SIGKILL", cmd.ProcessState)
	}
	return line
}
