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

// ChownTree gives dir and everything under it to uid:gid, links themselves
// rather than what they point to (chown -hR); an error fails the test.
func ChownTree(t testing.TB, dir string, uid, gid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}
