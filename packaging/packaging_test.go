package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/config"
)

const defaultBin = "/usr/local/bin/siemctl"

// stubBin writes an executable that stands in for siemctl.
func stubBin(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "bin", "siemctl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	dir := t.TempDir()
	bin := stubBin(t, dir)
	var paths []string
	for _, u := range Units() {
		b, err := Files.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		// verify checks that ExecStart exists: point it at the stub.
		b = bytes.ReplaceAll(b, []byte(defaultBin), []byte(bin))
		p := filepath.Join(dir, u)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// verify also warns without failing: none of that for our units.
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, "siemctl-snapshot") {
			t.Errorf("systemd-analyze: %s", line)
		}
	}
}

func TestUnitContents(t *testing.T) {
	svc, _ := Files.ReadFile("siemctl-snapshot.service")
	timer, _ := Files.ReadFile("siemctl-snapshot.timer")
	for _, want := range []string{
		"Type=oneshot",
		"ExecStart=" + defaultBin + " snapshot capture --label timer --keep-days 30 --textfile /var/lib/node_exporter/textfile_collector/siemctl.prom",
		"ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
		"ReadWritePaths=/var/lib/siemctl -/var/backups/siemctl -/var/lib/node_exporter/textfile_collector",
	} {
		if !bytes.Contains(svc, []byte(want+"\n")) {
			t.Errorf("service lacks %q", want)
		}
	}
	for _, want := range []string{"OnCalendar=hourly", "Persistent=true", "RandomizedDelaySec=", "WantedBy=timers.target"} {
		if !bytes.Contains(timer, []byte(want)) {
			t.Errorf("timer lacks %q", want)
		}
	}
	if bytes.Contains(svc, []byte("password")) || bytes.Contains(svc, []byte("--token")) {
		t.Error("service passes a secret on the command line")
	}
}

