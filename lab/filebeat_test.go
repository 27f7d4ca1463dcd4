package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/modfile"
)

// beatsGoMod is shaped like the beats v7.10.2 go.mod (an excerpt: its go line, requires with
// indirect markers, and replaces with and without a version on the left).
const beatsGoMod = `module github.com/elastic/beats/v7

go 1.14

require (
	github.com/Shopify/sarama v0.0.0-00010101000000-000000000000
	github.com/dop251/goja v0.0.0-00010101000000-000000000000
	github.com/elastic/go-ucfg v0.8.3
	github.com/fsnotify/fsnotify v1.4.7
	github.com/mattn/go-isatty v0.0.2 // indirect
	golang.org/x/tools v0.0.0-20200904185747-39188db58858
)

replace (
	github.com/Shopify/sarama => github.com/elastic/sarama v1.19.1-0.20200629123429-0e7b69039eec
	github.com/dop251/goja => github.com/andrewkroh/goja v0.0.0-20190128172624-dd2ac4456e20
	github.com/fsnotify/fsnotify => github.com/adriansr/fsnotify v0.0.0-20180417234312-c9bbe1f46f1d
	golang.org/x/tools => golang.org/x/tools v0.0.0-20200602230032-c00d67ef29d0 // release 1.14
)
`

func TestFilebeatWrapperGoMod(t *testing.T) {
	out, err := FilebeatWrapperGoMod([]byte(beatsGoMod), "7.10.2")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", out, nil)
	if err != nil {
		t.Fatalf("wrapper go.mod does not parse: %v\n%s", err, out)
	}
	if f.Module.Mod.Path == beatsModule || f.Go == nil || f.Go.Version != "1.14" {
		t.Errorf("module %q go %v", f.Module.Mod.Path, f.Go)
	}
	req := map[string]string{}
	indirect := map[string]bool{}
	for _, r := range f.Require {
		req[r.Mod.Path] = r.Mod.Version
		indirect[r.Mod.Path] = r.Indirect
	}
	if req[beatsModule] != "v7.10.2" || indirect[beatsModule] {
		t.Errorf("beats require = %q (indirect %v)", req[beatsModule], indirect[beatsModule])
	}
	if len(req) != 7 || req["github.com/elastic/go-ucfg"] != "v0.8.3" || !indirect["github.com/mattn/go-isatty"] {
		t.Errorf("requires = %v indirect %v", req, indirect)
	}
	rep := map[string]string{}
	for _, r := range f.Replace {
		rep[r.Old.Path] = r.New.Path + "@" + r.New.Version
	}
	if len(rep) != 4 || rep["github.com/dop251/goja"] != "github.com/andrewkroh/goja@v0.0.0-20190128172624-dd2ac4456e20" ||
		rep["golang.org/x/tools"] != "golang.org/x/tools@v0.0.0-20200602230032-c00d67ef29d0" {
		t.Errorf("replaces = %v", rep)
	}

	for _, bad := range []string{"module example.com/other\n", "not a go.mod {"} {
		if _, err := FilebeatWrapperGoMod([]byte(bad), "7.10.2"); err == nil {
			t.Errorf("go.mod %q accepted", bad)
		}
	}
}

// fakeGo writes a go command that answers `mod download -json`, `build -o BIN .` (a script printing
// the given version line; every build appends to DIR/builds) and `env GOVERSION`.
func fakeGo(t *testing.T, versionLine string) (gobin, builds string) {
	t.Helper()
	dir := t.TempDir()
	gomod := filepath.Join(dir, "beats.mod")
	if err := os.WriteFile(gomod, []byte(beatsGoMod), 0o644); err != nil {
		t.Fatal(err)
	}
	builds = filepath.Join(dir, "builds")
	gobin = filepath.Join(dir, "go")
	script := `#!/bin/sh
case "$1 $2" in
"mod download")
  [ "$GOFLAGS" = "-mod=mod" ] && [ "$CGO_ENABLED" = 0 ] && [ "$GOTOOLCHAIN" = local ] || { echo "bad env: $GOFLAGS $CGO_ENABLED $GOTOOLCHAIN" >&2; exit 1; }
  printf '{"Path":"github.com/elastic/beats/v7","Version":"v7.10.2","GoMod":"%s"}\n' "` + gomod + `";;
"build -trimpath")
  grep -q 'github.com/elastic/beats/v7 v7.10.2' go.mod || { echo "wrapper go.mod lacks beats" >&2; exit 1; }
  grep -q 'cmd.Filebeat(inputs.Init).Execute()' main.go || { echo "no main" >&2; exit 1; }
  sleep 0.3
  printf '#!/bin/sh\necho "` + versionLine + `"\n' > "$4"
  chmod 755 "$4"
  echo built >> "` + builds + `";;
"env GOVERSION") echo go1.26.8;;
*) echo "fake go: $*" >&2; exit 2;;
esac
`
	if err := os.WriteFile(gobin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return gobin, builds
}

func countBuilds(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "built")
}

