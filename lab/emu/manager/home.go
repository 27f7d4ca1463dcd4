// Package manager emulates a Wazuh-4.x-like manager: the daemon (REST API, agent/enrollment listeners,
// syslog analysis, alerts file) and its command-line tools (siem-control, agent_control, manage_agents).
// Everything the tools need is kept in files under the install directory, so the tools work while the
// daemon is down.
package manager

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// Home is a manager install directory (/var/ossec in Wazuh, ROOT/var/siem in the lab).
type Home struct{ Dir string }

// Path joins elements under the install directory.
func (h Home) Path(elem ...string) string { return filepath.Join(append([]string{h.Dir}, elem...)...) }

// Paths used by the daemon and the tools. AgentsDB is where wazuh-db keeps global.db (queue/db, what
// siemctl cold-copies before an upgrade), in the emulator's own format (JSON lines, not SQLite).
func (h Home) OssecConf() string   { return h.Path("etc", "ossec.conf") }
func (h Home) ClientKeys() string  { return h.Path("etc", "client.keys") }
func (h Home) LocalRules() string  { return h.Path("etc", "rules", "local_rules.xml") }
func (h Home) OssecLog() string    { return h.Path("logs", "ossec.log") }
func (h Home) AlertsJSON() string  { return h.Path("logs", "alerts", "alerts.json") }
func (h Home) RunDir() string      { return h.Path("var", "run") }
func (h Home) AgentsDB() string    { return h.Path("queue", "db", "global.db") }
func (h Home) APIYAML() string     { return h.Path("api", "configuration", "api.yaml") }
func (h Home) UsersFile() string   { return h.Path("api", "configuration", "security", "users.json") }
func (h Home) SecurityDir() string { return h.Path("api", "configuration", "security") }
func (h Home) SSLDir() string      { return h.Path("api", "configuration", "ssl") }

// FaultsDir is the lab's fault directory: $SIEM_LAB_FAULTS_DIR when set by the caller, otherwise
// ROOT/var/lib/siem-lab-faults with ROOT two levels above the install directory (ROOT/var/siem).
func (h Home) FaultsDir(env string) string {
	if env != "" {
		return env
	}
	return faults.DirForRoot(filepath.Dir(filepath.Dir(filepath.Clean(h.Dir))))
}

// Version is the manager's version as the package installed it.
type Version struct {
	Tag      string // "v4.9.0"
	Revision int    // 40907
}

// Plain is the version without the leading "v" ("4.9.0").
func (v Version) Plain() string { return strings.TrimPrefix(v.Tag, "v") }

// ReadVersion reads INSTALL_DIR/VERSION ("v4.9.0") and INSTALL_DIR/REVISION ("40907").
func (h Home) ReadVersion() (Version, error) {
	b, err := os.ReadFile(h.Path("VERSION"))
	if err != nil {
		return Version{}, fmt.Errorf("read version: %w", err)
	}
	v := Version{Tag: strings.TrimSpace(string(b))}
	if !strings.HasPrefix(v.Tag, "v") {
		v.Tag = "v" + v.Tag
	}
	if _, _, _, ok := parseSemver(v.Plain()); !ok {
		return Version{}, fmt.Errorf("read version: malformed %q", v.Tag)
	}
	rb, err := os.ReadFile(h.Path("REVISION"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.Revision = DefaultRevision(v.Plain())
	case err != nil:
		return Version{}, fmt.Errorf("read revision: %w", err)
	default:
		n, err := strconv.Atoi(strings.TrimSpace(string(rb)))
		if err != nil {
			return Version{}, fmt.Errorf("read revision: %w", err)
		}
		v.Revision = n
	}
	return v, nil
}

// DefaultRevision is the API revision number for a version: 4.9.0 → 40907 as in the real spec, otherwise
// major*10000 + minor*100 + patch.
func DefaultRevision(version string) int {
	if version == "4.9.0" {
		return 40907
	}
	ma, mi, pa, ok := parseSemver(version)
	if !ok {
		return 0
	}
	return ma*10000 + mi*100 + pa
}

func parseSemver(s string) (int, int, int, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return 0, 0, 0, false
		}
		n[i] = v
	}
	return n[0], n[1], n[2], true
}

// compareVersions compares "4.9.0"-style versions (a leading "v" or "Wazuh v" is ignored).
func compareVersions(a, b string) int {
	clean := func(s string) string { return strings.TrimPrefix(strings.TrimPrefix(s, "Wazuh "), "v") }
	a1, a2, a3, okA := parseSemver(clean(a))
	b1, b2, b3, okB := parseSemver(clean(b))
	if !okA || !okB {
		return strings.Compare(a, b)
	}
	for _, d := range [][2]int{{a1, b1}, {a2, b2}, {a3, b3}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Hostname is the name of the host the install directory is on: ROOT/etc/hostname when the root
// above it (ROOT/var/siem, ROOT/var/ossec) has one (each host of a distributed lab has its own), else
// the system's. It is what the manager calls itself (agent 000's name, its agents' manager, the API's
// hostname, the alerts' manager.name).
func (h Home) Hostname() string {
	root := filepath.Dir(filepath.Dir(filepath.Clean(h.Dir)))
	if b, err := os.ReadFile(filepath.Join(root, "etc", "hostname")); err == nil {
		if name := strings.TrimSpace(string(b)); name != "" {
			return name
		}
	}
	name, _ := os.Hostname()
	return name
}
