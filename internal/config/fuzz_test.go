package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad: any configuration file (and SIEMCTL_* value) gives a config
// that validates or an error naming a key; never a panic, and never a
// password of a URL in the message.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"profile: wazuh\n",
		"indexer:\n  url: https://admin:s3cr3t%zz@127.0.0.1:9200\n",
		"indexer: [\n",
		"thresholds:\n  disk_warn_percent: 95\n",
		"manager:\n  password_command: [/bin/echo, x]\n  api_url: http://[::1]:55000\n",
		"state_dir: ~\nsystemd: {address: unix:path=/run/systemd/private}\n",
		"&a [*a, *a]",
		"indexer: {url: !!binary aGVsbG8=}\n",
	} {
		f.Add([]byte(s), "90")
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte, env string) {
		p := filepath.Join(dir, "siemctl.yaml")
		if err := os.WriteFile(p, body, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(LoadOptions{Path: p, ExplicitPath: true, Env: []string{"SIEMCTL_THRESHOLDS_DISK_WARN_PERCENT=" + env},
			LookupEnv: func(string) (string, bool) { return "", false }})
		if err != nil {
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("error prints a URL password: %v", err)
			}
			return
		}
		if cfg == nil {
			t.Fatal("nil config without error")
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Load returned a config that does not validate: %v", err)
		}
	})
}
