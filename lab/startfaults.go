package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startFaultKinds are the faults that keep the indexer from starting
// (issue 23): each stops the indexer and leaves the cause in place, so
// that the next start fails as it would on a real host; heal removes the
// cause and starts the indexer.
func startFaultKinds() []FaultKind {
	return []FaultKind{
		{"port-held", "a foreign process (sleep, holding a listening socket) on the indexer's HTTP port, the indexer stopped: its start fails with Address already in use; heal stops that process by its recorded PID and starts the indexer", false},
		{"data-dir-unwritable", "the indexer's data directory and everything in it owned by root, the indexer stopped: its start fails with AccessDeniedException; heal gives them back to uid 65534 and starts it", false},
		{"heap-too-large", "jvm.options.d/siemlab-heap.options sets -Xms/-Xmx to twice the host's memory, the indexer stopped: the JVM cannot commit its heap; heal removes the file and starts it", false},
		{"heap-order", "jvm.options.d/siemlab-heap.options sets -Xms1g above -Xmx512m, the indexer stopped: the JVM refuses its options; heal removes the file and starts it", false},
		{"disk-full", "a filled 4 MiB tmpfs mounted over the indexer's data directory inside the lab's mount namespace, the indexer stopped: No space left on device; heal unmounts it and starts the indexer", false},
		{"start-timeout", "a drop-in (ExecStartPre sleeps 15s, TimeoutStartSec=3s) on the indexer, stopped: systemd's start times out; heal removes it, reloads systemd and starts the indexer", false},
	}
}

func isStartFault(kind string) bool {
	return slices.ContainsFunc(startFaultKinds(), func(k FaultKind) bool { return k.Name == kind })
}

// HeapOptionsFile is the file the heap faults write (relative to the root).
func (p Profile) HeapOptionsFile() string {
	return filepath.Join(p.IndexerConf(), "jvm.options.d", "siemlab-heap.options")
}

// StartTimeoutDropIn is the start-timeout fault's drop-in (relative to the root).
func (p Profile) StartTimeoutDropIn() string {
	return filepath.Join("etc/systemd/system", p.IndexerUnit()+".d", "siemlab-start-timeout.conf")
}

func (l *Lab) startFault(ctx context.Context, kind string, on bool) error {
	ix := l.prof.IndexerUnit()
	if on || !l.indexerAnswers(ctx) {
		// healing, an indexer that does not answer is the fault's JVM, still
		// coming up to die of it (a loaded host): stopped, so the start below is
		// a new one, not a wait on the doomed one
		if err := l.stopUnit(ctx, ix); err != nil {
			return err
		}
	}
	var err error
	switch kind {
	case "port-held":
		err = l.portHeld(on)
	case "data-dir-unwritable":
		uid := IndexerUID
		if on {
			uid = 0
		}
		err = chownTree(filepath.Join(l.st.Root, l.prof.IndexerData()), uid)
	case "heap-too-large", "heap-order":
		err = l.heapOptions(kind, on)
	case "disk-full":
		err = l.diskFull(ctx, on)
	case "start-timeout":
		err = l.startTimeout(ctx, on)
	}
	if err != nil || on {
		return err
	}
	_ = l.withUnits(ctx, func(c unitConn) error { return c.ResetFailedUnitContext(ctx, ix) })
	return l.startIndexer(ctx)
}

// portHeld starts a process that holds a listening socket on the
// indexer's HTTP port (sleep, given the socket as fd 3), recorded by PID,
// or stops the recorded one.
func (l *Lab) portHeld(on bool) error {
	if !on {
		pid := l.st.FaultPIDs["port-held"]
		delete(l.st.FaultPIDs, "port-held")
		if pid <= 0 {
			return nil
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.HasPrefix(string(cmd), "sleep\x00") {
			return nil // gone (the test stopped it, as the fix says)
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop the port holder %d: %w", pid, err)
		}
		for i := 0; i < 50; i++ {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("port holder %d still running", pid)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.st.Ports.Indexer)))
	if err != nil {
		return fmt.Errorf("listen on the indexer's port: %w", err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command("sleep", "infinity")
	cmd.ExtraFiles = []*os.File{f}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the port holder: %w", err)
	}
	if l.st.FaultPIDs == nil {
		l.st.FaultPIDs = map[string]int{}
	}
	l.st.FaultPIDs["port-held"] = cmd.Process.Pid
	return cmd.Process.Release()
}

// chownTree gives dir and everything in it to uid:uid (no symlink is
// followed).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

func (l *Lab) heapOptions(kind string, on bool) error {
	p := filepath.Join(l.st.Root, l.prof.HeapOptionsFile())
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	body := "# siemlab fault heap-order\n-Xms1g\n-Xmx512m\n"
	if kind == "heap-too-large" {
		mem, err := memTotalMiB()
		if err != nil {
			return err
		}
		body = fmt.Sprintf("# siemlab fault heap-too-large: twice the host's memory\n-Xms%dm\n-Xmx%dm\n", 2*mem, 2*mem)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(body), 0o644)
}

func memTotalMiB() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			return kb >> 10, err
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

// diskFull mounts a 4 MiB tmpfs over the indexer's data directory in the
// lab's mount namespace (where the units run) and fills it, or unmounts it.
func (l *Lab) diskFull(ctx context.Context, on bool) error {
	data := filepath.Join(l.st.Root, l.prof.IndexerData())
	ns := func(args ...string) error {
		full := append([]string{"-t", strconv.Itoa(l.st.SystemdPID), "-m", "--"}, args...)
		out, err := exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("nsenter %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if !on {
		err := ns("umount", data)
		if err != nil && strings.Contains(err.Error(), "not mounted") {
			return nil
		}
		return err
	}
	opts := fmt.Sprintf("size=4m,mode=0755,uid=%d,gid=%d", IndexerUID, IndexerUID)
	if err := ns("mount", "-t", "tmpfs", "-o", opts, "siemlab-disk-full", data); err != nil {
		return err
	}
	// fill it through the namespace's root
	filler := filepath.Join(fmt.Sprintf("/proc/%d/root", l.st.SystemdPID), data, "siemlab-filler")
	f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

func (l *Lab) startTimeout(ctx context.Context, on bool) error {
	p := filepath.Join(l.st.Root, l.prof.StartTimeoutDropIn())
	if on {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("# siemlab fault start-timeout\n[Service]\nExecStartPre=/bin/sleep 15\nTimeoutStartSec=3\n"), 0o644); err != nil {
			return err
		}
	} else if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return l.withUnits(ctx, func(c unitConn) error { return c.ReloadContext(ctx) })
}

// indexerAnswers: the indexer answers GET / with 200 now (a fix already healed it).
func (l *Lab) indexerAnswers(ctx context.Context) bool {
	c, err := l.indexer()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	code, _, err := c.do(ctx, http.MethodGet, "/", nil)
	return err == nil && code == http.StatusOK
}
