package steps_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/internal/units/unitstest"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/runbooks"
)

// TestEmbeddedRunbooksPlanWithRealKinds plans both runbooks against the real
// kinds: every kind exists, every parameter decodes strictly, every step
// describes itself.
func TestEmbeddedRunbooksPlanWithRealKinds(t *testing.T) {
	cfg := testConfig(t, "")
	pl := &steps.Planning{Config: cfg, Target: map[string]string{"indexer": "4.10.0-1"}, Previous: map[string]string{"indexer": "4.9.0-1"}}
	reg, err := steps.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{runbooks.Upgrade, runbooks.Rollback} {
		p, err := engine.LoadPlan(runbooks.FS, name, reg, engine.Selection{}, pl)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, s := range p.Steps {
			if len(s.Describe) == 0 || s.Describe[0] == "" {
				t.Errorf("%s %s: no describe lines", name, s.ID)
			}
			if strings.HasPrefix(s.Step.Kind, "gate.") && !s.ReadOnly {
				t.Errorf("%s %s: a gate that is not read-only", name, s.ID)
			}
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	reg, err := steps.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind    string
		with    map[string]any
		wantErr string // "" = valid
	}{
		{"units.stop", map[string]any{"component": "all"}, ""},
		{"units.stop", map[string]any{"component": "db"}, `component "db"`},
		{"units.stop", map[string]any{}, "component is required"},
		{"units.start", map[string]any{"component": "indexer", "wait": "60s"}, ""},
		{"units.start", map[string]any{"component": "indexer", "wait": "soon"}, "soon"},
		{"units.verify_gone", map[string]any{"component": "all"}, `component "all"`},
		{"units.verify_gone", map[string]any{"component": "manager", "wait": "1s"}, "unknown parameter wait"},
		{"indexer.allocation", map[string]any{"value": "primaries"}, ""},
		{"indexer.allocation", map[string]any{"value": "none"}, `value "none"`},
		{"indexer.allocation", map[string]any{"value": "all", "extra": 1}, "unknown parameter extra"},
		{"indexer.primaries_recoveries", map[string]any{"value": 32}, ""},
		{"indexer.primaries_recoveries", map[string]any{"restore": true}, ""},
		{"indexer.primaries_recoveries", map[string]any{"value": 32, "restore": true}, "not both"},
		{"indexer.primaries_recoveries", map[string]any{}, "not both"},
		{"indexer.primaries_recoveries", map[string]any{"value": 5000}, "1 to 1000"},
		{"gate.cluster_health", map[string]any{"status": "red"}, `status "red"`},
		{"gate.cluster_health", map[string]any{"status": "yellow", "wait_for_no_relocating": 3}, "not a valid bool"},
		{"gate.disk", map[string]any{"min_free_percent": 120}, "not a percentage"},
		{"gate.versions", map[string]any{"check": "installed", "version": "latest"}, `version "latest"`},
		{"gate.versions", map[string]any{"check": "maybe"}, `check "maybe"`},
		{"packages.install", map[string]any{"component": "all"}, `component "all"`},
		{"shipper.setup", map[string]any{"what": "dashboards"}, `what "dashboards"`},
		{"snapshot.capture", map[string]any{"label": "bad label"}, "invalid snapshot label"},
		{"snapshot.diff", map[string]any{}, "against is required"},
		{"backup.configs", map[string]any{"components": []any{"indexer", "kernel"}}, `component "kernel"`},
		{"gate.probe", map[string]any{"fast": true}, "unknown parameter fast"},
		{"gate.agents_back", map[string]any{"min_ratio": 0.0}, "min_ratio 0: want a share in (0, 1]"},
		{"gate.agents_back", map[string]any{"min_ratio": 1.5}, "min_ratio 1.5: want a share"},
		{"gate.agents_back", map[string]any{"show": 0}, "show 0: want at least 1"},
		{"watch.window", map[string]any{"interval": "0s"}, "interval 0s: want a positive duration"},
		{"watch.window", map[string]any{"cluster_breach": "green"}, `cluster_breach "green"`},
		{"watch.window", map[string]any{"alert_rate_min": 1.5}, "alert_rate_min 1.5"},
		{"watch.window", map[string]any{"agents_min_ratio": 0.0}, "agents_min_ratio 0"},
		{"watch.window", map[string]any{"restarts_max": 0}, "restarts_max 0: want at least 1"},
		{"watch.window", map[string]any{"probe_every": "-1s"}, `negative duration "-1s"`},
		{"watch.window", map[string]any{"bogus": 1}, "unknown parameter bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			k, ok := reg.Lookup(tt.kind)
			if !ok {
				t.Fatalf("no kind %s", tt.kind)
			}
			p, err := k.Decode(tt.with)
			if err == nil {
				err = p.Validate()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("%v: %v", tt.with, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("%v: error %v, want %q", tt.with, err, tt.wantErr)
			}
		})
	}
}

func TestDescribeNamesExactCommands(t *testing.T) {
	cfg := testConfig(t, "")
	pl := &steps.Planning{Config: cfg, Target: map[string]string{"indexer": "4.10.0-1", "manager": "4.10.0-1"}, Previous: map[string]string{"indexer": "4.9.0-1", "manager": "4.9.0-1"}}
	tests := []struct {
		kind string
		with map[string]any
		want []string
	}{
		{"packages.install", map[string]any{"component": "indexer"}, []string{"apt-get install -y -q", "siem-indexer=4.10.0-1"}},
		{"packages.downgrade", map[string]any{"component": "indexer"}, []string{"--allow-downgrades", "siem-indexer=4.9.0-1"}},
		{"units.stop", map[string]any{"component": "all"}, []string{"systemctl stop shipper.service", "systemctl stop siem-indexer.service"}},
		{"units.start", map[string]any{"component": "manager", "wait": "30s"}, []string{"systemctl start siem-manager.service; wait ≤30s"}},
		{"indexer.allocation", map[string]any{"value": "primaries"}, []string{`PUT /_cluster/settings {"persistent":{"cluster.routing.allocation.enable":"primaries"}}`}},
		{"indexer.flush_synced", nil, []string{"POST /_flush/synced"}},
		{"indexer.security_apply", nil, []string{"/usr/share/siem-indexer/bin/indexer-security-init.sh (no options"}},
		{"backup.indexer_security", nil, []string{`indexer-security-init.sh --options "-backup <backup_dir>/<run-id>/indexer-security -icl -nhnv"`}},
		{"gate.manager_api", map[string]any{"version": "target"}, []string{"api_version = 4.10.0"}},
		{"shipper.setup", map[string]any{"what": "index_management"}, []string{"/usr/bin/shipper --path.data /var/lib/shipper --path.config /etc/shipper -e setup --index-management -E output.logstash.enabled=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			_, p := kind(t, tt.kind, tt.with)
			all := strings.Join(p.Describe(pl), "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("describe lacks %q:\n%s", w, all)
				}
			}
		})
	}
	// Stop order is the reverse start order.
	_, p := kind(t, "units.stop", map[string]any{"component": "all"})
	d := p.Describe(pl)
	if !strings.Contains(d[0], "shipper") || !strings.Contains(d[3], "siem-indexer") {
		t.Errorf("stop order: %v", d)
	}
}

