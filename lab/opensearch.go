package lab

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Release is one version the lab builds packages of.
type Release struct {
	Version    string // upstream package version (the Debian version is +"-1")
	OpenSearch string // the OpenSearch its indexer package carries
	// Wazuh: a real Wazuh release, whose indexer carries that OpenSearch; false for the lab's own
	// builds, which only borrow a version number.
	Wazuh bool
	// Set names the releases one lab builds together (up installs one, the others are there to
	// upgrade or downgrade to).
	Set string
	// FilebeatModule is the Wazuh Filebeat module tarball (without .tar.gz) a manager of this
	// version uses: wazuh-filebeat-0.4 up to 4.14.1, 0.5 from 4.14.2 (the Wazuh installation
	// assistant's installVariables.sh per tag). The lab serves its own module under these names.
	FilebeatModule string
}

// Releases are the versions the lab builds, by set, oldest first:
//   - "wazuh": real Wazuh releases whose OpenSearch security plugin Maven Central serves (4.12.0 on
//     2.19.1, 4.14.1 on 2.19.3, 4.14.4 on 2.19.4: wazuh-indexer PRs #739, #1050, #1230).
//   - "lab": the lab's own builds under the numbers 4.9.0 and 4.10.0, which are NOT those Wazuh
//     releases (real 4.9.0 runs OpenSearch 2.13.0, 4.10.0 runs 2.16.0): OpenSearch 2.11.1 → 2.19.3,
//     kept as the cross-codec case (2.11.1 cannot read the segments 2.19 writes).
//
// The lab states its OpenSearch versions itself rather than reading siemctl's release table
// (internal/ops/versions): a rig that built from the table under test could never show the table
// wrong. lab's TestReleases compares the two.
var Releases = []Release{
	{Version: "4.9.0", OpenSearch: "2.11.1", Set: "lab", FilebeatModule: "wazuh-filebeat-0.4"},
	{Version: "4.10.0", OpenSearch: "2.19.3", Set: "lab", FilebeatModule: "wazuh-filebeat-0.4"},
	{Version: "4.12.0", OpenSearch: "2.19.1", Wazuh: true, Set: "wazuh", FilebeatModule: "wazuh-filebeat-0.4"},
	{Version: "4.14.1", OpenSearch: "2.19.3", Wazuh: true, Set: "wazuh", FilebeatModule: "wazuh-filebeat-0.4"},
	{Version: "4.14.4", OpenSearch: "2.19.4", Wazuh: true, Set: "wazuh", FilebeatModule: "wazuh-filebeat-0.5"},
}

// Versions are every version the lab can install (up --version), oldest first per set.
var Versions = func() []string {
	var out []string
	for _, r := range Releases {
		out = append(out, r.Version)
	}
	return out
}()

// ReleaseOf returns the lab's release of a version.
func ReleaseOf(v string) (Release, bool) {
	for _, r := range Releases {
		if r.Version == v {
			return r, true
		}
	}
	return Release{}, false
}

// SetOf returns the versions built together with v (its set), oldest first; nil for a version
// the lab does not build.
func SetOf(v string) []string {
	r, ok := ReleaseOf(v)
	if !ok {
		return nil
	}
	var out []string
	for _, o := range Releases {
		if o.Set == r.Set {
			out = append(out, o.Version)
		}
	}
	return out
}

// OpenSearchVersion returns the OpenSearch version of an indexer package version.
func OpenSearchVersion(v string) (string, error) {
	r, ok := ReleaseOf(v)
	if !ok {
		return "", fmt.Errorf("no OpenSearch for indexer %s (known: %s)", v, strings.Join(Versions, ", "))
	}
	return r.OpenSearch, nil
}

// IndexerUID is the unprivileged user OpenSearch runs as (OpenSearch refuses to run as root).
const IndexerUID = 65534

// Cache is ~/.cache/siemlab: the Maven repository (m2) with the OpenSearch and security plugin
// zips and the modules' jars, and one prepared OpenSearch home per version: the integ-test
// distribution extracted, the security plugin installed and the Modules added.
type Cache struct {
	Dir      string // e.g. $HOME/.cache/siemlab
	Logger   *slog.Logger
	Progress io.Writer // per-step lines with timings while preparing (nil: none)
	Modules  []Module  // modules to add (nil: Modules)
}

func (c *Cache) m2() string { return filepath.Join(c.Dir, "m2") }

