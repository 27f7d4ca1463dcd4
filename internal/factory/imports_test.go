package factory_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/siemctl/siemctl/"

// codeImports are the imports of the package in dir (relative to internal/),
// its code only (tests may judge it through other packages), with the e2e and
// integration tags.
func codeImports(t *testing.T, dir string) []string {
	t.Helper()
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "e2e", "integration")
	pkg, err := ctx.ImportDir(filepath.Join("..", dir), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatalf("%s imports nothing: the test reads the wrong directory", dir)
	}
	return pkg.Imports
}

// TestWiringHasItsOwnHome: the wiring of the clients lives here, where no
// command imports it (gh's pkg/cmd/factory). internal/cli, which every command
// imports, neither imports it nor the domain it assembles (the step kinds, the
// snapshots, the probe); the roll library does not import internal/cli (its
// commands are doors onto it, not the other way round); no command's code
// imports this package (cmd/siemctl hands cli.Main its Wire).
func TestWiringHasItsOwnHome(t *testing.T) {
	for _, imp := range codeImports(t, "cli") {
		for _, banned := range []string{"internal/factory", "internal/steps", "internal/snapshot", "internal/ops/probe", "internal/ops/hostfacts", "internal/shipper", "internal/packages"} {
			if imp == module+banned {
				t.Errorf("internal/cli imports %s: the wiring and what it assembles live in internal/factory; cli's Factory holds the client funcs it hands out", imp)
			}
		}
	}
	for _, imp := range codeImports(t, "upgrade/roll") {
		if imp == module+"internal/cli" || strings.HasPrefix(imp, module+"internal/cmd/") || imp == module+"internal/factory" {
			t.Errorf("internal/upgrade/roll imports %s: the roll is a library its commands call (clients come in as roll.Deps, usage errors are usage.Error)", imp)
		}
	}
	cmds, err := filepath.Glob(filepath.Join("..", "cmd", "*"))
	if err != nil || len(cmds) < 5 {
		t.Fatalf("command packages %v: %v", cmds, err)
	}
	for _, dir := range cmds {
		rel, _ := filepath.Rel("..", dir)
		if filepath.Base(dir) == "register" {
			continue
		}
		if slices.Contains(codeImports(t, rel), module+"internal/factory") {
			t.Errorf("%s imports internal/factory: a command takes its clients from the cli.Factory it is handed", rel)
		}
	}
}