func healthRoutes(health indexertest.Route) map[string]indexertest.Route {
	r := indexertest.Healthy()
	r["GET /_cluster/health"] = health
	return r
}

func indexerDeps(t *testing.T, srv *indexertest.Server) *steps.Deps {
	t.Helper()
	d := indexerDepsWith(t, srv, testConfig(t, ""), newUnits(true))
	return d
}

// verdict is a gate's answer as the tests name it: ok, nogo, pending or error.
func verdict(err error) string {
	var (
		pe *engine.PendingError
		ng *engine.NoGoError
	)
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ng):
		return "nogo"
	case errors.As(err, &pe):
		return "pending"
	}
	return "error"
}

func TestClusterHealthGate(t *testing.T) {
	redShards := []byte(`[{"index":"siem-lab-red","shard":"0","prirep":"p","state":"UNASSIGNED","unassigned.reason":"INDEX_CREATED"}]`)
	tests := []struct {
		name   string
		routes map[string]indexertest.Route
		want   string // ok | pending | nogo
		text   string
	}{
		{"green", healthRoutes(indexertest.Route{File: "health-green.json"}), "ok", "cluster green"},
		{"yellow single node", healthRoutes(indexertest.Route{File: "health-yellow-single.json"}), "ok", "unassigned replica"},
		{"server-side wait timed out", healthRoutes(indexertest.Route{Status: http.StatusRequestTimeout, File: "health-timeout-408.json"}), "pending", "want yellow"},
		{"red, primary cannot be allocated", func() map[string]indexertest.Route {
			r := healthRoutes(indexertest.Route{File: "health-red.json"})
			r["GET /_cat/shards"] = indexertest.Route{Body: redShards}
			r["GET /_cluster/allocation/explain"] = indexertest.Route{Body: []byte(`{"index":"siem-lab-red","shard":0,"primary":true,"current_state":"unassigned","can_allocate":"no","allocate_explanation":"cannot allocate because allocation is not permitted to any of the nodes","node_allocation_decisions":[{"node_name":"node-1","deciders":[{"decider":"filter","decision":"NO","explanation":"node does not match index setting [index.routing.allocation.require] filters [_name:\"missing\"]"}]}]}`)}
			return r
		}(), "nogo", "cannot be allocated"},
		{"red, primary still allocating", func() map[string]indexertest.Route {
			r := healthRoutes(indexertest.Route{File: "health-red.json"})
			r["GET /_cat/shards"] = indexertest.Route{Body: redShards}
			r["GET /_cluster/allocation/explain"] = indexertest.Route{Body: []byte(`{"index":"siem-lab-red","shard":0,"primary":true,"current_state":"unassigned","can_allocate":"throttled"}`)}
			return r
		}(), "pending", "throttled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := indexertest.NewServer(t, tt.routes)
			d := indexerDeps(t, srv)
			out, err := run(t, d, newEnv(d, nil), "gate.cluster_health", map[string]any{"status": "yellow"})
			got := verdict(err)
			if got == "error" {
				t.Fatalf("error: %v", err)
			}
			text := out.Message
			if err != nil {
				text = err.Error()
			}
			if got != tt.want || !strings.Contains(text, tt.text) {
				t.Fatalf("got %s %q, want %s containing %q", got, text, tt.want, tt.text)
			}
		})
	}
	// A dead indexer is "not yet" (it may be starting), not a failure.
	srv := indexertest.NewServer(t, nil)
	d := indexerDeps(t, srv)
	srv.Close()
	_, err := run(t, d, newEnv(d, nil), "gate.cluster_health", map[string]any{"status": "yellow"})
	var pe *engine.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("unreachable indexer: %v, want pending", err)
	}
}

