//go:build e2e

package security_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2ESecurity: API users against the manager emulator, the real
// OpenSearch hash tool, and backup/apply through the lab's security init
// script (the real securityadmin).
func TestE2ESecurity(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 280})

	t.Run("api users", func(t *testing.T) {
		r := l.Siemctl("security", "api-users", "list")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "id\tusername\troles\tadmin\trun_as\n") {
			t.Fatalf("list: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := l.SiemctlStdin("weakpassword\n", "security", "api-users", "add", "ops-bot", "--password-stdin"); r.Code != 2 || !strings.Contains(r.Stderr, "nothing was sent") {
			t.Errorf("weak: exit %d %s", r.Code, r.Stderr)
		}
		r = l.SiemctlStdin(newPassword+"\n", "security", "api-users", "add", "ops-bot", "--password-stdin", "-o", "json", "--yes")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"username": "ops-bot"`) || strings.Contains(r.Stdout+r.Stderr, newPassword) {
			t.Fatalf("add: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := l.Siemctl("security", "api-users", "list", "-o", "json"); !strings.Contains(r.Stdout, `"ops-bot"`) {
			t.Errorf("not listed: %s", r.Stdout)
		}
		if r := l.SiemctlStdin(newPassword+"\n", "security", "api-users", "add", "ops-bot", "--password-stdin", "--yes"); r.Code != 1 || !strings.Contains(r.Stderr, "already exists") {
			t.Errorf("duplicate: exit %d %s", r.Code, r.Stderr)
		}
	})
	t.Run("hash with the real tool", func(t *testing.T) {
		r := l.SiemctlStdin(newPassword+"\n", "security", "indexer", "hash")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "$2y$12$") || len(strings.TrimSpace(r.Stdout)) != 60 || strings.Contains(r.Stdout+r.Stderr, newPassword) {
			t.Errorf("exit %d %q %s", r.Code, r.Stdout, r.Stderr)
		}
	})
	t.Run("backup and apply", func(t *testing.T) {
		dir := filepath.Join(l.Dir, "security-backup")
		r := l.Siemctl("security", "indexer", "backup", dir)
		if r.Code != 0 || !strings.Contains(r.Stdout, "internalusers") {
			t.Fatalf("backup: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "internal_users.yml")); err != nil {
			entries, _ := os.ReadDir(dir)
			t.Errorf("no internal_users.yml: %v %v", err, entries)
		}
		if r := l.Siemctl("security", "indexer", "apply"); r.Code != 2 {
			t.Errorf("apply without --yes: exit %d", r.Code)
		}
		r = l.Siemctl("security", "indexer", "apply", "--yes")
		if r.Code != 0 || !strings.Contains(r.Stdout, "Done with success") {
			t.Errorf("apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := l.Siemctl("indexer", "allocation"); r.Code != 0 {
			t.Errorf("indexer unusable after apply: exit %d %s", r.Code, r.Stderr)
		}
	})
}
