// Package testenv is what tests need of the machine they run on: an external tool (or a private
// systemd) is there, or the test is skipped saying how to install it — failed instead under
// SIEMCTL_IT_REQUIRED=1 (CI), where scripts/install-deps.sh has installed everything and a missing
// tool is a broken setup; and what they do with its files (WriteFile, ChownTree, ReadTarGz).
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Required tells whether tests must fail rather than skip when something they need is missing.
func Required() bool { return os.Getenv("SIEMCTL_IT_REQUIRED") == "1" }

// Tool returns the path of the first of names found on PATH; none found, it skips the test (fails it
// under SIEMCTL_IT_REQUIRED=1) with "<names[0]> not found: <install>".
func Tool(t testing.TB, install string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := names[0] + " not found: " + install
	if Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// PrivateSystemd skips the test (fails it under SIEMCTL_IT_REQUIRED=1) unless a private
// `systemd --user` manager can run here the way the lab runs one (lab.StartSystemd): as root (it
// makes cgroups and a mount namespace), with /lib/systemd/systemd, a named systemd or unified
// cgroup hierarchy, and unshare.
func PrivateSystemd(t testing.TB) {
	t.Helper()
	const systemd = "/lib/systemd/systemd"
	reason := ""
	switch {
	case os.Geteuid() != 0:
		reason = "needs root to create cgroups and a mount namespace"
	case !executable(systemd):
		reason = systemd + " not found"
	case !dirExists("/sys/fs/cgroup/systemd") && !dirExists("/sys/fs/cgroup/unified"):
		reason = "no /sys/fs/cgroup/systemd or /sys/fs/cgroup/unified hierarchy"
	}
	if _, err := exec.LookPath("unshare"); reason == "" && err != nil {
		reason = "unshare not found"
	}
	if reason == "" {
		return
	}
	if Required() {
		t.Fatalf("private systemd required (SIEMCTL_IT_REQUIRED=1) but %s", reason)
	}
	t.Skipf("skipping private-systemd test: %s (set SIEMCTL_IT_REQUIRED=1 to make this fatal)", reason)
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
