package upgrade_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/units/unitstest"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/runbooks"
)

// hungServer accepts requests and never answers; it records how many were
// in flight at once and the deadline each request's context carried.
type hungServer struct {
	*httptest.Server
	mu        sync.Mutex
	inFlight  int
	maxFlight int
}

func newHungServer(t *testing.T) *hungServer {
	h := &hungServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.inFlight++
		h.maxFlight = max(h.maxFlight, h.inFlight)
		h.mu.Unlock()
		<-r.Context().Done()
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hungServer) max() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxFlight
}

// TestPreflightGatesConcurrentUnderOneDeadline: against a hung indexer and
// manager, the preflight gates are asked at once (not one deadline after
// the other) and every one ends with the caller's deadline, named.
func TestPreflightGatesConcurrentUnderOneDeadline(t *testing.T) {
	idx, mgr := newHungServer(t), newHungServer(t)
	dir := t.TempDir()
	cfg := clitest.LoadConfig(t, dir, "state_dir: "+dir+"/state\nbackup_dir: "+dir+"/backups\n")
	pl := &steps.Planning{Config: cfg, Target: map[string]string{"indexer": "4.10.0-1"}, Previous: map[string]string{"indexer": "4.9.0-1"}}
	reg, err := steps.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := engine.LoadPlan(runbooks.FS, runbooks.Upgrade, reg, engine.Selection{}, pl)
	if err != nil {
		t.Fatal(err)
	}
	ic, err := indexer.New(indexer.Options{URL: idx.URL, Username: "admin", Password: "x"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ic.Close() })
	mc, err := manager.New(manager.Options{URL: mgr.URL, Username: "wazuh", Password: "x"})
	if err != nil {
		t.Fatal(err)
	}
	u := unitstest.NewFake()
	for _, n := range unitstest.SiemUnits {
		u.Set(unitstest.Running(n))
	}
	d := &steps.Deps{Config: cfg, Poll: time.Millisecond, Now: time.Now, Indexer: clientset.Of[steps.IndexerAPI](ic), Manager: clientset.Of[steps.ManagerAPI](mc),
		Units: func(context.Context) (steps.UnitsAPI, error) { return u, nil }}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	gates := upgrade.PreflightGates(ctx, plan, d, nil)
	if len(gates) < 4 {
		t.Fatalf("only %d gates: %+v", len(gates), gates)
	}
	if n := idx.max(); n < 2 {
		t.Errorf("at most %d indexer request in flight: the gates were asked one after the other", n)
	}
	hung := 0
	for _, g := range gates {
		if g.Verdict == upgrade.VerdictGo {
			t.Errorf("%s: GO against a hung stack: %s", g.Step, g.Detail)
		}
		if strings.Contains(g.Detail, "deadline") || strings.Contains(g.Detail, "timed out") {
			hung++
		}
	}
	if hung < 3 {
		t.Errorf("only %d gates name the deadline: %+v", hung, gates)
	}
}
