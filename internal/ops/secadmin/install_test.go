package secadmin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallBackup: an incomplete backup is refused before anything is
// written; a complete one is copied in, an existing file keeps its mode and
// a symlink at a file's name is replaced, never written through.
func TestInstallBackup(t *testing.T) {
	root := t.TempDir()
	from, to := filepath.Join(root, "backup"), filepath.Join(root, "opensearch-security")
	for _, d := range []string{from, to} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(from, "config.yml"), "_meta: {type: config, config_version: 2}\n", 0o600)
	write(filepath.Join(from, "notes.txt"), "not a security file\n", 0o600)
	if _, err := InstallBackup(from, to); err == nil || !strings.Contains(err.Error(), "internal_users.yml expected, found config.yml") {
		t.Fatalf("incomplete backup: %v", err)
	}
	if ents, _ := os.ReadDir(to); len(ents) != 0 {
		t.Fatalf("an incomplete backup wrote %d files", len(ents))
	}

	write(filepath.Join(from, "internal_users.yml"), "admin: {hash: \"$2y$12$x\"}\n", 0o600)
	write(filepath.Join(to, "config.yml"), "old\n", 0o604)
	outside := filepath.Join(root, "outside.yml")
	write(outside, "untouched\n", 0o644)
	if err := os.Symlink(outside, filepath.Join(to, "internal_users.yml")); err != nil {
		t.Fatal(err)
	}
	n, err := InstallBackup(from, to)
	if err != nil || n != 2 {
		t.Fatalf("install: %d files, %v", n, err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "untouched\n" {
		t.Error("written through a symlink")
	}
	if st, err := os.Lstat(filepath.Join(to, "internal_users.yml")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("internal_users.yml is not a regular file: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(to, "config.yml")); st.Mode().Perm() != 0o604 {
		t.Errorf("config.yml mode %o, want the existing file's 604", st.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(to, "notes.txt")); !os.IsNotExist(err) {
		t.Error("a file that is not *.yml was installed")
	}
}
