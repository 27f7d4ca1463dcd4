package lab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
	"golang.org/x/mod/modfile"
)

// FilebeatVersion is the Filebeat OSS release the lab ships as its shipper (what Wazuh 4.x ships).
const FilebeatVersion = "7.10.2"

// beatsModule is the Go module of Filebeat.
const beatsModule = "github.com/elastic/beats/v7"

// filebeatMain is the wrapper module's main package: Filebeat's own main (filebeat/main.go of beats).
const filebeatMain = `// Command filebeat is Filebeat OSS, built by siemlab from the beats module on the Go module proxy.
package main

import (
	"os"

	"github.com/elastic/beats/v7/filebeat/cmd"
	inputs "github.com/elastic/beats/v7/filebeat/input/default-inputs"
)

func main() {
	if err := cmd.Filebeat(inputs.Init).Execute(); err != nil {
		os.Exit(1)
	}
}
`

// FilebeatCache builds Filebeat OSS from the Go module proxy once and keeps the binary under
// Dir/filebeat/<version>/filebeat with a ready marker (version, size, sha256). `go install
// pkg@version` refuses beats because its go.mod has replace directives, so the build goes through a
// wrapper module that requires beats with the same require and replace set, read from the beats
// go.mod after `go mod download`. Concurrent builders serialise on a lock file; the binary and the
// marker are put in place atomically, so a reader never sees a half-written binary.
type FilebeatCache struct {
	Dir      string // e.g. $HOME/.cache/siemlab
	Version  string // default FilebeatVersion
	Go       string // go command (default: "go" from PATH, else /usr/local/go/bin/go)
	Logger   *slog.Logger
	Progress io.Writer // build lines with timings (nil: none)
}

