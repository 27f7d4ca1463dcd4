// Package unitstest starts a real, private `systemd --user` manager for tests
// of package units: its own cgroup (lab-<id> under /sys/fs/cgroup/systemd and
// /sys/fs/cgroup/unified), its own mount namespace with a tmpfs on
// /run/systemd, XDG directories in a temp dir, and units loaded from
// $XDG_RUNTIME_DIR/systemd/user. Cleanup SIGKILLs the manager by PID, sweeps
// every process left in its cgroups and removes them (a fast teardown: no
// graceful stop of a manager the test is done with).
//
// Fake is the in-memory service manager for tests of the callers of package
// units (internal/ops/services, internal/steps, internal/cmd/services).
package unitstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// SystemdBinary is the manager binary the helper runs.
const SystemdBinary = "/lib/systemd/systemd"

// CgroupHierarchies are where the manager gets its own lab-<id> cgroup.
var cgroupHierarchies = []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"}

// Private is a running private manager.
type Private struct {
	Dir     string // temp dir: rt/, config/, data/, log/
	ID      string // cgroup id (lab-<ID>)
	PID     int    // the manager's PID
	Address string // D-Bus address of its private socket
	UnitDir string // $XDG_RUNTIME_DIR/systemd/user: write units here, then DaemonReload
	LogDir  string // a directory for units' StandardOutput=append: files
	exited  chan struct{}
}

// Skip skips t unless the helper can run here (root, systemd binary, a
// writable named systemd cgroup hierarchy). With SIEMCTL_IT_REQUIRED=1 it
// fails instead.
func Skip(t testing.TB) {
	t.Helper()
	reason := ""
	switch {
	case os.Geteuid() != 0:
		reason = "needs root to create cgroups and a mount namespace"
	case !executable(SystemdBinary):
		reason = SystemdBinary + " not found"
	case !dirExists(cgroupHierarchies[0]) && !dirExists(cgroupHierarchies[1]):
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

const managerScript = `id=$1; shift
for h in "$@"; do
  [ -d "$h" ] || continue
  mkdir -p "$h/lab-$id" && echo $$ > "$h/lab-$id/cgroup.procs" || exit 97
done
exec unshare --mount --propagation private sh -c 'mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd && mkdir -p /run/systemd/system && exec ` + SystemdBinary + ` --user'
`

// StartManager starts a private manager and registers its cleanup with t.
// It skips (or fails, see Skip) when the host cannot run one.
func StartManager(t testing.TB) *Private {
	t.Helper()
	Skip(t)
	// A short path: the socket path must fit in sun_path (108 bytes).
	dir, err := os.MkdirTemp("", "unitsit-")
	if err != nil {
		t.Fatal(err)
	}
	p := &Private{Dir: dir, ID: randomID(), exited: make(chan struct{})}
	rt := filepath.Join(dir, "rt")
	p.UnitDir = filepath.Join(rt, "systemd", "user")
	p.LogDir = filepath.Join(dir, "log")
	p.Address = "unix:path=" + filepath.Join(rt, "systemd", "private")
	for _, d := range []string{rt, p.UnitDir, filepath.Join(dir, "config"), filepath.Join(dir, "data"), p.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("/bin/sh", append([]string{"-c", managerScript, "unitstest", p.ID}, cgroupHierarchies...)...)
	cmd.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + dir,
		"LANG=C.UTF-8",
		"XDG_RUNTIME_DIR=" + rt,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("start systemd --user: %v", err)
	}
	p.PID = cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("unitstest cleanup: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("unitstest: manager files kept in %s", dir)
			_ = os.RemoveAll(rt)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.waitReady(ctx); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "manager.log"))
		t.Fatalf("private systemd not ready: %v\nmanager log:\n%s", err, log)
	}
	return p
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "ut" + hex.EncodeToString(b)
}

func (p *Private) waitReady(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sock := strings.TrimPrefix(p.Address, "unix:path=")
	last := errors.New("socket not there yet")
	for {
		select {
		case <-p.exited:
			return errors.New("manager exited")
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
		if _, err := os.Stat(sock); err != nil {
			last = err
			continue
		}
		state, err := p.systemState(ctx)
		if err != nil {
			last = err
			continue
		}
		if state == "running" {
			return nil
		}
		last = fmt.Errorf("SystemState %s", state)
	}
}

func (p *Private) systemState(ctx context.Context) (string, error) {
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) {
		c, err := godbus.Dial(p.Address, godbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if err := c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	s, err := conn.GetManagerProperty("SystemState")
	return strings.Trim(s, `"`), err
}

// WriteUnit writes a unit file into the manager's unit directory. Call
// units.Manager.DaemonReload afterwards.
func (p *Private) WriteUnit(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(p.UnitDir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// CgroupDirs are the manager's lab-<id> cgroup directories.
func (p *Private) CgroupDirs() []string {
	var out []string
	for _, h := range cgroupHierarchies {
		out = append(out, filepath.Join(h, "lab-"+p.ID))
	}
	return out
}

// Stop tears the manager down: SIGKILL by PID, SIGKILL every process left in
// its cgroups, then remove the cgroup directories deepest first. It is
// idempotent.
func (p *Private) Stop() error {
	if p.PID > 0 {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			return fmt.Errorf("manager %d did not die", p.PID)
		}
	}
	var errs []error
	deadline := time.Now().Add(5 * time.Second)
	for _, cg := range p.CgroupDirs() {
		if !dirExists(cg) {
			continue
		}
		for {
			pids := sweep(cg)
			err := removeTree(cg)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove %s (pids %v): %w", cg, pids, err))
				break
			}
			time.Sleep(10 * time.Millisecond) // killed processes leave their cgroup asynchronously
		}
	}
	return errors.Join(errs...)
}

// sweep SIGKILLs every PID listed anywhere under cg and returns them.
func sweep(cg string) []int {
	var pids []int
	_ = filepath.WalkDir(cg, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeTree rmdirs a cgroup tree deepest first (cgroup dirs cannot be
// removed with their pseudo-files; rmdir is the only way).
func removeTree(cg string) error {
	var dirs []string
	_ = filepath.WalkDir(cg, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	var last error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			last = err
		}
	}
	return last
}