func TestAllocationSetsReadsBackAndSkips(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	d := indexerDeps(t, srv)
	// The node reports what was set last.
	srv.Set("GET /_cluster/settings", indexertest.Route{File: "settings-primaries.json"})
	out, err := run(t, d, newEnv(d, nil), "indexer.allocation", map[string]any{"value": "primaries"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Message, "SKIPPED: allocation already primaries") {
		t.Fatalf("already primaries: %q", out.Message)
	}
	srv.Set("GET /_cluster/settings", indexertest.Route{File: "settings-empty.json"})
	_, err = run(t, d, newEnv(d, nil), "indexer.allocation", map[string]any{"value": "primaries"})
	if err == nil || !strings.Contains(err.Error(), "is all") {
		t.Fatalf("a change that does not read back must fail, got %v", err)
	}
	put, ok := srv.Last("PUT /_cluster/settings")
	if !ok || !strings.Contains(string(put.Body), `"cluster.routing.allocation.enable":"primaries"`) || !strings.Contains(string(put.Body), `"persistent"`) {
		t.Fatalf("PUT body %s", put.Body)
	}
	srv.Set("PUT /_cluster/settings", indexertest.Route{File: "settings-put-noack.json"})
	if _, err := run(t, d, newEnv(d, nil), "indexer.allocation", map[string]any{"value": "primaries"}); !errors.Is(err, indexer.ErrNotAcknowledged) {
		t.Fatalf("unacknowledged: %v", err)
	}
}

func TestSyncedFlush(t *testing.T) {
	tests := []struct {
		name  string
		route indexertest.Route
		want  string
	}{
		{"shim", indexertest.Route{File: "flush.json"}, "synced flush"},
		{"409 partial tolerated", indexertest.Route{Status: http.StatusConflict, File: "flush-synced-409.json"}, "partial (tolerated)"},
		{"unsupported falls back to flush", indexertest.Route{Status: http.StatusNotFound, File: "no-handler-400.json"}, "not supported; flushed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := indexertest.Healthy()
			r["POST /_flush/synced"] = tt.route
			srv := indexertest.NewServer(t, r)
			d := indexerDeps(t, srv)
			out, err := run(t, d, newEnv(d, nil), "indexer.flush_synced", nil)
			if err != nil || !strings.Contains(out.Message, tt.want) {
				t.Fatalf("%q, %v; want %q", out.Message, err, tt.want)
			}
		})
	}
}

// TestGateOnADownUnit: a component that does not answer a gate is "not yet" while its unit runs
// (it may be starting), and a no-go naming the unit, its state and the fix when its unit on this
// host is stopped or failed: waiting out the gate's timeout would change nothing. Where this host
// does not run the component, its unit here says nothing: the gate waits.
func TestGateOnADownUnit(t *testing.T) {
	failed := func(u string) units.UnitStatus {
		return units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: units.Failed, SubState: "failed", Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1}
	}
	portHeld := func(context.Context, services.Component, units.UnitStatus) diagnose.Report {
		return diagnose.Report{Findings: []diagnose.Finding{{Kind: diagnose.KindPortBound, Cause: "port 9200 is held by pid 4242 (sleep)", Fix: "stop pid 4242, then siemctl services start indexer"}}}
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // the manager API's address: nothing listens there
	tests := []struct {
		name, gate string
		with       map[string]any
		extra      string // config
		comp       string
		state      func(string) units.UnitStatus
		diagnose   func(context.Context, services.Component, units.UnitStatus) diagnose.Report
		want       string // pending or nogo
		text       []string
	}{
		{"indexer running", "gate.cluster_health", map[string]any{"status": "yellow"}, "", "indexer", unitstest.Running, nil,
			"pending", []string{"indexer not answering"}},
		{"indexer stopped", "gate.cluster_health", map[string]any{"status": "yellow"}, "", "indexer", unitstest.Dead, nil,
			"nogo", []string{"indexer not answering", "(inactive/dead) is not running", "fix: siemctl services start indexer"}},
		{"indexer failed, diagnosed", "gate.cluster_health", map[string]any{"status": "yellow"}, "", "indexer", failed, portHeld,
			"nogo", []string{"(failed/failed) is not running: exit-code (exit status 1)", "port 9200 is held by pid 4242", "fix: stop pid 4242, then siemctl services start indexer"}},
		{"indexer failed, no cause found", "gate.settings_clean", nil, "", "indexer", failed, func(context.Context, services.Component, units.UnitStatus) diagnose.Report { return diagnose.Report{} },
			"nogo", []string{"exit-code (exit status 1)", "fix: siemctl services restart indexer"}},
		{"indexer stopped on another host", "gate.cluster_health", map[string]any{"status": "yellow"}, "components: [manager, shipper]\n", "indexer", unitstest.Dead, nil,
			"pending", []string{"indexer not answering"}},
		{"manager failed", "gate.manager_api", map[string]any{"version": "target"}, "", "manager", failed, nil,
			"nogo", []string{"manager API not answering", "(failed/failed)", "fix: siemctl services restart manager"}},
		{"dashboard stopped", "gate.dashboard", nil, "", "dashboard", unitstest.Dead, nil,
			"nogo", []string{"dashboard not answering", "(inactive/dead)", "fix: siemctl services start dashboard"}},
		{"dashboard running", "gate.dashboard", nil, "", "dashboard", unitstest.Running, nil,
			"pending", []string{"dashboard not answering"}},
		{"manager starting", "gate.manager_api", map[string]any{"version": "target"}, "", "manager",
			func(u string) units.UnitStatus {
				st := unitstest.Running(u)
				st.ActiveState, st.SubState = units.Activating, "start"
				return st
			}, nil,
			"pending", []string{"manager API not answering"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, tt.extra)
			u := newUnits(true)
			u.Set(tt.state(cfg.Units()[tt.comp]))
			d := depsWith(cfg, u)
			d.Diagnose = tt.diagnose
			ix := indexertest.NewServer(t, nil)
			d.Indexer = clientset.Of[steps.IndexerAPI](ix.Client(t))
			ix.Close() // nothing listens there any more: connection refused
			mc, err := manager.New(manager.Options{URL: gone.URL, Username: "wazuh", Password: "x", NotReadyWait: -1})
			if err != nil {
				t.Fatal(err)
			}
			d.Manager = clientset.Of[steps.ManagerAPI](mc)
			d.Dashboard = func(context.Context) (int, error) {
				return 0, errors.New("dial tcp 127.0.0.1:5601: connect: connection refused")
			}
			e := newEnv(d, map[string]any{rundata.KeyTargetVersions: map[string]string{"manager": "4.10.0-1"}})
			_, err = run(t, d, e, tt.gate, tt.with)
			if got := verdict(err); got != tt.want {
				t.Fatalf("got %s (%v), want %s", verdict(err), err, tt.want)
			}
			for _, want := range tt.text {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q lacks %q", err, want)
				}
			}
		})
	}
}

