package units_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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

// skipUnlessPrivateSystemd skips t unless a private manager can run here (root, the systemd
// binary, a named systemd or unified cgroup hierarchy, unshare). With SIEMCTL_IT_REQUIRED=1 it
// fails instead.
func skipUnlessPrivateSystemd(t testing.TB) {
	t.Helper()
	const systemd = "/lib/systemd/systemd"
	reason := ""
	switch {
	case os.Geteuid() != 0:
		reason = "needs root to create cgroups and a mount namespace"
	case !executable(systemd):
		reason = systemd + " not found"
	case !dirExists("/sys/fs/cgroup/systemd") && !dirExists("/sys/fs/cgroup/unified"):
		reason = "no /sys/fs/cgroup/systemd or /sys/fs/cgroup/unified hierarchy"
	}
	if _, err := exec.LookPath("unshare"); reason == "" && err != nil {
		reason = "unshare not found"
	}
	if reason == "" {
		return
	}
	if os.Getenv("SIEMCTL_IT_REQUIRED") == "1" {
		t.Fatalf("private systemd required (SIEMCTL_IT_REQUIRED=1) but %s", reason)
	}
	t.Skipf("skipping private-systemd test: %s (set SIEMCTL_IT_REQUIRED=1 to make this fatal)", reason)
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// startManager starts a private manager and stops it when the test ends (its files are kept
// when the test failed). It skips (or fails, see skipUnlessPrivateSystemd) when the host cannot
// run one.
func startManager(t *testing.T) *private {
	t.Helper()
	skipUnlessPrivateSystemd(t)
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
