package golden

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryGoldenIsUpdatable holds `make golden` to the whole tree: every package with golden files
// under testdata/ compares them through this package, so SIEMCTL_UPDATE_GOLDEN=1 rewrites them all.
// A package that reads its goldens another way would fail `make golden` or leave them stale.
func TestEveryGoldenIsUpdatable(t *testing.T) {
	root := moduleRoot(t)
	pkgs := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "dist" || d.Name() == ".lab") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".golden") {
			if i := strings.LastIndex(path, string(filepath.Separator)+"testdata"+string(filepath.Separator)); i > 0 {
				pkgs[path[:i]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("no golden files found under the module root")
	}
	for dir := range pkgs {
		tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		uses := false
		for _, f := range tests {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(`"github.com/siemctl/siemctl/internal/golden"`)) {
				uses = true
				break
			}
		}
		if !uses {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s has golden files but no test of it uses internal/golden: `make golden` cannot update them (compare with golden.Assert)", rel)
		}
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatal("no go.mod above " + wd)
		}
	}
}
