package diagnose

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

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
	if p != path {
		// it was refused creating a directory that does not exist: a setting
		// names it; handing the parent to the service user would only let it
		// start on a new, empty directory
		if key, file := ev.settingFor(path); key != "" {
			ev.missingDir(&f, path, key, file, user)
			return f, true
		}
	}
	ev.cannotWrite(&f, p, info, user, uid, gid)
	return f, true
}

// settingFor names the setting of the component's configuration whose
// directory is path or holds it (path.data, path.logs, path.repo of
// opensearch.yml), and the file that sets it.
func (ev *Evidence) settingFor(path string) (key, file string) {
	if ev.Component != "indexer" {
		return "", ""
	}
	y := ev.indexerYAML()
	for _, k := range []string{"path.data", "path.logs", "path.repo"} {
		if d := y[k]; d != "" && (path == filepath.Clean(d) || strings.HasPrefix(path, filepath.Clean(d)+"/")) {
			return k, ev.indexerYAMLFile()
		}
	}
	return "", ""
}

// missingDir: the directory a setting points at does not exist. The fix
// corrects the setting (naming where the node's data is when another
// directory holds it); creating the directory is for a new one only.
func (ev *Evidence) missingDir(f *Finding, path, key, file, user string) {
	f.Kind = KindMissingDir
	f.Cause = fmt.Sprintf("%s's %s %s does not exist (set in %s), and %s cannot create it", ev.Component, key, path, file, user)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s (%s); the directory does not exist", file, key, path))
	fix := fmt.Sprintf("correct %s in %s", key, file)
	if key == "path.data" {
		if old := ev.dataWithNodes(path); old != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s holds a node's data (%s/nodes)", old, old))
			fix = fmt.Sprintf("set %s back to %s in %s (it holds the node's data)", key, old, file)
		}
		fix += fmt.Sprintf(", then %s; only for a new, empty data directory: create %s owned by the service user (the cluster then starts without its indices)", start(ev.Component), path)
	} else {
		fix += fmt.Sprintf(" (or create %s owned by the service user), then %s", path, start(ev.Component))
	}
	f.Fix = fix
}

// dataWithNodes is a directory other than missing that holds an indexer
// node's data (a nodes/ directory): siemctl's configured indexer.data_dir,
// else a sibling of missing.
func (ev *Evidence) dataWithNodes(missing string) string {
	var cands []string
	if ev.Config != nil && ev.Config.Indexer.DataDir != "" {
		cands = append(cands, filepath.Clean(ev.Config.Indexer.DataDir))
	}
	if names, err := readDirNames(ev.path(filepath.Dir(missing))); err == nil {
		for _, n := range names {
			cands = append(cands, filepath.Join(filepath.Dir(missing), n))
		}
	}
	for _, c := range cands {
		if c == missing {
			continue
		}
		if st, err := os.Stat(ev.path(filepath.Join(c, "nodes"))); err == nil && st.IsDir() {
			return c
		}
	}
	return ""
}

// cannotWrite says that the component's service user cannot write p, and
// the chown that gives it back (of the data directory when p is in it).
func (ev *Evidence) cannotWrite(f *Finding, p string, info fs.FileInfo, user string, uid, gid int) {
	owner := ownerOf(info)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: owner %s, mode %s; %s runs as %s", p, owner, info.Mode().Perm(), ev.Component, user))
	verb := "write"
	if uid >= 0 && !permits(info, uid, gid, 0o4) {
		verb = "read" // a file it cannot even read (a key, its configuration)
	}
	f.Cause = fmt.Sprintf("%s cannot %s %s: owned by %s, mode %s, and %s runs as %s", ev.Component, verb, p, owner, info.Mode().Perm(), ev.Component, user)
	target := p
	if d := ev.dataDir(); d != "" && strings.HasPrefix(p+"/", d+"/") {
		target = d
	}
	if target == p && !info.IsDir() && uid >= 0 && ev.ownsPath(p) {
		// one file of its own (a key, its configuration): that file alone
		f.Fix = fmt.Sprintf("`chown %s:%s %s` (the service user, as owns its log directory; or give its group read access), then %s", nameOf(uid, false), nameOf(gid, true), p, start(ev.Component))
		return
	}
	if !ev.ownsPath(target) {
		// a directory shared with other software (/var/lib, /etc): changing its
		// owner hands their state to the service user
		f.Fix = fmt.Sprintf("%s is not one of %s's own directories (%s): do not change its owner; point the setting that names it at %s's own directory, or give %s access to the one entry it needs, then %s",
			target, ev.Component, strings.Join(ev.ownDirs(), ", "), ev.Component, user, start(ev.Component))
		return
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
func writableBy(info fs.FileInfo, uid, gid int) bool { return permits(info, uid, gid, 0o2) }

// permits: uid (in group gid) has the permission bit (4 read, 2 write) on
// the entry.
func permits(info fs.FileInfo, uid, gid int, bit fs.FileMode) bool {
	s, ok := info.Sys().(*syscall.Stat_t)
	if !ok || uid == 0 {
		return true
	}
	m := info.Mode().Perm()
	switch {
	case int(s.Uid) == uid:
		return m&(bit<<6) != 0
	case int(s.Gid) == gid:
		return m&(bit<<3) != 0
	}
	return m&bit != 0
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
// Wazuh host; the dashboard's: its config directory), named with uid and
// gid.
func (ev *Evidence) serviceUser() (string, int, int) {
	var dir string
	switch ev.Component {
	case "indexer":
		dir = ev.indexerYAML()["path.logs"]
	case "manager":
		if ev.Config != nil {
			dir = filepath.Join(ev.Config.Manager.InstallDir, "logs")
		}
	case "dashboard":
		if ev.Config != nil {
			dir = ev.Config.Dashboard.ConfigDir
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

// ownDirs are the component's own directories (its data, logs and
// configuration), the only ones a fix may hand to its service user.
func (ev *Evidence) ownDirs() []string {
	var out []string
	add := func(ds ...string) {
		for _, d := range ds {
			if d != "" && d != "." && d != "/" {
				out = append(out, filepath.Clean(d))
			}
		}
	}
	if ev.Config == nil {
		return out
	}
	c := ev.Config
	switch ev.Component {
	case "indexer":
		y := ev.indexerYAML()
		add(y["path.data"], y["path.logs"], c.Indexer.DataDir, c.Indexer.ConfigDir)
	case "manager":
		add(c.Manager.InstallDir)
	case "dashboard":
		add(c.Dashboard.ConfigDir)
	case "shipper":
		add(c.Shipper.DataDir, c.Shipper.ConfigDir)
	}
	return out
}

// ownsPath: p is one of the component's own directories or inside one.
func (ev *Evidence) ownsPath(p string) bool {
	for _, d := range ev.ownDirs() {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
