package diagnose

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/units"
)

// ---- port already bound ------------------------------------------------------

var bindPort = regexp.MustCompile(`(?i)(?:failed to bind to|bind) \[?[\w.:\-\]\[]*?:\[?(\d{2,5})\]?`)

func detectPortBound(ctx context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Address already in use", "address already in use", "EADDRINUSE")
	if i < 0 {
		// a component slow to reach its bind (a loaded host) has not said so yet:
		// the port's owner says it already
		return ev.portHeldNow(ctx)
	}
	port := 0
	// the port is named on the line or the ones just before it
	for j := i; j >= 0 && j >= i-30 && port == 0; j-- {
		if m := bindPort.FindStringSubmatch(ev.Lines[j]); m != nil {
			port, _ = strconv.Atoi(m[1])
		}
	}
	var ports []int
	if port != 0 {
		ports = []int{port}
	} else {
		ports = ev.componentPorts()
	}
	f := Finding{Evidence: []string{line}, at: i}
	for _, p := range ports {
		h, err := ev.holders(ctx, p)
		switch {
		case err != nil:
			f.Evidence = append(f.Evidence, fmt.Sprintf("port %d: cannot read who holds it: %v", p, err))
		case len(h.Processes) == 0 && !h.Unreadable:
			if port == 0 {
				continue
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("port %d: nothing listens on it now (the holder has gone)", p))
		default:
			f.Cause = fmt.Sprintf("port %d already bound by %s", p, h.Describe())
			f.Fix = fmt.Sprintf("stop %s or move it off port %d (%s needs it%s), then %s",
				h.Describe(), p, ev.Component, ev.portSetting(p), start(ev.Component))
			f.Evidence = append(f.Evidence, fmt.Sprintf("tcp port %d held by %s", p, h.Describe()))
			return f, true
		}
	}
	if port != 0 {
		f.Cause = fmt.Sprintf("port %d was already bound when %s started", port, ev.Component)
	} else {
		f.Cause = fmt.Sprintf("a port %s needs was already bound when it started", ev.Component)
	}
	f.Fix = fmt.Sprintf("find the process on the port (ss -ltnp) and stop it or move it, then %s", start(ev.Component))
	return f, true
}

// portHeldNow finds a port of the component held by a process that is not
// its unit's (hostfacts' port-owner verdict, as the health check ports
// judges it): the cause of a start before the component logs it, or while
// it is still starting.
func (ev *Evidence) portHeldNow(ctx context.Context) (Finding, bool) {
	if ev.Processes == nil {
		return Finding{}, false
	}
	ports := ev.componentPorts()
	if len(ports) == 0 {
		return Finding{}, false
	}
	l, err := hostfacts.ReadListening(ctx, ev.Host.ProcRoot)
	if err != nil {
		return Finding{}, false
	}
	v := hostfacts.PortsVerdict{}
	for _, p := range ports {
		v.Ports = append(v.Ports, hostfacts.PortState{ExpectedPort: hostfacts.ExpectedPort{Port: p, Owner: ev.Component}, Listening: l.TCP(p)})
	}
	var own []int
	err = v.Owners(ctx, func(ctx context.Context, ports []int) (map[int]hostfacts.Holder, error) {
		return l.Holders(ctx, ev.Host.ProcRoot, "tcp", ports...)
	}, func(ctx context.Context, _ string) ([]int, bool) {
		ps, err := ev.Processes(ctx)
		own = ps
		return ps, err == nil
	})
	if err != nil {
		return Finding{}, false
	}
	foreign := v.Foreign()
	if len(foreign) == 0 {
		return Finding{}, false
	}
	p := foreign[0]
	h := p.Holder.Describe()
	return Finding{Kind: KindPortBound, at: len(ev.Lines),
		Cause:    fmt.Sprintf("port %d already bound by %s", p.Port, h),
		Evidence: []string{fmt.Sprintf("tcp port %d held by %s, not by %s's unit %s (its processes: %s)", p.Port, h, ev.Component, ev.Unit.Name, pidList(own))},
		Fix:      fmt.Sprintf("stop %s or move it off port %d (%s needs it%s), then %s", h, p.Port, ev.Component, ev.portSetting(p.Port), start(ev.Component)),
	}, true
}

