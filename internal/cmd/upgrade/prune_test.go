package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rundata"
)

// writeRun records a run with a final status, as the engine journals it.
func writeRun(t *testing.T, stateDir, id, status string) {
	t.Helper()
	j := `{"seq":1,"time":"2026-11-20T10:00:00Z","type":"run-start","command":"siemctl upgrade apply --to 4.10.0"}` + "\n" +
		`{"seq":2,"time":"2026-11-20T10:05:00Z","type":"run-end","status":"` + status + `"}` + "\n"
	clitest.WriteFile(t, filepath.Join(stateDir, "runs", id, "journal.jsonl"), j, 0o644)
	clitest.WriteFile(t, filepath.Join(stateDir, "runs", "latest"), id+"\n", 0o644)
}

type pruneFixture struct {
	root, data, state string
	opts              *PruneOptions
	out, errOut       interface{ String() string }
}

func newPruneFixture(t *testing.T, dryRun bool) *pruneFixture {
	t.Helper()
	root := t.TempDir()
	fx := &pruneFixture{root: root, data: filepath.Join(root, "var/lib/siem-indexer"), state: filepath.Join(root, "state")}
	clitest.WriteFile(t, filepath.Join(fx.data, "nodes/0/_state/global-3.st"), "live data", 0o644)
	ios, _, out, errOut := output.Test()
	fx.out, fx.errOut = out, errOut
	cfg := &config.Config{StateDir: fx.state}
	cfg.Indexer.DataDir = fx.data
	locked := 0
	fx.opts = &PruneOptions{IO: ios, Config: func() (*config.Config, error) { return cfg, nil },
		Change: cli.Change{IO: ios, Yes: true, DryRun: dryRun, Lock: func(context.Context) (func(), error) {
			locked++
			return func() {}, nil
		}}}
	return fx
}

func TestPruneRemovesOnlyExactRealAsideDirs(t *testing.T) {
	fx := newPruneFixture(t, false)
	old, latest := "20261101T100000Z-0a1b2c", "20261120T100000Z-3d4e5f"
	// An old run rolled back long ago; its set-aside data goes.
	gone := rundata.AsidePath(fx.data, old)
	clitest.WriteFile(t, filepath.Join(gone, "nodes/0/indices/x/0/index/_0.cfs"), strings.Repeat("s", 5000), 0o644)
	// A link inside it is removed, never followed.
	victim := filepath.Join(fx.root, "victim")
	clitest.WriteFile(t, filepath.Join(victim, "precious"), "keep me", 0o644)
	if err := os.Symlink(victim, filepath.Join(gone, "nodes/0/link")); err != nil {
		t.Fatal(err)
	}
	// The latest run failed during its rollback: its directory stays.
	writeRun(t, fx.state, latest, "rollback-failed")
	kept := rundata.AsidePath(fx.data, latest)
	clitest.WriteFile(t, filepath.Join(kept, "nodes/0/x"), "new version's data", 0o644)
	// A symlink with the exact name: neither followed nor removed.
	linked := rundata.AsidePath(fx.data, "20261102T100000Z-aaaaaa")
	target := filepath.Join(fx.root, "elsewhere")
	clitest.WriteFile(t, filepath.Join(target, "data"), "not ours", 0o644)
	if err := os.Symlink(target, linked); err != nil {
		t.Fatal(err)
	}
	// Wrong names: siemctl's own temporary names and an upper-case run id.
	wrong1, wrong2 := fx.data+".siemctl-restore", fx.data+".siemctl-20261103T100000Z-bbbbbb"
	clitest.WriteFile(t, filepath.Join(wrong1, "f"), "x", 0o644)
	clitest.WriteFile(t, filepath.Join(wrong2, "f"), "x", 0o644)

	fx.opts.Output = "json"
	if err := runPrune(context.Background(), fx.opts); err != nil {
		t.Fatal(err)
	}
	var res PruneResult
	if err := json.Unmarshal([]byte(fx.out.String()), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 1 || res.Removed[0].Path != gone || res.Removed[0].RunID != old || res.Freed != 5000 {
		t.Fatalf("removed %+v (freed %d)", res.Removed, res.Freed)
	}
	if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there: %v", gone, err)
	}
	if b, err := os.ReadFile(filepath.Join(victim, "precious")); err != nil || string(b) != "keep me" {
		t.Fatalf("a link inside was followed: %q %v", b, err)
	}
	reasons := map[string]string{}
	for _, k := range res.Kept {
		reasons[k.Path] = k.Refused
	}
	for path, want := range map[string]string{kept: "latest run " + latest + " (rollback-failed)", linked: "a symlink", wrong1: "not named", wrong2: "not named"} {
		if !strings.Contains(reasons[path], want) {
			t.Errorf("%s: kept for %q, want %q", path, reasons[path], want)
		}
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s was removed", path)
		}
	}
	if b, err := os.ReadFile(filepath.Join(target, "data")); err != nil || string(b) != "not ours" {
		t.Fatalf("the linked directory's target was touched: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(fx.data, "nodes/0/_state/global-3.st")); string(b) != "live data" {
		t.Fatal("the live data directory was touched")
	}
}

// Once the latest run has ended (here: rolled back), its directory may go;
// a dry run lists it and removes nothing.
func TestPruneDryRunAndRolledBackLatest(t *testing.T) {
	fx := newPruneFixture(t, true)
	latest := "20261120T100000Z-3d4e5f"
	writeRun(t, fx.state, latest, "rolled-back")
	aside := rundata.AsidePath(fx.data, latest)
	clitest.WriteFile(t, filepath.Join(aside, "f"), "1234", 0o644)
	if err := runPrune(context.Background(), fx.opts); err != nil {
		t.Fatal(err)
	}
	if got := fx.out.String(); got != "rm -r "+aside+" (4 B, run "+latest+")\n" {
		t.Fatalf("dry run printed %q", got)
	}
	if _, err := os.Stat(aside); err != nil {
		t.Fatal("a dry run removed the directory")
	}
	fx.opts.Change.DryRun = false
	if err := runPrune(context.Background(), fx.opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(aside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rolled-back run's directory is still there: %v", err)
	}
}
