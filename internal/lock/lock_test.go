package lock

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAcquireContention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "lock")
	started := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	first, err := Acquire(context.Background(), path, Holder{Command: "siemctl upgrade apply", RunID: "r1", Started: started}, 0)
	if err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	if first.Stale != nil {
		t.Errorf("unexpected stale holder %+v", first.Stale)
	}
	if err := first.SetRunID("r2"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		ctx   func() context.Context
		retry time.Duration
	}{
		{"no retry", context.Background, 0},
		{"retry window ends", context.Background, 30 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			second, err := Acquire(tt.ctx(), path, Holder{Command: "siemctl rollback"}, tt.retry)
			if err == nil {
				second.Release()
				t.Fatal("second Acquire succeeded while held")
			}
			var he *HeldError
			if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
				t.Fatalf("want *HeldError matching ErrHeld, got %T %v", err, err)
			}
			if he.Holder == nil || he.Holder.PID != os.Getpid() || he.Holder.RunID != "r2" || he.Holder.Command != "siemctl upgrade apply" || !he.Holder.Started.Equal(started) {
				t.Fatalf("holder = %+v", he.Holder)
			}
			for _, w := range []string{"pid", "run r2", "siemctl upgrade apply", "2025-03-01T10:00:00Z"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Acquire(ctx, path, Holder{}, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled retry: got %v", err)
	}

	h, st, err := Inspect(path)
	if err != nil || st != Held || h.RunID != "r2" {
		t.Errorf("Inspect held = %+v %v %v", h, st, err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if _, st, _ := Inspect(path); st != Free {
		t.Errorf("after release: %v", st)
	}
	again, err := Acquire(context.Background(), path, Holder{}, 0)
	if err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
	defer again.Release()
	if again.Stale != nil {
		t.Errorf("clean release reported stale %+v", again.Stale)
	}
}

func TestStaleHolder(t *testing.T) {
	// A process that has exited: its pid is (almost certainly) not reused
	// within this test.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	dead := cmd.Process.Pid
	host, _ := os.Hostname()
	path := filepath.Join(t.TempDir(), "lock")
	rec, _ := json.Marshal(Holder{PID: dead, Host: host, RunID: "crashed", Command: "siemctl upgrade apply"})
	if err := os.WriteFile(RecordPath(path), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	h, st, err := Inspect(path)
	if err != nil || st != Stale || h.RunID != "crashed" {
		t.Fatalf("Inspect = %+v %v %v", h, st, err)
	}
	l, err := Acquire(context.Background(), path, Holder{Command: "siemctl upgrade resume"}, 0)
	if err != nil {
		t.Fatalf("Acquire over a stale record: %v", err)
	}
	defer l.Release()
	if l.Stale == nil || l.Stale.RunID != "crashed" || l.Stale.PID != dead {
		t.Errorf("Stale = %+v", l.Stale)
	}
	if h, st, _ := Inspect(path); st != Held || h.PID != os.Getpid() {
		t.Errorf("record not rewritten: %+v %v", h, st)
	}
}