func pidList(pids []int) string {
	if len(pids) == 0 {
		return "none"
	}
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

// componentPorts are the TCP ports the component binds, from siemctl's
// configuration and opensearch.yml.
func (ev *Evidence) componentPorts() []int {
	c := ev.Config
	if c == nil {
		return nil
	}
	var out []int
	add := func(raw string) {
		if u, err := url.Parse(raw); err == nil {
			if p, err := strconv.Atoi(u.Port()); err == nil {
				out = append(out, p)
			}
		}
	}
	switch ev.Component {
	case "indexer":
		add(c.Indexer.URL)
		if p, err := strconv.Atoi(ev.indexerYAML()["transport.port"]); err == nil {
			out = append(out, p)
		}
	case "manager":
		add(c.Manager.APIURL)
		out = append(out, c.Manager.AgentPort, c.Manager.EnrollmentPort)
	case "dashboard":
		add(c.Dashboard.URL)
	}
	return slices.DeleteFunc(out, func(p int) bool { return p <= 0 })
}

// portSetting names the setting that gives the component the port.
func (ev *Evidence) portSetting(p int) string {
	if ev.Component != "indexer" {
		return ""
	}
	y := ev.indexerYAML()
	for _, k := range []string{"http.port", "transport.port"} {
		if y[k] == strconv.Itoa(p) {
			return fmt.Sprintf(": %s in %s", k, ev.indexerYAMLFile())
		}
	}
	return ""
}

// ---- insufficient permissions --------------------------------------------------

var deniedPath = regexp.MustCompile(`AccessDeniedException: (/[^\s,;"']+)|(/[^\s,;"':]+): [Pp]ermission denied|[Pp]ermission denied[^/]*(/[^\s,;"']+)`)

func detectPermission(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("AccessDeniedException", "Permission denied", "permission denied")
	if i < 0 {
		// a component slow to reach its data directory has not said so yet: the
		// directory's owner and mode say it already
		return ev.dataDirUnwritable()
	}
	f := Finding{Evidence: []string{line}, at: i}
	var path string
	if m := deniedPath.FindStringSubmatch(line); m != nil {
		for _, s := range m[1:] {
			if s != "" {
				path = s
				break
			}
		}
	}
	if path == "" {
		f.Cause = ev.Component + " was refused access to a file or directory"
		f.Fix = "give the service user access to the path its log names, then " + start(ev.Component)
		return f, true
	}
	user, uid, gid := ev.serviceUser()
	// the deepest existing path: a directory it could not create names its parent
	p := path
	for p != "/" && p != "." {
		if _, err := os.Lstat(ev.path(p)); err == nil {
			break
		}
		p = filepath.Dir(p)
	}
	info, err := os.Lstat(ev.path(p))
	if err != nil {
		f.Cause = fmt.Sprintf("%s was refused access to %s", ev.Component, path)
		f.Fix = fmt.Sprintf("give %s access to %s, then %s", user, path, start(ev.Component))
		return f, true
	}
	ev.cannotWrite(&f, p, info, user, uid, gid)
	return f, true
}

// cannotWrite says that the component's service user cannot write p, and
// the chown that gives it back (of the data directory when p is in it).
func (ev *Evidence) cannotWrite(f *Finding, p string, info fs.FileInfo, user string, uid, gid int) {
	owner := ownerOf(info)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: owner %s, mode %s; %s runs as %s", p, owner, info.Mode().Perm(), ev.Component, user))
	f.Cause = fmt.Sprintf("%s cannot write %s: owned by %s, mode %s, and %s runs as %s", ev.Component, p, owner, info.Mode().Perm(), ev.Component, user)
	target := p
	if d := ev.dataDir(); d != "" && strings.HasPrefix(p+"/", d+"/") {
		target = d
	}
	if uid >= 0 {
		f.Fix = fmt.Sprintf("`chown -R %s:%s %s` (the service user, as owns its log directory), then %s", nameOf(uid, false), nameOf(gid, true), target, start(ev.Component))
	} else {
		f.Fix = fmt.Sprintf("give the service user write access to %s (chown -R to the user %s runs as), then %s", target, ev.Component, start(ev.Component))
	}
}

// dataDirMaxLook bounds the walk of a data directory for an entry its
// service user cannot write (its top levels: where a start writes first).
const (
	dataDirMaxLook  = 200
	dataDirMaxDepth = 3
)

// dataDirUnwritable finds, in the indexer's data directory (itself, its
// first levels of directories and its node lock), the first entry the
// service user cannot write.
func (ev *Evidence) dataDirUnwritable() (Finding, bool) {
	if ev.Component != "indexer" {
		return Finding{}, false
	}
	dir := ev.dataDir()
	user, uid, gid := ev.serviceUser()
	if dir == "" || dir == "." || uid < 0 {
		return Finding{}, false
	}
	looked := 0
	var bad string
	var badInfo fs.FileInfo
	root := ev.path(dir)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || bad != "" {
			return filepath.SkipAll
		}
		if looked++; looked > dataDirMaxLook {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(root, p)
		// the directories it creates files in, and its node lock: a stray file of
		// another owner (a filler, a copy left by hand) does not stop a start
		if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && d.Name() != "node.lock") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if !writableBy(info, uid, gid) {
			bad, badInfo = filepath.Join(dir, rel), info
			return filepath.SkipAll
		}
		if d.IsDir() && rel != "." && strings.Count(rel, string(filepath.Separator)) >= dataDirMaxDepth-1 {
			return filepath.SkipDir
		}
		return nil
	})
	if bad == "" {
		return Finding{}, false
	}
	f := Finding{Kind: KindPermission, at: len(ev.Lines)}
	ev.cannotWrite(&f, bad, badInfo, user, uid, gid)
	return f, true
}

