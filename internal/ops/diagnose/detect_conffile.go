package diagnose

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// ---- a component's configuration file that does not parse ---------------------------

// KindConfigFile is a component's own configuration file that does not parse (the shipper's
// filebeat.yml, the dashboard's opensearch_dashboards.yml): named with its line, not the
// symptoms its refusal to start leaves (an output not reached, an indexer not reached).
const KindConfigFile = "config-file"

var (
	// Filebeat: "Exiting: error loading config file: yaml: line 3: mapping values are not allowed in this context"
	beatConfigErr = regexp.MustCompile(`Exiting: error loading config file: (.*)$`)
	// go-yaml's and js-yaml's line: "yaml: line 3: …", "… at line 18, column 1:"
	yamlErrLine = regexp.MustCompile(`yaml: line (\d+): (.*)$|^(.*) at line (\d+), column (\d+):?$`)
	// OpenSearch Dashboards (js-yaml, uncaught): "YAMLException: duplicated mapping key at line 18, column 1:"
	yamlException = regexp.MustCompile(`YAMLException: (.*)$`)
)

// yamlError splits a YAML error into its message and line (0 when none).
func yamlError(s string) (msg string, line int) {
	m := yamlErrLine.FindStringSubmatch(strings.TrimSpace(s))
	switch {
	case m == nil:
		return strings.TrimSpace(s), 0
	case m[1] != "":
		n, _ := strconv.Atoi(m[1])
		return m[2], n
	default:
		n, _ := strconv.Atoi(m[4])
		return m[3], n
	}
}