func TestManagerAPIGate(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Version: "4.10.0"})
	c, err := manager.New(manager.Options{URL: srv.URL, Username: srv.Username(), Password: srv.Password(), NotReadyWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	d := depsWith(testConfig(t, ""), nil)
	d.Manager = clientset.Of[steps.ManagerAPI](c)
	e := newEnv(d, map[string]any{rundata.KeyTargetVersions: map[string]string{"manager": "4.10.0-1"}, rundata.KeyPreviousVersions: map[string]string{"manager": "4.9.0-1"}})

	srv.NotReady.Store(1)
	_, err = run(t, d, e, "gate.manager_api", map[string]any{"version": "target"})
	var pe *engine.PendingError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "1017") {
		t.Fatalf("1017 must mean wait: %v", err)
	}
	srv.SetDaemon("wazuh-analysisd", "restarting")
	if _, err = run(t, d, e, "gate.manager_api", map[string]any{"version": "target"}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "analysisd (restarting)") {
		t.Fatalf("a restarting daemon must mean wait: %v", err)
	}
	var ng *engine.NoGoError
	srv.SetDaemon("wazuh-analysisd", "failed")
	if _, err = run(t, d, e, "gate.manager_api", map[string]any{"version": "target"}); !errors.As(err, &ng) || !strings.Contains(err.Error(), "wazuh-analysisd (failed)") || !strings.Contains(err.Error(), "ossec.log") {
		t.Fatalf("a failed daemon must be a no-go naming it, not a wait: %v", err)
	}
	srv.SetDaemon("wazuh-analysisd", "running")
	if out, err := run(t, d, e, "gate.manager_api", map[string]any{"version": "target"}); err != nil || !strings.Contains(out.Message, "4.10.0") {
		t.Fatalf("ready: %q %v", out.Message, err)
	}
	if _, err = run(t, d, e, "gate.manager_api", map[string]any{"version": "previous"}); !errors.As(err, &ng) {
		t.Fatalf("version mismatch must be no-go: %v", err)
	}
}

func TestVersionsGate(t *testing.T) {
	tests := []struct {
		name      string
		installed string
		check     string
		which     string
		targets   map[string]string
		avail     []string
		want      string // ok | nogo
		text      string
	}{
		{"upgrade ok", "4.9.0-1", "candidates", "target", all("4.10.0-1"), nil, "ok", "indexer 4.9.0-1 → 4.10.0-1"},
		{"not installable", "4.9.0-1", "candidates", "target", all("4.11.0-1"), nil, "nogo", "not installable"},
		{"downgrade", "4.10.0-1", "candidates", "target", all("4.9.0-1"), nil, "nogo", "no downgrades"},
		{"major jump", "4.9.0-1", "candidates", "target", all("5.0.0-1"), []string{"5.0.0-1", "4.10.0-1", "4.9.0-1"}, "nogo", "Wazuh 5.0.0 is a migration, not an upgrade"},
		{"already there", "4.10.0-1", "candidates", "target", all("4.10.0-1"), nil, "nogo", "nothing to upgrade"},
		{"versions differ", "4.9.0-1", "candidates", "target", map[string]string{"indexer": "4.10.0-1", "manager": "4.10.0-1", "dashboard": "4.9.0-1"}, nil, "nogo", "versions differ"},
		{"installed ok", "4.10.0-1", "installed", "target", all("4.10.0-1"), nil, "ok", "indexer 4.10.0-1"},
		{"installed wrong", "4.9.0-1", "installed", "target", all("4.10.0-1"), nil, "nogo", "siem-indexer is 4.9.0-1, want 4.10.0-1"},
		{"rollback installable", "4.10.0-1", "candidates", "previous", all("4.9.0-1"), nil, "ok", "4.10.0-1 → 4.9.0-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apt := newApt(tt.installed)
			if tt.avail != nil {
				for p := range apt.available {
					apt.available[p] = tt.avail
				}
			}
			d := depsWith(testConfig(t, ""), nil)
			d.Packages = clientset.Of[steps.PackagesAPI](aptManager(t, apt))
			key := rundata.KeyTargetVersions
			if tt.which == "previous" {
				key = rundata.KeyPreviousVersions
			}
			e := newEnv(d, map[string]any{key: tt.targets})
			out, err := run(t, d, e, "gate.versions", map[string]any{"check": tt.check, "version": tt.which})
			var ng *engine.NoGoError
			got := "ok"
			text := out.Message
			switch {
			case errors.As(err, &ng):
				got, text = "nogo", err.Error()
			case err != nil:
				t.Fatal(err)
			}
			if got != tt.want || !strings.Contains(text, tt.text) {
				t.Fatalf("got %s %q, want %s with %q", got, text, tt.want, tt.text)
			}
		})
	}
}

