package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes data to path with perm, making its parent directories; a
// file that cannot be written fails the test.
func WriteFile[D ~string | ~[]byte](t testing.TB, path string, data D, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}
