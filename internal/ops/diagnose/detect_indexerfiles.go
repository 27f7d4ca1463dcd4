package diagnose

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/units"
)

// ---- the indexer's node lock held by another process ---------------------------------

// KindNodeLock is a node.lock of the indexer's data path that another process holds.
const KindNodeLock = "node-lock"

// lockHeld is Lucene's "Lock held by another program: /var/lib/wazuh-indexer/nodes/0/node.lock".
var lockHeld = regexp.MustCompile(`Lock held by (another program|this virtual machine): (/\S+)`)

// nodeLocks is OpenSearch's own line, which names the data path and the lock id when Lucene's line
// is not in the evidence (OpenSearch 2.11: "failed to obtain node locks, tried [[/var/lib/x]] with
// lock id [0]; maybe these locations are not writable or multiple nodes were started without
// increasing [node.max_local_storage_nodes] (was [1])?"): the lock is <path>/nodes/<id>/node.lock.
var nodeLocks = regexp.MustCompile(`failed to obtain node locks, tried \[\[(/[^\],]+)\]\] with lock id \[(\d+)\]`)

func detectNodeLock(ctx context.Context, ev *Evidence) (Finding, bool) {
	var (
		lock string
		f    Finding
	)
	if i, line := ev.find("Lock held by another program: ", "Lock held by this virtual machine: "); i >= 0 {
		m := lockHeld.FindStringSubmatch(ev.Lines[i])
		if m == nil {
			return Finding{}, false
		}
		lock = m[2]
		f = Finding{Kind: KindNodeLock, at: i, Evidence: []string{line}}
		if j, l := ev.find("failed to obtain node locks"); j >= 0 {
			f.Evidence = append([]string{l}, f.Evidence...)
		}
	} else if j, l := ev.find("failed to obtain node locks, tried [["); j >= 0 {
		m := nodeLocks.FindStringSubmatch(ev.Lines[j])
		if m == nil {
			return Finding{}, false
		}
		lock = filepath.Join(m[1], "nodes", m[2], "node.lock")
		f = Finding{Kind: KindNodeLock, at: j, Evidence: []string{l}}
	} else {
		return Finding{}, false
	}
	holders, unreadable, err := hostfacts.FileHolders(ctx, ev.Host.ProcRoot, lock, ev.path(lock))
	if err == nil && ev.Processes != nil {
		// the unit's own processes (a second JVM of the same start) are no foreign holder
		if own, perr := ev.Processes(ctx); perr == nil {
			holders = slices.DeleteFunc(holders, func(p hostfacts.Process) bool { return slices.Contains(own, p.PID) })
		}
	}
	h := hostfacts.Holder{Processes: holders, Unreadable: unreadable}
	switch {
	case err != nil:
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: cannot read who holds it: %v", lock, err))
	case len(holders) == 0 && !unreadable:
		f.Evidence = append(f.Evidence, lock+": no process holds it now (the holder has gone)")
		f.Cause = fmt.Sprintf("the indexer's data path lock %s was held by another process when it started", lock)
		f.Fix = fmt.Sprintf("nothing holds it now: %s (do not delete node.lock: the lock is the file's OS lock, not the file)", start(ev.Component))
		return f, true
	default:
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s held open by %s", lock, h.Describe()))
	}
	f.Cause = fmt.Sprintf("the indexer's data path lock %s is held by another process: %s (a second OpenSearch on the same path.data)", lock, h.Describe())
	f.Fix = fmt.Sprintf("stop %s (a node started by hand: kill %s; it is not the unit's), then %s; do not delete node.lock, and never run two nodes on one data path",
		h.Describe(), joinPIDs(h.PIDs()), start(ev.Component))
	return f, true
}