// fileLine is line n (1-based) of file as the services see it, "" when it cannot be read.
func (ev *Evidence) fileLine(file string, n int) string {
	if n <= 0 {
		return ""
	}
	fh, err := os.Open(ev.path(file))
	if err != nil {
		return ""
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for i := 1; sc.Scan(); i++ {
		if i == n {
			return sc.Text()
		}
	}
	return ""
}

// parseYAMLFile says why file (as the services see it) does not parse as YAML, "" when it
// does or cannot be read.
func (ev *Evidence) parseYAMLFile(file string) string {
	b, err := os.ReadFile(ev.path(file))
	if err != nil {
		return ""
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return err.Error()
	}
	return ""
}

// configFileFinding is the finding of file not parsing: yamlErr is the component's own words
// (or go-yaml's on the file), at the index of its log line (len(Lines) when read from the file).
func (ev *Evidence) configFileFinding(file, yamlErr, evidence string, at int, check string) Finding {
	msg, n := yamlError(yamlErr)
	f := Finding{Kind: KindConfigFile, at: at, Evidence: []string{}}
	if evidence != "" {
		f.Evidence = append(f.Evidence, evidence)
	}
	where := file
	if n > 0 {
		where = fmt.Sprintf("%s line %d", file, n)
		// the parser names the line where it noticed: the one before is often the broken one
		for k := max(n-1, 1); k <= n; k++ {
			if l := ev.fileLine(file, k); strings.TrimSpace(l) != "" {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s:%d: %s", file, k, clip(l)))
			}
		}
	}
	f.Cause = fmt.Sprintf("%s does not parse (YAML): %s", where, msg)
	if n > 1 {
		where += fmt.Sprintf(" (or line %d above it)", n-1)
	}
	f.Fix = fmt.Sprintf("correct %s (%s; an edit by hand: compare with its backup or the package's copy)%s, then %s", where, msg, check, start(ev.Component))
	return f
}

// shipperConfigFile is filebeat.yml in the shipper's config directory ("" without one).
func (ev *Evidence) shipperConfigFile() string {
	if ev.Config == nil || ev.Config.Shipper.ConfigDir == "" {
		return ""
	}
	return filepath.Join(ev.Config.Shipper.ConfigDir, "filebeat.yml")
}

// detectShipperConfig: Filebeat exits at once on a filebeat.yml it cannot load ("Exiting: error
// loading config file: yaml: line N: …", on stderr before it logs anything else), naming
// neither the file nor the line's text: both are read here.
func detectShipperConfig(_ context.Context, ev *Evidence) (Finding, bool) {
	file := ev.shipperConfigFile()
	i, line := ev.find("Exiting: error loading config file")
	if i < 0 {
		if ev.Unit.IsActive() || file == "" {
			return Finding{}, false
		}
		// a start that left no line (the journal not readable): the file says it
		if why := ev.parseYAMLFile(file); why != "" {
			return ev.configFileFinding(file, why, "", len(ev.Lines), ""), true
		}
		return Finding{}, false
	}
	m := beatConfigErr.FindStringSubmatch(strings.TrimSpace(ev.Lines[i]))
	if m == nil || file == "" {
		return Finding{}, false
	}
	if !strings.Contains(m[1], "yaml:") {
		// strict.perms and the like name their file themselves
		return Finding{Kind: KindConfigFile, at: i, Evidence: []string{line},
			Cause: "the shipper cannot load its configuration: " + clip(m[1]),
			Fix:   "mend what it names (" + clip(m[1]) + "), then " + start(ev.Component)}, true
	}
	return ev.configFileFinding(file, m[1], line, i, "; `filebeat test config` (siemctl health --check shipper) checks it"), true
}

// dashboardConfigFile is the dashboard's config file in its config directory ("" when none).
func (ev *Evidence) dashboardConfigFile() string {
	if ev.Config == nil || ev.Config.Dashboard.ConfigDir == "" {
		return ""
	}
	for _, n := range hostfacts.DashboardConfigNames {
		p := filepath.Join(ev.Config.Dashboard.ConfigDir, n)
		if _, err := os.Stat(ev.path(p)); err == nil {
			return p
		}
	}
	return ""
}

// detectDashboardConfig: OpenSearch Dashboards dies at once on a config file js-yaml cannot
// read (an uncaught "YAMLException: … at line N, column M:" naming no file).
func detectDashboardConfig(_ context.Context, ev *Evidence) (Finding, bool) {
	file := ev.dashboardConfigFile()
	if file == "" {
		return Finding{}, false
	}
	i, line := ev.find("YAMLException: ")
	if i >= 0 {
		m := yamlException.FindStringSubmatch(strings.TrimSpace(ev.Lines[i]))
		if m != nil {
			return ev.configFileFinding(file, m[1], line, i, ""), true
		}
	}
	if ev.Unit.IsActive() {
		return Finding{}, false
	}
	if why := ev.parseYAMLFile(file); why != "" {
		return ev.configFileFinding(file, why, "", len(ev.Lines), ""), true
	}
	return Finding{}, false
}

// ---- the dashboard's TLS files -------------------------------------------------------------

// KindDashboardTLS is a file of the dashboard's server.ssl settings (its key or certificate)
// that does not exist or that its service user cannot read.
const KindDashboardTLS = "dashboard-tls-file"

// nodeFSErr is Node's error for a file it cannot open:
// "Error: ENOENT: no such file or directory, open '/etc/wazuh-dashboard/certs/dashboard-key.pem'".
var nodeFSErr = regexp.MustCompile(`(ENOENT|EACCES): (no such file or directory|permission denied), open '([^']+)'`)

// dashboardFileKeys are the dashboard's settings that name a file it reads at its start.
var dashboardFileKeys = []string{"server.ssl.key", "server.ssl.certificate", "server.ssl.certificateAuthorities", "opensearch.ssl.certificateAuthorities"}

func detectDashboardTLS(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("ENOENT: no such file or directory, open '", "EACCES: permission denied, open '")
	if i < 0 {
		return Finding{}, false
	}
	m := nodeFSErr.FindStringSubmatch(ev.Lines[i])
	if m == nil {
		return Finding{}, false
	}
	path, file := m[3], ev.dashboardConfigFile()
	key := "a setting"
	if file != "" {
		if y, err := readFlatYAML(ev.path(file)); err == nil {
			for _, k := range dashboardFileKeys {
				for _, v := range y[k] {
					if v == path || filepath.Join(filepath.Dir(file), v) == path {
						key = k
					}
				}
			}
		}
	}
	f := Finding{Kind: KindDashboardTLS, at: i, Evidence: []string{line}}
	in := ""
	if file != "" {
		in = " in " + file
	}
	if m[1] == "ENOENT" {
		f.Cause = fmt.Sprintf("%s%s names %s, which does not exist", key, in, path)
		f.Fix = fmt.Sprintf("put the file back at %s (from its backup; the dashboard's key and certificate come from the certificates tool's output) or point %s%s at where it is now, then %s", path, key, in, start(ev.Component))
		if moved := ev.sameNameNearby(path); moved != "" {
			f.Evidence = append(f.Evidence, "a file of that name is at "+moved)
			f.Fix = fmt.Sprintf("move %s back to %s (or point %s%s at it), then %s", moved, path, key, in, start(ev.Component))
		}
		return f, true
	}
	user, uid, gid := ev.serviceUser()
	f.Cause = fmt.Sprintf("the dashboard's service user cannot read %s (%s%s)", path, key, in)
	f.denied = true
	if info, err := os.Stat(ev.path(path)); err == nil {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: owner %s, mode %s; the dashboard runs as %s", path, ownerOf(info), info.Mode().Perm(), user))
	}
	switch {
	case uid < 0:
		f.Fix = fmt.Sprintf("give the user the dashboard runs as read access to %s alone (chown that file to it, chmod 0400), then %s", path, start(ev.Component))
	case ev.ownsPath(path):
		f.Fix = fmt.Sprintf("`chown %s:%s %s && chmod 0400 %s` (that file alone; the service user, as owns %s), then %s", nameOf(uid, false), nameOf(gid, true), path, path, ev.Config.Dashboard.ConfigDir, start(ev.Component))
	default:
		f.Fix = fmt.Sprintf("%s is outside the dashboard's own directories: do not change its owner; copy it into %s/certs (owned by %s, mode 0400) and point %s%s at the copy, then %s", path, ev.Config.Dashboard.ConfigDir, nameOf(uid, false), key, in, start(ev.Component))
	}
	return f, true
}

// sameNameNearby finds a file named like path under the directory that holds it or its parent
// (a key moved aside by hand: certs/old/, certs.bak/), "" when none.
func (ev *Evidence) sameNameNearby(path string) string {
	base, found := filepath.Base(path), ""
	root := filepath.Dir(filepath.Dir(path))
	seen := 0
	_ = filepath.WalkDir(ev.path(root), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return filepath.SkipDir
		}
		if seen++; seen > 500 {
			return filepath.SkipAll
		}
		if !d.IsDir() && d.Name() == base && strings.TrimPrefix(p, ev.Host.Root) != path {
			found = strings.TrimPrefix(p, ev.Host.Root)
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// readFlatYAML reads a YAML file as dotted keys with their values as strings (a list's items).
func readFlatYAML(path string) (map[string][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, vv := range x {
				walk(strings.TrimPrefix(prefix+"."+k, "."), vv)
			}
		case []any:
			for _, vv := range x {
				out[prefix] = append(out[prefix], fmt.Sprint(vv))
			}
		default:
			out[prefix] = append(out[prefix], fmt.Sprint(x))
		}
	}
	walk("", m)
	return out, nil
}
