//go:build e2e

package lab

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestE2EIndexerOnly brings up the real OpenSearch under the private systemd without the
// emulators, checks auth over TLS, cluster-red and allocation-primaries faults, then down.
func TestE2EIndexerOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	l := upTest(ctx, t, 700, slog.LevelDebug)
	checkIndexerAndFaults(ctx, t, l)

	// A real package upgrade swaps the OpenSearch binary: 2.11.1 -> 2.19.3 on the same data.
	upgradeIndexer(ctx, t, l)
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
}
