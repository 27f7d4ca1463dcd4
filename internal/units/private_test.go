package units_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
	"github.com/siemctl/siemctl/lab"
)

// private is a real private `systemd --user` manager (the lab's, lab.StartSystemd: its own
// lab-<ID> cgroups, its own mount namespace with a tmpfs on /run/systemd, XDG directories in a
// temp dir) for the integration test of this package.
type private struct {
	*lab.Systemd
	UnitDir string // $XDG_RUNTIME_DIR/systemd/user: write units here, then DaemonReload
	LogDir  string // a directory for units' StandardOutput=append: files
}

// startManager starts a private manager and stops it when the test ends (its files are kept
// when the test failed). It skips (or fails, see testenv.PrivateSystemd) when the host cannot run
// one.
func startManager(t *testing.T) *private {
	t.Helper()
	testenv.PrivateSystemd(t)
	// A short path: the socket path must fit in sun_path (108 bytes).
	dir, err := os.MkdirTemp("", "unitsit-")
	if err != nil {
		t.Fatal(err)
	}
	p := &private{UnitDir: filepath.Join(dir, "rt", "systemd", "user"), LogDir: filepath.Join(dir, "log")}
	if err := os.MkdirAll(p.UnitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	logFile := filepath.Join(dir, "manager.log")
	p.Systemd, err = lab.StartSystemd(ctx, lab.SystemdOptions{Dir: dir, ID: "ut" + lab.LabID(dir), UnitPath: []string{p.UnitDir}, LogFile: logFile, Timeout: 20 * time.Second})
	if err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("private systemd: %v\nmanager log:\n%s", err, log)
	}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("private systemd cleanup: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("private systemd: manager files kept in %s", dir)
			_ = os.RemoveAll(p.RuntimeDir())
		}
	})
	return p
}

// WriteUnit writes a unit file into the manager's unit directory. Call
// units.Manager.DaemonReload afterwards.
func (p *private) WriteUnit(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(p.UnitDir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
