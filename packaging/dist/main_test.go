package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
)

func TestPackageVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                  "1.2.3",
		"1.2.3":                   "1.2.3",
		"v1.2.3-4-gabcdef0":       "1.2.3+git4.gabcdef0",
		"v1.2.3-4-gabcdef0-dirty": "1.2.3+git4.gabcdef0.dirty",
		"v1.2.3-dirty":            "1.2.3+git0.dirty",
		"v1.3.0~rc1":              "1.3.0~rc1",
		"98b020c":                 "0.0.0+git.98b020c",
		"98b020c-dirty":           "0.0.0+git.98b020c.dirty",
	} {
		got, err := PackageVersion(in)
		if err != nil || got != want {
			t.Errorf("PackageVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "dev", "v1.2", "release-1", "v1.2.3;rm"} {
		if got, err := PackageVersion(in); err == nil {
			t.Errorf("PackageVersion(%q) = %q, want an error", in, got)
		}
	}
}

// buildSiemctl builds the real siemctl (the man pages and completions come from it).
func buildSiemctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "siemctl")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X github.com/siemctl/siemctl/internal/buildinfo.Version=v1.2.3", "-o", bin, "../../cmd/siemctl")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds siemctl")
	}
	bin := buildSiemctl(t)
	out := t.TempDir()
	mtime := time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)
	arts, err := Build(context.Background(), Options{Bin: bin, Version: "v1.2.3", Arch: runtime.GOARCH, Out: out, Docs: "../..", MTime: mtime})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arts {
		names = append(names, filepath.Base(a))
	}
	deb := "siemctl_1.2.3-1_" + runtime.GOARCH + ".deb"
	tgz := "siemctl_1.2.3_linux_" + runtime.GOARCH + ".tar.gz"
	if len(names) != 4 || names[0] != deb || !strings.HasPrefix(names[1], "siemctl-1.2.3-1.") || !strings.HasSuffix(names[1], ".rpm") ||
		names[2] != tgz || names[3] != "SHA256SUMS" {
		t.Fatalf("artifacts %v", names)
	}

	// SHA256SUMS covers the three artifacts with their real digests.
	sums, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	for _, a := range arts[:3] {
		b, _ := os.ReadFile(a)
		h := sha256.Sum256(b)
		if !strings.Contains(string(sums), hex.EncodeToString(h[:])+"  "+filepath.Base(a)+"\n") {
			t.Errorf("SHA256SUMS lacks %s:\n%s", filepath.Base(a), sums)
		}
	}

	wantFiles := []string{
		"/usr/bin/siemctl", "/etc/siemctl/siemctl.yaml",
		"/usr/lib/systemd/system/siemctl-snapshot.service", "/usr/lib/systemd/system/siemctl-snapshot.timer",
		"/usr/share/bash-completion/completions/siemctl", "/usr/share/zsh/vendor-completions/_siemctl",
		"/usr/share/fish/vendor_completions.d/siemctl.fish",
		"/usr/share/man/man1/siemctl.1.gz", "/usr/share/man/man1/siemctl-health.1.gz", "/usr/share/man/man1/siemctl-snapshot-capture.1.gz",
		"/usr/share/doc/siemctl/LICENSE", "/usr/share/doc/siemctl/CHANGELOG.md",
		"/usr/share/siemctl/ansible/upgrade.yml",
		"/usr/share/siemctl/ansible/rollback.yml",
		"/usr/share/siemctl/ansible/tasks/upgrade-turn.yml",
	}

	// The tarball: the same tree under one top directory, the service pointing at /usr/bin/siemctl.
	tarFiles := map[string]string{}
	for name, b := range testenv.ReadTarGz(t, filepath.Join(out, tgz)) {
		tarFiles[strings.TrimPrefix(name, "siemctl_1.2.3_linux_"+runtime.GOARCH)] = string(b)
	}
	for _, w := range append(wantFiles, "/var/lib/siemctl/") {
		if _, ok := tarFiles[w]; !ok {
			t.Errorf("tarball lacks %s", w)
		}
	}
	svc := tarFiles["/usr/lib/systemd/system/siemctl-snapshot.service"]
	if !strings.Contains(svc, "\nExecStart=/usr/bin/siemctl snapshot capture ") || !strings.Contains(svc, "wazuh-indexer.service") {
		t.Errorf("packaged service:\n%s", svc)
	}
	if !strings.Contains(tarFiles["/usr/share/bash-completion/completions/siemctl"], "__start_siemctl") {
		t.Errorf("bash completion is not siemctl's")
	}

	// The .deb, read by dpkg-deb: contents, the conffile, the version and architecture.
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb not installed: .deb contents not checked")
	}
	list, err := exec.Command("dpkg-deb", "-c", filepath.Join(out, deb)).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range append(wantFiles, "/var/lib/siemctl/") {
		if !strings.Contains(string(list), " ."+w+"\n") {
			t.Errorf(".deb lacks %s", w)
		}
	}
	ctl := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-e", filepath.Join(out, deb), ctl).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -e: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ctl, "conffiles")); string(b) != "/etc/siemctl/siemctl.yaml\n" {
		t.Errorf("conffiles = %q", b)
	}
	fields, _ := exec.Command("dpkg-deb", "-f", filepath.Join(out, deb), "Version", "Architecture", "License").Output()
	if want := "Version: 1.2.3-1\nArchitecture: " + runtime.GOARCH + "\nLicense: Apache-2.0\n"; string(fields) != want {
		t.Errorf("control fields:\n%s\nwant:\n%s", fields, want)
	}

	if _, err := exec.LookPath("rpm"); err != nil {
		if os.Getenv("SIEMCTL_IT_REQUIRED") == "1" {
			t.Fatal("rpm not installed: scripts/install-deps.sh installs it")
		}
		t.Log("rpm not installed: .rpm contents not checked (apt-get install rpm)")
		return
	}
	rpmList, err := exec.Command("rpm", "-qlp", arts[1]).Output()
	if err != nil {
		t.Fatal(err)
	}
	rpmFiles := strings.Split(strings.TrimSpace(string(rpmList)), "\n")
	for _, w := range append(wantFiles, "/var/lib/siemctl") {
		if !slices.Contains(rpmFiles, w) {
			t.Errorf(".rpm lacks %s", w)
		}
	}
	if cf, _ := exec.Command("rpm", "-qp", "--configfiles", arts[1]).Output(); string(cf) != "/etc/siemctl/siemctl.yaml\n" {
		t.Errorf("rpm config files = %q", cf)
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, o := range map[string]Options{
		"no version":     {Bin: "/bin/true", Arch: "amd64", Out: dir},
		"no arch":        {Bin: "/bin/true", Version: "v1.0.0", Out: dir},
		"missing binary": {Bin: filepath.Join(dir, "nope"), Version: "v1.0.0", Arch: "amd64", Out: dir},
	} {
		if _, err := Build(context.Background(), o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a rejected build wrote %v", ents)
	}
}