// writableBy: uid (in group gid) may write the entry (owner, group and
// other bits; root may write anything; ACLs are not read).
func writableBy(info fs.FileInfo, uid, gid int) bool {
	s, ok := info.Sys().(*syscall.Stat_t)
	if !ok || uid == 0 {
		return true
	}
	m := info.Mode().Perm()
	switch {
	case int(s.Uid) == uid:
		return m&0o200 != 0
	case int(s.Gid) == gid:
		return m&0o020 != 0
	}
	return m&0o002 != 0
}

// dataDir is the component's data directory from siemctl's configuration.
func (ev *Evidence) dataDir() string {
	if ev.Config == nil {
		return ""
	}
	switch ev.Component {
	case "indexer":
		if d := ev.indexerYAML()["path.data"]; d != "" {
			return filepath.Clean(d)
		}
		return filepath.Clean(ev.Config.Indexer.DataDir)
	case "shipper":
		return filepath.Clean(ev.Config.Shipper.DataDir)
	}
	return ""
}

// serviceUser is the user the component runs as: the owner of its log
// directory (the package makes it the service user's: wazuh-indexer on a
// Wazuh host), named with uid and gid.
func (ev *Evidence) serviceUser() (string, int, int) {
	var dir string
	switch ev.Component {
	case "indexer":
		dir = ev.indexerYAML()["path.logs"]
	case "manager":
		if ev.Config != nil {
			dir = filepath.Join(ev.Config.Manager.InstallDir, "logs")
		}
	}
	if dir == "" {
		return "its service user", -1, -1
	}
	info, err := os.Stat(ev.path(dir))
	if err != nil {
		return "its service user", -1, -1
	}
	s, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "its service user", -1, -1
	}
	return fmt.Sprintf("%s (uid %d, the owner of %s)", nameOf(int(s.Uid), false), s.Uid, dir), int(s.Uid), int(s.Gid)
}

func ownerOf(info fs.FileInfo) string {
	s, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%s:%s", nameOf(int(s.Uid), false), nameOf(int(s.Gid), true))
}

func nameOf(id int, group bool) string {
	if group {
		if g, err := user.LookupGroupId(strconv.Itoa(id)); err == nil {
			return g.Name
		}
	} else if u, err := user.LookupId(strconv.Itoa(id)); err == nil {
		return u.Username
	}
	return strconv.Itoa(id)
}

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
	f.Fix = fmt.Sprintf("free space on %s (delete what does not belong there, old indices with siemctl cleanup once the indexer runs) or grow it; then %s", mnt, start(ev.Component))
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

