package lab

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOpenParents(t *testing.T) {
	base, err := os.MkdirTemp("", "siemlab-open-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "a", "b")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{base, filepath.Join(base, "a")} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := OpenParents(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{base, filepath.Join(base, "a"), dir} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want 0755", d, fi.Mode().Perm(), err)
		}
	}
	tmp, _ := os.Stat(os.TempDir())
	if err := OpenParents("/etc/ssl"); err == nil {
		t.Error("OpenParents outside the temp dir: no error")
	}
	if now, _ := os.Stat(os.TempDir()); now.Mode() != tmp.Mode() {
		t.Errorf("the temp dir itself changed: %v -> %v", tmp.Mode(), now.Mode())
	}
}
