package diagnose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/units"
)

// diagnoseAs diagnoses component with the unit's output lines.
func (f *fixture) diagnoseAs(t *testing.T, component string, st units.UnitStatus, lines []string) Report {
	t.Helper()
	in := Input{Component: component, Unit: st, Config: f.cfg,
		LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return lines, nil }}
	return Diagnose(context.Background(), in, Host{ProcRoot: f.proc})
}

// shipperFixture adds Filebeat's filebeat.yml (the lab's, real keys).
func (f *fixture) shipper(t *testing.T, yml string) string {
	t.Helper()
	conf := filepath.Join(f.root, "etc/filebeat")
	f.write(t, filepath.Join(conf, "filebeat.yml"), yml)
	f.cfg.Shipper.ConfigDir = conf
	f.cfg.Shipper.DataDir = filepath.Join(f.root, "var/lib/filebeat")
	return filepath.Join(conf, "filebeat.yml")
}

const filebeatYML = `filebeat.modules:
  - module: wazuh
    alerts:
      enabled: true
output.elasticsearch:
  hosts: ["127.0.0.1:9200"]
  protocol: https
  username: ${username}
  password: ${password}
`

// Filebeat 7.10.2 lines of an earlier run (it could not reach the indexer, then was stopped)
// and of this start: a filebeat.yml broken by hand makes it exit before it logs anything.
func TestShipperConfigYAMLAndStaleLines(t *testing.T) {
	f := newFixture(t)
	broken := strings.Replace(filebeatYML, "  protocol: https", "  protocol https\n   ssl: x", 1)
	file := f.shipper(t, broken)
	started := time.Date(2026, 12, 7, 20, 40, 0, 0, time.UTC)
	st := units.UnitStatus{Name: "filebeat.service", LoadState: "loaded", ActiveState: "failed", SubState: "failed",
		Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1, StartedAt: started}
	lines := []string{
		"2026-12-07T20:01:02.345Z\tINFO\tinstance/beat.go:645\tHome path: [/usr/share/filebeat] Config path: [/etc/filebeat] Data path: [/var/lib/filebeat] Logs path: [/var/log/filebeat]",
		"2026-12-07T20:05:12.001Z\tERROR\t[publisher_pipeline_output]\tpipeline/output.go:154\tFailed to connect to backoff(elasticsearch(https://127.0.0.1:9200)): Get \"https://127.0.0.1:9200\": dial tcp 127.0.0.1:9200: connect: connection refused",
		"2026-12-07T20:05:12.001Z\tINFO\t[publisher_pipeline_output]\tpipeline/output.go:145\tAttempting to reconnect to backoff(elasticsearch(https://127.0.0.1:9200)) with 1 reconnect attempt(s)",
		"2026-12-07T20:30:00.500Z\tINFO\tbeater/filebeat.go:515\tStopping filebeat",
		"Exiting: error loading config file: yaml: line 8: could not find expected ':'",
	}
	r := f.diagnoseAs(t, "shipper", st, lines)
	assertFinding(t, r, KindConfigFile, []string{file + " line 8 does not parse (YAML): could not find expected ':'"},
		[]string{"correct " + file + " line 8 (or line 7 above it)", "siemctl services start shipper"})
	if ev := strings.Join(r.Cause().Evidence, "\n"); !strings.Contains(ev, file+":7: protocol https\n"+file+":8: ssl: x") || !strings.Contains(ev, "Exiting: error loading config file") {
		t.Errorf("evidence %q", ev)
	}
	for _, l := range r.Lines() {
		if strings.Contains(l, "Failed to connect") || strings.Contains(l, "act on the lines above") {
			t.Errorf("an earlier run's line or no cause: %q", l)
		}
	}

	// Filebeat's strict.perms (its real line, 7.10.2): it names the file and the fix itself
	perms := append(lines[:4:4], `Exiting: error loading config file: config file ("`+file+`") can only be writable by the owner but the permissions are "-rw-rw-r--" (to fix the permissions use: 'chmod go-w `+file+`')`)
	r = f.diagnoseAs(t, "shipper", st, perms)
	assertFinding(t, r, KindConfigFile, []string{"can only be writable by the owner"}, []string{"chmod go-w " + file})

	// the file mended, this start fails on its output: the earlier run's line is not this one's
	f.shipper(t, filebeatYML)
	lines = append(lines[:4],
		"2026-12-07T20:40:01.100Z\tINFO\tinstance/beat.go:645\tHome path: [/usr/share/filebeat] Config path: [/etc/filebeat] Data path: [/var/lib/filebeat] Logs path: [/var/log/filebeat]",
		"2026-12-07T20:40:01.900Z\tERROR\tinstance/beat.go:956\tExiting: error initializing publisher: open /etc/filebeat/certs/root-ca.pem: no such file or directory",
		"Exiting: error initializing publisher: open /etc/filebeat/certs/root-ca.pem: no such file or directory")
	r = f.diagnoseAs(t, "shipper", st, lines)
	out := strings.Join(r.Lines(), "\n")
	if strings.Contains(out, "Failed to connect") || !strings.Contains(r.Summary(), "root-ca.pem") {
		t.Errorf("%s", out)
	}
}