func all(v string) map[string]string {
	return map[string]string{"indexer": v, "manager": v, "dashboard": v, "shipper": v}
}

func TestPackagesInstallRecordsPreviousFirst(t *testing.T) {
	apt := newApt("4.9.0-1")
	apt.locked = 2 // a killed run's apt still holds the lock twice
	d := depsWith(testConfig(t, ""), nil)
	d.Packages = clientset.Of[steps.PackagesAPI](aptManager(t, apt))
	e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all("4.10.0-1")})

	out, err := run(t, d, e, "packages.install", map[string]any{"component": "indexer"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Message, "siem-indexer 4.9.0-1 → 4.10.0-1") {
		t.Fatalf("outcome %q", out.Message)
	}
	prev := e.versions(t, rundata.KeyPreviousVersions)
	if prev["indexer"] != "4.9.0-1" || prev["shipper"] != "4.9.0-1" {
		t.Fatalf("previous_versions %v", prev)
	}
	if n := len(apt.callsOf("apt-get")); n != 3 {
		t.Fatalf("apt-get ran %d times, want 3 (two locked, then done): %v", n, apt.callsOf("apt-get"))
	}
	installs := apt.callsOf("apt-get")
	if strings.Contains(installs[2], "--allow-downgrades") || !strings.Contains(installs[2], "siem-indexer=4.10.0-1") {
		t.Fatalf("install argv %q", installs[2])
	}
	// The previous versions were read before the first apt-get.
	firstQuery, firstInstall := -1, -1
	for i, c := range apt.calls {
		if firstQuery < 0 && strings.HasPrefix(c, "dpkg-query") {
			firstQuery = i
		}
		if firstInstall < 0 && strings.HasPrefix(c, "apt-get") {
			firstInstall = i
		}
	}
	if firstQuery > firstInstall {
		t.Fatal("installed before recording previous versions")
	}

	// Resumed: a second install keeps the recorded previous versions and skips.
	out, err = run(t, d, e, "packages.install", map[string]any{"component": "indexer"})
	if err != nil || !strings.HasPrefix(out.Message, "SKIPPED: siem-indexer already at 4.10.0-1") {
		t.Fatalf("resume: %q %v", out.Message, err)
	}
	if _, err := run(t, d, e, "packages.install", map[string]any{"component": "manager"}); err != nil {
		t.Fatal(err)
	}
	if prev := e.versions(t, rundata.KeyPreviousVersions); prev["indexer"] != "4.9.0-1" {
		t.Fatalf("previous overwritten: %v", prev)
	}

	// The downgrade goes back to the recorded version with --allow-downgrades.
	out, err = run(t, d, e, "packages.downgrade", map[string]any{"component": "indexer"})
	if err != nil || apt.installed["siem-indexer"] != "4.9.0-1" {
		t.Fatalf("downgrade: %q %v (installed %s)", out.Message, err, apt.installed["siem-indexer"])
	}
	if last := apt.callsOf("apt-get"); !strings.Contains(last[len(last)-1], "--allow-downgrades") {
		t.Fatalf("downgrade argv %q", last[len(last)-1])
	}
	// Nothing recorded for a component: skipped with a reason.
	e2 := newEnv(d, map[string]any{rundata.KeyPreviousVersions: map[string]string{"indexer": "4.9.0-1"}})
	if out, err := run(t, d, e2, "packages.downgrade", map[string]any{"component": "dashboard"}); err != nil || !strings.Contains(out.Message, "no previous version recorded") {
		t.Fatalf("%q %v", out.Message, err)
	}
}

