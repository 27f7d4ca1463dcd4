package lab

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
)

func requireDpkgTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"dpkg-deb", "dpkg-scanpackages", "apt-get", "dpkg-query"} {
		testenv.Tool(t, "apt-get install dpkg-dev", tool)
	}
}

func TestBuildDebAndInstallInAptRoot(t *testing.T) {
	requireDpkgTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	repo, root := filepath.Join(base, "repo"), filepath.Join(base, "root")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	hostStatus, _ := os.ReadFile("/var/lib/dpkg/status")
	for _, v := range []string{"4.9.0-1", "4.10.0-1"} {
		_, err := BuildDeb(ctx, repo, Package{
			Name: "siem-demo", Version: v,
			Files: []File{
				{Path: "usr/bin/siem-demo", Mode: 0o755, Data: []byte("#!/bin/sh\necho " + v + "\n")},
				{Path: "etc/siem-demo/siem.conf", Data: []byte("listen=127.0.0.1\n"), Conffile: true},
				{Path: "usr/share/siem-demo/current", Link: "/opt/siem-demo-" + v},
			},
			Postinst: `echo "postinst $1 $2" >> "$DPKG_ROOT/var/log/siem-demo.log"`,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ScanRepo(ctx, repo); err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(filepath.Join(repo, "Packages"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(idx), "Package: siem-demo") != 2 {
		t.Fatalf("Packages lists %d versions, want 2 (multiversion):\n%s", strings.Count(string(idx), "Package: siem-demo"), idx)
	}
	a := &AptRoot{Root: root, Repo: repo}
	if err := a.Init(); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ install, want string }{
		{"siem-demo=4.9.0-1", "4.9.0-1"},
		{"siem-demo=4.10.0-1", "4.10.0-1"},
		{"siem-demo=4.9.0-1", "4.9.0-1"}, // downgrade
	}
	for _, s := range steps {
		if err := a.Install(ctx, s.install); err != nil {
			t.Fatal(err)
		}
		got, err := a.InstalledVersion(ctx, "siem-demo")
		if err != nil || got != s.want {
			t.Fatalf("after install %s: version %q %v, want %s", s.install, got, err, s.want)
		}
		out, err := exec.CommandContext(ctx, filepath.Join(root, "usr/bin/siem-demo")).Output()
		if err != nil || strings.TrimSpace(string(out)) != s.want {
			t.Fatalf("installed binary prints %q %v", out, err)
		}
		link, err := os.Readlink(filepath.Join(root, "usr/share/siem-demo/current"))
		if err != nil || link != "/opt/siem-demo-"+s.want {
			t.Errorf("symlink = %q %v", link, err)
		}
	}
	conffiles, err := exec.CommandContext(ctx, "dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"), "-W", "-f=${Conffiles}", "siem-demo").Output()
	if err != nil || !strings.Contains(string(conffiles), "/etc/siem-demo/siem.conf") {
		t.Errorf("conffiles = %q %v", conffiles, err)
	}
	log, err := os.ReadFile(filepath.Join(root, "var/log/siem-demo.log"))
	if err != nil || strings.Count(string(log), "postinst configure") != 3 {
		t.Errorf("postinst log = %q %v", log, err)
	}
	if v, err := a.InstalledVersion(ctx, "not-there"); err != nil || v != "" {
		t.Errorf("InstalledVersion(not-there) = %q %v", v, err)
	}
	if after, _ := os.ReadFile("/var/lib/dpkg/status"); string(after) != string(hostStatus) {
		t.Error("host dpkg status changed")
	}
}

func TestBuildDebRejectsBadPaths(t *testing.T) {
	requireDpkgTools(t)
	for _, p := range []string{"../etc/passwd", "DEBIAN/postinst", "/"} {
		_, err := BuildDeb(context.Background(), t.TempDir(), Package{Name: "x", Version: "1", Files: []File{{Path: p}}})
		if err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

func TestJVMOptions(t *testing.T) {
	in := "-Xms1g\n-Xmx1g\n-XX:HeapDumpPath=data\n-XX:ErrorFile=logs/hs_err_pid%p.log\n9-:-Xlog:gc*:file=logs/gc.log:utctime\n8:-Xloggc:logs/gc.log\n## -Xms4g\n"
	got := string(JVMOptions([]byte(in), "/r/log", "/r/data", ""))
	for _, want := range []string{"-Xms512m\n", "-Xmx512m\n", "HeapDumpPath=/r/data", "ErrorFile=/r/log/hs_err", "file=/r/log/gc.log", "Xloggc:/r/log/gc.log", "## -Xms4g"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "1g") {
		t.Errorf("1g heap left:\n%s", got)
	}
	if got := string(JVMOptions([]byte(in), "/r/log", "/r/data", "2g")); !strings.Contains(got, "-Xms2g\n-Xmx2g\n") {
		t.Errorf("heap 2g:\n%s", got)
	}
}
