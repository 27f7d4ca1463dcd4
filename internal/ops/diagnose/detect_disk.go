package diagnose

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// ---- full disk -----------------------------------------------------------------

func detectDiskFull(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("No space left on device", "no space left on device", "ENOSPC")
	if i < 0 {
		// a component slow to write its data has not said so yet: the filesystem
		// of its data directory with no space left says it already
		return ev.diskFullNow()
	}
	f := Finding{Evidence: []string{line}, at: i}
	dir := ev.dataDir()
	if m := regexp.MustCompile(`(/[^\s:,;"']+)`).FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[1], "/proc") {
		dir = m[1]
	}
	for dir != "" && dir != "/" {
		if _, err := os.Stat(ev.path(dir)); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	if dir == "" {
		f.Cause = ev.Component + " ran out of disk space"
		f.Fix = "free space on the filesystem of its data directory (df -h), then " + start(ev.Component)
		return f, true
	}
	total, free, err := ev.space(dir)
	if err != nil {
		f.Cause = fmt.Sprintf("%s ran out of disk space (%s)", ev.Component, dir)
		f.Fix = fmt.Sprintf("free space on the filesystem of %s (df -h %s), then %s", dir, dir, start(ev.Component))
		return f, true
	}
	ev.fullFinding(&f, dir, total, free)
	return f, true
}

// fullNow is less free space than a start needs (OpenSearch writes its
// node state first: a few KiB; 1 MiB leaves no doubt).
const fullNow = 1 << 20

// diskFullNow finds the data directory's filesystem with no space left
// (the indexer's; the cause before the component says so).
func (ev *Evidence) diskFullNow() (Finding, bool) {
	if ev.Component != "indexer" {
		return Finding{}, false
	}
	dir := ev.dataDir()
	if dir == "" || dir == "." {
		return Finding{}, false
	}
	total, free, err := ev.space(dir)
	if err != nil || total == 0 || free >= fullNow {
		return Finding{}, false
	}
	f := Finding{Kind: KindDiskFull, at: len(ev.Lines)}
	ev.fullFinding(&f, dir, total, free)
	return f, true
}

// space is the size and the space left (for unprivileged users, as df's
// Avail) of dir's filesystem.
func (ev *Evidence) space(dir string) (total, free uint64, err error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(ev.path(dir), &s); err != nil {
		return 0, 0, err
	}
	return s.Blocks * uint64(s.Bsize), s.Bavail * uint64(s.Bsize), nil
}

// fullFinding says how full dir's filesystem is, and the fix.
func (ev *Evidence) fullFinding(f *Finding, dir string, total, free uint64) {
	used := 100.0
	if total > 0 {
		used = 100 * float64(total-free) / float64(total)
	}
	mnt, fstype := ev.mountOf(dir)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s is on %s (%s): %.0f%% used, %s free of %s", dir, mnt, fstype, used, size(free), size(total)))
	f.Cause = fmt.Sprintf("the filesystem of %s (%s, mounted on %s) is full: %.0f%% used, %s free of %s", dir, fstype, mnt, used, size(free), size(total))
	if used < 99 {
		f.Cause = fmt.Sprintf("%s ran out of space on the filesystem of %s (%s, mounted on %s; now %.0f%% used, %s free of %s)", ev.Component, dir, fstype, mnt, used, size(free), size(total))
	}
	f.Fix = fmt.Sprintf("free space on %s (delete what does not belong there, old alert indices with `siemctl alerts cleanup --older-than 90d` once the indexer runs) or grow it; then %s", mnt, start(ev.Component))
}

// mountOf finds the mount point and type of dir in the services' mount
// table (/proc/<pid>/mountinfo when reading through a process's root).
func (ev *Evidence) mountOf(dir string) (string, string) {
	info := filepath.Join(ev.Host.ProcRoot, "self", "mountinfo")
	if r := ev.Host.Root; strings.HasSuffix(r, "/root") {
		info = strings.TrimSuffix(r, "/root") + "/mountinfo"
	}
	fh, err := os.Open(info)
	if err != nil {
		return "?", "?"
	}
	defer fh.Close()
	best, typ := "", "?"
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, pf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(pf) < 1 {
			continue
		}
		mp := unescapeMount(fields[4])
		if (dir == mp || strings.HasPrefix(dir+"/", strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, typ = mp, pf[0]
		}
	}
	if best == "" {
		return "?", "?"
	}
	return best, typ
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func size(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