// filebeatMarker is the content of the ready marker.
type filebeatMarker struct {
	Version string `json:"version"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Go      string `json:"go"`
	BuiltAt string `json:"built_at"`
	Seconds int    `json:"build_seconds"`
}

func (c *FilebeatCache) version() string {
	if c.Version == "" {
		return FilebeatVersion
	}
	return c.Version
}

func (c *FilebeatCache) dir() string { return filepath.Join(c.Dir, "filebeat", c.version()) }

// Binary is the cached binary's path (it may not exist yet: see Ensure).
func (c *FilebeatCache) Binary() string { return filepath.Join(c.dir(), "filebeat") }

func (c *FilebeatCache) marker() string { return filepath.Join(c.dir(), ".ready") }

// Ready tells whether the cached binary is complete: the marker names this version and the binary
// has the recorded size and sha256. The reason says why not.
func (c *FilebeatCache) Ready() (bool, string) {
	data, err := os.ReadFile(c.marker())
	if err != nil {
		return false, "no ready marker"
	}
	var m filebeatMarker
	if err := json.Unmarshal(data, &m); err != nil {
		return false, "unreadable ready marker"
	}
	if m.Version != c.version() {
		return false, fmt.Sprintf("marker for version %q", m.Version)
	}
	sum, size, err := fileSHA256(c.Binary())
	if err != nil {
		return false, "binary: " + err.Error()
	}
	if size != m.Size || sum != m.SHA256 {
		return false, "binary differs from its marker"
	}
	return true, ""
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func (c *FilebeatCache) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c.Logger
}

func (c *FilebeatCache) progress() io.Writer {
	if c.Progress == nil {
		return io.Discard
	}
	return c.Progress
}

// Ensure returns the path of the cached Filebeat binary, building it first when the cache does not
// hold a complete one; built reports whether this call built it.
func (c *FilebeatCache) Ensure(ctx context.Context) (path string, built bool, err error) {
	if ok, _ := c.Ready(); ok {
		return c.Binary(), false, nil
	}
	if err := os.MkdirAll(filepath.Dir(c.dir()), 0o755); err != nil {
		return "", false, fmt.Errorf("filebeat cache: %w", err)
	}
	lock := flock.New(filepath.Join(filepath.Dir(c.dir()), ".lock"))
	if _, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil {
		return "", false, fmt.Errorf("filebeat cache lock: %w", err)
	}
	defer lock.Unlock()
	ok, why := c.Ready()
	if ok { // another builder finished while we waited for the lock
		return c.Binary(), false, nil
	}
	c.logger().Info("building Filebeat", "version", c.version(), "cache", c.dir(), "reason", why)
	if err := c.build(ctx); err != nil {
		return "", false, err
	}
	return c.Binary(), true, nil
}

func (c *FilebeatCache) goCmd() (string, error) {
	if c.Go != "" {
		return c.Go, nil
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if p, err := lookPath("go"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		return "/usr/local/go/bin/go", nil
	}
	return "", errors.New("building Filebeat needs the go command (install Go, or put go on PATH)")
}

// goEnv is the environment of the go commands of the build: modules from the proxy (the caller's
// GOPROXY, GOMODCACHE and GOCACHE are kept), no cgo, the installed toolchain only, no workspace.
func goEnv() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "CGO_ENABLED", "GOTOOLCHAIN", "GOWORK", "GO111MODULE", "GOOS", "GOARCH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOWORK=off", "GO111MODULE=on")
}

func (c *FilebeatCache) build(ctx context.Context) error {
	gobin, err := c.goCmd()
	if err != nil {
		return err
	}
	t0 := time.Now()
	parent := filepath.Dir(c.dir())
	work, err := os.MkdirTemp(parent, ".build-")
	if err != nil {
		return fmt.Errorf("filebeat build: %w", err)
	}
	defer os.RemoveAll(work)
	env := goEnv()
	mod := beatsModule + "@v" + c.version()
	fmt.Fprintf(c.progress(), "    building Filebeat %s from the Go module proxy (%s; a few minutes, once)\n", c.version(), mod)
	out, err := run(ctx, env, work, gobin, "mod", "download", "-json", mod)
	if err != nil {
		return fmt.Errorf("filebeat build: go mod download %s: %w", mod, err)
	}
	var dl struct {
		GoMod, Error string
	}
	if err := json.Unmarshal(out, &dl); err != nil {
		return fmt.Errorf("filebeat build: go mod download %s: %w", mod, err)
	}
	if dl.Error != "" || dl.GoMod == "" {
		return fmt.Errorf("filebeat build: go mod download %s: %s", mod, dl.Error)
	}
	beatsMod, err := os.ReadFile(dl.GoMod)
	if err != nil {
		return fmt.Errorf("filebeat build: %w", err)
	}
	wrapper, err := FilebeatWrapperGoMod(beatsMod, c.version())
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(work, "go.mod"), wrapper, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(work, "main.go"), []byte(filebeatMain), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.progress(), "      go mod download %s %6.1fs\n", mod, time.Since(t0).Seconds())
	tb := time.Now()
	bin := filepath.Join(work, "filebeat")
	if _, err := run(ctx, env, work, gobin, "build", "-trimpath", "-o", bin, "."); err != nil {
		return fmt.Errorf("filebeat build: go build: %w", err)
	}
	fmt.Fprintf(c.progress(), "      go build               %6.1fs\n", time.Since(tb).Seconds())
	vout, err := run(ctx, nil, work, bin, "version")
	if err != nil {
		return fmt.Errorf("filebeat build: %s version: %w", bin, err)
	}
	if want := "filebeat version " + c.version() + " "; !strings.HasPrefix(string(vout), want) {
		return fmt.Errorf("filebeat build: the built binary prints %q, want %q…", strings.TrimSpace(string(vout)), want)
	}
	sum, size, err := fileSHA256(bin)
	if err != nil {
		return fmt.Errorf("filebeat build: %w", err)
	}
	gov, _ := run(ctx, env, work, gobin, "env", "GOVERSION")
	m := filebeatMarker{Version: c.version(), Size: size, SHA256: sum, Go: strings.TrimSpace(string(gov)),
		BuiltAt: time.Now().UTC().Format(time.RFC3339), Seconds: int(time.Since(t0).Seconds())}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("filebeat build: %w", err)
	}
	// Marker out first, binary in by rename, marker in by rename: Ready holds only after both.
	if err := os.MkdirAll(c.dir(), 0o755); err != nil {
		return fmt.Errorf("filebeat cache: %w", err)
	}
	if err := os.Remove(c.marker()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("filebeat cache: %w", err)
	}
	if err := os.Rename(bin, c.Binary()); err != nil {
		return fmt.Errorf("filebeat cache: %w", err)
	}
	if err := renameio.WriteFile(c.marker(), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("filebeat cache: %w", err)
	}
	fmt.Fprintf(c.progress(), "    built %s (%d MB, %.1fs)\n", c.Binary(), size>>20, time.Since(t0).Seconds())
	return nil
}

// FilebeatWrapperGoMod returns the go.mod of the wrapper module: it requires beats at version with
// every require and replace of the beats go.mod (beatsMod), and keeps the beats module's old go line
// (newer language versions change module resolution and the beats code does not build under them).
func FilebeatWrapperGoMod(beatsMod []byte, version string) ([]byte, error) {
	src, err := modfile.Parse("go.mod", beatsMod, nil)
	if err != nil {
		return nil, fmt.Errorf("filebeat build: parse beats go.mod: %w", err)
	}
	if src.Module == nil || src.Module.Mod.Path != beatsModule {
		return nil, fmt.Errorf("filebeat build: go.mod is not the %s module's", beatsModule)
	}
	w := &modfile.File{}
	if err := w.AddModuleStmt("siemlab.invalid/filebeat"); err != nil {
		return nil, err
	}
	goVersion := "1.14"
	if src.Go != nil {
		goVersion = src.Go.Version
	}
	if err := w.AddGoStmt(goVersion); err != nil {
		return nil, fmt.Errorf("filebeat build: %w", err)
	}
	w.AddNewRequire(beatsModule, "v"+version, false)
	for _, r := range src.Require {
		w.AddNewRequire(r.Mod.Path, r.Mod.Version, r.Indirect)
	}
	for _, r := range src.Replace {
		if err := w.AddReplace(r.Old.Path, r.Old.Version, r.New.Path, r.New.Version); err != nil {
			return nil, fmt.Errorf("filebeat build: replace %s: %w", r.Old.Path, err)
		}
	}
	w.Cleanup()
	out, err := w.Format()
	if err != nil {
		return nil, fmt.Errorf("filebeat build: format go.mod: %w", err)
	}
	return bytes.TrimLeft(out, "\n"), nil
}
