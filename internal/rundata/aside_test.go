package rundata

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/filetree"
)

// A directory swapped for a symlink between listing and removal is refused.
func TestRemoveAsideRefusesALink(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	target := filepath.Join(root, "t")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := AsideDir{Path: AsidePath(data, "20261120T100000Z-3d4e5f"), RunID: "20261120T100000Z-3d4e5f"}
	if err := os.Symlink(target, a.Path); err != nil {
		t.Fatal(err)
	}
	var le *filetree.LinkError
	if err := RemoveAside(data, a); !errors.As(err, &le) {
		t.Fatalf("err %v, want a LinkError", err)
	}
	if err := RemoveAside(data, AsideDir{Path: filepath.Join(root, "other")}); err == nil || !strings.Contains(err.Error(), "not a set-aside data directory") {
		t.Fatalf("a foreign path: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "f")); err != nil {
		t.Fatal("the link's target was touched")
	}
}
