//go:build e2e

package lab

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func checkIndexerAndFaults(ctx context.Context, t *testing.T, l *Lab) {
	t.Helper()
	c, err := l.indexer()
	if err != nil {
		t.Fatal(err)
	}
	// Authenticated over verified TLS; the compatibility override reports 7.10.2.
	code, body, err := c.do(ctx, http.MethodGet, "/", nil)
	if err != nil || code != 200 {
		t.Fatalf("GET / = %d %s %v", code, body, err)
	}
	var root struct {
		Version struct{ Number string } `json:"version"`
	}
	if err := json.Unmarshal(body, &root); err != nil || root.Version.Number != "7.10.2" {
		t.Errorf("GET / version = %q (%v), want 7.10.2 (compatibility override)", root.Version.Number, err)
	}
	// Wrong password: 401.
	bad := *c
	bad.password = "wrong-password"
	if code, _, err := bad.do(ctx, http.MethodGet, "/", nil); err != nil || code != 401 {
		t.Errorf("wrong password: %d %v, want 401", code, err)
	}
	// The real OpenSearch version behind it.
	body, err = c.ok(ctx, http.MethodGet, "/_nodes/_local", nil)
	if err != nil || !strings.Contains(string(body), `"version":"2.11.1"`) {
		t.Errorf("_nodes: %v %.300s", err, body)
	}

	if err := l.Fault(ctx, "cluster-red"); err != nil {
		t.Fatal(err)
	}
	if h, _ := c.health(ctx, ""); h.Status != "red" {
		t.Fatalf("after cluster-red fault: %+v", h)
	}
	if err := l.Heal(ctx, "cluster-red"); err != nil {
		t.Fatal(err)
	}
	if h, _ := c.health(ctx, ""); h.Status == "red" {
		t.Fatalf("after heal: %+v", h)
	}

	if err := l.Fault(ctx, "allocation-primaries"); err != nil {
		t.Fatal(err)
	}
	body, err = c.ok(ctx, http.MethodGet, "/_cluster/settings", nil)
	if err != nil || !strings.Contains(string(body), `"enable":"primaries"`) {
		t.Fatalf("settings after fault: %s %v", body, err)
	}
	if st, err := Open(l.Dir()); err != nil || len(st.st.Faults) != 1 {
		t.Errorf("lab.json faults = %v %v", st, err)
	}
	if err := l.Heal(ctx, "allocation-primaries"); err != nil {
		t.Fatal(err)
	}
	body, _ = c.ok(ctx, http.MethodGet, "/_cluster/settings", nil)
	if strings.Contains(string(body), "primaries") {
		t.Fatalf("settings after heal: %s", body)
	}
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status:\n%s", st)
	if st.Versions["siem-indexer"] != "4.9.0-1" || st.Cluster == nil || len(st.Faults) != 0 {
		t.Errorf("status = %+v", st)
	}
}

func assertDown(ctx context.Context, t *testing.T, l *Lab) {
	t.Helper()
	sd := l.systemd()
	pids := sd.Procs()
	if len(pids) == 0 {
		t.Fatal("no processes in the lab cgroups before down")
	}
	t.Logf("before down: %d processes, %d MiB RSS", len(pids), l.MemoryRSS()>>20)
	t0 := time.Now()
	if err := l.Down(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("down took %v", time.Since(t0))
	for _, pid := range append(pids, l.st.SystemdPID) {
		if data, err := os.ReadFile("/proc/" + itoa(pid) + "/stat"); err == nil && !isZombie(data) {
			t.Errorf("pid %d still alive after down", pid)
		}
	}
	for _, d := range sd.CgroupDirs() {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left after down", d)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), l.Dir()) {
		t.Errorf("mount under %s left after down", l.Dir())
	}
	if _, err := os.Stat(l.Dir() + "/lab.json"); err == nil {
		t.Error("lab.json left after down")
	}
	if err := DownDir(ctx, l.Dir()); err != nil {
		t.Errorf("second down: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// shifted returns offset moved by $SIEMCTL_E2E_PORT_SHIFT.
func shifted(t *testing.T, offset int) int {
	t.Helper()
	n, err := PortShift()
	if err != nil {
		t.Fatal(err)
	}
	return offset + n
}

// upTest brings up an in-process lab without the emulators in a fresh temp dir at offset (moved by
// $SIEMCTL_E2E_PORT_SHIFT), logging to stderr at level. It skips without root and downs the lab when
// the test ends (Down is idempotent, so a test may down it itself first).
func upTest(ctx context.Context, t *testing.T, offset int, level slog.Level) *Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	if err := OpenParents(base); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	l, err := Up(ctx, Options{Dir: filepath.Join(base, "lab"), PortOffset: shifted(t, offset), Logger: log, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Down(context.Background()) })
	return l
}

// upgradeIndexer is the indexer's package upgrade as an operator does it: stop the unit, install
// siem-indexer 4.10.0-1 (OpenSearch 2.11.1 -> 2.19.3 on the same data), start it and wait for it.
func upgradeIndexer(ctx context.Context, t *testing.T, l *Lab) {
	t.Helper()
	if err := l.stopUnit(ctx, "siem-indexer.service"); err != nil {
		t.Fatal(err)
	}
	if err := l.apt().Install(ctx, "siem-indexer=4.10.0-1"); err != nil {
		t.Fatal(err)
	}
	if err := l.startIndexer(ctx); err != nil {
		t.Fatal(err)
	}
}