func TestSinceStartFilebeatStamps(t *testing.T) {
	started := time.Date(2026, 12, 7, 21, 40, 0, 0, time.FixedZone("CET", 3600))
	lines := []string{
		"2026-12-07T21:30:00.000+0100\tERROR\tpipeline/output.go:154\tFailed to connect",
		"2026-12-07T21:40:00.200+0100\tINFO\tinstance/beat.go:645\tHome path",
	}
	if got := SinceStart(lines, started); len(got) != 1 || !strings.Contains(got[0], "Home path") {
		t.Errorf("%q", got)
	}
	js := []string{
		`{"type":"log","@timestamp":"2026-12-07T20:30:00Z","tags":["error","opensearch","data"],"pid":405,"message":"[ConnectionError]: connect ECONNREFUSED 127.0.0.1:9200"}`,
		`{"type":"log","@timestamp":"2026-12-07T20:40:01Z","tags":["fatal","root"],"pid":512,"message":"Error: ENOENT: no such file or directory, open '/etc/wazuh-dashboard/certs/dashboard-key.pem'"}`,
	}
	if got := SinceStart(js, time.Date(2026, 12, 7, 20, 40, 0, 0, time.UTC)); len(got) != 1 || !strings.Contains(got[0], "ENOENT") {
		t.Errorf("%q", got)
	}
}

// dashboard adds opensearch_dashboards.yml as the wazuh-dashboard package installs it.
func (f *fixture) dashboard(t *testing.T, yml string) (conf, file string) {
	t.Helper()
	conf = filepath.Join(f.root, "etc/wazuh-dashboard")
	file = filepath.Join(conf, "opensearch_dashboards.yml")
	f.write(t, file, strings.ReplaceAll(yml, "@CONF@", conf))
	f.cfg.Dashboard.ConfigDir = conf
	return conf, file
}

const dashboardYML = `server.host: 0.0.0.0
opensearch.hosts: https://localhost:9200
server.port: 443
opensearch.ssl.verificationMode: certificate
opensearch.requestHeadersAllowlist: ["securitytenant","Authorization"]
opensearch_security.multitenancy.enabled: false
opensearch_security.readonly_mode.roles: ["kibana_read_only"]
server.ssl.enabled: true
server.ssl.key: "@CONF@/certs/dashboard-key.pem"
server.ssl.certificate: "@CONF@/certs/dashboard.pem"
opensearch.ssl.certificateAuthorities: ["@CONF@/certs/root-ca.pem"]
uiSettings.overrides.defaultRoute: /app/wz-home
`

var dashboardFailed = units.UnitStatus{Name: "wazuh-dashboard.service", LoadState: "loaded", ActiveState: "failed", SubState: "failed",
	Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1, StartedAt: time.Date(2026, 12, 7, 20, 40, 0, 0, time.UTC)}

