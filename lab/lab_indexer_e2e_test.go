//go:build e2e

package lab

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	l, err := Up(ctx, Options{Dir: dir, PortOffset: shifted(t, 700), Logger: log, Progress: os.Stderr})
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

	// A real package upgrade swaps the OpenSearch binary: 2.11.1 -> 2.19.3 on the same data.
	if err := l.stopUnit(ctx, "siem-indexer.service"); err != nil {
		t.Fatal(err)
	}
	if err := l.apt().Install(ctx, "siem-indexer=4.10.0-1"); err != nil {
		t.Fatal(err)
	}
	if err := l.startIndexer(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := l.indexer()
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.ok(ctx, "GET", "/_nodes/_local", nil)
	if err != nil || !strings.Contains(string(body), `"version":"2.19.3"`) {
		t.Errorf("after upgrade _nodes: %v %.300s", err, body)
	}
	if v, _ := l.apt().InstalledVersion(ctx, "siem-indexer"); v != "4.10.0-1" {
		t.Errorf("installed %q after upgrade", v)
	}
	assertDown(ctx, t, l)
	downed = true
}
