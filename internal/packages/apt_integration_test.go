package packages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
)

// aptRoot builds two tiny .debs of ut-demo (4.9.0-1, 4.10.0-1) into a flat
// repository and an isolated apt/dpkg root (the lab's apt setup, lab/deb.go),
// and returns the environment that points apt and dpkg at it.
func aptRoot(t *testing.T) (env []string, root string) {
	t.Helper()
	for _, tool := range []string{"dpkg-deb", "dpkg-scanpackages", "apt-get", "apt-cache", "dpkg-query", "dpkg", "gzip"} {
		testenv.Tool(t, "the real apt/dpkg test needs it (apt-get install dpkg-dev)", tool)
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	root = filepath.Join(dir, "root")
	mkdirs(t, repo)
	for _, v := range []string{"4.9.0-1", "4.10.0-1"} {
		b := filepath.Join(dir, "build", v)
		mkdirs(t, filepath.Join(b, "DEBIAN"), filepath.Join(b, "usr/share/ut-demo"), filepath.Join(b, "etc/ut-demo"))
		write(t, filepath.Join(b, "DEBIAN/control"), fmt.Sprintf(
			"Package: ut-demo\nVersion: %s\nArchitecture: all\nMaintainer: Test <t@example.invalid>\nSection: admin\nPriority: optional\nDescription: packages test\n tiny\n", v), 0o644)
		write(t, filepath.Join(b, "DEBIAN/conffiles"), "/etc/ut-demo/demo.conf\n", 0o644)
		write(t, filepath.Join(b, "etc/ut-demo/demo.conf"), "listen=127.0.0.1\n", 0o644)
		write(t, filepath.Join(b, "usr/share/ut-demo/VERSION"), v+"\n", 0o644)
		write(t, filepath.Join(b, "DEBIAN/postinst"), "#!/bin/sh\nset -e\necho \"postinst $1 $2\" >> \"${DPKG_ROOT}/var/log/ut-demo-postinst.log\"\n", 0o755)
		run(t, dir, nil, "dpkg-deb", "--root-owner-group", "-Zxz", "--build", b, filepath.Join(repo, "ut-demo_"+v+"_all.deb"))
	}
	run(t, repo, nil, "sh", "-c", "dpkg-scanpackages --multiversion . /dev/null > Packages 2>/dev/null && gzip -9kf Packages")

	mkdirs(t, filepath.Join(root, "var/lib/dpkg/info"), filepath.Join(root, "var/lib/dpkg/updates"), filepath.Join(root, "var/lib/dpkg/triggers"),
		filepath.Join(root, "var/lib/apt/lists/partial"), filepath.Join(root, "var/cache/apt/archives/partial"),
		filepath.Join(root, "etc/apt/apt.conf.d"), filepath.Join(root, "etc/apt/preferences.d"), filepath.Join(root, "etc/apt/sources.list.d"),
		filepath.Join(root, "var/log/apt"))
	write(t, filepath.Join(root, "var/lib/dpkg/status"), "", 0o644)
	write(t, filepath.Join(root, "var/lib/dpkg/available"), "", 0o644)
	write(t, filepath.Join(root, "etc/apt/sources.list"), "deb [trusted=yes] file:"+repo+" ./\n", 0o644)
	arch := strings.TrimSpace(run(t, dir, nil, "dpkg", "--print-architecture"))
	conf := filepath.Join(root, "apt-lab.conf") // outside etc/apt: apt must not read it twice
	write(t, conf, fmt.Sprintf(`Dir "%[1]s/";
Dir::State::status "%[1]s/var/lib/dpkg/status";
Dir::Etc::main "/dev/null";
Dir::Bin::dpkg "/usr/bin/dpkg";
APT::Architecture "%[2]s";
APT::Sandbox::User "root";
Acquire::Languages "none";
Acquire::CompressionTypes::Order { "gz"; };
DPkg::Options { "--root=%[1]s"; "--admindir=%[1]s/var/lib/dpkg"; "--force-script-chrootless"; "--force-not-root"; "--log=%[1]s/var/log/dpkg.log"; };
`, root, arch), 0o644)
	return []string{"APT_CONFIG=" + conf, "DPKG_ROOT=" + root}, root
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func TestAptIsolatedRoot(t *testing.T) {
	env, root := aptRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := New(KindAuto, ExecRunner{}, Options{Env: env, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind() != KindApt {
		t.Fatalf("auto picked %s on a dpkg host", m.Kind())
	}
	hostStatus, _ := os.ReadFile("/var/lib/dpkg/status")

	if err := m.Update(ctx); err != nil {
		t.Fatalf("Update: %v", err)
	}
	got, err := m.Installed(ctx, "ut-demo", "ut-nope")
	if err != nil || got["ut-demo"] != "" || got["ut-nope"] != "" {
		t.Fatalf("Installed before install = %v, %v", got, err)
	}
	pol, err := m.Candidates(ctx, "ut-demo")
	if err != nil {
		t.Fatalf("Candidates: %v", err)
	}
	if pol.Installed != "" || pol.Candidate != "4.10.0-1" || len(pol.Available) != 2 || pol.Available[0] != "4.10.0-1" || pol.Available[1] != "4.9.0-1" {
		t.Fatalf("policy = %+v", pol)
	}
	if _, err := m.Candidates(ctx, "ut-nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Candidates(unknown) = %v", err)
	}
	mad, err := m.Madison(ctx, "ut-demo")
	if err != nil || len(mad) != 2 || mad[1].Version != "4.9.0-1" {
		t.Fatalf("Madison = %+v, %v", mad, err)
	}

	if err := m.Install(ctx, map[string]string{"ut-demo": "4.10.0-1"}, InstallOptions{KeepConfig: true}); err != nil {
		t.Fatalf("Install 4.10.0-1: %v", err)
	}
	if got, _ := m.Installed(ctx, "ut-demo"); got["ut-demo"] != "4.10.0-1" {
		t.Fatalf("Installed = %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "usr/share/ut-demo/VERSION")); string(b) != "4.10.0-1\n" {
		t.Fatalf("file content %q: not installed into the isolated root", b)
	}
	if pol, _ := m.Candidates(ctx, "ut-demo"); pol.Installed != "4.10.0-1" || !pol.Table[0].Installed {
		t.Fatalf("policy after install = %+v", pol)
	}

	// Downgrade without the flag: apt's exit 100, typed.
	err = m.Install(ctx, map[string]string{"ut-demo": "4.9.0-1"}, InstallOptions{})
	var ce *CommandError
	if !errors.Is(err, ErrDowngradeNotAllowed) || !errors.As(err, &ce) || ce.ExitCode != 100 {
		t.Fatalf("downgrade without flag = %v", err)
	}
	if err := m.Install(ctx, map[string]string{"ut-demo": "4.11.0-1"}, InstallOptions{}); !errors.Is(err, ErrVersionNotFound) {
		t.Fatalf("unknown version = %v", err)
	}

	// Held: changing it needs AllowHeld.
	if err := m.Hold(ctx, "ut-demo"); err != nil {
		t.Fatalf("Hold: %v", err)
	}
	if got, _ := m.Installed(ctx, "ut-demo"); got["ut-demo"] != "4.10.0-1" {
		t.Fatalf("held package not reported installed: %v", got)
	}
	if err := m.Install(ctx, map[string]string{"ut-demo": "4.9.0-1"}, InstallOptions{AllowDowngrades: true}); !errors.Is(err, ErrHeld) {
		t.Fatalf("downgrade of held package = %v", err)
	}
	if err := m.Unhold(ctx, "ut-demo"); err != nil {
		t.Fatalf("Unhold: %v", err)
	}

	if err := m.Install(ctx, map[string]string{"ut-demo": "4.9.0-1"}, InstallOptions{AllowDowngrades: true, KeepConfig: true}); err != nil {
		t.Fatalf("downgrade with flag: %v", err)
	}
	if got, _ := m.Installed(ctx, "ut-demo"); got["ut-demo"] != "4.9.0-1" {
		t.Fatalf("after downgrade Installed = %v", got)
	}
	if m.Compare("4.10.0-1", "4.9.0-1") != 1 || Upstream("4.10.0-1") != "4.10.0" {
		t.Fatal("Compare/Upstream")
	}

	// The host's dpkg database is untouched.
	if after, _ := os.ReadFile("/var/lib/dpkg/status"); string(after) != string(hostStatus) {
		t.Fatal("host /var/lib/dpkg/status changed")
	}
}