func (c *Cache) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c.Logger
}

func (c *Cache) modules() []Module {
	if c.Modules == nil {
		return Modules
	}
	return c.Modules
}

func (c *Cache) zips(osv string) (dist, plugin string) {
	dist = filepath.Join(c.m2(), "org/opensearch/distribution/integ-test-zip/opensearch", osv, "opensearch-"+osv+".zip")
	plugin = filepath.Join(c.m2(), "org/opensearch/plugin/opensearch-security", osv+".0", "opensearch-security-"+osv+".0.zip")
	return dist, plugin
}

// Home returns the prepared OpenSearch home of a version (it may not exist yet).
func (c *Cache) Home(osv string) string { return filepath.Join(c.Dir, "opensearch", osv) }

// Ready tells whether the home of osv is prepared as this code prepares it (layout version and
// module list in its ready marker, every module in place); the reason says why not.
func (c *Cache) Ready(osv string) (bool, string) { return homeReady(c.Home(osv), osv, c.modules()) }

// Prepare makes sure the OpenSearch home for osv exists and is current: it downloads the zips and
// module jars through Maven when missing, extracts the distribution, installs the security plugin,
// assembles the modules, writes the ready marker and puts the result in place atomically (a home
// left by older code, whose marker differs, is rebuilt and exchanged; concurrent labs serialise on
// a lock file). It reports whether work was done.
func (c *Cache) Prepare(ctx context.Context, osv string) (bool, error) {
	home := c.Home(osv)
	if ok, _ := c.Ready(osv); ok {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(home), 0o755); err != nil {
		return false, fmt.Errorf("opensearch cache: %w", err)
	}
	lock := flock.New(filepath.Join(filepath.Dir(home), ".lock"))
	if _, err := lock.TryLockContext(ctx, 200e6); err != nil {
		return false, fmt.Errorf("opensearch cache lock: %w", err)
	}
	defer lock.Unlock()
	ok, why := c.Ready(osv)
	if ok {
		return false, nil
	}
	c.logger().Info("preparing OpenSearch home", "version", osv, "home", home, "reason", why)
	dist, plugin := c.zips(osv)
	for _, a := range []struct{ file, artifact string }{
		{dist, "org.opensearch.distribution.integ-test-zip:opensearch:" + osv + ":zip"},
		{plugin, "org.opensearch.plugin:opensearch-security:" + osv + ".0:zip"},
	} {
		if _, err := os.Stat(a.file); err == nil {
			continue
		}
		c.logger().Info("downloading through Maven", "artifact", a.artifact)
		if _, err := run(ctx, os.Environ(), "", "mvn", "-q", "-Dmaven.repo.local="+c.m2(), "dependency:get", "-Dartifact="+a.artifact, "-Dtransitive=false"); err != nil {
			return false, fmt.Errorf("download %s: %w", a.artifact, err)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(home), ".prepare-"+osv+"-")
	if err != nil {
		return false, fmt.Errorf("opensearch cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	t0 := time.Now()
	if err := unzip(dist, tmp); err != nil {
		return false, err
	}
	extracted := filepath.Join(tmp, "opensearch-"+osv)
	javaHome, err := JavaHome()
	if err != nil {
		return false, err
	}
	env := append(os.Environ(), "OPENSEARCH_JAVA_HOME="+javaHome, "OPENSEARCH_PATH_CONF="+filepath.Join(extracted, "config"), "OPENSEARCH_TMPDIR="+tmp)
	if _, err := run(ctx, env, extracted, filepath.Join(extracted, "bin/opensearch-plugin"), "install", "--batch", "file://"+plugin); err != nil {
		return false, fmt.Errorf("install security plugin %s: %w", osv, err)
	}
	for _, f := range []string{"plugins/opensearch-security/tools/securityadmin.sh", "plugins/opensearch-security/tools/hash.sh"} {
		if err := os.Chmod(filepath.Join(extracted, f), 0o755); err != nil {
			return false, fmt.Errorf("opensearch cache: %w", err)
		}
	}
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "    distribution and security plugin for OpenSearch %s (%.1fs)\n", osv, time.Since(t0).Seconds())
	}
	work := filepath.Join(tmp, "maven")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return false, fmt.Errorf("opensearch cache: %w", err)
	}
	if err := c.addModules(ctx, extracted, osv, work, c.modules()); err != nil {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(extracted, readyMarker), markerFor(osv, c.modules()), 0o644); err != nil {
		return false, fmt.Errorf("opensearch cache: %w", err)
	}
	if err := replaceDir(extracted, home); err != nil {
		return false, fmt.Errorf("opensearch cache: %w", err)
	}
	return true, nil
}

