package snapshot

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/packages"
)

// The identity call's error comes back apart from the parts' errors, after every call has
// finished: a component whose GET / fails is down whatever its parts answered.
func TestPartsWaitForIdentityAndParts(t *testing.T) {
	down := errors.New("connection refused")
	forbidden := errors.New("403 forbidden")
	var finished atomic.Int32
	var p parts
	p.identity(func() error { finished.Add(1); return down })
	p.run("templates", func() error { finished.Add(1); return forbidden })
	p.run("indices", func() error { finished.Add(1); return nil })
	errs, err := p.wait()
	if n := finished.Load(); n != 3 {
		t.Fatalf("wait returned after %d of 3 calls", n)
	}
	if !errors.Is(err, down) {
		t.Errorf("identity error = %v, want %v", err, down)
	}
	if len(errs) != 1 || !errors.Is(errs["templates"], forbidden) {
		t.Errorf("part errors = %v, want only templates", errs)
	}

	var up parts
	up.identity(func() error { return nil })
	up.run("health", func() error { return nil })
	if errs, err := up.wait(); err != nil || errs != nil {
		t.Errorf("all answered: errs %v, identity %v", errs, err)
	}
}

func TestConcurrentlyJoinsEveryError(t *testing.T) {
	a, b := errors.New("legacy templates: 500"), errors.New("index templates: 403")
	var ran atomic.Int32
	err := concurrently(
		func() error { ran.Add(1); return a },
		func() error { ran.Add(1); return nil },
		func() error { ran.Add(1); return b },
	)
	if ran.Load() != 3 || !errors.Is(err, a) || !errors.Is(err, b) {
		t.Fatalf("ran %d, err %v: want all three run and both errors", ran.Load(), err)
	}
	if err := concurrently(func() error { return nil }); err != nil {
		t.Fatalf("no error: got %v", err)
	}
}

// askedQuerier answers every package as installed at 4.9.0-1 and records what it was asked.
type askedQuerier struct{ asked []string }

func (q *askedQuerier) Installed(_ context.Context, pkgs ...string) (map[string]string, error) {
	q.asked = append(q.asked, pkgs...)
	out := map[string]string{}
	for _, p := range pkgs {
		out[p] = "4.9.0-1"
	}
	return out, nil
}

// A host's snapshot records the components it runs (the components key, as health judges them):
// a distributed indexer host has the indexer alone, its package is the only one asked for, and
// the dashboard it does not run is neither a component nor counted down.
func TestLiveRecordsOnlyThisHostsComponents(t *testing.T) {
	for _, tc := range []struct {
		components string
		want       []string
		pkgs       []string
	}{
		{"[indexer]", []string{"indexer"}, []string{"siem-indexer"}},
		{"[manager, shipper]", []string{"manager", "shipper"}, []string{"shipper", "siem-manager"}},
		{"[dashboard]", []string{"dashboard"}, []string{"siem-dashboard"}},
		{"[indexer, manager, dashboard, shipper]", []string{"dashboard", "indexer", "manager", "shipper"}, []string{"shipper", "siem-dashboard", "siem-indexer", "siem-manager"}},
	} {
		t.Run(tc.components, func(t *testing.T) {
			dash := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "not this host's", http.StatusInternalServerError)
			}))
			defer dash.Close()
			path := filepath.Join(t.TempDir(), "siemctl.yaml")
			if err := os.WriteFile(path, []byte("profile: siem\ncomponents: "+tc.components+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(config.LoadOptions{Path: path, ExplicitPath: true})
			if err != nil {
				t.Fatal(err)
			}
			q := &askedQuerier{}
			src := &Live{Config: cfg, Packages: clientset.Of[packages.Querier](q), Indexer: clientset.Missing[*indexer.Client](errors.New("not reached")), Manager: clientset.Missing[*manager.Client](errors.New("not reached")),
				Dashboard:   hostfacts.Dashboard{URL: dash.URL},
				CheckHealth: func(context.Context) ([]HealthResult, error) { return nil, nil }}
			d, err := Capture(context.Background(), src, CaptureOptions{Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(maps.Keys(d.Components))
			if !slices.Equal(got, tc.want) {
				t.Errorf("components %v, want %v", got, tc.want)
			}
			slices.Sort(q.asked)
			if !slices.Equal(q.asked, tc.pkgs) {
				t.Errorf("packages asked %v, want %v", q.asked, tc.pkgs)
			}
			for _, c := range tc.want {
				if d.Components[c].PackageVersion != "4.9.0-1" {
					t.Errorf("%s package %q", c, d.Components[c].PackageVersion)
				}
			}
			if d.Summary.ComponentsTotal != len(tc.want) || slices.Contains(d.Summary.Down, "dashboard") != slices.Contains(tc.want, "dashboard") {
				t.Errorf("summary: %d components, down %v", d.Summary.ComponentsTotal, d.Summary.Down)
			}
		})
	}
}
