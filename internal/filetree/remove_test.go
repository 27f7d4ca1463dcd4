package filetree_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/siemctl/siemctl/internal/filetree"
)

// RemoveAllAt removes a tree, a symlink inside it as a link (its target
// stays), and Bytes counted the tree's regular files before.
func TestRemoveAllAtNeverFollowsALink(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	tree := filepath.Join(root, "tree")
	for p, body := range map[string]string{filepath.Join(outside, "keep"): "kept", filepath.Join(tree, "a"): "12345", filepath.Join(tree, "sub", "b"): "678"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(tree, "sub", "link")); err != nil {
		t.Fatal(err)
	}
	if n, err := filetree.Bytes(context.Background(), tree); err != nil || n != 8 {
		t.Fatalf("Bytes = %d, %v; want 8 (the link not followed)", n, err)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := filetree.RemoveAllAt(fd, "tree", tree); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Fatalf("tree still there: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "kept" {
		t.Fatalf("the link's target was touched: %q %v", b, err)
	}
}
