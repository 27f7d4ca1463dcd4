package diagnose

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab/emu/dashboard"
	"github.com/siemctl/siemctl/lab/emu/tlsutil"
)

// The lab's dashboard emulator dies as the real server does; its output is diagnosed, the
// printed fix is followed, and it starts again: a duplicated key added by hand, then its key
// moved aside by hand.
func TestDashboardEmulatorFaultsByHand(t *testing.T) {
	f := newFixture(t)
	conf, file := f.dashboard(t, dashboardYML)
	home := filepath.Join(f.root, "usr/share/wazuh-dashboard")
	exe := filepath.Join(home, "bin/opensearch-dashboards")
	f.write(t, filepath.Join(home, "VERSION.json"), `{"version":"4.9.0","revision":"01"}`)
	pair, err := tlsutil.SelfSigned("dashboard", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(conf, "certs/dashboard-key.pem")
	f.write(t, key, string(pair.KeyPEM))
	f.write(t, filepath.Join(conf, "certs/dashboard.pem"), string(pair.CertPEM))
	f.write(t, filepath.Join(conf, "certs/root-ca.pem"), string(pair.CertPEM))
	good := strings.NewReplacer("server.port: 443", "server.port: 0", "server.host: 0.0.0.0", "server.host: 127.0.0.1").Replace(strings.ReplaceAll(dashboardYML, "@CONF@", conf))
	f.write(t, file, good)
	// run the emulator as the unit does (stdout and stderr appended to one log); ok: it serves
	run := func() (lines []string, ok bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		defer cancel()
		var out bytes.Buffer
		code := dashboard.Main(ctx, []string{"--config", file}, exe, &out, &out)
		return strings.Split(strings.TrimRight(out.String(), "\n"), "\n"), code == 0
	}
	st := dashboardFailed
	st.StartedAt = time.Now().Add(-time.Second)

	// 1. a key repeated at the end by hand
	f.write(t, file, good+"server.port: 5602\n")
	lines, ok := run()
	if ok {
		t.Fatal("started on a broken file")
	}
	r := f.diagnoseAs(t, "dashboard", st, lines)
	assertFinding(t, r, KindConfigFile, []string{file + " line 13 does not parse (YAML): duplicated mapping key"}, []string{"correct " + file + " line 13"})
	// the fix followed: line 13 corrected (removed)
	b, _ := os.ReadFile(file)
	ls := strings.Split(string(b), "\n")
	f.write(t, file, strings.Join(append(ls[:12], ls[13:]...), "\n"))
	if lines, ok := run(); !ok {
		t.Fatalf("after the fix: %q", lines)
	}

	// 2. the key moved aside by hand
	old := filepath.Join(conf, "certs/old/dashboard-key.pem")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(key, old); err != nil {
		t.Fatal(err)
	}
	lines, ok = run()
	if ok {
		t.Fatal("started without its key")
	}
	r = f.diagnoseAs(t, "dashboard", st, lines)
	assertFinding(t, r, KindDashboardTLS, []string{"server.ssl.key in " + file + " names " + key + ", which does not exist"}, []string{"move " + old + " back to " + key})
	if err := os.Rename(old, key); err != nil { // the fix followed
		t.Fatal(err)
	}
	if lines, ok := run(); !ok {
		t.Fatalf("after the fix: %q", lines)
	}
}
