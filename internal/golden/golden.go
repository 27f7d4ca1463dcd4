// Package golden compares output with files under testdata/ and rewrites
// them when SIEMCTL_UPDATE_GOLDEN=1 is set (`make golden`). An environment
// variable, not a test flag, so one `go test ./...` serves every package,
// including those that do not import this one.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// UpdateEnv names the environment variable that makes Assert rewrite the
// golden files instead of comparing.
const UpdateEnv = "SIEMCTL_UPDATE_GOLDEN"

func updating() bool { return os.Getenv(UpdateEnv) == "1" }

// Assert compares got with testdata/<name>.golden.
func Assert(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s: %v (run `make golden` to create it)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (run `make golden` if intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// AssertTree compares got (file name → content) with the files of the directory
// at path (relative to the test's package directory, e.g. ../../../docs/commands):
// the same names, the same bytes. With SIEMCTL_UPDATE_GOLDEN=1 it writes the
// directory anew instead (files got no longer has are removed).
func AssertTree(t *testing.T, path string, got map[string][]byte) {
	t.Helper()
	if updating() {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(path, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		t.Fatalf("read %s: %v (run `make golden` to create it)", path, err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Name()] = true
		want, err := os.ReadFile(filepath.Join(path, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		g, ok := got[e.Name()]
		switch {
		case !ok:
			t.Errorf("%s/%s is no longer generated (run `make golden` to remove it)", path, e.Name())
		case !bytes.Equal(g, want):
			t.Errorf("%s/%s differs from what is generated now (run `make golden` if intended)\n--- got ---\n%s\n--- want ---\n%s", path, e.Name(), g, want)
		}
	}
	for name := range got {
		if !have[name] {
			t.Errorf("%s/%s is missing (run `make golden` to write it)", path, name)
		}
	}
}