func TestFilebeatCacheBuildsOnceUnderConcurrency(t *testing.T) {
	gobin, builds := fakeGo(t, "filebeat version 7.10.2 (amd64), libbeat 7.10.2 [unknown built unknown]")
	cacheDir := t.TempDir()
	newCache := func() *FilebeatCache { return &FilebeatCache{Dir: cacheDir, Go: gobin} }
	if ok, why := newCache().Ready(); ok || why != "no ready marker" {
		t.Fatalf("empty cache ready=%v %q", ok, why)
	}
	var wg sync.WaitGroup
	paths := make([]string, 4)
	builtBy := make([]bool, 4)
	errs := make([]error, 4)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], builtBy[i], errs[i] = newCache().Ensure(context.Background())
		}()
	}
	wg.Wait()
	nBuilt := 0
	for i := range paths {
		if errs[i] != nil {
			t.Fatalf("builder %d: %v", i, errs[i])
		}
		if paths[i] != filepath.Join(cacheDir, "filebeat", "7.10.2", "filebeat") {
			t.Errorf("builder %d path %s", i, paths[i])
		}
		if builtBy[i] {
			nBuilt++
		}
	}
	if n := countBuilds(t, builds); n != 1 || nBuilt != 1 {
		t.Fatalf("%d builds, %d builders say they built; want exactly one", n, nBuilt)
	}
	if ok, why := newCache().Ready(); !ok {
		t.Fatalf("not ready after the build: %s", why)
	}
	// Warm: no build.
	if _, built, err := newCache().Ensure(context.Background()); err != nil || built || countBuilds(t, builds) != 1 {
		t.Fatalf("warm Ensure built=%v err=%v builds=%d", built, err, countBuilds(t, builds))
	}
	// No build directories are left next to the cache.
	left, _ := filepath.Glob(filepath.Join(cacheDir, "filebeat", ".build-*"))
	if len(left) != 0 {
		t.Errorf("build dirs left: %v", left)
	}
	// A binary that differs from its marker (a torn copy, an edit) is rebuilt.
	if err := os.WriteFile(paths[0], []byte("#!/bin/sh\necho truncated\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, why := newCache().Ready(); ok || why != "binary differs from its marker" {
		t.Fatalf("changed binary: ready=%v %q", ok, why)
	}
	if _, built, err := newCache().Ensure(context.Background()); err != nil || !built || countBuilds(t, builds) != 2 {
		t.Fatalf("rebuild built=%v err=%v builds=%d", built, err, countBuilds(t, builds))
	}
}

func TestFilebeatCacheRejectsWrongVersion(t *testing.T) {
	gobin, _ := fakeGo(t, "filebeat version 7.17.0 (amd64), libbeat 7.17.0")
	c := &FilebeatCache{Dir: t.TempDir(), Go: gobin}
	_, _, err := c.Ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), `want "filebeat version 7.10.2 "`) {
		t.Fatalf("err = %v", err)
	}
	if ok, _ := c.Ready(); ok {
		t.Fatal("a wrong binary was marked ready")
	}
	if _, err := os.Stat(c.Binary()); !os.IsNotExist(err) {
		t.Errorf("wrong binary put in the cache: %v", err)
	}
}

func TestFilebeatCacheNoGo(t *testing.T) {
	c := &FilebeatCache{Dir: t.TempDir(), Go: filepath.Join(t.TempDir(), "no-such-go")}
	if _, _, err := c.Ensure(context.Background()); err == nil {
		t.Fatal("Ensure without a go command succeeded")
	}
}
