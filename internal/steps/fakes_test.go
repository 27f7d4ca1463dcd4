package steps_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/units/unitstest"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// testConfig loads the siem profile with dirs under a temp dir.
func testConfig(t *testing.T, extra string) *config.Config {
	t.Helper()
	d := t.TempDir()
	yml := "state_dir: " + d + "/state\nbackup_dir: " + d + "/backups\n" + extra
	p := filepath.Join(d, "siemctl.yaml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Path: p, ExplicitPath: true})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// env is a steps.Env for calling kinds directly: the session's in-memory
// one (run data), recording what the kinds report.
type env struct {
	*upgrade.MemEnv
	mu       sync.Mutex
	waits    []string
	measures []engine.Measure
}

func newEnv(deps *steps.Deps, seed map[string]any) *env {
	return &env{MemEnv: upgrade.NewMemEnv(deps, "test/step", seed)}
}

func (e *env) RunID() string { return "20250101T000000Z-abcdef" }
func (e *env) Waiting(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waits = append(e.waits, fmt.Sprintf(format, args...))
}
func (e *env) Report(m engine.Measure) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.measures = append(e.measures, m)
}
func (e *env) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (e *env) versions(t *testing.T, key string) map[string]string {
	t.Helper()
	m := map[string]string{}
	if _, err := e.Get(key, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// kind decodes with through the registry and returns the kind and params.
func kind(t *testing.T, name string, with map[string]any) (steps.Kind, engine.Params) {
	t.Helper()
	reg, err := steps.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	k, ok := reg.Lookup(name)
	if !ok {
		t.Fatalf("no kind %s", name)
	}
	p, err := k.Decode(with)
	if err != nil {
		t.Fatalf("%s: decode %v: %v", name, with, err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("%s: validate %v: %v", name, with, err)
	}
	return k, p
}

func run(t *testing.T, deps *steps.Deps, e *env, name string, with map[string]any) (engine.Outcome, error) {
	t.Helper()
	k, p := kind(t, name, with)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if sk, ok := k.(engine.Skipper[*steps.Deps]); ok {
		reason, skip, err := sk.Skip(ctx, e, p)
		if err != nil {
			return engine.Outcome{}, fmt.Errorf("skip check: %w", err)
		}
		if skip {
			return engine.Outcome{Message: "SKIPPED: " + reason}, nil
		}
	}
	return k.Run(ctx, e, p)
}

// fakeApt is dpkg-query, apt-cache and apt-get over an in-memory package db.
type fakeApt struct {
	mu        sync.Mutex
	installed map[string]string
	available map[string][]string // newest first
	locked    int                 // apt-get answers "could not get lock" this many times
	calls     []string
}

func (f *fakeApt) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(append([]string{name}, args...), " "))
	switch name {
	case "dpkg-query":
		var out strings.Builder
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if v := f.installed[a]; v != "" {
				fmt.Fprintf(&out, "%s\tinstall ok installed\t%s\n", a, v)
			}
		}
		return []byte(out.String()), nil, 0, nil
	case "apt-cache":
		pkg := args[len(args)-1]
		vs := f.available[pkg]
		if len(vs) == 0 {
			return nil, []byte("N: Unable to locate package " + pkg), 0, nil
		}
		var out strings.Builder
		fmt.Fprintf(&out, "%s:\n  Installed: %s\n  Candidate: %s\n  Version table:\n", pkg, orNone(f.installed[pkg]), vs[0])
		for _, v := range vs {
			mark := "    "
			if v == f.installed[pkg] {
				mark = " ***"
			}
			fmt.Fprintf(&out, "%s %s 500\n        500 file:/repo ./ Packages\n", mark, v)
			if v == f.installed[pkg] {
				out.WriteString("        100 /var/lib/dpkg/status\n")
			}
		}
		return []byte(out.String()), nil, 0, nil
	case "apt-get":
		if f.locked > 0 {
			f.locked--
			return nil, []byte("E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)"), 100, nil
		}
		allow := slices.Contains(args, "--allow-downgrades")
		for _, a := range args {
			pkg, v, ok := strings.Cut(a, "=")
			if !ok || strings.HasPrefix(a, "-") || strings.Contains(pkg, ":") {
				continue
			}
			if !slices.Contains(f.available[pkg], v) {
				return nil, []byte("E: Version '" + v + "' for '" + pkg + "' was not found"), 100, nil
			}
			if cur := f.installed[pkg]; cur != "" && packages.CompareDeb(v, cur) < 0 && !allow {
				return nil, []byte("E: Packages were downgraded and -y was used without --allow-downgrades."), 100, nil
			}
			f.installed[pkg] = v
		}
		return nil, nil, 0, nil
	}
	return nil, nil, 127, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func (f *fakeApt) callsOf(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func newApt(installed string) *fakeApt {
	f := &fakeApt{installed: map[string]string{}, available: map[string][]string{}}
	for _, p := range []string{"siem-indexer", "siem-manager", "siem-dashboard", "shipper"} {
		f.installed[p] = installed
		f.available[p] = []string{"4.10.0-1", "4.9.0-1"}
	}
	return f
}

func aptManager(t *testing.T, f *fakeApt) *packages.Manager {
	t.Helper()
	m, err := packages.New("apt", f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newUnits is the shared fake service manager with every unit running
// (pids 100 and 101) or stopped: units start and stop at once, unless
// lingering processes are scripted in Procs.
func newUnits(active bool) *unitstest.Fake {
	u := unitstest.NewFake()
	u.ActivePIDs = []int{100, 101}
	if active {
		for _, n := range unitstest.SiemUnits {
			u.Set(unitstest.Running(n))
		}
	}
	return u
}

// linger scripts n more process checks of a stopped unit that find a pid.
func linger(u *unitstest.Fake, unit string, n int) {
	seq := make([][]int, 0, n+1)
	for range n {
		seq = append(seq, []int{4242})
	}
	u.Procs[unit] = append(seq, nil)
}

// indexerDepsWith is depsWith(cfg, u) with a client of srv as the indexer.
func indexerDepsWith(t *testing.T, srv *indexertest.Server, cfg *config.Config, u *unitstest.Fake) *steps.Deps {
	t.Helper()
	d := depsWith(cfg, u)
	d.Indexer = clientset.Of[steps.IndexerAPI](srv.Client(t))
	return d
}

// templateServer is a healthy indexer that acknowledges PUT /_template/<name>.
func templateServer(t *testing.T, name string) *indexertest.Server {
	t.Helper()
	r := indexertest.Healthy()
	r["PUT /_template/"+name] = indexertest.Route{File: "acknowledged.json"}
	return indexertest.NewServer(t, r)
}

// serveBodies serves bodies by URL path (404 for any other path) until the
// test ends; got, when not nil, records every path asked for.
func serveBodies(t *testing.T, bodies map[string][]byte, got *[]string) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got != nil {
			*got = append(*got, r.URL.Path)
		}
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func depsWith(cfg *config.Config, u *unitstest.Fake) *steps.Deps {
	d := &steps.Deps{Config: cfg, Poll: time.Millisecond, Now: time.Now}
	if u != nil {
		d.Units = func(context.Context) (steps.UnitsAPI, error) { return u, nil }
	}
	return d
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