func TestUnitsStopStart(t *testing.T) {
	u := newUnits(true)
	linger(u, "siem-indexer.service", 3)
	d := depsWith(testConfig(t, ""), u)
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "units.stop", map[string]any{"component": "all"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"stop shipper.service", "stop siem-dashboard.service", "stop siem-manager.service", "stop siem-indexer.service"}
	if got := u.CallsOf("stop"); !slices.Equal(got, want) {
		t.Fatalf("stop order %v, want %v", got, want)
	}
	if len(e.waits) == 0 || !strings.Contains(strings.Join(e.waits, "|"), "processes of siem-indexer.service to exit") {
		t.Fatalf("did not wait for the lingering processes: %v", e.waits)
	}
	out, err := run(t, d, e, "units.stop", map[string]any{"component": "manager"})
	if err != nil || !strings.Contains(out.Message, "SKIPPED: already stopped") {
		t.Fatalf("second stop: %q %v", out.Message, err)
	}
	if _, err := run(t, d, e, "units.start", map[string]any{"component": "all"}); err != nil {
		t.Fatal(err)
	}
	wantStart := []string{"start siem-indexer.service 1m0s", "start siem-manager.service 30s", "start siem-dashboard.service 1m0s", "start shipper.service 30s"}
	var got []string
	for _, c := range u.CallsOf("start") {
		got = append(got, fmt.Sprintf("%s %s", c, u.Timeouts[c]))
	}
	if !slices.Equal(got, wantStart) {
		t.Fatalf("start order/waits %v, want %v", got, wantStart)
	}
	u.Set(unitstest.Dead("siem-manager.service"))
	u.FailOn["start siem-manager.service"] = "exit-code"
	if _, err := run(t, d, e, "units.start", map[string]any{"component": "manager", "wait": "5s"}); err == nil || !strings.Contains(err.Error(), "start manager (siem-manager.service)") {
		t.Fatalf("failed start: %v", err)
	}
	// verify_gone: processes left → not yet.
	linger(u, "siem-manager.service", 1)
	var pe *engine.PendingError
	if _, err := run(t, d, e, "units.verify_gone", map[string]any{"component": "manager"}); !errors.As(err, &pe) {
		t.Fatalf("lingering processes: %v", err)
	}
	if _, err := run(t, d, e, "units.verify_gone", map[string]any{"component": "manager"}); err != nil {
		t.Fatalf("gone: %v", err)
	}
}

func TestNoTraceGate(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	d := indexerDeps(t, srv)
	srv.Set("GET /_cluster/settings", indexertest.Route{Body: []byte(`{"persistent":{"cluster.routing.allocation.enable":"primaries"},"transient":{"cluster.routing.allocation.disk.watermark.low":"95%"}}`)})
	_, err := run(t, d, newEnv(d, nil), "gate.no_trace", nil)
	var pe *engine.PendingError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "allocation.enable=primaries") || !strings.Contains(err.Error(), "transient cluster.routing.allocation.disk.watermark.low=95%") {
		t.Fatalf("left-behind settings not reported: %v", err)
	}
}

func TestErrorsAreRedacted(t *testing.T) {
	const secret = "Sup3r-Secret-Pw"
	d := depsWith(testConfig(t, ""), nil)
	d.Redact = func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }
	d.Packages = clientset.Missing[steps.PackagesAPI](errors.New("password_command printed " + secret))
	e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all("4.10.0-1")})
	_, err := run(t, d, e, "gate.versions", map[string]any{"check": "installed"})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error %v", err)
	}
}

// Every kind goes through one wrapper that refuses to run, skip or verify
// without dependencies (so the kinds read env.Deps() unchecked): an error
// naming the cause, never a nil dereference.
func TestKindsRefuseARunnerWithoutDeps(t *testing.T) {
	e := newEnv(nil, nil)
	for _, tt := range []struct {
		kind string
		with map[string]any
	}{
		{"gate.disk", nil},
		{"backup.configs", nil},
		{"units.stop", map[string]any{"component": "manager"}},
		{"indexer.allocation", map[string]any{"value": "all"}},
	} {
		k, p := kind(t, tt.kind, tt.with)
		_, err := k.Run(context.Background(), e, p)
		checks := []error{err}
		if sk, ok := k.(engine.Skipper[*steps.Deps]); ok {
			_, _, err := sk.Skip(context.Background(), e, p)
			checks = append(checks, err)
		}
		if v, ok := k.(engine.Verifier[*steps.Deps]); ok {
			_, err := v.Verify(context.Background(), e, p)
			checks = append(checks, err)
		}
		for _, err := range checks {
			if err == nil || !strings.Contains(err.Error(), "the runner has no dependencies") {
				t.Errorf("%s: %v", tt.kind, err)
			}
		}
	}
}

func TestResolveTarget(t *testing.T) {
	apt := newApt("4.9.0-1")
	apt.available["siem-dashboard"] = []string{"4.10.0-2", "4.10.0-1", "4.9.0-1"}
	apt.available["shipper"] = []string{"4.9.0-1"}
	cands, err := upgrade.ResolveTarget(context.Background(), aptManager(t, apt), testConfig(t, "").PackageNames(), "4.10.0")
	if err != nil {
		t.Fatal(err)
	}
	got := upgrade.TargetMap(cands)
	want := map[string]string{"indexer": "4.10.0-1", "manager": "4.10.0-1", "dashboard": "4.10.0-2"}
	if len(got) != len(want) || got["dashboard"] != "4.10.0-2" || got["indexer"] != "4.10.0-1" {
		t.Fatalf("targets %v (keys %v), want %v", got, sortedKeys(got), want)
	}
	if _, ok := got["shipper"]; ok {
		t.Fatal("a shipper without 4.10.0 got a target")
	}
	cands, err = upgrade.ResolveTarget(context.Background(), aptManager(t, apt), testConfig(t, "").PackageNames(), "4.10.0-1")
	if err != nil || upgrade.TargetMap(cands)["dashboard"] != "4.10.0-1" {
		t.Fatalf("exact version: %v %v", cands, err)
	}
}

