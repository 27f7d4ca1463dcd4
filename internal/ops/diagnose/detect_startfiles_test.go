package diagnose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/units"
)

// jvm.options moved away by hand: the launcher's own NoSuchFileException names the file; the
// fix is to put it back (was "act on the lines above"). Lines from the lab's OpenSearch.
func TestMissingFile(t *testing.T) {
	f := newFixture(t)
	jvm := filepath.Join(f.root, "etc/siem-indexer/jvm.options")
	r := f.diagnose(t, failed, []string{
		`Exception in thread "main" java.nio.file.NoSuchFileException: ` + jvm,
		"\tat java.base/sun.nio.fs.UnixException.translateToIOException(UnixException.java:92)",
		"\tat org.opensearch.tools.launchers.JvmOptionsParser.readJvmOptionsFiles(JvmOptionsParser.java:180)",
	})
	assertFinding(t, r, KindMissingFile, []string{"the indexer needs " + jvm + ", which does not exist"},
		[]string{jvm + ": put it back from a backup", "siemctl services start indexer"})
}

// network.host set to an address the host does not have: the setting, its value and line, not
// the bare BindException (real lines of OpenSearch 2.11).
func TestBindAddress(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")
	b, _ := os.ReadFile(conf)
	f.write(t, conf, strings.Replace(string(b), "network.host: 127.0.0.1", "network.host: 10.255.255.1", 1))
	r := f.diagnose(t, failed, []string{
		"org.opensearch.bootstrap.StartupException: BindTransportException[Failed to bind to 10.255.255.1:23670]; nested: BindException[Cannot assign requested address];",
		"Caused by: java.net.BindException: Cannot assign requested address",
		"Likely root cause: java.net.BindException: Cannot assign requested address",
	})
	assertFinding(t, r, KindBindAddress, []string{"the indexer cannot bind network.host: 10.255.255.1 (line 3): not an address of this host (" + conf + ")"},
		[]string{"set network.host in " + conf + " to an address of this host", "siemctl services start indexer"})
}

// server.port changed by hand: the dashboard runs, on another port than dashboard.url's; the cause
// names both ports (from its own "running at" line) and the fix sets it back (was "still starting").
func TestDashboardPortMoved(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "etc/siem-dashboard")
	_ = os.MkdirAll(conf, 0o755)
	file := filepath.Join(conf, "dashboard.yml")
	if err := os.WriteFile(file, []byte("server.port: 9972\nserver.host: 127.0.0.1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(root, "none.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dashboard.ConfigDir, cfg.Dashboard.URL = conf, "https://127.0.0.1:9971"
	for name, lines := range map[string][]string{
		"the lab's line":              {`{"time":"2026-12-08T01:57:03.087668732Z","level":"INFO","msg":"http server running at https://127.0.0.1:9972","tags":["listening","info"]}`},
		"OpenSearch Dashboards' line": {`{"type":"log","@timestamp":"2026-12-08T01:57:03Z","tags":["listening","info"],"pid":61,"message":"Server running at https://127.0.0.1:9972"}`},
		"no line: the file says it":   nil,
	} {
		in := Input{Component: "dashboard", Unit: units.UnitStatus{Name: "siem-dashboard.service", ActiveState: "active", SubState: "running"}, Config: cfg,
			LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return lines, nil }}
		r := Diagnose(context.Background(), in, Host{ProcRoot: filepath.Join(root, "proc")})
		f := r.Cause()
		// read through the services' root (/proc/PID/root), named as the operator sees it
		inRoot := Diagnose(context.Background(), Input{Component: "dashboard", Unit: in.Unit, Config: withDir(cfg, strings.TrimPrefix(conf, root)), LogLines: in.LogLines},
			Host{Root: root, ProcRoot: filepath.Join(root, "proc")})
		if c := inRoot.Cause(); c.Kind != KindDashboardPort || !strings.Contains(c.Cause, "(server.port in /etc/siem-dashboard/dashboard.yml)") {
			t.Errorf("%s, under a root: %+v", name, inRoot.Findings)
		}
		if f.Kind != KindDashboardPort || !strings.Contains(f.Cause, "listens on port 9972 (server.port in "+file+") and siemctl's dashboard.url https://127.0.0.1:9971 asks port 9971") ||
			!strings.Contains(f.Fix, "set server.port: 9971 in "+file) || !errors.Is(r.Err(), ErrConfigMismatch) {
			t.Errorf("%s: %+v", name, r.Findings)
		}
	}
	// the port as dashboard.url asks: nothing to say
	if err := os.WriteFile(file, []byte("server.port: 9971\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	in := Input{Component: "dashboard", Unit: units.UnitStatus{Name: "siem-dashboard.service", ActiveState: "active", SubState: "running"}, Config: cfg,
		LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return nil, nil }}
	if r := Diagnose(context.Background(), in, Host{ProcRoot: filepath.Join(root, "proc")}); r.Cause().Kind == KindDashboardPort {
		t.Errorf("same port: %+v", r.Findings)
	}
}