func unzip(file, dst string) error {
	r, err := zip.OpenReader(file)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	defer r.Close()
	for _, f := range r.File {
		name := filepath.Clean(f.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return fmt.Errorf("unzip %s: bad entry %q", file, f.Name)
		}
		p := filepath.Join(dst, name)
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("unzip: %w", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("unzip: %w", err)
		}
		mode := f.Mode().Perm() | 0o444
		if err := writeFrom(p, mode, f.Open); err != nil {
			return fmt.Errorf("unzip %s: %w", f.Name, err)
		}
	}
	return nil
}

// LinkTree makes dst a copy of src made of hard links (a "farm": no extra disk, but reachable
// through dst's parents, which the unprivileged indexer user can traverse while ~ often is 0700).
// Files are copied when hard links are impossible (another filesystem). An existing dst is kept
// when its ready marker equals src's; otherwise (a farm of an older home) it is rebuilt and
// exchanged atomically.
func LinkTree(src, dst string) error {
	want, err := os.ReadFile(filepath.Join(src, readyMarker))
	if err != nil {
		return fmt.Errorf("link tree: %s is not a prepared home: %w", src, err)
	}
	if have, err := os.ReadFile(filepath.Join(dst, readyMarker)); err == nil && bytes.Equal(have, want) {
		return nil
	}
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("link tree: %w", err)
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(tmp, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		default:
			if err := os.Link(p, target); err != nil {
				if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) {
					return err
				}
				return copyFile(p, target, info.Mode().Perm())
			}
			return nil
		}
	})
	if err != nil {
		return fmt.Errorf("link %s to %s: %w", src, dst, err)
	}
	if err := replaceDir(tmp, dst); err != nil {
		return fmt.Errorf("link tree: %w", err)
	}
	return nil
}

// copyFile copies src to a new dst with mode.
func copyFile(src, dst string, mode fs.FileMode) error {
	return writeFrom(dst, mode, func() (io.ReadCloser, error) { return os.Open(src) })
}