// An earlier run could not reach the indexer; this start dies on a duplicated key added by hand
// (real wazuh-dashboard lines, wazuh/wazuh#23125).
func TestDashboardConfigYAML(t *testing.T) {
	f := newFixture(t)
	_, file := f.dashboard(t, dashboardYML+"server.port: 443\n")
	lines := []string{
		`{"type":"log","@timestamp":"2026-12-07T20:30:00Z","tags":["error","opensearch","data"],"pid":405,"message":"[ConnectionError]: connect ECONNREFUSED 127.0.0.1:9200"}`,
		"/usr/share/wazuh-dashboard/node_modules/js-yaml/lib/js-yaml/loader.js:173",
		"  throw generateError(state, message);",
		"  ^",
		"YAMLException: duplicated mapping key at line 13, column 1:",
		"    server.port: 443",
		"    ^",
		"    at generateError (/usr/share/wazuh-dashboard/node_modules/js-yaml/lib/js-yaml/loader.js:167:10)",
		"    at throwError (/usr/share/wazuh-dashboard/node_modules/js-yaml/lib/js-yaml/loader.js:173:9)",
	}
	r := f.diagnoseAs(t, "dashboard", dashboardFailed, lines)
	assertFinding(t, r, KindConfigFile, []string{file + " line 13 does not parse (YAML): duplicated mapping key"},
		[]string{"correct " + file + " line 13", "siemctl services start dashboard"})
	if len(r.Findings) != 1 {
		t.Errorf("an earlier run's line is a cause too: %+v", r.Findings)
	}
	if !strings.Contains(strings.Join(r.Cause().Evidence, "\n"), file+":13: server.port: 443") {
		t.Errorf("evidence %q", r.Cause().Evidence)
	}
}

// The dashboard's key moved aside by hand: the real server's fatal line (wazuh/wazuh#26386).
func TestDashboardKeyMissing(t *testing.T) {
	f := newFixture(t)
	conf, file := f.dashboard(t, dashboardYML)
	f.write(t, filepath.Join(conf, "certs/old/dashboard-key.pem"), "-----BEGIN PRIVATE KEY-----\n")
	key := filepath.Join(conf, "certs/dashboard-key.pem")
	lines := []string{
		`{"type":"log","@timestamp":"2026-12-07T20:40:02Z","tags":["fatal","root"],"pid":512,"message":"Error: ENOENT: no such file or directory, open '` + key + `'\n    at Object.openSync (node:fs:596:3)\n    at readFile (/usr/share/wazuh-dashboard/src/core/server/http/ssl_config.js:170:31)"}`,
		"",
		" FATAL  Error: ENOENT: no such file or directory, open '" + key + "'",
		"",
	}
	r := f.diagnoseAs(t, "dashboard", dashboardFailed, lines)
	assertFinding(t, r, KindDashboardTLS, []string{"server.ssl.key in " + file + " names " + key + ", which does not exist"},
		[]string{"move " + filepath.Join(conf, "certs/old/dashboard-key.pem") + " back to " + key, "siemctl services start dashboard"})
	for _, l := range r.Lines() {
		if strings.Contains(l, "port") || strings.Contains(l, "credentials") {
			t.Errorf("%q", l)
		}
	}
	// not anywhere near: put it back or point the setting elsewhere
	_ = os.RemoveAll(filepath.Join(conf, "certs/old"))
	r = f.diagnoseAs(t, "dashboard", dashboardFailed, lines)
	assertFinding(t, r, KindDashboardTLS, nil, []string{"put the file back at " + key, "or point server.ssl.key in " + file})
	if r.Err() != nil {
		t.Errorf("class of a missing file %v, want none", r.Err())
	}
}

func TestDashboardKeyUnreadable(t *testing.T) {
	f := newFixture(t)
	conf, file := f.dashboard(t, dashboardYML)
	key := filepath.Join(conf, "certs/dashboard-key.pem")
	f.write(t, key, "-----BEGIN PRIVATE KEY-----\n")
	lines := []string{" FATAL  Error: EACCES: permission denied, open '" + key + "'"}
	r := f.diagnoseAs(t, "dashboard", dashboardFailed, lines)
	assertFinding(t, r, KindDashboardTLS, []string{"cannot read " + key + " (server.ssl.key in " + file + ")"}, []string{"&& chmod 0400 " + key, "that file alone"})
	if !errors.Is(r.Err(), ErrAccessDenied) {
		t.Errorf("class %v, want ErrAccessDenied", r.Err())
	}
	if strings.Contains(r.Fix(), "-R") {
		t.Errorf("recursive: %s", r.Fix())
	}
}