func joinPIDs(pids []int) string {
	if len(pids) == 0 {
		return "<pid> (ps -ef | grep opensearch)"
	}
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

// ---- the indexer's keystore corrupted --------------------------------------------------

// KindKeystore is an opensearch.keystore the node cannot read (corrupted, tampered with).
const KindKeystore = "keystore"

func detectKeystore(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Keystore has been corrupted or tampered with", "codec header mismatch")
	if i < 0 {
		return Finding{}, false
	}
	if strings.Contains(line, "codec header mismatch") && !strings.Contains(line, "keystore") && !ev.framesNear(i, "KeyStoreWrapper") {
		// a corrupted index file, not the keystore: Lucene's line names no file for the
		// keystore (resource=Endianness reverser Checksum Index Input wrapper), its stack does
		return Finding{}, false
	}
	ks := "opensearch.keystore"
	conf := ""
	if ev.Config != nil && ev.Config.Indexer.ConfigDir != "" {
		conf = ev.Config.Indexer.ConfigDir
		ks = filepath.Join(conf, "opensearch.keystore")
	}
	f := Finding{Kind: KindKeystore, at: i, Evidence: []string{}}
	for _, mark := range []string{"Keystore has been corrupted or tampered with", "codec header mismatch"} {
		if j, l := ev.find(mark); j >= 0 {
			f.Evidence = append(f.Evidence, l)
		}
	}
	if len(f.Evidence) == 0 {
		f.Evidence = append(f.Evidence, line)
	}
	if info, err := os.Stat(ev.path(ks)); err == nil {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %d bytes, modified %s", ks, info.Size(), info.ModTime().Format("2006-01-02 15:04:05")))
	}
	_, uid, gid := ev.serviceUser()
	as := "<the service user>"
	if uid >= 0 {
		as = nameOf(uid, false)
	}
	tool := ev.indexerTool("opensearch-keystore")
	f.Cause = fmt.Sprintf("the indexer's keystore %s is corrupted (its header does not read as a keystore)", ks)
	backup := "a backup of " + cmpOr(conf, "the indexer's config directory")
	if ev.Config != nil && ev.Config.BackupDir != "" {
		backup += " (siemctl's upgrades keep one under " + ev.Config.BackupDir + ")"
	}
	f.Fix = fmt.Sprintf("restore %s from %s, owned by %s:%s as before; or re-create it: `sudo -u %s OPENSEARCH_PATH_CONF=%s %s create` and add again each secure setting it held (`%s add <setting>`; `%s list` on the backup names them); then %s",
		ks, backup, nameOf(uid, false), nameOf(gid, true), as, cmpOr(conf, "<config_dir>"), tool, tool, tool, start(ev.Component))
	return f, true
}

// framesNear: a stack frame of the exception at line i (the next lines) mentions sub.
func (ev *Evidence) framesNear(i int, sub string) bool {
	for j := i + 1; j < len(ev.Lines) && j <= i+12; j++ {
		t := strings.TrimSpace(ev.Lines[j])
		if !strings.HasPrefix(t, "at ") && !strings.HasPrefix(t, "...") {
			return false
		}
		if strings.Contains(t, sub) {
			return true
		}
	}
	return false
}

// indexerTool is a tool of the indexer's bin directory (next to the security init tool, or the
// package's /usr/share/<package>/bin).
func (ev *Evidence) indexerTool(name string) string {
	if ev.Config != nil {
		if si := ev.Config.Indexer.SecurityInit; len(si) > 0 && filepath.Base(filepath.Dir(si[0])) == "bin" {
			return filepath.Join(filepath.Dir(si[0]), name)
		}
		if p := ev.Config.Indexer.Package; p != "" {
			return filepath.Join("/usr/share", p, "bin", name)
		}
	}
	return name
}

// ---- a TLS file of the indexer it cannot read ------------------------------------------

// KindTLSFile is a certificate or key of the indexer's security plugin that the service user
// cannot read, or that does not exist.
const KindTLSFile = "tls-file"

var (
	// "Unable to read /etc/wazuh-indexer/certs/node-key.pem (/etc/…/node-key.pem). Please make sure this files exists and is readable regarding to permissions. Property: plugins.security.ssl.transport.pemkey_filepath"
	unableToRead = regexp.MustCompile(`Unable to read (\S+) \(([^)]+)\)\. Please make sure this files? exists and is readable regarding to permissions\. Property: ([\w.]+)`)
	deniedPEM    = regexp.MustCompile(`AccessDeniedException: (/\S+\.(?:pem|key|crt|p12|jks))`)
)

func detectIndexerTLSFile(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Please make sure this file", "AccessDeniedException: ")
	if i < 0 {
		return Finding{}, false
	}
	var path, key string
	if m := unableToRead.FindStringSubmatch(ev.Lines[i]); m != nil {
		path, key = m[2], m[3]
	} else if m := deniedPEM.FindStringSubmatch(ev.Lines[i]); m != nil {
		path = m[1]
		key = ev.tlsSettingFor(path)
	} else {
		return Finding{}, false
	}
	file := ev.indexerYAMLFile()
	f := Finding{Kind: KindTLSFile, at: i, Evidence: []string{line}}
	setting := "a plugins.security.ssl setting"
	if key != "" {
		setting = key + " in " + file
	}
	info, err := os.Stat(ev.path(path))
	if err != nil {
		f.Cause = fmt.Sprintf("%s names %s, which does not exist", setting, path)
		f.Fix = fmt.Sprintf("put the file back at %s (from its backup or the certificates tool's output) or point %s at where it is, then %s", path, setting, start(ev.Component))
		return f, true
	}
	user, uid, gid := ev.serviceUser()
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: owner %s, mode %s; the indexer runs as %s", path, ownerOf(info), info.Mode().Perm(), user))
	f.Cause = fmt.Sprintf("the indexer's service user cannot read its TLS file %s (%s)", path, setting)
	f.denied = true
	switch {
	case uid < 0:
		f.Fix = fmt.Sprintf("give the user the indexer runs as read access to %s alone (chown that file to it, chmod 0400), then %s", path, start(ev.Component))
	case ev.ownsPath(path):
		f.Fix = fmt.Sprintf("`chown %s:%s %s && chmod 0400 %s` (that file alone, not the directory), then %s", nameOf(uid, false), nameOf(gid, true), path, path, start(ev.Component))
	default:
		f.Fix = fmt.Sprintf("%s is outside the indexer's own directories: do not change its owner; copy it into %s/certs (owned by %s, mode 0400) and point %s at the copy, then %s",
			path, ev.Config.Indexer.ConfigDir, nameOf(uid, false), setting, start(ev.Component))
	}
	return f, true
}

// tlsSettingFor is the opensearch.yml plugins.security.ssl.* setting naming path ("" when none).
func (ev *Evidence) tlsSettingFor(path string) string {
	y := ev.indexerYAML()
	keys := make([]string, 0, len(y))
	for k := range y {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := y[k]
		if !strings.HasPrefix(k, "plugins.security.ssl.") || v == "" {
			continue
		}
		if v == path || (ev.Config != nil && filepath.Join(ev.Config.Indexer.ConfigDir, v) == path) {
			return k
		}
	}
	return ""
}

// ---- the indexer listening on another port than siemctl asks ----------------------------

// KindHTTPPort is an indexer whose HTTP port (opensearch.yml http.port, what it binds) is not
// the port of siemctl's indexer.url: it runs and siemctl's readiness probe never reaches it.
const KindHTTPPort = "http-port"

// httpPublish is OpenSearch's "[o.o.h.AbstractHttpServerTransport] [node-1] publish_address {127.0.0.1:9201}, bound_addresses {…}".
var httpPublish = regexp.MustCompile(`AbstractHttpServerTransport\s*\].*publish_address \{([^}]+)\}`)

// runningHere is the component's URL (siemctl's config) when the unit runs or is still starting
// and the URL names this host, with its port (the scheme's default when none); ok is false
// otherwise: a failed start has its own cause in its log, and another host's component reads
// another host's files.
func (ev *Evidence) runningHere(raw string) (u *url.URL, port string, ok bool) {
	if raw == "" || !ev.Unit.IsActive() && ev.Unit.ActiveState != units.Activating {
		return nil, "", false
	}
	u, err := url.Parse(raw)
	if err != nil || !localHost(u.Hostname()) {
		return nil, "", false
	}
	port = u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return u, port, true
}

func detectHTTPPort(ctx context.Context, ev *Evidence) (Finding, bool) {
	if ev.Config == nil {
		return Finding{}, false
	}
	u, want, ok := ev.runningHere(ev.Config.Indexer.URL)
	if !ok {
		return Finding{}, false
	}
	y := ev.indexerYAML()
	conf := y["http.port"]
	f := Finding{Kind: KindHTTPPort, at: len(ev.Lines)}
	listens := ""
	if i, line := lastMatch(ev.Lines, httpPublish); i >= 0 {
		if _, p, err := net.SplitHostPort(httpPublish.FindStringSubmatch(line)[1]); err == nil {
			listens = p
			f.Evidence = append(f.Evidence, clip(line))
		}
	}
	if listens == "" && ev.Processes != nil {
		listens = ev.unitListens(ctx, conf)
	}
	switch {
	case listens != "" && listens != want:
	case listens == "" && conf != "" && conf != want && !strings.Contains(conf, "-"):
	default:
		return Finding{}, false
	}
	if conf != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: http.port: %s", ev.indexerYAMLFile(), conf))
	}
	got := cmpOr(listens, conf)
	f.Cause = fmt.Sprintf("the indexer listens on port %s (http.port in %s) and siemctl's indexer.url %s asks port %s", got, ev.indexerYAMLFile(), ev.Config.Indexer.URL, want)
	if listens == "" {
		f.Cause = fmt.Sprintf("opensearch.yml says http.port %s (%s) and siemctl's indexer.url %s asks port %s", conf, ev.indexerYAMLFile(), ev.Config.Indexer.URL, want)
	}
	f.Fix = fmt.Sprintf("set http.port: %s in %s again and siemctl services restart indexer; or, if port %s is meant, set indexer.url to %s in siemctl's config (and the shipper's output.elasticsearch.hosts and the dashboard's opensearch.hosts, which name port %s too)",
		want, ev.indexerYAMLFile(), got, withPort(u, got), want)
	return f, true
}