func TestShipperTemplate(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"4.9.0", "4.10.0"} {
		if err := os.MkdirAll(filepath.Join(dir, "tpl", v), 0o755); err != nil {
			t.Fatal(err)
		}
		body := `{"index_patterns":["siem-alerts-4.x-*"],"order":0,"version":1,"mappings":{"_meta":{"v":"` + v + `"}}}`
		if err := os.WriteFile(filepath.Join(dir, "tpl", v, "t.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t, "shipper:\n  config_dir: "+dir+"\n  template_source: \""+dir+"/tpl/{version}/t.json\"\n")
	srv := templateServer(t, "siem")
	d := indexerDepsWith(t, srv, cfg, nil)
	e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all("4.10.0-1"), rundata.KeyPreviousVersions: all("4.9.0-1")})
	for _, tt := range []struct{ which, want string }{{"target", "4.10.0"}, {"previous", "4.9.0"}} {
		if _, err := run(t, d, e, "shipper.template", map[string]any{"version": tt.which}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(steps.TemplatePath(dir, "siem"))
		if err != nil || !strings.Contains(string(got), `"v":"`+tt.want+`"`) {
			t.Fatalf("%s template file: %s %v", tt.which, got, err)
		}
		put, ok := srv.Last("PUT /_template/siem")
		if !ok || !strings.Contains(string(put.Body), `"v":"`+tt.want+`"`) {
			t.Fatalf("%s PUT body %s", tt.which, put.Body)
		}
	}
}

func TestFallbackProbe(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	var mu sync.Mutex
	count := 0
	r := indexertest.Healthy()
	srv := indexertest.NewServer(t, r)
	srv.Set("POST /siem-alerts-4.x-*/_count", indexertest.Route{Handler: func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, `{"count":%d}`, count)
	}})
	d := indexerDepsWith(t, srv, testConfig(t, "manager:\n  syslog: udp://"+pc.LocalAddr().String()+"\n"), nil)
	e := newEnv(d, nil)
	_, err = run(t, d, e, "gate.probe", nil)
	var pe *engine.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("not searchable yet: %v", err)
	}
	line := <-got
	if !strings.Contains(line, "Failed password for invalid user siemctl-probe-") || !strings.HasPrefix(line, "<38>") {
		t.Fatalf("probe line %q", line)
	}
	nonce := line[strings.Index(line, "siemctl-probe-")+len("siemctl-probe-"):]
	nonce = nonce[:strings.IndexByte(nonce, ' ')]
	req, _ := srv.Last("POST /siem-alerts-4.x-*/_count")
	if !strings.Contains(string(req.Body), `data.srcuser:\"siemctl-probe-`+nonce+`\" OR full_log:\"siemctl-probe-`+nonce+`\"`) {
		t.Fatalf("count query %s", req.Body)
	}
	mu.Lock()
	count = 1
	mu.Unlock()
	// The next poll does not send again (same nonce, within the resend window).
	out, err := run(t, d, e, "gate.probe", nil)
	if err != nil || !strings.Contains(out.Message, nonce) {
		t.Fatalf("%q %v", out.Message, err)
	}
	select {
	case l := <-got:
		t.Fatalf("sent again: %q", l)
	default:
	}
}

func TestSplitTime(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	evs := []engine.Event{
		{Type: engine.EvRunStart, Time: t0},
		{Type: engine.EvStepOK, Kind: "units.start", Duration: 40000, Time: t0.Add(40 * time.Second)},
		{Type: engine.EvStepOK, Kind: "backup.indexer_data", Duration: 5000, Time: t0.Add(45 * time.Second)},
		{Type: engine.EvUndoOK, Kind: "packages.downgrade", Duration: 10000, Time: t0.Add(56 * time.Second)},
		{Type: engine.EvRunEnd, Time: t0.Add(60 * time.Second)},
	}
	ts := upgrade.SplitTime(evs)
	if ts.Wall != time.Minute || ts.Components != 50*time.Second || ts.Own != 5*time.Second || ts.Overhead != 5*time.Second {
		t.Fatalf("%+v", ts)
	}
}