// fakeSystemctl puts a systemctl on PATH that records its arguments.
func fakeSystemctl(t *testing.T, dir string) (pathEnv, logFile string) {
	t.Helper()
	bindir := filepath.Join(dir, "fakebin")
	if err := os.MkdirAll(bindir, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile = filepath.Join(dir, "systemctl.log")
	script := "#!/bin/sh\necho \"$*\" >> '" + logFile + "'\n"
	if err := os.WriteFile(filepath.Join(bindir, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bindir + string(os.PathListSeparator) + os.Getenv("PATH"), logFile
}

func runInstall(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	script, err := filepath.Abs("install.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// install runs install.sh, which must succeed, and returns its output.
func install(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := runInstall(t, env, args...)
	if err != nil {
		t.Fatalf("install.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// noSystemctl fails the test when the fake systemctl was called.
func noSystemctl(t *testing.T, log, when string) {
	t.Helper()
	if got := readLog(t, log); got != "" {
		t.Errorf("systemctl called %s: %s", when, got)
	}
}

func readLog(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallScript(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	t.Run("live install into a unit dir", func(t *testing.T) {
		dir := t.TempDir()
		path, log := fakeSystemctl(t, dir)
		unitDir := filepath.Join(dir, "etc", "systemd", "system")
		bin := stubBin(t, dir)
		install(t, []string{"PATH=" + path, "SIEMCTL_UNIT_DIR=" + unitDir, "DESTDIR="}, "--bin", bin)
		svc, err := os.ReadFile(filepath.Join(unitDir, "siemctl-snapshot.service"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(svc, []byte("ExecStart="+bin+" snapshot capture")) || bytes.Contains(svc, []byte(defaultBin)) {
			t.Errorf("ExecStart not rewritten to %s:\n%s", bin, svc)
		}
		if info, _ := os.Stat(filepath.Join(unitDir, "siemctl-snapshot.timer")); info == nil || info.Mode().Perm() != 0o644 {
			t.Errorf("timer not installed 0644: %v", info)
		}
		if got := readLog(t, log); got != "daemon-reload\nenable --now siemctl-snapshot.timer\n" {
			t.Errorf("systemctl calls:\n%s", got)
		}
		ents, _ := os.ReadDir(unitDir)
		if len(ents) != 2 {
			t.Errorf("unit dir holds %v", ents)
		}

		install(t, []string{"PATH=" + path, "SIEMCTL_UNIT_DIR=" + unitDir, "DESTDIR="}, "--uninstall")
		if ents, _ := os.ReadDir(unitDir); len(ents) != 0 {
			t.Errorf("uninstall left %v", ents)
		}
		if !strings.Contains(readLog(t, log), "disable --now siemctl-snapshot.timer\n") {
			t.Errorf("uninstall did not disable the timer:\n%s", readLog(t, log))
		}
	})
	t.Run("DESTDIR stages files and leaves systemd alone", func(t *testing.T) {
		dir := t.TempDir()
		path, log := fakeSystemctl(t, dir)
		dest := filepath.Join(dir, "stage")
		install(t, []string{"PATH=" + path, "DESTDIR=" + dest})
		for _, u := range Units() {
			want, _ := Files.ReadFile(u)
			got, err := os.ReadFile(filepath.Join(dest, "etc/systemd/system", u))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s staged incorrectly: %v", u, err)
			}
		}
		noSystemctl(t, log, "with DESTDIR")
	})
	t.Run("dry run changes nothing", func(t *testing.T) {
		dir := t.TempDir()
		path, log := fakeSystemctl(t, dir)
		unitDir := filepath.Join(dir, "units")
		out := install(t, []string{"PATH=" + path, "SIEMCTL_UNIT_DIR=" + unitDir, "DESTDIR="}, "--dry-run")
		for _, want := range []string{"+ install -d -m 0755 " + unitDir, "+ systemctl daemon-reload", "+ systemctl enable --now siemctl-snapshot.timer"} {
			if !strings.Contains(out, want) {
				t.Errorf("dry run output lacks %q:\n%s", want, out)
			}
		}
		if _, err := os.Stat(unitDir); !os.IsNotExist(err) {
			t.Errorf("dry run created %s", unitDir)
		}
		noSystemctl(t, log, "by a dry run")
	})
	t.Run("after the host profile units", func(t *testing.T) {
		dir := t.TempDir()
		path, _ := fakeSystemctl(t, dir)
		unitDir := filepath.Join(dir, "units")
		// A siemctl whose `config view indexer.unit manager.unit` answers as
		// the real one does off a terminal (header, then tab-separated rows).
		bin := filepath.Join(dir, "bin", "siemctl")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\n[ \"$*\" = 'config view indexer.unit manager.unit' ] || exit 2\n" +
			"printf 'key\\tvalue\\torigin\\nindexer.unit\\twazuh-indexer.service\\tprofile wazuh\\nmanager.unit\\twazuh-manager.service\\tprofile wazuh\\n'\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + path, "SIEMCTL_UNIT_DIR=" + unitDir, "DESTDIR="}
		install(t, env, "--bin", bin)
		svc := readLog(t, filepath.Join(unitDir, "siemctl-snapshot.service"))
		if !strings.Contains(svc, "\nAfter=network-online.target wazuh-indexer.service wazuh-manager.service\n") || strings.Contains(svc, "siem-indexer.service") {
			t.Errorf("After= not the profile's units:\n%s", svc)
		}
		// --units wins; unsafe or non-service names are refused.
		install(t, env, "--bin", bin, "--units", "idx.service mgr.service")
		if svc := readLog(t, filepath.Join(unitDir, "siemctl-snapshot.service")); !strings.Contains(svc, "\nAfter=network-online.target idx.service mgr.service\n") {
			t.Errorf("--units ignored:\n%s", svc)
		}
		for _, bad := range []string{"a.service;rm", "idx.timer", ""} {
			if out, err := runInstall(t, env, "--bin", bin, "--units", bad); err == nil {
				t.Errorf("--units %q accepted:\n%s", bad, out)
			}
		}
		// A siemctl that cannot answer leaves every profile's units, with a note.
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'config: broken' >&2\nexit 2\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := runInstall(t, env, "--bin", bin)
		if err != nil || !strings.Contains(out, "After= lists every profile's units") {
			t.Fatalf("fallback: %v\n%s", err, out)
		}
		if svc := readLog(t, filepath.Join(unitDir, "siemctl-snapshot.service")); !strings.Contains(svc, "\nAfter=network-online.target "+strings.Join(StackUnits(), " ")+"\n") {
			t.Errorf("fallback After=:\n%s", svc)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		for _, args := range [][]string{{"--bin", "relative/siemctl"}, {"--bin", "/usr/bin/x;rm"}, {"--frobnicate"}, {"--bin"}} {
			if out, err := runInstall(t, []string{"DESTDIR=" + t.TempDir()}, args...); err == nil {
				t.Errorf("%v accepted:\n%s", args, out)
			}
		}
	})
}

func TestServiceAfterFollowsProfiles(t *testing.T) {
	units := StackUnits()
	for _, p := range config.ProfileNames() {
		cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(t.TempDir(), "none.yaml"), Profile: p})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{cfg.Indexer.Unit, cfg.Manager.Unit} {
			if !slices.Contains(units, u) {
				t.Errorf("profile %s: %s missing from StackUnits %v", p, u, units)
			}
		}
	}
	svc, err := Service("/usr/bin/siemctl")
	if err != nil {
		t.Fatal(err)
	}
	want := "After=network-online.target " + strings.Join(units, " ") + "\n"
	if !bytes.Contains(svc, []byte("\n"+want)) {
		t.Errorf("siemctl-snapshot.service: want the line %q (the profiles' units; edit the checked-in file)", want)
	}
	if !bytes.Contains(svc, []byte("ExecStart=/usr/bin/siemctl snapshot capture ")) || bytes.Contains(svc, []byte(defaultBin)) {
		t.Errorf("Service did not move ExecStart to /usr/bin/siemctl")
	}
	for _, bad := range []string{"siemctl", "/usr/bin/siem ctl", "/x;rm -rf /"} {
		if _, err := Service(bad); err == nil {
			t.Errorf("Service(%q) accepted", bad)
		}
	}
}

func TestExampleConfigLoads(t *testing.T) {
	b, err := Files.ReadFile("siemctl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "siemctl.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Path: p, ExplicitPath: true})
	if err != nil {
		t.Fatalf("the example configuration does not load: %v", err)
	}
	if cfg.StateDir != "/var/lib/siemctl" || cfg.Indexer.PasswordFile != "/etc/siemctl/secrets/indexer" {
		t.Errorf("example config: state_dir %q, indexer.password_file %q", cfg.StateDir, cfg.Indexer.PasswordFile)
	}
	if bytes.Contains(bytes.ToLower(b), []byte("password:")) {
		t.Error("the example configuration holds a password key")
	}
}