// unitListens is a TCP port the unit's processes listen on other than the transport port
// ("" when none found): the HTTP port the node bound.
func (ev *Evidence) unitListens(ctx context.Context, httpPort string) string {
	own, err := ev.Processes(ctx)
	if err != nil || len(own) == 0 {
		return ""
	}
	l, err := hostfacts.ReadListening(ctx, ev.Host.ProcRoot)
	if err != nil {
		return ""
	}
	transport := ev.indexerYAML()["transport.port"]
	ports := l.Ports("tcp")
	hs, err := l.Holders(ctx, ev.Host.ProcRoot, "tcp", ports...)
	if err != nil {
		return ""
	}
	var found []string
	for _, p := range ports {
		if strconv.Itoa(p) == transport || (transport == "" && p >= 9300 && p < 9400) {
			continue
		}
		if slices.ContainsFunc(hs[p].PIDs(), func(pid int) bool { return slices.Contains(own, pid) }) {
			found = append(found, strconv.Itoa(p))
		}
	}
	if slices.Contains(found, httpPort) {
		return httpPort
	}
	if len(found) > 0 {
		return found[0]
	}
	return ""
}

func lastMatch(lines []string, re *regexp.Regexp) (int, string) {
	for i := len(lines) - 1; i >= 0; i-- {
		if re.MatchString(lines[i]) {
			return i, lines[i]
		}
	}
	return -1, ""
}

func localHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func withPort(u *url.URL, port string) string {
	v := *u
	v.Host = net.JoinHostPort(u.Hostname(), port)
	return v.String()
}
