package config

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
)

// checkEffective loads path (explicit) with env and checks the settings in
// want: value and origin. It returns the config and every effective
// setting by key.
func checkEffective(t *testing.T, path string, env []string, want map[string]Setting) (*Config, map[string]Setting) {
	t.Helper()
	cfg, err := Load(LoadOptions{Path: path, ExplicitPath: true, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range cfg.Effective() {
		got[s.Key] = s
	}
	for key, w := range want {
		g, ok := got[key]
		if !ok || fmt.Sprint(g.Value) != fmt.Sprint(w.Value) || g.Origin != w.Origin {
			t.Errorf("%s = %v from %q, want %v from %q", key, g.Value, g.Origin, w.Value, w.Origin)
		}
	}
	return cfg, got
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "siemctl.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadProfilesAndPrecedence(t *testing.T) {
	file := writeFile(t, "indexer:\n  url: https://10.0.0.1:9200\nmanager:\n  install_dir: /opt/siem\n")
	tests := []struct {
		name  string
		opts  LoadOptions
		check func(*Config) string
	}{
		{"siem defaults without a file", LoadOptions{Path: filepath.Join(t.TempDir(), "none.yaml")}, func(c *Config) string {
			if c.Indexer.Unit != "siem-indexer.service" || c.Manager.InstallDir != "/var/siem" || c.Indexer.AlertsIndexPrefix != "siem-alerts-4.x-" || c.Manager.ControlTool != "siem-control" {
				return "wrong siem defaults"
			}
			if c.Indexer.DataSafety != DataSafetyAuto || c.Indexer.SnapshotRepository != "siemctl" || c.Indexer.SnapshotLocation != "" {
				return "wrong data safety defaults"
			}
			if c.Thresholds.DiskNogoPercent != 90 || c.Manager.AgentPort != 1514 {
				return "wrong thresholds/ports"
			}
			return ""
		}},
		{"wazuh profile", LoadOptions{Path: file, Profile: "wazuh", ExplicitPath: true}, func(c *Config) string {
			if c.Manager.Unit != "wazuh-manager.service" || c.Shipper.Binary != "/usr/share/filebeat/bin/filebeat" || c.Manager.ControlTool != "wazuh-control" {
				return "wrong wazuh defaults"
			}
			if c.Manager.InstallDir != "/opt/siem" {
				return "file must override profile default"
			}
			return ""
		}},
		{"env over file, flag over env", LoadOptions{Path: file, ExplicitPath: true,
			Env:       []string{"SIEMCTL_INDEXER_URL=https://10.0.0.2:9200", "SIEMCTL_MANAGER_USERNAME=ops", "SIEMCTL_INDEXER_SECURITY_INIT=/a/b -x", "SIEMCTL_INDEXER_DATA_SAFETY=snapshot"},
			Overrides: map[string]any{"manager.username": "flaguser"}}, func(c *Config) string {
			if c.Indexer.URL != "https://10.0.0.2:9200" {
				return "env did not override file: " + c.Indexer.URL
			}
			if c.Manager.Username != "flaguser" {
				return "flag did not override env"
			}
			if strings.Join(c.Indexer.SecurityInit, "|") != "/a/b|-x" {
				return "list env not split: " + strings.Join(c.Indexer.SecurityInit, "|")
			}
			if c.Indexer.DataSafety != DataSafetySnapshot {
				return "SIEMCTL_INDEXER_DATA_SAFETY ignored: " + c.Indexer.DataSafety
			}
			return ""
		}},
		{"SIEMCTL_CONFIG and SIEMCTL_PROFILE", LoadOptions{Env: []string{"SIEMCTL_CONFIG=" + file, "SIEMCTL_PROFILE=wazuh"}}, func(c *Config) string {
			if c.Source != file || c.Profile != "wazuh" {
				return "env config/profile ignored"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(c); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestLoadErrorsNameKeyAndFix(t *testing.T) {
	tests := []struct {
		name, body string
		opts       LoadOptions
		want       []string
	}{
		{"typo", "indexer:\n  ulr: https://x:9200\n", LoadOptions{}, []string{"indexer.ulr", "did you mean \"indexer.url\""}},
		{"bad url", "manager:\n  api_url: 55000\n", LoadOptions{}, []string{"manager.api_url", "not a valid"}},
		{"credentials in url", "indexer:\n  url: https://admin:s3cr3t@127.0.0.1:9200\n", LoadOptions{}, []string{"indexer.url", "password_file"}},
		{"credentials in an unparsable url", "indexer:\n  url: https://admin:s3cr3t%zz@127.0.0.1:9200\n", LoadOptions{}, []string{"indexer.url", "not a valid", "admin:[redacted]@127.0.0.1:9200"}},
		{"thresholds order", "thresholds:\n  disk_warn_percent: 95\n", LoadOptions{}, []string{"disk_warn_percent", "above disk_nogo_percent"}},
		{"unknown profile", "profile: elastic\n", LoadOptions{}, []string{"profile", "siem, wazuh"}},
		{"bad yaml", "indexer: [\n", LoadOptions{}, []string{"not valid YAML"}},
		{"bad type", "thresholds:\n  disk_warn_percent: lots\n", LoadOptions{}, []string{"disk_warn_percent"}},
		{"systemd address", "systemd:\n  address: /run/systemd/private\n", LoadOptions{}, []string{"systemd.address", "unix:path="}},
		{"data safety mode", "indexer:\n  data_safety: lvm\n", LoadOptions{}, []string{"indexer.data_safety", "copy, snapshot, command"}},
		{"command without hooks", "indexer:\n  data_safety: command\n  data_hook_take: [/sbin/snap]\n", LoadOptions{}, []string{"indexer.data_safety", "data_hook_restore"}},
		{"repository name", "indexer:\n  snapshot_repository: My Repo\n", LoadOptions{}, []string{"indexer.snapshot_repository", "lowercase"}},
		{"relative location", "indexer:\n  snapshot_location: snaps\n", LoadOptions{}, []string{"indexer.snapshot_location", "absolute"}},
		{"start wait without unit", "indexer:\n  start_wait: 120\n", LoadOptions{}, []string{"indexer.start_wait", `"120" is not a duration from 1s to 30m`, "e.g. 60s"}},
		{"start wait too long", "dashboard:\n  start_wait: 2h\n", LoadOptions{}, []string{"dashboard.start_wait", "from 1s to 30m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Path, tt.opts.ExplicitPath = writeFile(t, tt.body), true
			_, err := Load(tt.opts)
			if err == nil {
				t.Fatal("want an error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
	_, err := Load(LoadOptions{Path: "/nonexistent/siemctl.yaml", ExplicitPath: true})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/siemctl.yaml") {
		t.Fatalf("missing explicit file: %v", err)
	}
}

func TestSecretResolve(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pw")
	testenv.WriteFile(t, good, "s3cr3t-Value\n", 0o600)
	loose := filepath.Join(dir, "loose")
	testenv.WriteFile(t, loose, "x\n", 0o644)
	empty := filepath.Join(dir, "empty")
	testenv.WriteFile(t, empty, "", 0o600)
	env := func(k string) (string, bool) {
		if k == "PW" {
			return "from-env", true
		}
		return "", false
	}
	tests := []struct {
		name    string
		s       Secret
		want    string
		wantErr string
	}{
		{"file", Secret{PasswordFile: good}, "s3cr3t-Value", ""},
		{"env wins over file", Secret{PasswordFile: good, PasswordEnv: "PW"}, "from-env", ""},
		{"command wins", Secret{PasswordFile: good, PasswordCommand: []string{"/bin/echo", "cmd-pw"}}, "cmd-pw", ""},
		{"missing file", Secret{PasswordFile: filepath.Join(dir, "nope")}, "", "indexer.password_file"},
		{"empty file", Secret{PasswordFile: empty}, "", "is empty"},
		{"unset env", Secret{PasswordEnv: "NOPE"}, "", "NOPE is not set"},
		{"failing command", Secret{PasswordCommand: []string{"/bin/sh", "-c", "echo s3cr3t-Value >&2; exit 3"}}, "", "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.s.Resolve(context.Background(), "indexer", env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrSecret) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Fatalf("error leaks the secret: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, isLoose, ok := (Secret{PasswordFile: loose}).FileMode(); !ok || !isLoose {
		t.Error("0644 secret file must be reported loose")
	}
	if _, isLoose, ok := (Secret{PasswordFile: good}).FileMode(); !ok || isLoose {
		t.Error("0600 secret file must not be loose")
	}
}

func TestEffectiveOrigins(t *testing.T) {
	d := t.TempDir()
	path := filepath.Join(d, "siemctl.yaml")
	if err := os.WriteFile(path, []byte("profile: wazuh\nindexer:\n  url: https://10.0.0.5:9200\nthresholds:\n  disk_warn_percent: 80\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, got := checkEffective(t, path, []string{"SIEMCTL_MANAGER_API_URL=https://mgr:55000", "SIEMCTL_INDEXER_URL=https://10.0.0.6:9200"}, map[string]Setting{
		"profile":                      {Value: "wazuh", Origin: "file " + path},
		"indexer.url":                  {Value: "https://10.0.0.6:9200", Origin: "env SIEMCTL_INDEXER_URL"}, // env beats file
		"manager.api_url":              {Value: "https://mgr:55000", Origin: "env SIEMCTL_MANAGER_API_URL"},
		"thresholds.disk_warn_percent": {Value: 80, Origin: "file " + path},
		"indexer.unit":                 {Value: "wazuh-indexer.service", Origin: "profile wazuh"},
	})
	if len(got) < 40 {
		t.Errorf("only %d keys", len(got))
	}
	cfg, err := Load(LoadOptions{Path: path, ExplicitPath: true, Profile: "siem"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Effective() {
		if s.Key == "profile" && (s.Value != "siem" || s.Origin != "flag --profile") {
			t.Errorf("profile %v from %s", s.Value, s.Origin)
		}
		if s.Key == "indexer.unit" && s.Origin != "profile siem" {
			t.Errorf("indexer.unit from %s", s.Origin)
		}
	}
}

// TestUnknownEnvWarning: a SIEMCTL_* variable that is no config key is a
// warning naming the nearest key (a typo would otherwise be silently
// ignored); real keys, siemctl's own variables, the test harness's and the
// password_env variable the config names are not.
func TestUnknownEnvWarning(t *testing.T) {
	file := writeFile(t, "manager:\n  password_env: SIEMCTL_MANAGER_PW\n")
	c, err := Load(LoadOptions{Path: file, ExplicitPath: true, Env: []string{
		"SIEMCTL_INDEXR_URL=https://10.0.0.9:9200",
		"SIEMCTL_MANAGER_PASSWORD_FILES=/x",
		"SIEMCTL_WHATEVER_THIS_IS=1",
		"SIEMCTL_INDEXER_URL=https://10.0.0.2:9200", "SIEMCTL_CONFIG=" + file, "SIEMCTL_PROFILE=siem",
		"SIEMCTL_IT_REQUIRED=1", "SIEMCTL_E2E_PORT_SHIFT=3000", "SIEMCTL_MANAGER_PW=secret", "PATH=/usr/bin",
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"environment variable SIEMCTL_INDEXR_URL is not a configuration key and is ignored; did you mean SIEMCTL_INDEXER_URL (indexer.url)?",
		"environment variable SIEMCTL_MANAGER_PASSWORD_FILES is not a configuration key and is ignored; did you mean SIEMCTL_MANAGER_PASSWORD_FILE (manager.password_file)?",
		"environment variable SIEMCTL_WHATEVER_THIS_IS is not a configuration key and is ignored; see the configuration reference (siemctl help config)",
	}
	if strings.Join(c.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(c.Warnings, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(c.Warnings, ""), "secret") {
		t.Error("a variable's value reached a warning")
	}
	c, err = Load(LoadOptions{Path: file, ExplicitPath: true, Env: []string{"SIEMCTL_INDEXER_URL=https://10.0.0.2:9200"}})
	if err != nil || len(c.Warnings) != 0 {
		t.Errorf("known keys only: %v %v", c.Warnings, err)
	}
}

// TestRootAndPortOffset: a file with only profile, root and port_offset puts
// every default path under root and shifts every default port; explicit
// values (file, environment) are taken as given; origins say which.
func TestRootAndPortOffset(t *testing.T) {
	root := t.TempDir()
	path := writeFile(t, "profile: wazuh\nroot: "+root+"\nport_offset: 2050\nmanager:\n  install_dir: /opt/ossec\n")
	cfg, _ := checkEffective(t, path, []string{"SIEMCTL_DASHBOARD_URL=https://10.0.0.7:8443"}, map[string]Setting{
		"root":                      {Value: root, Origin: "file " + path},
		"port_offset":               {Value: 2050, Origin: "file " + path},
		"state_dir":                 {Value: root + "/var/lib/siemctl", Origin: "profile wazuh + root"},
		"backup_dir":                {Value: root + "/var/backups/siemctl", Origin: "profile wazuh + root"},
		"indexer.password_file":     {Value: root + "/etc/siemctl/secrets/indexer", Origin: "profile wazuh + root"},
		"manager.password_file":     {Value: root + "/etc/siemctl/secrets/manager", Origin: "profile wazuh + root"},
		"indexer.ca_file":           {Value: root + "/etc/wazuh-indexer/certs/root-ca.pem", Origin: "profile wazuh + root"},
		"indexer.config_dir":        {Value: root + "/etc/wazuh-indexer", Origin: "profile wazuh + root"},
		"indexer.data_dir":          {Value: root + "/var/lib/wazuh-indexer", Origin: "profile wazuh + root"},
		"indexer.security_init":     {Value: []string{root + "/usr/share/wazuh-indexer/bin/indexer-security-init.sh"}, Origin: "profile wazuh + root"},
		"shipper.binary":            {Value: root + "/usr/share/filebeat/bin/filebeat", Origin: "profile wazuh + root"},
		"shipper.config_dir":        {Value: root + "/etc/filebeat", Origin: "profile wazuh + root"},
		"dashboard.config_dir":      {Value: root + "/etc/wazuh-dashboard", Origin: "profile wazuh + root"},
		"manager.install_dir":       {Value: "/opt/ossec", Origin: "file " + path}, // explicit: as given
		"indexer.url":               {Value: "https://127.0.0.1:11250", Origin: "profile wazuh + port_offset"},
		"manager.agent_port":        {Value: 3564, Origin: "profile wazuh + port_offset"},
		"manager.enrollment_port":   {Value: 3565, Origin: "profile wazuh + port_offset"},
		"dashboard.url":             {Value: "https://10.0.0.7:8443", Origin: "env SIEMCTL_DASHBOARD_URL"}, // explicit: as given
		"indexer.unit":              {Value: "wazuh-indexer.service", Origin: "profile wazuh"},
		"indexer.snapshot_location": {Value: "", Origin: "profile wazuh"}, // empty default stays empty
	})
	if cfg.Root != root || cfg.PortOffset != 2050 || cfg.StateDir != root+"/var/lib/siemctl" || cfg.Manager.AgentPort != 3564 {
		t.Errorf("typed config: root %q offset %d state_dir %q agent_port %d", cfg.Root, cfg.PortOffset, cfg.StateDir, cfg.Manager.AgentPort)
	}
	// Every default absolute path is moved: none is left outside root.
	for _, s := range cfg.Effective() {
		if !strings.HasPrefix(s.Origin, "profile ") {
			continue
		}
		vals := []string{}
		switch x := s.Value.(type) {
		case string:
			vals = append(vals, x)
		case []string:
			vals = append(vals, x...)
		case []any:
			for _, e := range x {
				vals = append(vals, fmt.Sprint(e))
			}
		}
		for _, v := range vals {
			if filepath.IsAbs(v) && !strings.HasPrefix(v, root+"/") {
				t.Errorf("%s = %s: a default path outside root", s.Key, v)
			}
		}
	}

	// The siem profile's syslog default (a port) moves too; a URL without a
	// port gets the scheme's default plus the offset.
	siem := writeFile(t, "root: "+root+"\nport_offset: 100\n")
	cfg, err := Load(LoadOptions{Path: siem, ExplicitPath: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Manager.Syslog != "udp://127.0.0.1:614" || cfg.Manager.APIURL != "https://127.0.0.1:55100" || cfg.Manager.InstallDir != root+"/var/siem" {
		t.Errorf("siem: syslog %s api %s install_dir %s", cfg.Manager.Syslog, cfg.Manager.APIURL, cfg.Manager.InstallDir)
	}
	if u, _, err := shiftURL("https://localhost", 10); err != nil || u != "https://localhost:453" {
		t.Errorf("shiftURL without port = %q, %v", u, err)
	}

	// Environment variables set them too.
	cfg, err = Load(LoadOptions{Path: filepath.Join(t.TempDir(), "none.yaml"), Env: []string{"SIEMCTL_ROOT=" + root, "SIEMCTL_PORT_OFFSET=7"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Indexer.URL != "https://127.0.0.1:9207" || cfg.BackupDir != root+"/var/backups/siemctl" {
		t.Errorf("env root/offset: %s %s", cfg.Indexer.URL, cfg.BackupDir)
	}
}

// TestRootAndPortOffsetInvalid: a relative or missing root and an offset
// outside 0..60000 are configuration errors (exit 2) naming the key.
func TestRootAndPortOffsetInvalid(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ body, want string }{
		{"root: srv/lab\n", `config: root: "srv/lab" must be an absolute path`},
		{"root: /nonexistent/siemctl-root\n", "config: root: /nonexistent/siemctl-root: no such file or directory (create it, or fix root)"},
		{"root: " + notDir + "\n", "is not a directory"},
		{"port_offset: -1\n", "config: port_offset: -1 is outside 0 to 60000"},
		{"port_offset: 60001\n", "config: port_offset: 60001 is outside 0 to 60000"},
		{"port_offset: 12000\n", "config: port_offset: 12000 moves"}, // 55000+12000 > 65535
		{"port_offset: many\n", `config: port_offset: "many" is not a number`},
	} {
		_, err := Load(LoadOptions{Path: writeFile(t, tt.body), ExplicitPath: true})
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want a config error containing %q", tt.body, err, tt.want)
		}
	}
	// An explicit port beyond the default's reach is not shifted, so a large
	// offset is fine when those keys are set.
	body := "port_offset: 12000\nmanager:\n  api_url: https://127.0.0.1:55000\n"
	if _, err := Load(LoadOptions{Path: writeFile(t, body), ExplicitPath: true}); err != nil {
		t.Errorf("explicit api_url with offset 12000: %v", err)
	}
}

// TestWazuhStockDefaults: the wazuh profile's defaults are those of a stock
// Wazuh 4.x all-in-one host; the siem profile keeps the reference layout's.
func TestWazuhStockDefaults(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none.yaml")
	w, err := Load(LoadOptions{Path: none, Profile: "wazuh"})
	if err != nil {
		t.Fatal(err)
	}
	for key, tt := range map[string][2]string{
		"manager.api_url":          {w.Manager.APIURL, "https://localhost:55000"},
		"manager.ca_file":          {w.Manager.CAFile, "/var/ossec/api/configuration/ssl/server.crt"},
		"dashboard.url":            {w.Dashboard.URL, "https://127.0.0.1:443"},
		"dashboard.ca_file":        {w.Dashboard.CAFile, "/etc/wazuh-dashboard/certs/root-ca.pem"},
		"indexer.url":              {w.Indexer.URL, "https://127.0.0.1:9200"},
		"indexer.ca_file":          {w.Indexer.CAFile, "/etc/wazuh-indexer/certs/root-ca.pem"},
		"manager.syslog":           {w.Manager.Syslog, ""},
		"shipper.binary":           {w.Shipper.Binary, "/usr/share/filebeat/bin/filebeat"},
		"shipper.home_dir":         {w.Shipper.HomeDir, "/usr/share/filebeat"},
		"shipper.data_dir":         {w.Shipper.DataDir, "/var/lib/filebeat"},
		"shipper.config_dir":       {w.Shipper.ConfigDir, "/etc/filebeat"},
		"manager.config_check":     {strings.Join(w.Manager.ConfigCheck, " "), "bin/wazuh-analysisd -t"},
		"indexer.cleanup_prefixes": {strings.Join(w.Indexer.CleanupPrefixes, " "), "wazuh-archives-4.x-"},
		"shipper.module_source":    {w.Shipper.ModuleSource, "https://packages.wazuh.com/4.x/filebeat/{module}.tar.gz"},
		"shipper.template_source":  {w.Shipper.TemplateSource, "https://raw.githubusercontent.com/wazuh/wazuh/v{version}/extensions/elasticsearch/7.x/wazuh-template.json"},
	} {
		if tt[0] != tt[1] {
			t.Errorf("wazuh %s = %q, want %q", key, tt[0], tt[1])
		}
	}
	s, err := Load(LoadOptions{Path: none})
	if err != nil {
		t.Fatal(err)
	}
	if s.Manager.APIURL != "https://127.0.0.1:55000" || s.Manager.CAFile != "" || s.Dashboard.URL != "https://127.0.0.1:5601" || s.Manager.Syslog != "udp://127.0.0.1:514" || s.Shipper.Binary != "/usr/bin/shipper" || s.Shipper.HomeDir != "" {
		t.Errorf("siem defaults changed: %+v %+v", s.Manager, s.Shipper)
	}
	// With a port offset the wazuh dashboard moves from 443.
	root := t.TempDir()
	w, err = Load(LoadOptions{Path: writeFile(t, "profile: wazuh\nroot: "+root+"\nport_offset: 2050\n"), ExplicitPath: true})
	if err != nil {
		t.Fatal(err)
	}
	if w.Dashboard.URL != "https://127.0.0.1:2493" || w.Manager.APIURL != "https://localhost:57050" || w.Manager.CAFile != root+"/var/ossec/api/configuration/ssl/server.crt" || w.Manager.Syslog != "" {
		t.Errorf("wazuh with root/offset: dashboard %s api %s ca %s syslog %q", w.Dashboard.URL, w.Manager.APIURL, w.Manager.CAFile, w.Manager.Syslog)
	}
}

// TestCleanupPrefixesInvalid: a wildcard or a prefix that is the start of
// another (an index would belong to two) is a config error.
func TestCleanupPrefixesInvalid(t *testing.T) {
	for _, body := range []string{
		"indexer:\n  cleanup_prefixes: [siem-archives-*]\n",
		"indexer:\n  cleanup_prefixes: [siem-]\n",
		"indexer:\n  cleanup_prefixes: [\"\"]\n",
	} {
		_, err := Load(LoadOptions{Path: writeFile(t, body), ExplicitPath: true})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "indexer.cleanup_prefixes") {
			t.Errorf("%q: %v", body, err)
		}
	}
	if _, err := Load(LoadOptions{Path: writeFile(t, "indexer:\n  cleanup_prefixes: [siem-archives-4.x-]\n"), ExplicitPath: true}); err != nil {
		t.Errorf("valid extra prefix: %v", err)
	}
}

// TestStartWaits: every component's start_wait defaults to the spec's start wait (indexer 60 s,
// manager 30 s, dashboard 60 s, shipper 30 s); a site raises one in the file or the environment.
func TestStartWaits(t *testing.T) {
	cfg, err := Load(LoadOptions{Path: writeFile(t, "indexer:\n  start_wait: 3m\n"), ExplicitPath: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"indexer": 3 * time.Minute, "manager": 30 * time.Second, "dashboard": time.Minute, "shipper": 30 * time.Second}
	if got := cfg.StartWaits(); !maps.Equal(got, want) {
		t.Errorf("start waits %v, want %v", got, want)
	}
	cfg, err = Load(LoadOptions{Path: "/nonexistent/siemctl.yaml", Env: []string{"SIEMCTL_MANAGER_START_WAIT=90s"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.StartWaits(); got["manager"] != 90*time.Second || got["indexer"] != time.Minute {
		t.Errorf("from the environment: %v", got)
	}
	for _, s := range cfg.Effective() {
		if s.Key == "indexer.start_wait" && s.Value != "60s" {
			t.Errorf("indexer.start_wait shows %v, want the spec's 60s", s.Value)
		}
	}
}

func TestModuleSourceNeedsPlaceholder(t *testing.T) {
	_, err := Load(LoadOptions{Path: writeFile(t, "shipper:\n  module_source: /srv/wazuh-filebeat-0.4.tar.gz\n"), ExplicitPath: true})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "shipper.module_source") || !strings.Contains(err.Error(), "{module}") {
		t.Errorf("%v", err)
	}
}

// TestComponents: the components key says what this host runs: all four by default (a single
// host), a list from the file or SIEMCTL_COMPONENTS (space-separated), known names only, not empty;
// HostUnits and HostPackageNames follow it while Units and PackageNames stay the whole stack's.
func TestComponents(t *testing.T) {
	c, err := Load(LoadOptions{Path: filepath.Join(t.TempDir(), "none.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.HostComponents(), " "); got != "indexer manager dashboard shipper" || len(c.NotHere()) != 0 || len(c.HostUnits()) != 4 {
		t.Errorf("default components %q, not here %v", got, c.NotHere())
	}
	c, err = Load(LoadOptions{Path: writeFile(t, "profile: wazuh\ncomponents: [shipper, manager]\n"), ExplicitPath: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.HostComponents(), " "); got != "manager shipper" || strings.Join(c.NotHere(), " ") != "indexer dashboard" {
		t.Errorf("file components %q, not here %v", got, c.NotHere())
	}
	if u := c.HostUnits(); len(u) != 2 || u["manager"] != "wazuh-manager.service" || u["shipper"] != "filebeat.service" {
		t.Errorf("HostUnits %v", u)
	}
	if p := c.HostPackageNames(); len(p) != 2 || p["shipper"] != "filebeat" || len(c.PackageNames()) != 4 || len(c.Units()) != 4 {
		t.Errorf("HostPackageNames %v; PackageNames %v", p, c.PackageNames())
	}
	c, err = Load(LoadOptions{Path: filepath.Join(t.TempDir(), "none.yaml"), Env: []string{"SIEMCTL_COMPONENTS=indexer"}})
	if err != nil || strings.Join(c.HostComponents(), " ") != "indexer" || !c.Runs("indexer") || c.Runs("manager") {
		t.Fatalf("SIEMCTL_COMPONENTS=indexer: %v %v", c, err)
	}
	for _, tt := range []struct{ body, want string }{
		{"components: []\n", "config: components: is empty; list the components this host runs"},
		{"components: [indexer, kibana]\n", `config: components: "kibana" is not a component (use some of: indexer, manager, dashboard, shipper)`},
	} {
		_, err := Load(LoadOptions{Path: writeFile(t, tt.body), ExplicitPath: true})
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.body, err, tt.want)
		}
	}
}
