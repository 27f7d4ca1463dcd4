// Package wazuhreal locates the real Wazuh material (../shared/reference/wazuh-real relative to the
// module root) for tests. Those files are Wazuh's: tests read them in place and never copy them into
// the project. Where the directory is absent the test is skipped with a message saying so, unless
// SIEMCTL_IT_REQUIRED=1 (CI), where it fails.
package wazuhreal

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the wazuh-real directory, or skips (fails under SIEMCTL_IT_REQUIRED=1) when it is absent.
// The module root is found from the test's working directory (its package directory), so -trimpath
// builds find it too.
func Dir(t testing.TB) string {
	t.Helper()
	dir := ""
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared", "reference", "wazuh-real")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		msg := "real Wazuh material not found at " + dir + " (../shared/reference/wazuh-real next to the module root)"
		if os.Getenv("SIEMCTL_IT_REQUIRED") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return filepath.Clean(dir)
}

// Path returns a file under the wazuh-real directory (skipping like Dir when the directory is absent).
func Path(t testing.TB, rel ...string) string {
	t.Helper()
	return filepath.Join(append([]string{Dir(t)}, rel...)...)
}

// Read returns a file's content; a missing file inside a present directory is a test failure.
func Read(t testing.TB, rel ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(Path(t, rel...))
	if err != nil {
		t.Fatalf("read real Wazuh material: %v", err)
	}
	return b
}