// ---- heap ----------------------------------------------------------------------

func detectHeapOrder(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Initial heap size set to a larger value than the maximum heap size", "Incompatible minimum and maximum heap sizes specified")
	if i < 0 {
		return Finding{}, false
	}
	h := ev.heap()
	f := Finding{Evidence: append([]string{line}, h.evidence()...), at: i}
	f.Cause = fmt.Sprintf("the JVM refused its options: -Xms%s is above -Xmx%s", orQ(h.xms), orQ(h.xmx))
	f.Fix = h.fix(ev, "set -Xms and -Xmx to the same value")
	return f, true
}

func detectHeapSize(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("os::commit_memory", "There is insufficient memory for the Java Runtime Environment",
		"Could not reserve enough space for object heap", "Cannot allocate memory", "Too small maximum heap", "Invalid maximum heap size", "Invalid initial heap size")
	if i < 0 {
		return Finding{}, false
	}
	h := ev.heap()
	f := Finding{Evidence: append([]string{line}, h.evidence()...), at: i}
	mem := ev.memTotal()
	switch {
	case strings.Contains(line, "Invalid") || strings.Contains(line, "Too small"):
		f.Cause = fmt.Sprintf("the JVM refused its heap size (-Xms%s -Xmx%s)", orQ(h.xms), orQ(h.xmx))
	case mem > 0:
		f.Cause = fmt.Sprintf("the heap (-Xms%s -Xmx%s) does not fit in the host's memory (%s)", orQ(h.xms), orQ(h.xmx), size(mem))
	default:
		f.Cause = fmt.Sprintf("the JVM could not get its heap (-Xms%s -Xmx%s)", orQ(h.xms), orQ(h.xmx))
	}
	f.Fix = h.fix(ev, "lower -Xms and -Xmx")
	return f, true
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// heapSetting is where the JVM's -Xms and -Xmx come from: jvm.options,
// then jvm.options.d/*.options in name order (the last setting wins).
type heapSetting struct {
	xms, xmx         string
	xmsFile, xmxFile string
	files            []string
	// baseXms, baseXmx are jvm.options' own values (before jvm.options.d).
	baseXms, baseXmx string
}

var heapOpt = regexp.MustCompile(`^(?:\d+(?:-\d*)?:)?-(Xms|Xmx)(\S+)$`)

func (ev *Evidence) heap() heapSetting {
	var h heapSetting
	if ev.Config == nil || ev.Config.Indexer.ConfigDir == "" {
		return h
	}
	dir := ev.Config.Indexer.ConfigDir
	files := []string{filepath.Join(dir, "jvm.options")}
	if more, err := filepath.Glob(ev.path(filepath.Join(dir, "jvm.options.d", "*.options"))); err == nil {
		slices.Sort(more)
		for _, m := range more {
			files = append(files, strings.TrimPrefix(m, ev.Host.Root))
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(ev.path(f))
		if err != nil {
			continue
		}
		h.files = append(h.files, f)
		for _, l := range strings.Split(string(b), "\n") {
			m := heapOpt.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			if m[1] == "Xms" {
				h.xms, h.xmsFile = m[2], f
			} else {
				h.xmx, h.xmxFile = m[2], f
			}
			if f == files[0] {
				h.baseXms, h.baseXmx = h.xms, h.xmx
			}
		}
	}
	return h
}

func (h heapSetting) evidence() []string {
	var out []string
	if h.xms != "" {
		out = append(out, fmt.Sprintf("-Xms%s set in %s", h.xms, h.xmsFile))
	}
	if h.xmx != "" {
		out = append(out, fmt.Sprintf("-Xmx%s set in %s", h.xmx, h.xmxFile))
	}
	if len(out) == 0 && len(h.files) > 0 {
		out = append(out, "no -Xms/-Xmx in "+strings.Join(h.files, ", "))
	}
	return out
}

// fix proposes a heap: half the host's memory, at most 31g (compressed
// pointers) and at least 512m, or the current -Xmx when it fits.
func (h heapSetting) fix(ev *Evidence, what string) string {
	mem := ev.memTotal()
	// an override in jvm.options.d over a sound jvm.options: remove it
	if len(h.files) > 0 {
		base := h.files[0]
		bms, bmx := parseSize(h.baseXms), parseSize(h.baseXmx)
		var over []string
		for _, f := range []string{h.xmsFile, h.xmxFile} {
			if f != "" && f != base && !slices.Contains(over, f) {
				over = append(over, f)
			}
		}
		if len(over) > 0 && bms > 0 && bmx > 0 && bms <= bmx && (mem == 0 || bmx <= mem/2) {
			return fmt.Sprintf("%s: remove the -Xms/-Xmx lines from %s (%s sets -Xms%s -Xmx%s, which fits), then %s",
				what, strings.Join(over, " and "), base, h.baseXms, h.baseXmx, start(ev.Component))
		}
	}
	want := "512m"
	if mem > 0 {
		half := mem / 2 >> 20 // MiB
		half = min(half, 31*1024)
		if cur := parseSize(h.xmx); cur > 0 && cur <= mem/2 {
			half = cur >> 20
		}
		half = max(half, 512)
		if half%1024 == 0 {
			want = fmt.Sprintf("%dg", half/1024)
		} else {
			want = fmt.Sprintf("%dm", half)
		}
	}
	file := h.xmxFile
	if h.xmsFile != "" && h.xmsFile != h.xmxFile {
		file = h.xmsFile + " and " + h.xmxFile
	}
	if file == "" {
		file = "jvm.options"
		if ev.Config != nil {
			file = filepath.Join(ev.Config.Indexer.ConfigDir, "jvm.options")
		}
	}
	memNote := ""
	if mem > 0 {
		memNote = fmt.Sprintf(" (at most half the host's %s)", size(mem))
	}
	return fmt.Sprintf("%s: in %s set -Xms%s and -Xmx%s%s, then %s", what, file, want, want, memNote, start(ev.Component))
}

// parseSize reads a JVM size ("4g", "512m", "1024k", "1073741824").
func parseSize(s string) uint64 {
	if s == "" {
		return 0
	}
	mult := uint64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	case "t":
		mult = 1 << 40
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return n * mult
}

// memTotal is the host's MemTotal from /proc/meminfo (bytes; 0 unknown).
func (ev *Evidence) memTotal() uint64 {
	b, err := os.ReadFile(filepath.Join(ev.Host.ProcRoot, "meminfo"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}

// ---- bootstrap checks ----------------------------------------------------------

func detectBootstrap(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("bootstrap checks failed")
	if i < 0 {
		return Finding{}, false
	}
	f := Finding{Evidence: []string{line}, at: i}
	var checks []string
	for _, l := range ev.Lines[i+1:] {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "bootstrap check failure") || strings.HasPrefix(t, "[") && strings.Contains(t, "]: ") && !osStamp.MatchString(t) {
			checks = append(checks, t)
		}
	}
	f.Evidence = append(f.Evidence, checks...)
	f.Cause = "OpenSearch refused to start: " + strings.TrimPrefix(strings.TrimSpace(line[strings.Index(line, "ERROR"):]), "ERROR: ")
	if len(checks) > 0 {
		f.Cause += ": " + checks[0]
	}
	f.Fix = "correct each failed bootstrap check as its line says (the setting in " + ev.indexerYAMLFile() + ", a system limit or a sysctl), then " + start(ev.Component)
	return f, true
}

// ---- start timeout -------------------------------------------------------------

// startedLine and nodeStarted mark a start and its end in OpenSearch's log.
var (
	startingLine = regexp.MustCompile(`\] version\[[^\]]+\], pid\[\d+\]`)
	nodeStarted  = regexp.MustCompile(`\]\s+\[[^\]]+\] started$`)
)

func detectStartTimeout(_ context.Context, ev *Evidence) (Finding, bool) {
	st := ev.Unit
	if st.Result != "timeout" {
		return Finding{}, false
	}
	f := Finding{at: len(ev.Lines)}
	limit := "its start timeout"
	if st.TimeoutStart > 0 {
		limit = "TimeoutStartSec=" + st.TimeoutStart.String()
	}
	f.Cause = fmt.Sprintf("systemd gave up waiting for %s to start after %s (result timeout)", st.Name, limit)
	f.Evidence = []string{fmt.Sprintf("%s: result %s, TimeoutStartSec %s", st.Name, st.Failure(), durOr(st.TimeoutStart))}
	for _, p := range st.DropInPaths {
		f.Evidence = append(f.Evidence, "drop-in "+p)
	}
	needed := ev.lastStartTook()
	want := 3 * time.Minute
	if needed > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("its last complete start took %s (from its own log)", needed.Round(time.Second)))
		want = max(want, 3*needed).Round(time.Minute)
	}
	dir := "/etc/systemd/system/" + st.Name + ".d"
	if len(st.DropInPaths) > 0 {
		// next to the unit's drop-ins: "zz-" sorts after them and wins
		dir = filepath.Dir(st.DropInPaths[len(st.DropInPaths)-1])
	}
	f.Fix = fmt.Sprintf("give it more time: a drop-in %s/zz-start-timeout.conf with [Service] TimeoutStartSec=%ds (and look for what made it slow: an ExecStartPre in the drop-ins above, the host's load), then systemctl daemon-reload and %s",
		dir, int(want.Seconds()), start(ev.Component))
	return f, true
}

func durOr(d time.Duration) string {
	if d <= 0 {
		return "unknown"
	}
	return d.String()
}

// lastStartTook is how long the component's last complete start took, from
// its own log (the indexer: "version[…], pid[…]" to "started").
func (ev *Evidence) lastStartTook() time.Duration {
	var files []string
	for _, f := range ev.componentLogs() {
		files = append(files, ev.path(f))
	}
	var took time.Duration
	for _, f := range files {
		lines, err := units.TailFile(f, 5000)
		if err != nil {
			continue
		}
		var from time.Time
		for _, l := range lines {
			t, ok := stamp(l)
			if !ok {
				continue
			}
			switch {
			case startingLine.MatchString(l):
				from = t
			case nodeStarted.MatchString(strings.TrimSpace(l)) && !from.IsZero():
				took, from = t.Sub(from), time.Time{}
			}
		}
	}
	return took
}

// ---- manager configuration -----------------------------------------------------

func detectManagerConfig(ctx context.Context, ev *Evidence) (Finding, bool) {
	if ev.ConfigCheck == nil {
		return Finding{}, false
	}
	problems, ok, err := ev.ConfigCheck(ctx)
	if err != nil || ok {
		return Finding{}, false
	}
	f := Finding{Evidence: problems, at: len(ev.Lines)}
	f.Cause = "configuration invalid: " + firstOr(problems, "see the manager's configuration check")
	conf := "ossec.conf"
	if ev.Config != nil {
		conf = filepath.Join(ev.Config.Manager.InstallDir, "etc", "ossec.conf")
	}
	f.Fix = "fix " + conf + " at the reported element and line, then " + start(ev.Component)
	return f, true
}

func firstOr(s []string, d string) string {
	if len(s) == 0 {
		return d
	}
	return s[0]
}

// ---- security not initialised --------------------------------------------------

// securityInitGrace is how long after its start a node may still say its security index is
// not read (a loaded host's node reads it well after "started").
const securityInitGrace = 2 * time.Minute

func detectSecurityInit(_ context.Context, ev *Evidence) (Finding, bool) {
	if !ev.Unit.IsActive() {
		return Finding{}, false
	}
	i, line := ev.find("Not yet initialized (you may need to run securityadmin)", "OpenSearch Security not initialized")
	if i < 0 {
		return Finding{}, false
	}
	// a node still coming up says so too until it has read its security index: only a node
	// started a while ago that still says it is not initialised is missing it
	started := -1
	for j := i - 1; j >= 0 && started < 0; j-- {
		if nodeStarted.MatchString(strings.TrimSpace(ev.Lines[j])) {
			started = j
		}
	}
	if started < 0 || ev.notJoinedSince(started) {
		return Finding{}, false
	}
	t0, ok0 := stamp(ev.Lines[started])
	t1, ok1 := stamp(ev.Lines[i])
	if !ok0 || !ok1 || t1.Sub(t0) < securityInitGrace {
		return Finding{}, false
	}
	return Finding{Cause: "the security plugin is not initialised (the security index is missing)", Evidence: []string{line}, at: i,
		Fix: "siemctl security indexer apply"}, true
}
