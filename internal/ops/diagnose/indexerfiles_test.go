package diagnose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/units"
)

// procHolds makes pid (command line cmd) hold target open as its descriptor fd.
func (f *fixture) procHolds(t *testing.T, pid, fd, target string, cmd ...string) {
	t.Helper()
	f.write(t, filepath.Join(f.proc, pid, "cmdline"), strings.Join(cmd, "\x00")+"\x00")
	if err := os.MkdirAll(filepath.Join(f.proc, pid, "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(f.proc, pid, "fd", fd)); err != nil {
		t.Fatal(err)
	}
}

// A second OpenSearch started by hand on the same path.data holds node.lock: the real lines of
// OpenSearch 2.x, the holder named from /proc as the ports check names a port's.
func TestNodeLockHeld(t *testing.T) {
	f := newFixture(t)
	data := filepath.Join(f.root, "var/lib/siem-indexer")
	lock := filepath.Join(data, "nodes/0/node.lock")
	f.write(t, lock, "")
	f.procHolds(t, "7311", "5", lock, "/usr/share/siem-indexer/jdk/bin/java", "-Xms1g", "org.opensearch.bootstrap.OpenSearch")
	lines := []string{
		"[2026-12-07T20:40:03,101][ERROR][o.o.b.OpenSearchUncaughtExceptionHandler] [node-1] uncaught exception in thread [main]",
		"org.opensearch.bootstrap.StartupException: java.lang.IllegalStateException: failed to obtain node locks, tried [" + data + "]; maybe these locations are not writable or multiple nodes were started on the same data path?",
		"\tat org.opensearch.bootstrap.OpenSearch.init(OpenSearch.java:184) ~[opensearch-2.19.2.jar:2.19.2]",
		"Caused by: java.lang.IllegalStateException: failed to obtain node locks, tried [" + data + "]; maybe these locations are not writable or multiple nodes were started on the same data path?",
		"Caused by: java.io.IOException: failed to obtain lock on " + data + "/nodes/0",
		"Caused by: org.apache.lucene.store.LockObtainFailedException: Lock held by another program: " + lock,
		"\tat org.apache.lucene.store.NativeFSLockFactory.obtainFSLock(NativeFSLockFactory.java:117) ~[lucene-core-9.12.1.jar:9.12.1]",
	}
	r := f.diagnose(t, failed, lines)
	assertFinding(t, r, KindNodeLock, []string{lock, "pid 7311 (/usr/share/siem-indexer/jdk/bin/java -Xms1g org.opensearch.bootstrap.OpenSearch)"},
		[]string{"kill 7311", "do not delete node.lock", "siemctl services start indexer"})
	if strings.Contains(r.Fix(), "chown") {
		t.Errorf("a lock is no permission: %s", r.Fix())
	}
}

// The keystore overwritten by hand: OpenSearch 2.19's own words (its keystore tool on such a file
// prints the same exception: the resource is no path, the stack names KeyStoreWrapper); a keystore
// cut short is "Keystore has been corrupted or tampered with".
func TestKeystoreCorrupted(t *testing.T) {
	f := newFixture(t)
	f.cfg.Indexer.SecurityInit = []string{"/usr/share/siem-indexer/bin/indexer-security-init.sh"}
	f.cfg.BackupDir = "/var/backups/siemctl"
	ks := filepath.Join(f.root, "etc/siem-indexer/opensearch.keystore")
	f.write(t, ks, "this is not a keystore, written over it by hand\n")
	lines := []string{
		"[2026-12-07T20:40:02,551][ERROR][o.o.b.OpenSearchUncaughtExceptionHandler] [node-1] uncaught exception in thread [main]",
		"org.opensearch.bootstrap.StartupException: org.apache.lucene.index.CorruptIndexException: codec header mismatch: actual header=1952999795 vs expected header=1071082519 (resource=Endianness reverser Checksum Index Input wrapper)",
		"\tat org.opensearch.bootstrap.OpenSearch.init(OpenSearch.java:184) ~[opensearch-2.19.3.jar:2.19.3]",
		"Caused by: org.apache.lucene.index.CorruptIndexException: codec header mismatch: actual header=1952999795 vs expected header=1071082519 (resource=Endianness reverser Checksum Index Input wrapper)",
		"\tat org.apache.lucene.codecs.CodecUtil.checkHeader(CodecUtil.java:187) ~[lucene-core-9.12.2.jar:9.12.2]",
		"\tat org.opensearch.common.settings.KeyStoreWrapper.load(KeyStoreWrapper.java:251) ~[opensearch-2.19.3.jar:2.19.3]",
		"\tat org.opensearch.bootstrap.Bootstrap.loadSecureSettings(Bootstrap.java:257) ~[opensearch-2.19.3.jar:2.19.3]",
	}
	fix := []string{"restore " + ks + " from a backup of " + filepath.Join(f.root, "etc/siem-indexer") + " (siemctl's upgrades keep one under /var/backups/siemctl)",
		"OPENSEARCH_PATH_CONF=" + filepath.Join(f.root, "etc/siem-indexer") + " /usr/share/siem-indexer/bin/opensearch-keystore create", "opensearch-keystore add <setting>"}
	r := f.diagnose(t, failed, lines)
	assertFinding(t, r, KindKeystore, []string{"keystore " + ks + " is corrupted"}, fix)
	tampered := []string{lines[0], "org.opensearch.bootstrap.StartupException: java.lang.SecurityException: Keystore has been corrupted or tampered with",
		"Caused by: java.lang.SecurityException: Keystore has been corrupted or tampered with", "Caused by: java.io.EOFException: read past EOF"}
	assertFinding(t, f.diagnose(t, failed, tampered), KindKeystore, []string{"keystore " + ks + " is corrupted"}, fix)
	// a corrupted index file is no keystore
	index := []string{lines[0], "Caused by: org.apache.lucene.index.CorruptIndexException: codec header mismatch: actual header=0 vs expected header=1071082519 (resource=BufferedChecksumIndexInput(NIOFSIndexInput(path=\"/var/lib/siem-indexer/nodes/0/_state/_1.cfs\")))",
		"\tat org.apache.lucene.codecs.CodecUtil.checkHeader(CodecUtil.java:187) ~[lucene-core-9.12.2.jar:9.12.2]",
		"\tat org.opensearch.gateway.PersistedClusterStateService.loadBestOnDiskState(PersistedClusterStateService.java:347) ~[opensearch-2.19.3.jar:2.19.3]"}
	if r := f.diagnose(t, failed, index); r.Cause().Kind == KindKeystore {
		t.Errorf("%+v", r)
	}
}

// The node's key made unreadable by hand (chmod 000): a dedicated cause, the chown/chmod of that
// file alone, not of the directory, not recursive.
func TestIndexerTLSKeyUnreadable(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")
	b, _ := os.ReadFile(conf)
	key := filepath.Join(f.root, "etc/siem-indexer/certs/node-1-key.pem")
	f.write(t, conf, string(b)+"plugins.security.ssl.transport.pemkey_filepath: certs/node-1-key.pem\n")
	f.write(t, key, "-----BEGIN PRIVATE KEY-----\n")
	lines := []string{
		"[2026-12-07T20:40:04,210][ERROR][o.o.b.OpenSearchUncaughtExceptionHandler] [node-1] uncaught exception in thread [main]",
		"org.opensearch.bootstrap.StartupException: OpenSearchException[Unable to read " + key + " (" + key + "). Please make sure this files exists and is readable regarding to permissions. Property: plugins.security.ssl.transport.pemkey_filepath]",
		"Caused by: java.nio.file.AccessDeniedException: " + key,
	}
	r := f.diagnose(t, failed, lines)
	assertFinding(t, r, KindTLSFile, []string{"cannot read its TLS file " + key + " (plugins.security.ssl.transport.pemkey_filepath in " + conf + ")"},
		[]string{"&& chmod 0400 " + key, "that file alone", "siemctl services start indexer"})
	if strings.Contains(r.Fix(), "-R") {
		t.Errorf("recursive: %s", r.Fix())
	}
	if !errors.Is(r.Err(), ErrAccessDenied) {
		t.Errorf("class %v, want ErrAccessDenied", r.Err())
	}
	// the same with only Java's line
	r = f.diagnose(t, failed, lines[2:])
	assertFinding(t, r, KindTLSFile, []string{key, "plugins.security.ssl.transport.pemkey_filepath"}, nil)
	// gone, not unreadable: a missing file is no permission's fault
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	r = f.diagnose(t, failed, lines)
	assertFinding(t, r, KindTLSFile, []string{"names " + key + ", which does not exist"}, nil)
	if r.Err() != nil {
		t.Errorf("class of a missing file %v, want none", r.Err())
	}
}

// http.port changed by hand: the node runs on another port than siemctl's indexer.url, and
// siemctl's start waits for it in vain.
func TestHTTPPortMoved(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")
	b, _ := os.ReadFile(conf)
	f.write(t, conf, strings.Replace(string(b), "http.port: 13300", "http.port: 13301", 1))
	active := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running", MainPID: 4242}
	lines := []string{
		"[2026-12-07T20:40:09,870][INFO ][o.o.t.TransportService   ] [node-1] publish_address {127.0.0.1:23400}, bound_addresses {127.0.0.1:23400}",
		"[2026-12-07T20:40:12,004][INFO ][o.o.h.AbstractHttpServerTransport] [node-1] publish_address {127.0.0.1:13301}, bound_addresses {127.0.0.1:13301}",
		"[2026-12-07T20:40:12,005][INFO ][o.o.n.Node               ] [node-1] started",
	}
	r := f.diagnose(t, active, lines)
	c := r.Cause()
	if c.Kind != KindHTTPPort || !strings.Contains(c.Cause, "listens on port 13301") || !strings.Contains(c.Cause, "asks port 13300") ||
		!strings.Contains(c.Fix, "set http.port: 13300 in "+conf) || !strings.Contains(c.Fix, "set indexer.url to https://127.0.0.1:13301") {
		t.Fatalf("%+v", r)
	}
	if !errors.Is(r.Err(), ErrConfigMismatch) {
		t.Errorf("class %v, want ErrConfigMismatch", r.Err())
	}
	// no log line: the unit's own process listening says it
	f.write(t, filepath.Join(f.proc, "net/tcp"), `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:33F5 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 81 1 0000000000000000 100 0 0 10 0
`)
	f.procHolds(t, "4242", "7", "socket:[81]", "java", "org.opensearch.bootstrap.OpenSearch")
	in := Input{Component: "indexer", Unit: active, Config: f.cfg,
		LogLines:  func(context.Context, units.UnitStatus, int) ([]string, error) { return nil, nil },
		Processes: func(context.Context) ([]int, error) { return []int{4242}, nil }}
	r = Diagnose(context.Background(), in, Host{ProcRoot: f.proc})
	if c := r.Cause(); c.Kind != KindHTTPPort || !strings.Contains(c.Cause, "listens on port 13301") {
		t.Fatalf("%+v", r)
	}
	// the same port: nothing to say about it
	f.write(t, conf, string(b))
	if r := f.diagnose(t, active, lines[:1]); r.Cause().Kind == KindHTTPPort {
		t.Fatalf("%+v", r)
	}
}
