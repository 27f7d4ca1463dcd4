package wazuhreal

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirSkipsWhereTheMaterialIsAbsent(t *testing.T) {
	if os.Getenv("SIEMCTL_IT_REQUIRED") == "1" {
		t.Skip("the absent-material path fails by design under SIEMCTL_IT_REQUIRED=1")
	}
	pkg := filepath.Join(t.TempDir(), "module", "internal", "x")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "..", "..", "go.mod"), []byte("module m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	reached := false
	t.Run("absent", func(t *testing.T) {
		Dir(t)
		reached = true
	})
	if reached {
		t.Fatal("Dir returned although ../shared/reference/wazuh-real does not exist next to the module root")
	}
}

func TestDirFindsTheMaterialFromThePackageDirectory(t *testing.T) {
	d := Dir(t)
	if _, err := os.Stat(filepath.Join(d, "README.md")); err != nil {
		t.Fatalf("Dir = %s: %v", d, err)
	}
}
