package units

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/process"
)

// Processes returns the PIDs in the unit's control group (all its
// sub-cgroups included), sorted. A stopped unit has no control group and no
// processes. Use it to verify that a stop left nothing behind.
func (m *Manager) Processes(ctx context.Context, unit string) ([]int, error) {
	unit = Normalize(unit)
	st, err := m.status(ctx, unit)
	if err != nil {
		return nil, err
	}
	if st.ControlGroup == "" {
		return nil, nil
	}
	return cgroupPIDs(m.opts.CgroupRoots, st.ControlGroup)
}

// cgroupPIDs collects the PIDs under cgroup path cg in every hierarchy root
// that has it (hybrid hosts have it in both the unified and the named
// systemd tree).
func cgroupPIDs(roots []string, cg string) ([]int, error) {
	if !strings.HasPrefix(cg, "/") || strings.Contains(cg, "..") {
		return nil, fmt.Errorf("processes: odd control group %q", cg)
	}
	seen := map[int]bool{}
	for _, root := range roots {
		dir := filepath.Join(root, filepath.FromSlash(cg))
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			continue
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // the cgroup went away while we walked it
				}
				return err
			}
			if d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
					return nil
				}
				return err
			}
			for _, pid := range parsePIDs(b) {
				seen[pid] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("processes in %s: %w", cg, err)
		}
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out, nil
}

func parsePIDs(b []byte) []int {
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// LastLogLines returns up to n of the unit's last log lines. A unit whose
// stdout goes to a file (StandardOutput=append:/path, as lab units do) is
// read from that file; otherwise journald is asked with
// `journalctl -u UNIT -n N --no-pager -o cat`.
func LastLogLines(ctx context.Context, st UnitStatus, n int) ([]string, error) {
	return lastLogLines(ctx, st, n, "journalctl")
}

func lastLogLines(ctx context.Context, st UnitStatus, n int, journalctl string) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	if path := st.LogFile(); path != "" {
		lines, err := tailFile(path, n)
		if err != nil {
			return nil, fmt.Errorf("log of %s: %w", st.Name, err)
		}
		return lines, nil
	}
	if st.Name == "" {
		return nil, errors.New("log: no unit name")
	}
	// -n bounds the lines, not their length: the output is kept up to a cap.
	run := process.ExecRunner{WholeStdout: true}
	out, errOut, code, err := run.Run(ctx, nil, journalctl, "-u", st.Name, "-n", strconv.Itoa(n), "--no-pager", "-o", "cat")
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		msg := strings.TrimSpace(string(errOut))
		if msg != "" {
			return nil, fmt.Errorf("journalctl -u %s: %w: %s", st.Name, err, lastLine(msg))
		}
		return nil, fmt.Errorf("journalctl -u %s: %w", st.Name, err)
	}
	var lines []string
	for _, l := range splitLines(out) {
		if l == "-- No entries --" {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// tailFile returns the last n lines of a file, reading at most the last
// 1 MiB of it.
func tailFile(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const maxRead = 1 << 20
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := info.Size() - maxRead
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return nil, err
	}
	if off > 0 {
		// Drop the partial first line.
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	lines := splitLines(b)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

func splitLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		out = append(out, strings.TrimRight(sc.Text(), "\r"))
	}
	return out
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// fillOutputPaths completes a file-mode StandardOutput/StandardError with its
// path. systemd's D-Bus API reports only the mode ("append"), so the path is
// read from the unit file and its drop-ins (the last assignment wins, as in
// systemd). Unreadable files leave the mode as it is.
func fillOutputPaths(st *UnitStatus) {
	needOut := isFileMode(st.StandardOutput)
	needErr := isFileMode(st.StandardError)
	if !needOut && !needErr {
		return
	}
	var files []string
	if st.FragmentPath != "" {
		files = append(files, st.FragmentPath)
	}
	files = append(files, st.DropInPaths...)
	var out, errv string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		o, e := outputSettings(b)
		if o != "" {
			out = o
		}
		if e != "" {
			errv = e
		}
	}
	if needOut && fileTarget(out) != "" {
		st.StandardOutput = out
	}
	if needErr && fileTarget(errv) != "" {
		st.StandardError = errv
	}
}

func isFileMode(v string) bool {
	switch v {
	case "file", "append", "truncate":
		return true
	}
	return false
}

// outputSettings returns the last StandardOutput= and StandardError= values
// of the [Service] section of a unit file.
func outputSettings(b []byte) (stdout, stderr string) {
	section := ""
	for _, line := range splitLines(b) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = strings.Trim(line, "[]")
			continue
		}
		if section != "Service" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "StandardOutput":
			stdout = strings.TrimSpace(v)
		case "StandardError":
			stderr = strings.TrimSpace(v)
		}
	}
	return stdout, stderr
}

// TailFile returns the last n lines of a log file (read from its last MiB).
func TailFile(path string, n int) ([]string, error) { return tailFile(path, n) }
