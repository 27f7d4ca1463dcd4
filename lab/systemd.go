package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// CgroupHierarchies are the cgroup trees a lab manager gets its own lab-<id> directory in
// (hybrid hosts: the named systemd v1 tree and the unified v2 tree).
var defaultCgroupHierarchies = []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"}

// Systemd is a private `systemd --user` manager in its own mount namespace and cgroups, made to look
// like the system manager inside its namespace (/run/systemd/system exists, /run/systemd/private
// points at its socket, /etc/systemd/system is bind-mounted from the lab).
type Systemd struct {
	Dir         string   // lab directory: rt/, config/, data/ and the log live here
	ID          string   // cgroup id: the manager's cgroups are lab-<ID>
	PID         int      // the manager's PID
	Hierarchies []string // cgroup hierarchies (default: systemd and unified)
}

// SystemdOptions controls StartSystemd.
type SystemdOptions struct {
	Dir         string   // lab directory (absolute)
	ID          string   // cgroup id
	UnitPath    []string // directories put first on SYSTEMD_UNIT_PATH (defaults kept after them)
	SystemDir   string   // bind-mounted on /etc/systemd/system inside the namespace ("" = none)
	Env         []string // extra environment of the manager (inherited by services)
	Hierarchies []string // default: systemd and unified
	LogFile     string   // manager stdout/stderr (default Dir/log/systemd.log)
	Poll        time.Duration
	Timeout     time.Duration // readiness timeout, default 15s
}

// RuntimeDir is the manager's XDG_RUNTIME_DIR.
func (s *Systemd) RuntimeDir() string { return filepath.Join(s.Dir, "rt") }

// Address is the D-Bus address of the manager's private socket.
func (s *Systemd) Address() string {
	return "unix:path=" + filepath.Join(s.RuntimeDir(), "systemd", "private")
}

// CgroupDirs returns the lab's cgroup directories (existing or not).
func (s *Systemd) CgroupDirs() []string {
	var out []string
	for _, h := range s.hierarchies() {
		out = append(out, filepath.Join(h, "lab-"+s.ID))
	}
	return out
}

func (s *Systemd) hierarchies() []string {
	if len(s.Hierarchies) > 0 {
		return s.Hierarchies
	}
	return defaultCgroupHierarchies
}

const managerScript = `set -e
id=$1; shift
for h in "$@"; do
  [ -d "$h" ] || continue
  mkdir -p "$h/lab-$id"
  echo $$ > "$h/lab-$id/cgroup.procs"
done
exec unshare --mount --propagation private sh -c '
  set -e
  mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd && mkdir -p /run/systemd/system
  ln -s "$XDG_RUNTIME_DIR/systemd/private" /run/systemd/private
  if [ -n "$LAB_SYSTEM_DIR" ] && [ -d /etc/systemd/system ]; then mount --bind "$LAB_SYSTEM_DIR" /etc/systemd/system; fi
  unset LAB_SYSTEM_DIR
  exec /lib/systemd/systemd --user'
`

// StartSystemd starts the manager and waits until its SystemState is running.
func StartSystemd(ctx context.Context, opts SystemdOptions) (*Systemd, error) {
	if !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("systemd: lab dir %q must be absolute", opts.Dir)
	}
	if opts.ID == "" {
		return nil, errors.New("systemd: empty cgroup id")
	}
	s := &Systemd{Dir: opts.Dir, ID: opts.ID, Hierarchies: opts.Hierarchies}
	rt := s.RuntimeDir()
	for _, d := range []string{rt, filepath.Join(opts.Dir, "config"), filepath.Join(opts.Dir, "data"), filepath.Join(opts.Dir, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("systemd: %w", err)
		}
	}
	if err := os.Chmod(rt, 0o700); err != nil {
		return nil, fmt.Errorf("systemd: %w", err)
	}
	if _, err := os.Stat(filepath.Join(rt, "systemd", "private")); err == nil {
		return nil, fmt.Errorf("systemd: %s already has a manager socket (lab already up? run down first)", rt)
	}
	logFile := opts.LogFile
	if logFile == "" {
		logFile = filepath.Join(opts.Dir, "log", "systemd.log")
	}
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("systemd: %w", err)
	}
	defer lf.Close()
	unitPath := strings.Join(opts.UnitPath, ":") + ":"
	args := append([]string{"-c", managerScript, "lab-manager", opts.ID}, s.hierarchies()...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append([]string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + opts.Dir,
		"LANG=C.UTF-8",
		"XDG_RUNTIME_DIR=" + rt,
		"XDG_CONFIG_HOME=" + filepath.Join(opts.Dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(opts.Dir, "data"),
		"SYSTEMD_UNIT_PATH=" + unitPath,
		"LAB_SYSTEM_DIR=" + opts.SystemDir,
	}, opts.Env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("systemd: start manager: %w", err)
	}
	s.PID = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps the manager when it ends in this process's lifetime
	if err := s.waitReady(ctx, opts, exited); err != nil {
		_ = s.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("systemd: manager not ready (see %s): %w", logFile, err)
	}
	return s, nil
}

