package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// resolveGuarded runs Resolve with a guard far beyond its own bounds, so a
// regression fails the test instead of hanging it.
func resolveGuarded(t *testing.T, ctx context.Context, s Secret) (string, error) {
	t.Helper()
	type res struct {
		pw  string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		pw, err := s.Resolve(ctx, "indexer", nil)
		ch <- res{pw, err}
	}()
	select {
	case r := <-ch:
		return r.pw, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("password_command blocked siemctl")
		return "", nil
	}
}

func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// a zombie waiting for init is gone too
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// TestPasswordCommandBackgroundChild: a helper that prints the password and
// leaves a child holding its stdout (a credential agent it started) does
// not block siemctl, and the child does not outlive it.
func TestPasswordCommandBackgroundChild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	s := Secret{PasswordCommand: []string{"/bin/sh", "-c", "echo S3cret.Value; (sleep 120; echo late) & echo $! > " + pidFile}}
	pw, err := resolveGuarded(t, context.Background(), s)
	if err != nil || pw != "S3cret.Value" {
		t.Fatalf("pw %q err %v", pw, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	requireGone(t, b, "background child %d outlived the password_command")
}

// requireGone fails (killing it) when the process whose pid is in b is
// still alive 10 seconds on.
func requireGone(t *testing.T, b []byte, failure string) {
	t.Helper()
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf(failure, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPasswordCommandHung: a helper that never answers is killed with its
// children at the deadline, and the failure names the secret source (its
// key), never the indexer or the secret.
func TestPasswordCommandHung(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	s := Secret{PasswordCommand: []string{"/bin/sh", "-c", "(sleep 120) & echo $! > " + pidFile + "; sleep 120"}}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := resolveGuarded(t, ctx, s)
	if !errors.Is(err, ErrSecret) {
		t.Fatalf("err = %v, want ErrSecret", err)
	}
	var se *SecretError
	if !errors.As(err, &se) || se.Key != "indexer.password_command" || !strings.Contains(err.Error(), "gave no password within") {
		t.Errorf("err = %v", err)
	}
	b, _ := os.ReadFile(pidFile)
	requireGone(t, b, "child %d of a killed password_command survived")
}

// TestPasswordCommandInterrupted: Ctrl-C while the helper runs is an
// interruption (context.Canceled), not a secret failure.
func TestPasswordCommandInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := resolveGuarded(t, ctx, Secret{PasswordCommand: []string{"/bin/sh", "-c", "sleep 120"}})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrSecret) {
		t.Errorf("err = %v", err)
	}
}