// A drop-in that starts OpenSearch without the package's setpriv: OpenSearch refuses root; the
// cause names the drop-in's line (real lines of OpenSearch 2.11.1).
func TestRunAsRoot(t *testing.T) {
	f := newFixture(t)
	dropIn := filepath.Join(f.root, "etc/systemd/system/siem-indexer.service.d/70-root.conf")
	f.write(t, dropIn, "[Service]\nExecStart=\nExecStart=/usr/share/siem-indexer/bin/opensearch\n")
	st := failed
	st.DropInPaths = []string{dropIn}
	r := f.diagnose(t, st, []string{
		"[2026-12-08T02:01:51,088][ERROR][o.o.b.OpenSearchUncaughtExceptionHandler] [node-1] uncaught exception in thread [main]",
		"org.opensearch.bootstrap.StartupException: java.lang.RuntimeException: can not run opensearch as root",
		"\tat org.opensearch.bootstrap.OpenSearch.init(OpenSearch.java:184) ~[opensearch-2.11.1.jar:2.11.1]",
		"Caused by: java.lang.RuntimeException: can not run opensearch as root",
	})
	assertFinding(t, r, KindRunAsRoot, []string{"OpenSearch refuses to run as root", dropIn + ":3 (ExecStart=/usr/share/siem-indexer/bin/opensearch)"},
		[]string{"remove or correct " + dropIn + ":3", "systemctl daemon-reload and siemctl services start indexer"})
}

// TLS switched off on the HTTP layer by hand: the node runs and answers plain HTTP where
// indexer.url asks HTTPS: the setting and its line, a configuration mismatch (exit 2), not a
// certificate to renew.
func TestPlainHTTP(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")
	b, _ := os.ReadFile(conf)
	f.write(t, conf, string(b)+"plugins.security.ssl.http.enabled: false\n")
	active := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running", MainPID: 4242}
	r := f.diagnose(t, active, []string{"[2026-12-08T01:52:50,001][INFO ][o.o.n.Node               ] [node-1] started"})
	c := r.Cause()
	if c.Kind != KindPlainHTTP || !strings.Contains(c.Cause, "plain HTTP: plugins.security.ssl.http.enabled: false in "+conf+" (line 8)") ||
		!strings.Contains(c.Fix, "set plugins.security.ssl.http.enabled: true in "+conf) || !errors.Is(r.Err(), ErrConfigMismatch) {
		t.Fatalf("%+v", r)
	}
	// read under the services' root, named as the operator sees it
	if cause, _, ok := IndexerPlainHTTP(f.root, "/etc/siem-indexer", "https://127.0.0.1:13300"); !ok || !strings.Contains(cause, "false in /etc/siem-indexer/opensearch.yml (line 8)") {
		t.Errorf("under a root: %v %q", ok, cause)
	}
	// TLS on (the file's own default): nothing to say
	f.write(t, conf, string(b))
	if r := f.diagnose(t, active, nil); r.Cause().Kind == KindPlainHTTP {
		t.Errorf("TLS on: %+v", r)
	}
}

func withDir(cfg *config.Config, dir string) *config.Config {
	c := *cfg
	c.Dashboard.ConfigDir = dir
	return &c
}

func TestUnroot(t *testing.T) {
	ev := &Evidence{Host: Host{Root: "/proc/6435/root"}}
	if got := ev.unroot("put it at /etc/x.pem (in /proc/6435/root/etc/siem-indexer/opensearch.yml)"); got != "put it at /etc/x.pem (in /etc/siem-indexer/opensearch.yml)" {
		t.Errorf("unroot: %q", got)
	}
	if got := (&Evidence{}).unroot("/proc/1/root/x"); got != "/proc/1/root/x" {
		t.Errorf("no root: %q", got)
	}
}

// The shipper's CA moved away by hand: Filebeat's own exit line (real, 7.10.2) names the file;
// the cause names the filebeat.yml line that points at it (was "the log does not name a known cause").
func TestShipperMissingFile(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "etc/shipper")
	ca := filepath.Join(conf, "certs/root-ca.pem")
	_ = os.MkdirAll(conf, 0o755)
	if err := os.WriteFile(filepath.Join(conf, "filebeat.yml"), []byte("output.elasticsearch:\n  hosts: [\"127.0.0.1:13570\"]\n  ssl.certificate_authorities: [\""+ca+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(root, "none.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Shipper.ConfigDir = conf
	for _, lines := range [][]string{
		{"2026-12-08T02:22:58.017Z\tERROR\tinstance/beat.go:956\tExiting: error initializing publisher: 1 error: open " + ca + ": no such file or directory reading <nil>"},
		// its log file alone (health reads it after the start): the TLS layer's line
		{"2026-12-08T02:26:59.280Z\tERROR\t[tls]\ttlscommon/tls.go:154\tFailed reading CA certificate: open " + ca + ": no such file or directory"},
	} {
		shipperMissing(t, cfg, lines, conf, ca)
	}
}

func shipperMissing(t *testing.T, cfg *config.Config, lines []string, conf, ca string) {
	t.Helper()
	in := Input{Component: "shipper", Unit: units.UnitStatus{Name: "shipper.service", ActiveState: "failed", SubState: "failed", Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1}, Config: cfg,
		LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return lines, nil }}
	r := Diagnose(context.Background(), in, Host{ProcRoot: filepath.Join(filepath.Dir(filepath.Dir(conf)), "proc")})
	c := r.Cause()
	yml := filepath.Join(conf, "filebeat.yml")
	if c.Kind != KindMissingFile || c.Cause != "ssl.certificate_authorities at "+yml+":3 names "+ca+", which does not exist" ||
		!strings.Contains(c.Fix, "put "+ca+" back") || !strings.Contains(c.Fix, "siemctl services start shipper") {
		t.Fatalf("%+v", r.Findings)
	}
}
