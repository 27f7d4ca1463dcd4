package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
			if c.Manager.Unit != "wazuh-manager.service" || c.Shipper.Binary != "/usr/bin/filebeat" || c.Manager.ControlTool != "wazuh-control" {
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
	os.WriteFile(good, []byte("s3cr3t-Value\n"), 0o600)
	loose := filepath.Join(dir, "loose")
	os.WriteFile(loose, []byte("x\n"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
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
	cfg, err := Load(LoadOptions{Path: path, ExplicitPath: true, Env: []string{"SIEMCTL_MANAGER_API_URL=https://mgr:55000", "SIEMCTL_INDEXER_URL=https://10.0.0.6:9200"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range cfg.Effective() {
		got[s.Key] = s
	}
	for key, want := range map[string]Setting{
		"profile":                      {Value: "wazuh", Origin: "file " + path},
		"indexer.url":                  {Value: "https://10.0.0.6:9200", Origin: "env SIEMCTL_INDEXER_URL"}, // env beats file
		"manager.api_url":              {Value: "https://mgr:55000", Origin: "env SIEMCTL_MANAGER_API_URL"},
		"thresholds.disk_warn_percent": {Value: 80, Origin: "file " + path},
		"indexer.unit":                 {Value: "wazuh-indexer.service", Origin: "profile wazuh"},
	} {
		g, ok := got[key]
		if !ok || fmt.Sprint(g.Value) != fmt.Sprint(want.Value) || g.Origin != want.Origin {
			t.Errorf("%s = %v from %q, want %v from %q", key, g.Value, g.Origin, want.Value, want.Origin)
		}
	}
	if len(got) < 40 {
		t.Errorf("only %d keys", len(got))
	}
	cfg, err = Load(LoadOptions{Path: path, ExplicitPath: true, Profile: "siem"})
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
