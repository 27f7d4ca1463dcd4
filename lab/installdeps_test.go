package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// installDeps runs scripts/install-deps.sh with a PATH of only the given tools (symlinks to the
// real ones, or stubs) plus an apt-get and a dpkg-query that record or answer; it returns what
// apt-get was asked to do.
func installDeps(t *testing.T, tools []string, libcDevInstalled bool) string {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "apt.log")
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"sh", "bash", "dirname", "grep", "id", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not installed", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range tools {
		write(tool, "exit 0")
	}
	write("apt-get", `echo "$*" >> '`+log+`'`)
	status := "not-installed"
	if libcDevInstalled {
		status = "installed"
	}
	write("dpkg-query", `[ "$3" = libc6-dev ] && echo `+status)
	cmd := exec.Command(filepath.Join(bin, "bash"), "../scripts/install-deps.sh")
	cmd.Env = []string{"PATH=" + bin, "JAVA_HOME="}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install-deps.sh: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(log)
	return string(b)
}

func TestInstallDepsInstallsWhatRaceAndTheLabNeed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("install-deps.sh runs apt-get as root (sudo otherwise)")
	}
	// A bare machine: none of the tools, libc6-dev missing.
	got := installDeps(t, nil, false)
	install := ""
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "install ") {
			install = l
		}
	}
	if !strings.Contains(got, "update") || install == "" {
		t.Fatalf("apt-get calls:\n%s", got)
	}
	for _, pkg := range []string{"make", "dpkg-dev", "maven", "gcc", "libc6-dev", "util-linux", "bsdutils", "openssl"} {
		if !strings.Contains(" "+install+" ", " "+pkg+" ") {
			t.Errorf("a bare machine does not get %s: %s", pkg, install)
		}
	}
	// gcc present but not libc6-dev (gcc only recommends it): -race would not build.
	tools := []string{"make", "dpkg-scanpackages", "dpkg-deb", "mvn", "logger", "unshare", "setpriv", "openssl", "gcc"}
	got = installDeps(t, tools, false)
	if !strings.Contains(got, "libc6-dev") || strings.Contains(got, " gcc") {
		t.Errorf("gcc without libc6-dev: apt-get calls:\n%s", got)
	}
	if got = installDeps(t, tools, true); strings.Contains(got, "libc6-dev") || strings.Contains(got, "maven") {
		t.Errorf("everything present: apt-get calls:\n%s", got)
	}
}