func (s *Systemd) waitReady(ctx context.Context, opts SystemdOptions, exited <-chan error) error {
	poll, timeout := opts.Poll, opts.Timeout
	if poll == 0 {
		poll = 20 * time.Millisecond
	}
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(poll)
	defer t.Stop()
	var last error
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("manager exited: %v", err)
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-t.C:
		}
		if _, err := os.Stat(filepath.Join(s.RuntimeDir(), "systemd", "private")); err != nil {
			last = err
			continue
		}
		conn, err := s.Connect(ctx)
		if err != nil {
			last = err
			continue
		}
		state, err := conn.GetManagerProperty("SystemState")
		conn.Close()
		if err != nil {
			last = err
			continue
		}
		if strings.Trim(state, `"`) == "running" {
			return nil
		}
		last = fmt.Errorf("SystemState %s", state)
	}
}

// Connect opens a peer-to-peer D-Bus connection to the manager's private socket.
func (s *Systemd) Connect(ctx context.Context) (*sddbus.Conn, error) {
	return ConnectPrivate(ctx, s.Address())
}

// ConnectPrivate connects to a systemd private socket address (unix:path=…), without Hello().
func ConnectPrivate(ctx context.Context, addr string) (*sddbus.Conn, error) {
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) {
		c, err := godbus.Dial(addr, godbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if err := c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	return conn, nil
}

// Stop tears the manager down the fast way: ask it to exit, SIGKILL it, SIGKILL everything left in
// its cgroups, then remove the cgroup directories deepest first. It is idempotent.
func (s *Systemd) Stop(ctx context.Context) error {
	if s.PID > 0 && s.pidInLab(s.PID) {
		if c, err := godbus.Dial(s.Address(), godbus.WithContext(ctx)); err == nil {
			if c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}) == nil {
				// Exit is asynchronous; the SIGKILL below does not wait for it.
				_ = c.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").Call("org.freedesktop.systemd1.Manager.Exit", godbus.FlagNoReplyExpected).Err
			}
			c.Close()
		}
		_ = syscall.Kill(s.PID, syscall.SIGKILL)
	}
	return s.sweep(ctx)
}

// pidInLab reports whether pid is a live process inside this lab's cgroups (so a recycled PID
// from an old lab.json is never killed).
func (s *Systemd) pidInLab(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(data), "/lab-"+s.ID+"/") || strings.Contains(string(data), "/lab-"+s.ID+"\n")
}

// Procs returns the PIDs in the lab's cgroups (all hierarchies, all depths, deduplicated).
func (s *Systemd) Procs() []int {
	seen := map[int]bool{}
	var pids []int
	for _, dir := range s.CgroupDirs() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return nil
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && pid > 0 && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	sort.Ints(pids)
	return pids
}

func (s *Systemd) sweep(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := s.Procs()
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("systemd: processes %v still in lab-%s cgroups", pids, s.ID)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	var errs []error
	for _, dir := range s.CgroupDirs() {
		if err := removeCgroupTree(dir, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroupTree removes a cgroup directory tree, deepest first (cgroup dirs can only be rmdir'ed,
// and only when empty; a just-killed task may linger for a moment, hence the retries).
func removeCgroupTree(root string, deadline time.Time) error {
	for {
		var dirs []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("walk %s: %w", root, err)
		}
		sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
		var last error
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				last = fmt.Errorf("rmdir %s: %w", d, err)
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// UnitState is the state of one unit.
type UnitState struct {
	Name        string `json:"name"`
	LoadState   string `json:"load_state"`
	ActiveState string `json:"active_state"`
	SubState    string `json:"sub_state"`
	MainPID     int    `json:"main_pid"`
}

// UnitStatus reads a unit's state and main PID.
func UnitStatus(ctx context.Context, conn *sddbus.Conn, name string) (UnitState, error) {
	st := UnitState{Name: name}
	props, err := conn.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		return st, fmt.Errorf("unit %s: %w", name, err)
	}
	st.LoadState, _ = props["LoadState"].(string)
	st.ActiveState, _ = props["ActiveState"].(string)
	st.SubState, _ = props["SubState"].(string)
	if p, err := conn.GetServicePropertyContext(ctx, name, "MainPID"); err == nil {
		if v, ok := p.Value.Value().(uint32); ok {
			st.MainPID = int(v)
		}
	}
	return st, nil
}

// StartUnit resets a failed unit and starts it; it returns when the start job is done.
func StartUnit(ctx context.Context, conn *sddbus.Conn, name string) error {
	_ = conn.ResetFailedUnitContext(ctx, name)
	return unitJob(ctx, name, "start", func(ch chan<- string) (int, error) {
		return conn.StartUnitContext(ctx, name, "replace", ch)
	})
}

// StopUnit stops a unit and waits for the stop job.
func StopUnit(ctx context.Context, conn *sddbus.Conn, name string) error {
	return unitJob(ctx, name, "stop", func(ch chan<- string) (int, error) {
		return conn.StopUnitContext(ctx, name, "replace", ch)
	})
}

func unitJob(ctx context.Context, name, verb string, call func(chan<- string) (int, error)) error {
	ch := make(chan string, 1)
	if _, err := call(ch); err != nil {
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	select {
	case res := <-ch:
		if res != "done" {
			return fmt.Errorf("%s %s: job %s", verb, name, res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w", verb, name, ctx.Err())
	}
}

// unitConn is a connection to the lab's manager.
type unitConn = *sddbus.Conn