// TestFallbackProbeQueue: with no manager.syslog (the wazuh profile on a
// stock ossec.conf) the probe gate queues its event to analysisd's socket
// under install_dir, as logcollector does.
func TestFallbackProbeQueue(t *testing.T) {
	install := t.TempDir()
	pc := managertest.ListenQueue(t, install)
	srv := indexertest.NewServer(t, indexertest.Healthy())
	srv.Set("POST /wazuh-alerts-4.x-*/_count", indexertest.Route{Handler: func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"count":0}`)
	}})
	d := indexerDepsWith(t, srv, testConfig(t, "profile: wazuh\nmanager:\n  install_dir: "+install+"\n"), nil)
	e := newEnv(d, nil)
	_, err := run(t, d, e, "gate.probe", nil)
	var pe *engine.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("not searchable yet: %v", err)
	}
	buf := make([]byte, 4096)
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := pc.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	queued := regexp.MustCompile(`^1:siemctl-probe:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d siemctl sshd\[\d+\]: Failed password for invalid user siemctl-probe-[0-9a-f]{12} from 192\.0\.2\.\d+ port \d+ ssh2$`)
	if line := string(buf[:n]); !queued.MatchString(line) {
		t.Fatalf("queued %q", line)
	}
	// Nothing reads the socket any more: the gate waits and names the fix.
	pc.Close()
	e = newEnv(d, nil)
	_, err = run(t, d, e, "gate.probe", nil)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "wazuh-analysisd is not running") {
		t.Fatalf("dead analysisd: %v", err)
	}
}

// gate.ports maps the hostfacts ports verdict (its table is in
// internal/ops/hostfacts): a missing port is pending and named with its
// owner; an indexer on another host is not expected to listen here.
func TestPortsGate(t *testing.T) {
	d := depsWith(testConfig(t, "indexer:\n  url: https://10.0.0.5:9200\nmanager:\n  api_url: https://127.0.0.1:55000\n  agent_port: 1514\n  enrollment_port: 1515\ndashboard:\n  url: https://127.0.0.1:443\n"), nil)
	have := map[int]bool{443: true, 1515: true, 55000: true}
	d.Ports = func(context.Context) (map[int]bool, error) { return have, nil }
	_, err := run(t, d, newEnv(d, nil), "gate.ports", nil)
	var pe *engine.PendingError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "not listening: 1514 (manager agents)") || strings.Contains(err.Error(), "9200") {
		t.Fatalf("pending: %v", err)
	}
	have[1514] = true
	out, err := run(t, d, newEnv(d, nil), "gate.ports", nil)
	if err != nil || out.Message != "listening: 443, 1514, 1515, 55000" {
		t.Fatalf("%q %v", out.Message, err)
	}
	// the port-owner verdict health's ports check gives: the dashboard's port held by a process
	// that is not its unit's (pids 100, 101) is pending, named with its owner
	u := newUnits(true)
	d.Units = func(context.Context) (steps.UnitsAPI, error) { return u, nil }
	holder := 99
	defer steps.SetPortHolders(func(_ context.Context, ports []int) (map[int]hostfacts.Holder, error) {
		return map[int]hostfacts.Holder{443: {Proto: "tcp", Port: 443, Processes: []hostfacts.Process{{PID: holder, Command: "python3 -m http.server 443"}}}}, nil
	})()
	_, err = run(t, d, newEnv(d, nil), "gate.ports", nil)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "443 (dashboard) held by pid 99 (python3 -m http.server 443), not its unit's") ||
		!strings.Contains(err.Error(), "siemctl services restart dashboard") {
		t.Fatalf("foreign holder: %v", err)
	}
	holder = 101
	if out, err := run(t, d, newEnv(d, nil), "gate.ports", nil); err != nil || out.Message != "listening: 443, 1514, 1515, 55000" {
		t.Fatalf("the unit's own holder: %q %v", out.Message, err)
	}
}

// A host whose indexer needs longer than the spec's 60 s to answer after a start raises
// indexer.start_wait once: every start of the runbooks waits that long even where the step asks
// for the spec's 60 s (a step that asks for longer keeps its own), the plan says so, and the
// step's deadline grows by what the host's wait adds.
func TestUnitsStartHostStartWait(t *testing.T) {
	u := newUnits(false)
	d := depsWith(testConfig(t, "indexer:\n  start_wait: 3m\n"), u)
	e := newEnv(d, nil)
	for _, tc := range []struct {
		with  map[string]any
		start string
		extra time.Duration
	}{
		{map[string]any{"component": "indexer", "wait": "60s"}, "start siem-indexer.service 3m0s", 2 * time.Minute},
		{map[string]any{"component": "indexer"}, "start siem-indexer.service 3m0s", 2 * time.Minute},
		{map[string]any{"component": "indexer", "wait": "5m"}, "start siem-indexer.service 5m0s", 0},
		{map[string]any{"component": "manager", "wait": "30s"}, "start siem-manager.service 30s", 0},
	} {
		c := "siem-" + tc.with["component"].(string) + ".service"
		u.Set(unitstest.Dead(c))
		if _, err := run(t, d, e, "units.start", tc.with); err != nil {
			t.Fatalf("%v: %v", tc.with, err)
		}
		if got := fmt.Sprintf("start %s %s", c, u.Timeouts["start "+c]); got != tc.start {
			t.Errorf("%v: %s, want %s", tc.with, got, tc.start)
		}
		k, p := kind(t, "units.start", tc.with)
		extra, why, err := k.(engine.Budgeter[*steps.Deps]).Budget(context.Background(), e, p)
		if err != nil || extra != tc.extra || (extra > 0) != strings.Contains(why, "indexer.start_wait 3m0s") {
			t.Errorf("%v: budget extra %s (%q, %v), want %s", tc.with, extra, why, err, tc.extra)
		}
		if tc.start == "start siem-indexer.service 3m0s" {
			if desc := strings.Join(p.Describe(&steps.Planning{Config: d.Config}), "\n"); !strings.Contains(desc, "wait ≤3m0s") {
				t.Errorf("plan: %s", desc)
			}
		}
	}
}

// TestGateVersionsTargetUnavailable: a target no package of this host resolves to (not in the
// repositories) is a no-go naming it, the versions available and the fix, not a missing run datum.
func TestGateVersionsTargetUnavailable(t *testing.T) {
	d := depsWith(testConfig(t, ""), nil)
	d.Packages = clientset.Of[steps.PackagesAPI](aptManager(t, newApt("4.9.0-1")))
	e := newEnv(d, map[string]any{rundata.KeyTarget: "4.11.0", rundata.KeyTargetVersions: map[string]string{}})
	_, err := run(t, d, e, "gate.versions", map[string]any{"check": "candidates", "version": "target"})
	var ng *engine.NoGoError
	if !errors.As(err, &ng) || !strings.Contains(err.Error(), "target 4.11.0 is not installable on this host") ||
		!strings.Contains(err.Error(), "available: 4.10.0-1") || strings.Contains(err.Error(), "run data") {
		t.Fatalf("= %v; want a no-go naming 4.11.0 and what is available", err)
	}
}