// writeFrom writes what open reads to dst (created or truncated) with mode.
func writeFrom(dst string, mode fs.FileMode, open func() (io.ReadCloser, error)) error {
	in, err := open()
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// IndexerSpec describes one indexer package.
type IndexerSpec struct {
	Profile     Profile // names and paths (zero: the siem profile)
	Version     string  // upstream, e.g. 4.9.0
	Root        string  // DPKG_ROOT
	Dist        string  // the OpenSearch home farm this version's home links into
	HTTPPort    int
	TransPort   int
	ClusterName string
	JavaHome    string // the Java 17 home OpenSearch runs on (JavaHome)
	Heap        string // -Xms/-Xmx (default defaultIndexerHeap)
	// Cluster makes the node one of a multi-node cluster (distributed labs); nil: a single node.
	Cluster *IndexerCluster
}

// IndexerCluster is one node's part of a multi-node indexer cluster.
type IndexerCluster struct {
	NodeName     string   // node.name (also the node certificate's CN)
	Address      string   // network.host: the node's own loopback address
	SeedHosts    []string // discovery.seed_hosts: every node's transport address (host:port)
	ManagerNodes []string // cluster.initial_cluster_manager_nodes: every node's name
	NodesDN      string   // plugins.security.nodes_dn: a pattern every node's DN matches
	PathRepo     []string // path.repo: the snapshot directory every node shares (distributed_repo.go)
}

func yamlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = `"` + s + `"`
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func (spec IndexerSpec) profile() Profile {
	if spec.Profile.Name == "" {
		return Profiles[DefaultProfile]
	}
	return spec.Profile
}

// IndexerPackage returns the indexer package (siem-indexer, wazuh-indexer): home (symlinks into the OpenSearch farm: lib,
// modules, plugins and the bin scripts, plus the security-init wrapper), config files (conffiles),
// the unit, and a postinst that creates data/log dirs owned by the indexer user.
func IndexerPackage(spec IndexerSpec) (Package, error) {
	p := spec.profile()
	name := p.Indexer
	indexerHome, indexerConf, indexerData, indexerLogs, indexerTmp := p.IndexerHome(), p.IndexerConf(), p.IndexerData(), p.IndexerLogs(), p.IndexerTmp()
	if spec.JavaHome == "" {
		return Package{}, fmt.Errorf("%s %s: no Java home (JavaHome)", name, spec.Version)
	}
	var files []File
	add := func(f File) { files = append(files, f) }
	for _, d := range []string{"lib", "modules", "plugins"} {
		add(File{Path: indexerHome + "/" + d, Link: filepath.Join(spec.Dist, d)})
	}
	bins, err := os.ReadDir(filepath.Join(spec.Dist, "bin"))
	if err != nil {
		return Package{}, fmt.Errorf("%s %s: %w", name, spec.Version, err)
	}
	for _, b := range bins {
		if strings.HasSuffix(b.Name(), ".bat") || strings.HasSuffix(b.Name(), ".exe") {
			continue
		}
		add(File{Path: indexerHome + "/bin/" + b.Name(), Link: filepath.Join(spec.Dist, "bin", b.Name())})
	}
	add(File{Path: indexerHome + "/VERSION", Data: []byte(spec.Version + "\n")})
	add(File{Path: p.SecurityInit(), Mode: 0o755, Data: []byte(securityInitScript(p, spec.Root, spec.JavaHome))})

	add(File{Path: indexerConf + "/opensearch.yml", Conffile: true, Data: []byte(opensearchYML(spec))})
	jvm, err := os.ReadFile(filepath.Join(spec.Dist, "config/jvm.options"))
	if err != nil {
		return Package{}, fmt.Errorf("%s %s: %w", name, spec.Version, err)
	}
	add(File{Path: indexerConf + "/jvm.options", Conffile: true, Data: JVMOptions(jvm, filepath.Join(spec.Root, indexerLogs), filepath.Join(spec.Root, indexerData), spec.Heap)})
	log4j, err := os.ReadFile(filepath.Join(spec.Dist, "config/log4j2.properties"))
	if err != nil {
		return Package{}, fmt.Errorf("%s %s: %w", name, spec.Version, err)
	}
	add(File{Path: indexerConf + "/log4j2.properties", Conffile: true, Data: log4j})
	secDir := filepath.Join(spec.Dist, "config/opensearch-security")
	sec, err := os.ReadDir(secDir)
	if err != nil {
		return Package{}, fmt.Errorf("%s %s: %w", name, spec.Version, err)
	}
	for _, e := range sec {
		if !strings.HasSuffix(e.Name(), ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(secDir, e.Name()))
		if err != nil {
			return Package{}, fmt.Errorf("%s %s: %w", name, spec.Version, err)
		}
		add(File{Path: indexerConf + "/opensearch-security/" + e.Name(), Conffile: true, Data: data})
	}
	add(File{Path: "usr/lib/systemd/system/" + p.IndexerUnit(), Data: []byte(indexerUnitFile(spec))})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	owned := []string{indexerData, indexerLogs, indexerTmp, indexerConf}
	var post strings.Builder
	for _, d := range owned {
		fmt.Fprintf(&post, "mkdir -p \"$DPKG_ROOT/%s\"\n", d)
	}
	fmt.Fprintf(&post, "mkdir -p \"$DPKG_ROOT/%s/jvm.options.d\" \"$DPKG_ROOT/%s/certs\"\n", indexerConf, indexerConf)
	for _, d := range owned {
		fmt.Fprintf(&post, "chown -R %d:%d \"$DPKG_ROOT/%s\"\n", IndexerUID, IndexerUID, d)
	}
	return Package{
		Name:        name,
		Version:     spec.Version + "-1",
		Description: name + " (OpenSearch " + filepath.Base(spec.Dist) + " with the security plugin)",
		Files:       files,
		Postinst:    post.String(),
	}, nil
}

var (
	reXms      = regexp.MustCompile(`(?m)^-Xms\S+$`)
	reXmx      = regexp.MustCompile(`(?m)^-Xmx\S+$`)
	reLogs     = regexp.MustCompile(`(file=|Xloggc:|ErrorFile=)logs/`)
	reHeapDump = regexp.MustCompile(`HeapDumpPath=data`)
)

// defaultIndexerHeap is the lab OpenSearch's heap unless Options.IndexerHeap says otherwise.
const defaultIndexerHeap = "512m"

var reHeap = regexp.MustCompile(`^[1-9][0-9]{0,5}[mg]$`)

// JVMOptions rewrites the distribution's jvm.options: the heap (default 512m) and absolute
// log/dump paths.
func JVMOptions(orig []byte, logDir, dataDir, heap string) []byte {
	if !reHeap.MatchString(heap) {
		heap = defaultIndexerHeap
	}
	s := reXms.ReplaceAllString(string(orig), "-Xms"+heap)
	s = reXmx.ReplaceAllString(s, "-Xmx"+heap)
	s = reLogs.ReplaceAllString(s, "${1}"+logDir+"/")
	s = reHeapDump.ReplaceAllString(s, "HeapDumpPath="+dataDir)
	return []byte(s)
}

func opensearchYML(spec IndexerSpec) string {
	p := spec.profile()
	conf := filepath.Join(spec.Root, p.IndexerConf())
	certs := filepath.Join(conf, "certs")
	name := spec.ClusterName
	if name == "" {
		name = p.Name + "-cluster"
	}
	node, nodesDN := "node.name: node-1\nnetwork.host: 127.0.0.1", p.DN("node-1")
	discovery := "discovery.type: single-node"
	if c := spec.Cluster; c != nil {
		node, nodesDN = "node.name: "+c.NodeName+"\nnetwork.host: "+c.Address, c.NodesDN
		discovery = "discovery.seed_hosts: " + yamlList(c.SeedHosts) + "\ncluster.initial_cluster_manager_nodes: " + yamlList(c.ManagerNodes)
		if len(c.PathRepo) > 0 {
			discovery += "\npath.repo: " + yamlList(c.PathRepo)
		}
	}
	return fmt.Sprintf(`# %[10]s %[1]s (siemlab)
cluster.name: %[2]s
%[11]s
http.port: %[3]d
transport.port: %[4]d
%[12]s
path.data: %[5]s
path.logs: %[6]s
bootstrap.memory_lock: false

# like every Wazuh 4.x indexer: GET / reports 7.10.2 for Filebeat-oss
compatibility.override_main_response_version: true

plugins.security.ssl.http.enabled: true
plugins.security.ssl.http.pemcert_filepath: %[7]s/indexer.pem
plugins.security.ssl.http.pemkey_filepath: %[7]s/indexer-key.pem
plugins.security.ssl.http.pemtrustedcas_filepath: %[7]s/root-ca.pem
plugins.security.ssl.transport.pemcert_filepath: %[7]s/indexer.pem
plugins.security.ssl.transport.pemkey_filepath: %[7]s/indexer-key.pem
plugins.security.ssl.transport.pemtrustedcas_filepath: %[7]s/root-ca.pem
plugins.security.ssl.transport.enforce_hostname_verification: false
plugins.security.ssl.transport.resolve_hostname: false
plugins.security.authcz.admin_dn:
  - "%[8]s"
plugins.security.nodes_dn:
  - "%[9]s"
plugins.security.check_snapshot_restore_write_privileges: true
plugins.security.enable_snapshot_restore_privilege: true
plugins.security.restapi.roles_enabled: ["all_access", "security_rest_api_access"]
plugins.security.allow_default_init_securityindex: false
plugins.security.system_indices.enabled: true
plugins.security.system_indices.indices: [".opendistro-alerting-config", ".opendistro-alerting-alert*", ".opendistro-anomaly-results*", ".opendistro-anomaly-detector*", ".opendistro-anomaly-checkpoints", ".opendistro-anomaly-detection-state", ".opendistro-reports-*", ".opendistro-notifications-*", ".opendistro-notebooks", ".opensearch-observability", ".opendistro-asynchronous-search-response*", ".replication-metadata-store"]
`, spec.Version, name, spec.HTTPPort, spec.TransPort, filepath.Join(spec.Root, p.IndexerData()), filepath.Join(spec.Root, p.IndexerLogs()), certs,
		p.DN("admin"), nodesDN, p.Indexer, node, discovery)
}

func indexerUnitFile(spec IndexerSpec) string {
	r, p := spec.Root, spec.profile()
	log := filepath.Join(r, p.IndexerLogs(), p.Indexer+".out")
	return fmt.Sprintf(`[Unit]
Description=%[8]s %[1]s (OpenSearch)
Documentation=https://opensearch.org/docs/

[Service]
Type=simple
Environment=OPENSEARCH_HOME=%[2]s
Environment=OPENSEARCH_PATH_CONF=%[3]s
Environment=OPENSEARCH_JAVA_HOME=%[4]s
Environment=OPENSEARCH_TMPDIR=%[5]s
WorkingDirectory=%[2]s
# OpenSearch refuses to run as root: drop to an unprivileged uid.
ExecStart=/usr/bin/setpriv --reuid=%[6]d --regid=%[6]d --clear-groups -- %[2]s/bin/opensearch
StandardOutput=append:%[7]s
StandardError=append:%[7]s
LimitNOFILE=65535
TimeoutStopSec=2
SuccessExitStatus=143
KillSignal=SIGTERM
SendSIGKILL=yes

[Install]
WantedBy=default.target
`, spec.Version, filepath.Join(r, p.IndexerHome()), filepath.Join(r, p.IndexerConf()), spec.JavaHome, filepath.Join(r, p.IndexerTmp()), IndexerUID, log, p.Indexer)
}

// securityInitScript is the Wazuh-like indexer-security-init.sh: it reads opensearch.yml for host,
// port and CA, expects admin.pem/admin-key.pem next to the CA, and runs the plugin's securityadmin.
func securityInitScript(p Profile, root, javaHome string) string {
	return `#!/bin/bash
# indexer-security-init.sh (siemlab): initialise the OpenSearch security plugin, like Wazuh's script.
# Usage: indexer-security-init.sh [-ho|--host HOST] [-p|--port PORT] [--options "SECURITYADMIN OPTIONS"] [-backup DIR]
set -euo pipefail
HOME_DIR="` + filepath.Join(root, p.IndexerHome()) + `"
CONF_DIR="` + filepath.Join(root, p.IndexerConf()) + `"
OPTIONS="-icl -nhnv"
HOST=""
PORT=""
usage() {
  echo "Usage: $0 [-ho|--host HOST] [-p|--port PORT] [--options \"OPTIONS\"] [-backup DIR]"
  echo "  --options replaces the default securityadmin options (-icl -nhnv)"
}
while [ $# -gt 0 ]; do
  case "$1" in
    -ho|--host) HOST=$2; shift 2 ;;
    -p|--port) PORT=$2; shift 2 ;;
    --options) OPTIONS=$2; shift 2 ;;
    -backup|--backup) OPTIONS="-backup $2 -icl -nhnv"; mkdir -p "$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "Unknown option: $1" >&2; usage >&2; exit 1 ;;
  esac
done
yml() { grep -E "^[[:space:]]*$1:" "$CONF_DIR/opensearch.yml" | head -n1 | sed -E 's/^[^:]+:[[:space:]]*//; s/["'"'"']//g; s/[[:space:]]+$//'; }
[ -n "$HOST" ] || HOST=$(yml network.host)
[ -n "$HOST" ] || HOST=127.0.0.1
[ "$HOST" = "0.0.0.0" ] && HOST=127.0.0.1
[ -n "$PORT" ] || PORT=$(yml http.port)
[ -n "$PORT" ] || PORT=9200
CACERT=$(yml plugins.security.ssl.http.pemtrustedcas_filepath)
case "$CACERT" in /*) ;; *) CACERT="$CONF_DIR/$CACERT" ;; esac
CERTDIR=$(dirname "$CACERT")
export OPENSEARCH_PATH_CONF="$CONF_DIR" OPENSEARCH_JAVA_HOME="${OPENSEARCH_JAVA_HOME:-` + javaHome + `}"
# shellcheck disable=SC2086
exec bash "$HOME_DIR/plugins/opensearch-security/tools/securityadmin.sh" -cd "$CONF_DIR/opensearch-security" \
  -cacert "$CACERT" -cert "$CERTDIR/admin.pem" -key "$CERTDIR/admin-key.pem" -h "$HOST" -p "$PORT" $OPTIONS
`
}

// InternalUsersYML returns internal_users.yml with the given bcrypt hashes (admin, kibanaserver).
func InternalUsersYML(adminHash, kibanaHash string) []byte {
	return []byte(fmt.Sprintf(`---
# generated by siemlab
_meta:
  type: "internalusers"
  config_version: 2

admin:
  hash: "%s"
  reserved: true
  backend_roles:
  - "admin"
  description: "Admin user"

kibanaserver:
  hash: "%s"
  reserved: true
  description: "Dashboard service user"
`, adminHash, kibanaHash))
}
