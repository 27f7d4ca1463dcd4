//go:build e2e

package lab

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// labDir returns a lab directory whose parents the unprivileged indexer user can traverse.
func labDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for d := base; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(base, "lab")
}

// TestE2EIndexerOnly brings up the real OpenSearch under the private systemd without the
// emulators, checks auth over TLS, cluster-red and allocation-primaries faults, then down.
func TestE2EIndexerOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := labDir(t)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, err := Up(ctx, Options{Dir: dir, PortOffset: 700, Logger: log, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = l.Down(context.Background())
		}
	})
	checkIndexerAndFaults(ctx, t, l)
	assertDown(ctx, t, l)
	downed = true
}
