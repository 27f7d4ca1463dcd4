//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EPackageInstall builds siemctl's .deb from the e2e binary, installs it into the lab's
// isolated root with real apt, enables the packaged timer under the lab's systemd, triggers the
// packaged service, finds the snapshot it wrote, and removes the package: the edited
// configuration stays.
func TestE2EPackageInstall(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 900})
	siemctl, _ := e2e.Binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The package's version is the binary's own: version --short prints exactly one line.
	v := l.Siemctl("version", "--short")
	if v.Code != 0 || strings.Count(v.Stdout, "\n") != 1 {
		t.Fatalf("version --short: exit %d, %q", v.Code, v.Stdout)
	}
	out := t.TempDir()
	arts, err := Build(ctx, Options{Bin: siemctl, Version: strings.TrimSpace(v.Stdout), Arch: runtime.GOARCH, Out: out, Docs: "../..", MTime: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	deb := arts[0]
	root := filepath.Join(l.Dir, "root")
	apt := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-q", "-y"}, args...)...)
		cmd.Env = append(append(os.Environ(), l.Env...), "DEBIAN_FRONTEND=noninteractive")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	apt("install", deb)
	for _, f := range []string{"usr/bin/siemctl", "etc/siemctl/siemctl.yaml", "usr/lib/systemd/system/siemctl-snapshot.service",
		"usr/lib/systemd/system/siemctl-snapshot.timer", "usr/share/man/man1/siemctl-health.1.gz", "var/lib/siemctl"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("installed package lacks %s: %v", f, err)
		}
	}
	if st := dpkgStatus(t, ctx, root); st != "install ok installed" {
		t.Fatalf("dpkg status %q", st)
	}

	// The lab's root is not "/": a drop-in (what an operator's override would be) points the
	// packaged unit at the installed binary and the lab's configuration, and lets it see the lab
	// directory (under /tmp, which the unit's PrivateTmp would hide). ProtectKernelTunables and
	// ProtectKernelLogs cannot be set up by a systemd nested in a container (status 226
	// NAMESPACE, even for ExecStart=/bin/true), so the lab turns those two off. Everything else,
	// the rest of the sandboxing included, is the packaged unit's.
	svcLog := filepath.Join(l.Dir, "log", "siemctl-snapshot.log")
	dropIn := filepath.Join(root, "etc/systemd/system/siemctl-snapshot.service.d")
	if err := os.MkdirAll(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`[Service]
Environment=%s
ExecStart=
ExecStart=%s snapshot capture --label timer --keep-days 30
PrivateTmp=no
ProtectKernelTunables=no
ProtectKernelLogs=no
ReadWritePaths=
ReadWritePaths=%s
StandardOutput=append:%s
StandardError=append:%s
`, strings.Join(l.Env, " "), filepath.Join(root, "usr/bin/siemctl"), l.Dir, svcLog, svcLog)
	if err := os.WriteFile(filepath.Join(dropIn, "lab.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	lb, err := lab.Open(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := lab.ConnectPrivate(ctx, lb.SystemdAddress())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.EnableUnitFilesContext(ctx, []string{"siemctl-snapshot.timer"}, false, true); err != nil {
		t.Fatalf("enable the packaged timer: %v", err)
	}
	if err := conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lab.StartUnit(ctx, conn, "siemctl-snapshot.timer"); err != nil {
		t.Fatal(err)
	}
	timer, err := conn.GetUnitPropertiesContext(ctx, "siemctl-snapshot.timer")
	if err != nil {
		t.Fatal(err)
	}
	if timer["UnitFileState"] != "enabled" || timer["ActiveState"] != "active" {
		t.Fatalf("timer: UnitFileState %v, ActiveState %v", timer["UnitFileState"], timer["ActiveState"])
	}
	svc, err := conn.GetUnitPropertiesContext(ctx, "siemctl-snapshot.service")
	if err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprint(svc["After"]); !strings.Contains(after, "siem-indexer.service") || !strings.Contains(after, "siem-manager.service") {
		t.Errorf("service After=%s: not ordered after the lab profile's indexer and manager", after)
	}

	// Trigger the service the timer starts (a oneshot: the start job ends when the capture does).
	if err := lab.StartUnit(ctx, conn, "siemctl-snapshot.service"); err != nil {
		res, _ := conn.GetServicePropertyContext(ctx, "siemctl-snapshot.service", "Result")
		status, _ := conn.GetServicePropertyContext(ctx, "siemctl-snapshot.service", "ExecMainStatus")
		out, _ := os.ReadFile(svcLog)
		logTail, _ := os.ReadFile(filepath.Join(l.Dir, "log", "systemd.log"))
		direct := l.Siemctl("snapshot", "capture", "--label", "direct")
		t.Fatalf("packaged service: %v (result %v, status %v)\nservice output:\n%s\nsystemd log:\n%s\nthe same capture run directly: exit %d\n%s",
			err, res.Value, status.Value, tail(string(out), 3000), tail(string(logTail), 2000), direct.Code, tail(direct.Stderr, 2000))
	}
	list := l.Siemctl("snapshot", "list", "-o", "json")
	if list.Code != 0 {
		t.Fatalf("snapshot list: exit %d %s", list.Code, list.Stderr)
	}
	var snaps []struct {
		ID    string `json:"id"`
		Label string `json:"label"`
	}
	if err := json.Unmarshal([]byte(list.Stdout), &snaps); err != nil {
		t.Fatalf("snapshot list: %v\n%s", err, list.Stdout)
	}
	found := false
	for _, s := range snaps {
		found = found || s.Label == "timer"
	}
	if !found {
		t.Fatalf("no snapshot labelled timer after the packaged service ran: %s", list.Stdout)
	}

	// Removal keeps the (edited) configuration, removes the binary.
	cfg := filepath.Join(root, "etc/siemctl/siemctl.yaml")
	edited := "# edited by the operator\n"
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, append(b, edited...), 0o640); err != nil {
		t.Fatal(err)
	}
	apt("remove", "siemctl")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/siemctl")); !os.IsNotExist(err) {
		t.Errorf("removal left usr/bin/siemctl: %v", err)
	}
	if b, err := os.ReadFile(cfg); err != nil || !strings.HasSuffix(string(b), edited) {
		t.Errorf("removal did not keep the edited configuration: %v", err)
	}
	if st := dpkgStatus(t, ctx, root); st != "deinstall ok config-files" {
		t.Errorf("dpkg status after removal %q, want config-files", st)
	}
}

func dpkgStatus(t *testing.T, ctx context.Context, root string) string {
	t.Helper()
	b, err := exec.CommandContext(ctx, "dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"), "-W", "-f=${Status}", "siemctl").Output()
	if err != nil {
		t.Fatalf("dpkg-query: %v", err)
	}
	return string(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
