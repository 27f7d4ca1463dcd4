package dashboard

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The emulator dies at its start as the real server does: a config file js-yaml cannot load is
// Node's uncaught YAMLException naming the line (not the file); a server.ssl.key that does not
// exist is the fatal ENOENT line, before the port is bound.
func TestMainFatalAsTheRealServer(t *testing.T) {
	d := t.TempDir()
	home := filepath.Join(d, "usr/share/siem-dashboard")
	exe := filepath.Join(home, "bin/siem-dashboard")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "VERSION.json"), []byte(`{"version":"4.9.0","revision":"01"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(d, "dashboard.yml")
	runMain := func(yml string) (int, string, string) {
		if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := Main(context.Background(), []string{"--config", cfg}, exe, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	good := string(DefaultConfig(filepath.Join(d, "certs"), 0, 9200))

	code, _, errOut := runMain(good + "server.port: 5602\n")
	if code != 1 || !strings.Contains(errOut, home+"/node_modules/js-yaml/lib/js-yaml/loader.js:173\n") ||
		!strings.Contains(errOut, "YAMLException: duplicated mapping key at line 14, column 1:\n    server.port: 5602\n") {
		t.Errorf("yaml: exit %d\n%s", code, errOut)
	}

	key := filepath.Join(d, "certs/dashboard-key.pem")
	code, out, errOut := runMain(good)
	if code != 1 || !strings.Contains(errOut, " FATAL  Error: ENOENT: no such file or directory, open '"+key+"'\n") ||
		!strings.Contains(out, `"tags":["fatal","root"]`) || strings.Contains(out+errOut, "already in use") {
		t.Errorf("missing key: exit %d\n%s\n%s", code, out, errOut)
	}
}
