// Package testenv is what tests need of the machine they run on: an external tool is there, or the
// test is skipped saying how to install it — failed instead under SIEMCTL_IT_REQUIRED=1 (CI), where
// scripts/install-deps.sh has installed everything and a missing tool is a broken setup.
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
