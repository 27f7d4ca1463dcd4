package register

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cmdPath is the import path of the command packages' parent.
const cmdPath = "github.com/siemctl/siemctl/internal/cmd"

// notCommands are the packages under internal/cmd that are not a command: register wires every
// command group to the root (it imports them all); a command's tests may import it to run the
// command under the real root through cli.Main, as a user calls it (health's do), its code may
// not. internal/cli is not under internal/cmd. A
// command's own subpackages (internal/cmd/<noun>/shared, gh's habit: what two verbs of one noun
// share) are its own; what two commands share lives below them (internal/runs,
// internal/upgrade/roll, internal/ops/…), never in a sibling.
var notCommands = []string{"register"}

// TestNoCommandImportsASibling reads the imports of every package under internal/cmd (its code and
// its tests, e2e tests included) and fails when a command package imports another command package.
func TestNoCommandImportsASibling(t *testing.T) {
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "e2e", "integration")
	var commands []string
	for _, d := range dirs {
		if !d.IsDir() || slices.Contains(notCommands, d.Name()) {
			continue
		}
		noun := d.Name()
		commands = append(commands, noun)
		err := filepath.WalkDir(filepath.Join("..", noun), func(dir string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			if e.Name() == "testdata" {
				return filepath.SkipDir
			}
			pkg, err := ctx.ImportDir(dir, 0)
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			if err != nil {
				return err
			}
			code := len(pkg.Imports)
			for i, imp := range slices.Concat(pkg.Imports, pkg.TestImports, pkg.XTestImports) {
				rest, under := strings.CutPrefix(imp, cmdPath+"/")
				if !under {
					continue
				}
				other, _, _ := strings.Cut(rest, "/")
				if other == "register" && i >= code {
					continue // a test running the command under the root
				}
				if other != noun {
					t.Errorf("%s imports the command package %s: a command imports no sibling; move what both need below internal/cmd (internal/runs, internal/upgrade/roll, internal/ops/…)", dir, imp)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// the test reads the packages it guards (it cannot pass by reading none)
	for _, want := range []string{"upgrade", "rollback", "health"} {
		if !slices.Contains(commands, want) {
			t.Fatalf("internal/cmd/%s not found among %v", want, commands)
		}
	}
}
