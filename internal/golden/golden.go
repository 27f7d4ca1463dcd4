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
