package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	if string(b.Bytes()) != "cdefg" || !b.over {
		t.Fatalf("got %q over=%v", b.Bytes(), b.over)
	}
	b.Write([]byte("0123456789"))
	if string(b.Bytes()) != "56789" {
		t.Fatalf("got %q", b.Bytes())
	}
	exact := &tailBuffer{max: 3}
	exact.Write([]byte("abc"))
	if exact.over {
		t.Fatal("exactly the cap is not over it")
	}
}

func TestExecRunner(t *testing.T) {
	tests := []struct {
		name                string
		r                   ExecRunner
		env                 []string
		script              string
		wantOut, wantErrOut string
		wantCode            int
		wantErr             string
	}{
		{name: "exit code, env and both streams", env: []string{"X_TEST=42"},
			script: "echo $X_TEST; echo oops >&2; exit 3", wantOut: "42\n", wantErrOut: "oops\n", wantCode: 3},
		{name: "no stdin by default", script: "cat; echo done", wantOut: "done\n"},
		{name: "stdin", r: ExecRunner{Stdin: []byte("in\n")}, script: "cat", wantOut: "in\n"},
		{name: "tail kept over the cap", r: ExecRunner{MaxOutput: 10},
			script: "printf '0123456789abcdef'", wantOut: "6789abcdef"},
		{name: "whole stdout over the cap names program and cap", r: ExecRunner{MaxOutput: 10, WholeStdout: true},
			script: "printf '0123456789abcdef'", wantOut: "6789abcdef", wantCode: -1, wantErr: "sh -c printf '0123456789abcdef' stdout"},
		{name: "stderr discarded", r: ExecRunner{DiscardStderr: true}, script: "echo secret >&2; echo ok", wantOut: "ok\n"},
		{name: "a child holding the pipes after exit 0", r: ExecRunner{WaitDelay: 100 * time.Millisecond},
			script: "echo early; sleep 5 & exit 0", wantOut: "early\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code, err := tt.r.Run(context.Background(), tt.env, "/bin/sh", "-c", tt.script)
			if tt.wantErr != "" {
				var tl *netclient.TooLargeError
				if !errors.As(err, &tl) || !strings.Contains(err.Error(), tt.wantErr) || tl.Limit != int64(tt.r.MaxOutput) {
					t.Fatalf("err = %v, want a TooLargeError naming %q and the cap", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.wantOut || string(errOut) != tt.wantErrOut || code != tt.wantCode {
				t.Fatalf("got %q %q %d, want %q %q %d", out, errOut, code, tt.wantOut, tt.wantErrOut, tt.wantCode)
			}
		})
	}
}

func TestExecRunnerNotFound(t *testing.T) {
	_, _, code, err := ExecRunner{}.Run(context.Background(), nil, "/nonexistent/prog")
	if err == nil || code != -1 || !strings.Contains(err.Error(), "run prog") {
		t.Fatalf("code %d err %v", code, err)
	}
}

// pidAlive reports whether the process written to file is still running.
func pidAlive(t *testing.T, file string) bool {
	t.Helper()
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		b, _ := os.ReadFile(file)
		pid = atoi(strings.TrimSpace(string(b)))
		if pid == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if pid == 0 {
		t.Fatal("no pid written")
	}
	for i := 0; i < 100; i++ {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if syscall.Kill(pid, 0) != nil || err != nil || strings.Contains(string(st), ") Z ") {
			return false // gone, or a zombie not yet reaped
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// killPID kills the process whose pid pidFile holds.
func killPID(pidFile string) {
	b, _ := os.ReadFile(pidFile)
	_ = syscall.Kill(atoi(strings.TrimSpace(string(b))), syscall.SIGKILL)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// cancelOnPID returns a context cancelled once pidFile holds a pid.
func cancelOnPID(pidFile string) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if b, _ := os.ReadFile(pidFile); len(b) > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return ctx
}

func TestExecRunnerCancelKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx := cancelOnPID(pidFile)
	// The grandchild holds no pipe: only the group kill ends it.
	_, _, code, err := ExecRunner{}.Run(ctx, nil, "/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > "+pidFile+"; wait")
	if !errors.Is(err, context.Canceled) || code != -1 || !strings.HasPrefix(err.Error(), "sh: ") {
		t.Fatalf("code %d err %v", code, err)
	}
	if pidAlive(t, pidFile) {
		t.Fatal("the grandchild outlived the cancelled run")
	}
}

// TestExecRunnerSameGroup: the package manager's runner kills only the
// program on cancel; what it started (dpkg) is left to finish.
func TestExecRunnerSameGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx := cancelOnPID(pidFile)
	_, _, _, err := ExecRunner{SameGroup: true}.Run(ctx, nil, "/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > "+pidFile+"; wait")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if !pidAlive(t, pidFile) {
		t.Fatal("the grandchild was killed with the program")
	}
	killPID(pidFile)
}

func TestExecRunnerKillGroupOnExit(t *testing.T) {
	for _, kill := range []bool{false, true} {
		pidFile := filepath.Join(t.TempDir(), "pid")
		r := ExecRunner{KillGroupOnExit: kill}
		if _, _, _, err := r.Run(context.Background(), nil, "/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > "+pidFile); err != nil {
			t.Fatal(err)
		}
		alive := pidAlive(t, pidFile)
		if alive == kill {
			t.Fatalf("KillGroupOnExit=%v: grandchild alive=%v", kill, alive)
		}
		if alive {
			killPID(pidFile)
		}
	}
}

// TestTail: the last n non-empty lines of stderr, else of stdout, trimmed.
func TestTail(t *testing.T) {
	tests := []struct {
		name, stdout, stderr string
		want                 string
	}{
		{"stderr wins", "out\n", "e1\n\n  e2  \ne3\n", "e2\ne3"},
		{"stdout when stderr is blank", "o1\no2\no3\n", " \n\n", "o2\no3"},
		{"nothing", "", "", ""},
	}
	for _, tt := range tests {
		if got := Tail(tt.stdout, tt.stderr, 2); got != tt.want {
			t.Errorf("%s: Tail = %q, want %q", tt.name, got, tt.want)
		}
	}
}
