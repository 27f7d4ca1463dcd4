package lab

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// contracts are the only product packages the lab's own code (not its tests) may import: what
// the lab and siemctl share by contract, not by judgement. probeevent is the probe event on the
// wire (both send it); wazuhreal reads Wazuh's own material from ../shared (the conformance rig).
var contracts = []string{"internal/probeevent", "internal/wazuhreal"}

// TestLabImportsNoProductCode: the lab's code judges the stack with its own code: a rig that
// used siemctl's readers or verdicts (host facts, config readers, clients) would share their bugs
// and hide them. Tests and e2e tests may drive siemctl's packages; the code may not.
func TestLabImportsNoProductCode(t *testing.T) {
	const module = "github.com/siemctl/siemctl/"
	var seen int
	err := filepath.WalkDir(".", func(dir string, e os.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		if e.Name() == "testdata" {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(dir, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		seen++
		for _, imp := range pkg.Imports {
			rest, ours := strings.CutPrefix(imp, module)
			if ours && strings.HasPrefix(rest, "internal/") && !slices.Contains(contracts, rest) {
				t.Errorf("lab/%s imports %s: the lab's code imports no product code but the contracts %v (give the lab its own code, or move a shared wire format into a small package both import)", dir, imp, contracts)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 5 {
		t.Fatalf("read %d packages under lab/: the test reads what it guards", seen)
	}
}
