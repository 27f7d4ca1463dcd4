package health

import (
	"context"
	"errors"
	"github.com/siemctl/siemctl/internal/shipper"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

var _ = iter.Seq[int](nil)

var testNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// fakeIndexer is a healthy single node unless a test changes a field.
type fakeIndexer struct {
	infoErr  error
	info     *indexer.Info // GET /'s answer (nil: node-1 of cluster siem)
	indices  []indexer.Index
	health   indexer.Health
	settings indexer.Settings
	shards   []indexer.Shard
	alloc    []indexer.Allocation
	blocks   []indexer.IndexBlock
	tpl      indexer.Template
	sim      indexer.Simulation
	pipe     indexer.Pipeline
	count    int64
	newest   time.Time
	explain  indexer.Explanation
}

func healthyIndexer() *fakeIndexer {
	return &fakeIndexer{
		health:   indexer.Health{Status: "green", NumberOfNodes: 1, NumberOfDataNodes: 1, ActiveShards: 12},
		settings: indexer.Settings{Persistent: map[string]string{}, Transient: map[string]string{}, Defaults: map[string]string{"cluster.max_shards_per_node": "1000", "cluster.routing.allocation.enable": "all"}},
		alloc:    []indexer.Allocation{{Node: "node-1", Shards: 12, DiskPercent: 40, DiskUsed: 40 << 30, DiskTotal: 100 << 30}},
		tpl:      indexer.Template{Name: "siem", Found: true, IndexPatterns: []string{"siem-alerts-4.x-*"}},
		sim:      indexer.Simulation{Index: "siem-alerts-4.x-2026.11.21", Applied: []string{"siem"}, Winner: "siem", Legacy: []indexer.LegacyMatch{{Name: "siem"}}},
		pipe:     indexer.Pipeline{ID: "filebeat-7.10.2-siem-alerts-pipeline", Found: true, Hash: "abc"},
		count:    42,
		newest:   testNow.Add(-20 * time.Second),
	}
}

func (f *fakeIndexer) Info(ctx context.Context) (indexer.Info, error) {
	if f.info != nil {
		return *f.info, f.infoErr
	}
	return indexer.Info{Name: "node-1", ClusterName: "siem", Version: "7.10.2"}, f.infoErr
}
func (f *fakeIndexer) NodesVersions(ctx context.Context) ([]indexer.NodeVersion, error) {
	return []indexer.NodeVersion{{Name: "node-1", Version: "2.11.1"}}, nil
}
func (f *fakeIndexer) Health(ctx context.Context, hr indexer.HealthRequest) (indexer.Health, error) {
	return f.health, f.infoErr
}
func (f *fakeIndexer) Settings(ctx context.Context, d bool) (indexer.Settings, error) {
	return f.settings, f.infoErr
}
func (f *fakeIndexer) CatIndices(ctx context.Context, pattern string) ([]indexer.Index, error) {
	return f.indices, f.infoErr
}
func (f *fakeIndexer) CatShards(ctx context.Context) ([]indexer.Shard, error) {
	return f.shards, f.infoErr
}
func (f *fakeIndexer) CatAllocation(ctx context.Context) ([]indexer.Allocation, error) {
	return f.alloc, f.infoErr
}
func (f *fakeIndexer) AllocationExplain(ctx context.Context, er indexer.ExplainRequest) (indexer.Explanation, error) {
	return f.explain, nil
}
func (f *fakeIndexer) IndexBlocks(ctx context.Context, p string) ([]indexer.IndexBlock, error) {
	return f.blocks, nil
}
func (f *fakeIndexer) LegacyTemplate(ctx context.Context, n string) (indexer.Template, error) {
	return f.tpl, f.infoErr
}
func (f *fakeIndexer) SimulateIndex(ctx context.Context, n string) (indexer.Simulation, error) {
	return f.sim, nil
}
func (f *fakeIndexer) Pipeline(ctx context.Context, id string) (indexer.Pipeline, error) {
	return f.pipe, nil
}
func (f *fakeIndexer) Count(ctx context.Context, i, q string, since time.Time) (int64, error) {
	return f.count, f.infoErr
}
func (f *fakeIndexer) Newest(ctx context.Context, p, field string) (time.Time, bool, error) {
	return f.newest, !f.newest.IsZero(), nil
}

type fakeManager struct {
	infoErr error
	version string
	daemons manager.DaemonStates
	valid   manager.ConfigValidation
	summary manager.AgentsSummary
	agents  []manager.Agent
}

func healthyManager() *fakeManager {
	m := &fakeManager{version: "4.9.0", valid: manager.ConfigValidation{OK: true},
		daemons: manager.DaemonStates{"wazuh-modulesd": "running", "wazuh-analysisd": "running", "wazuh-execd": "running", "wazuh-db": "running", "wazuh-remoted": "running"}}
	m.summary.Connection.Active, m.summary.Connection.Total = 3, 3
	m.agents = []manager.Agent{{ID: "000", Version: "Wazuh v4.9.0"}, {ID: "001", Name: "web-01", Version: "Wazuh v4.8.2"}}
	return m
}

func (m *fakeManager) Info(ctx context.Context) (manager.APIInfo, error) {
	return manager.APIInfo{Title: "Wazuh API REST", APIVersion: m.version, Hostname: "siem01"}, m.infoErr
}
func (m *fakeManager) ManagerStatus(ctx context.Context) (manager.DaemonStates, error) {
	return m.daemons, nil
}
func (m *fakeManager) ValidateConfig(ctx context.Context) (manager.ConfigValidation, error) {
	return m.valid, nil
}
func (m *fakeManager) AgentsSummary(ctx context.Context) (manager.AgentsSummary, error) {
	return m.summary, m.infoErr
}
func (m *fakeManager) ListAgents(ctx context.Context, q manager.AgentQuery) ([]manager.Agent, error) {
	return m.agents, nil
}

type fakeUnits struct {
	states  map[string]string
	started map[string]time.Time // InactiveExitTimestamp; zero: long ago
}

func (u fakeUnits) Status(ctx context.Context, names ...string) ([]units.UnitStatus, error) {
	var out []units.UnitStatus
	for _, n := range names {
		st := u.states[n]
		if st == "" {
			st = "active"
		}
		us := units.UnitStatus{Name: n, LoadState: "loaded", ActiveState: st, SubState: map[string]string{"active": "running", "failed": "failed", "inactive": "dead"}[st]}
		us.StartedAt = u.started[n]
		if st == "not-found" {
			us.LoadState, us.ActiveState, us.SubState = st, "inactive", "dead"
		}
		if st == "failed" {
			us.Result, us.ExecMainCode, us.ExecMainStatus = "exit-code", 1, 1
		}
		out = append(out, us)
	}
	return out, nil
}

// fakePackages maps package names to installed versions.
type fakePackages map[string]string

func (p fakePackages) Installed(ctx context.Context, names ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		if v, ok := p[n]; ok {
			out[n] = v
		}
	}
	return out, nil
}

type fakeShipper struct {
	outputOK   bool
	transcript string // `test output`'s own words, when set
}

func (s fakeShipper) TestConfig(ctx context.Context) (bool, string, error) {
	return true, "Config OK", nil
}
func (s fakeShipper) TestOutput(ctx context.Context) (OutputTest, error) {
	if s.transcript != "" {
		return outputTest(shipper.ParseTestOutput(s.transcript)), nil
	}
	if s.outputOK {
		return OutputTest{OK: true, Lines: []string{"talk to server... OK"}}, nil
	}
	return OutputTest{Lines: []string{"dial up... ERROR dial tcp 127.0.0.1:9200: connect: connection refused"}}, nil
}

// Filebeat 7.10.2's `test output` against the lab's OpenSearch with a wrong
// password in its keystore (made by hand: keystore add password --force).
const transcript401 = `elasticsearch: https://127.0.0.1:11200...
  parse url... OK
  connection...
    parse host... OK
    dns lookup... OK
    addresses: 127.0.0.1
    dial up... OK
  TLS...
    security: server's certificate chain verification is enabled
    handshake... OK
    TLS version: TLSv1.3
    dial up... OK
  talk to server... ERROR 401 Unauthorized: 
`

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Load(config.LoadOptions{Path: t.TempDir() + "/none.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type world struct {
	ix    *fakeIndexer
	mgr   *fakeManager
	units fakeUnits
	pkgs  map[string]string
	ports map[int]bool
	dash  DashboardAnswer
	certs []CertInfo
	ship  fakeShipper
	probe probe.Report
	defs  []string
}

func healthyWorld() *world {
	return &world{
		ix: healthyIndexer(), mgr: healthyManager(), units: fakeUnits{states: map[string]string{}},
		pkgs:  map[string]string{"siem-indexer": "4.9.0-1", "siem-manager": "4.9.0-1", "siem-dashboard": "4.9.0-1", "shipper": "4.9.0-1"},
		ports: map[int]bool{1514: true, 1515: true, 55000: true, 9200: true, 5601: true},
		dash:  DashboardAnswer{Status: 302, Location: "/app/login?nextUrl=%2F", Version: "4.9.0"},
		certs: []CertInfo{{Component: "indexer", Source: "https://127.0.0.1:9200", Subject: "CN=node-1", NotAfter: testNow.AddDate(1, 0, 0)}},
		ship:  fakeShipper{outputOK: true},
		probe: probe.Report{OK: true, Nonce: "abc", Hops: []probe.Hop{{Name: "manager", State: probe.StateOK, Latency: time.Second}, {Name: "indexer", State: probe.StateOK, Latency: 3 * time.Second}}},
	}
}

func (w *world) env(t *testing.T) *Env {
	c := testConfig(t)
	return &Env{Now: func() time.Time { return testNow }, Stack: Stack{
		Config: c, Indexer: clientset.Of[IndexerAPI](w.ix), Manager: clientset.Of[ManagerAPI](w.mgr),
		Units:    func(ctx context.Context) (UnitsAPI, error) { return w.units, nil },
		Packages: clientset.Of[packages.Querier](fakePackages(w.pkgs)),
		Ports:    func(ctx context.Context) (map[int]bool, error) { return w.ports, nil },
		Dashboard: func(ctx context.Context) (DashboardAnswer, error) {
			return w.dash, nil
		},
		Certs:              func(ctx context.Context) ([]CertInfo, error) { return w.certs, nil },
		Shipper:            w.ship,
		Probe:              func(ctx context.Context) (probe.Report, error) { return w.probe, nil },
		DefaultCredentials: w.credentials,
	}}
}

func (w *world) credentials(context.Context, bool) (CredentialReport, error) {
	return CredentialReport{Found: w.defs}, nil
}

func runAll(t *testing.T, w *world, deep bool) map[string]Result {
	t.Helper()
	e := w.env(t)
	checks, err := Select(Catalogue(), Selection{Deep: deep})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e.Deep = deep
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rep := Run(ctx, e, checks)
	out := map[string]Result{}
	for _, r := range rep.Results {
		out[r.ID] = r
	}
	return out
}

func TestHealthyStackAllOK(t *testing.T) {
	res := runAll(t, healthyWorld(), true)
	// indexer.cluster and manager.cluster leave a single host's report (cluster.go).
	if len(res) != len(Catalogue())-2 || res["indexer.cluster"].ID != "" || res["manager.cluster"].ID != "" {
		t.Fatalf("got %d results, want %d without the cluster checks", len(res), len(Catalogue())-2)
	}
	for id, r := range res {
		if r.Status != OK {
			t.Errorf("%s: %s %s (fix %q) evidence %v", id, r.Status, r.Summary, r.Fix, r.Evidence)
		}
	}
}

func TestFaultsTurnTheRightCheck(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(w *world)
		check   string
		want    Status
		text    string // in summary
		fix     string // in fix
	}{
		{"unit failed", func(w *world) { w.units.states["siem-manager.service"] = "failed" }, "units", Crit, "siem-manager.service", "siemctl services restart manager"},
		{"unit stopped", func(w *world) { w.units.states["shipper.service"] = "inactive" }, "units", Crit, "shipper.service", "siemctl services start shipper"},
		{"port closed", func(w *world) { delete(w.ports, 55000) }, "ports", Crit, "55000 (manager API)", "restart manager"},
		{"indexer refused", func(w *world) {
			w.ix.infoErr = &netclient.Error{Op: "GET /", Kind: netclient.ErrUnreachable, Err: errors.New("connect: connection refused")}
		}, "indexer.api", Crit, "unreachable", "siemctl services start indexer"},
		{"security not initialised", func(w *world) {
			w.ix.infoErr = &netclient.Error{Op: "GET /", Status: 503, Kind: netclient.ErrNotReady, Err: indexer.ErrSecurityNotInitialized}
		}, "indexer.api", Crit, "security plugin not initialised", "security indexer apply --dry-run"},
		{"security still loading right after a restart", func(w *world) {
			w.ix.infoErr = &netclient.Error{Op: "GET /", Status: 503, Kind: netclient.ErrNotReady, Err: indexer.ErrSecurityNotInitialized}
			w.units.started = map[string]time.Time{"siem-indexer.service": testNow.Add(-12 * time.Second)}
		}, "indexer.api", Warn, "starting: siem-indexer.service started 12s ago and its security plugin is still loading", "wait: siemctl health again in a minute"},
		{"security not initialised long after the start", func(w *world) {
			w.ix.infoErr = &netclient.Error{Op: "GET /", Status: 503, Kind: netclient.ErrNotReady, Err: indexer.ErrSecurityNotInitialized}
			w.units.started = map[string]time.Time{"siem-indexer.service": testNow.Add(-10 * time.Minute)}
		}, "indexer.api", Crit, "security plugin not initialised", "security indexer apply --dry-run"},
		{"not the indexer answers", func(w *world) { w.ix.info = &indexer.Info{Version: "1.0"} }, "indexer.api", Crit, "answered, but not as this indexer", "not as this host's indexer"},
		{"indexer TLS", func(w *world) { w.ix.infoErr = &netclient.Error{Op: "GET /", Kind: netclient.ErrTLS} }, "indexer.api", Crit, "TLS", "indexer.ca_file"},
		{"red cluster", func(w *world) {
			w.ix.health.Status, w.ix.health.UnassignedShards = "red", 1
			w.ix.shards = []indexer.Shard{{Index: "broken", Shard: 0, PriRep: "p", State: "UNASSIGNED", UnassignedReason: "INDEX_CREATED"}}
			w.ix.explain = indexer.Explanation{Index: "broken", AllocateExplanation: "cannot allocate because allocation is not permitted to any of the nodes"}
		}, "indexer.health", Crit, "primary shard is unassigned", "indexer shards --unassigned"},
		{"allocation primaries", func(w *world) { w.ix.settings.Persistent["cluster.routing.allocation.enable"] = "primaries" }, "indexer.allocation", Warn, "primaries", "siemctl indexer allocation all"},
		{"watermark override", func(w *world) {
			w.ix.settings.Transient["cluster.routing.allocation.disk.watermark.high"] = "95%"
		}, "indexer.allocation", Warn, "watermark", "siemctl indexer watermark --clear"},
		{"archived setting", func(w *world) { w.ix.settings.Persistent["archived.xpack.monitoring.enabled"] = "true" }, "indexer.allocation", Warn, "1 archived (unknown) settings", `"transient":{"archived.*":null}`},
		{"unassigned replicas single node", func(w *world) {
			w.ix.health.Status, w.ix.health.UnassignedShards = "yellow", 1
			w.ix.shards = []indexer.Shard{{Index: ".opendistro-job-scheduler-lock", PriRep: "r", State: "UNASSIGNED", UnassignedReason: "REPLICA_ADDED"}}
			w.ix.explain = indexer.Explanation{Index: ".opendistro-job-scheduler-lock", AllocateExplanation: "cannot allocate because allocation is not permitted to any of the nodes",
				Deciders: []indexer.Decider{{Node: "node-1", Decider: "same_shard", Decision: "NO", Explanation: "a copy of this shard is already allocated to this node"}}}
		}, "indexer.shards", Warn, "1 unassigned", `/.opendistro-job-scheduler-lock/_settings -H 'Content-Type: application/json' -d '{"index.number_of_replicas":0}'`},
		{"unassigned shard without explanation", func(w *world) {
			w.ix.health.Status, w.ix.health.UnassignedShards = "yellow", 1
			w.ix.shards = []indexer.Shard{{Index: "x", PriRep: "r", State: "UNASSIGNED", UnassignedReason: "NODE_LEFT"}}
		}, "indexer.shards", Warn, "1 unassigned", "siemctl indexer shards --unassigned"},
		{"unassigned shard with allocation left at PRIMARIES", func(w *world) {
			w.ix.health.Status, w.ix.health.UnassignedShards = "yellow", 1
			w.ix.shards = []indexer.Shard{{Index: "x", PriRep: "r", State: "UNASSIGNED", UnassignedReason: "NODE_LEFT"}}
			w.ix.settings.Persistent["cluster.routing.allocation.enable"] = "PRIMARIES"
		}, "indexer.shards", Warn, "1 unassigned", "siemctl indexer allocation all"},
		{"unassigned shard with allocation ALL", func(w *world) {
			w.ix.health.Status, w.ix.health.UnassignedShards = "yellow", 1
			w.ix.shards = []indexer.Shard{{Index: "x", PriRep: "r", State: "UNASSIGNED", UnassignedReason: "NODE_LEFT"}}
			w.ix.settings.Persistent["cluster.routing.allocation.enable"] = "ALL"
		}, "indexer.shards", Warn, "1 unassigned", "siemctl indexer shards --unassigned"},
		{"shard limit", func(w *world) { w.ix.health.ActiveShards = 995 }, "indexer.shards", Warn, "995/1000", "cleanup"},
		{"disk above nogo", func(w *world) { w.ix.alloc[0].DiskPercent = 93 }, "indexer.disk", Crit, "93%", "cleanup"},
		{"disk above warn", func(w *world) { w.ix.alloc[0].DiskPercent = 87 }, "indexer.disk", Warn, "87%", "cleanup"},
		{"read-only block", func(w *world) {
			w.ix.blocks = []indexer.IndexBlock{{Index: "siem-alerts-4.x-2026.11.21", Blocks: []string{"read_only_allow_delete"}}}
		}, "indexer.disk", Crit, "read-only", "read_only_allow_delete"},
		{"template missing", func(w *world) { w.ix.tpl.Found = false }, "indexer.templates", Warn, "missing", "setup --index-management"},
		{"template shadowed", func(w *world) {
			w.ix.sim = indexer.Simulation{Composable: "other", Winner: "other", Applied: []string{"other"}, Legacy: []indexer.LegacyMatch{{Name: "siem"}}}
		}, "indexer.templates", Warn, "shadowed", "shadowing"},
		{"pipeline missing", func(w *world) { w.ix.pipe.Found = false }, "indexer.templates", Warn, "pipeline", "setup --pipelines"},
		{"manager unauthorized", func(w *world) {
			w.mgr.infoErr = &netclient.Error{Op: "POST /security/user/authenticate", Status: 401, Kind: netclient.ErrUnauthorized, Detail: "Invalid credentials"}
		}, "manager.api", Crit, "Invalid credentials", "manager.username"},
		{"manager rate limited", func(w *world) {
			w.mgr.infoErr = &netclient.Error{Op: "GET /", Status: 429, Code: 6001, Kind: netclient.ErrRateLimited}
		}, "manager.api", Crit, "rate limited", "300 requests/min"},
		{"daemons not ready", func(w *world) { w.mgr.daemons["wazuh-analysisd"] = "restarting" }, "manager.api", Crit, "wazuh-analysisd (restarting)", "restart manager"},
		{"config invalid", func(w *world) {
			w.mgr.valid = manager.ConfigValidation{Errors: []string{"(1230): Invalid element in the configuration: 'log_alert_lvl'."}}
		}, "manager.config", Crit, "log_alert_lvl", "ossec.conf"},
		{"versions differ", func(w *world) { w.pkgs["siem-indexer"] = "4.10.0-1" }, "versions", Crit, "differ", "upgrade"},
		{"manager api stale", func(w *world) { w.mgr.version = "4.8.0" }, "versions", Crit, "manager API reports 4.8.0", "restart manager"},
		{"dashboard stale", func(w *world) { w.dash.Version = "4.8.0" }, "versions", Crit, "dashboard reports 4.8.0", "siemctl services restart dashboard"},
		{"package not installed", func(w *world) { delete(w.pkgs, "siem-dashboard") }, "versions", Crit, "not installed: siem-dashboard", "install the missing package"},
		{"manager package with an epoch", func(w *world) { w.pkgs["siem-manager"] = "1:4.9.0-1" }, "versions", OK, "indexer, manager and dashboard at 4.9.0", ""},
		{"agent newer", func(w *world) {
			w.mgr.agents = append(w.mgr.agents, manager.Agent{ID: "004", Name: "new", Version: "Wazuh v4.10.0"})
		}, "agents", Warn, "newer than the manager", "agents outdated"},
		{"agents disconnected", func(w *world) {
			w.mgr.summary.Connection.Active, w.mgr.summary.Connection.Disconnected = 0, 3
		}, "agents", Warn, "disconnected", "--status disconnected"},
		{"no alerts", func(w *world) { w.ix.count = 0; w.ix.newest = testNow.Add(-2 * time.Hour) }, "alerts.flow", Warn, "no alerts", "alerts probe"},
		{"dashboard 503", func(w *world) { w.dash.Status = 503 }, "dashboard", Crit, "503", "restart dashboard"},
		{"shipper output", func(w *world) { w.ship.outputOK = false }, "shipper", Crit, "connection refused", "test output"},
		{"shipper output refuses its password", func(w *world) { w.ship.transcript = transcript401 }, "shipper", Crit,
			"output https://127.0.0.1:11200 refuses the shipper's output credentials (401 Unauthorized)", "keystore add password --stdin --force"},
		{"cert expiring", func(w *world) { w.certs[0].NotAfter = testNow.AddDate(0, 0, 10) }, "certs", Warn, "within 30 days", "renew"},
		{"cert expired", func(w *world) { w.certs[0].NotAfter = testNow.AddDate(0, 0, -1) }, "certs", Crit, "expired", "renew"},
		{"default credentials", func(w *world) { w.defs = []string{"manager API siem/siem"} }, "secrets", Warn, "default credentials", "change the default password"},
		{"probe broken", func(w *world) {
			w.probe = probe.Report{BrokenAt: "shipper", Hops: []probe.Hop{{Name: "manager", State: probe.StateOK}, {Name: "shipper", State: probe.StateFailed, Detail: "not indexed after 30s"}}}
		}, "alerts.probe", Crit, "shipper", "restart shipper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := healthyWorld()
			tt.breakIt(w)
			res := runAll(t, w, true)
			r := res[tt.check]
			if r.Status != tt.want {
				t.Fatalf("%s = %s (%s), want %s", tt.check, r.Status, r.Summary, tt.want)
			}
			all := r.Summary + " " + strings.Join(r.Evidence, " ")
			if !strings.Contains(all, tt.text) {
				t.Errorf("summary/evidence %q lacks %q", all, tt.text)
			}
			if !strings.Contains(r.Fix, tt.fix) {
				t.Errorf("fix %q lacks %q", r.Fix, tt.fix)
			}
		})
	}
}

func TestIndexerDownMakesDependentsNotOK(t *testing.T) {
	w := healthyWorld()
	w.ix.infoErr = &netclient.Error{Op: "GET /", Kind: netclient.ErrTimeout}
	w.mgr.infoErr = &netclient.Error{Op: "GET /", Kind: netclient.ErrUnreachable}
	res := runAll(t, w, false)
	for _, id := range []string{"indexer.api", "indexer.health", "indexer.allocation", "indexer.shards", "indexer.disk", "indexer.templates", "alerts.flow", "manager.api", "agents"} {
		if res[id].Status == OK {
			t.Errorf("%s is OK with the component down: %s", id, res[id].Summary)
		}
	}
}

func TestSingleNodeYellowIsExplained(t *testing.T) {
	w := healthyWorld()
	w.ix.health.Status, w.ix.health.UnassignedShards = "yellow", 1
	w.ix.shards = []indexer.Shard{{Index: ".opendistro-job-scheduler-lock", Shard: 0, PriRep: "r", State: "UNASSIGNED", UnassignedReason: "REPLICA_ADDED"}}
	w.ix.explain = indexer.Explanation{Index: ".opendistro-job-scheduler-lock", AllocateExplanation: "cannot allocate because allocation is not permitted to any of the nodes",
		Deciders: []indexer.Decider{{Node: "node-1", Decider: "same_shard", Decision: "NO", Explanation: "a copy of this shard is already allocated to this node"}}}
	r := runAll(t, w, false)["indexer.health"]
	ev := strings.Join(r.Evidence, "\n")
	for _, want := range []string{".opendistro-job-scheduler-lock[0]: REPLICA_ADDED", "not permitted", "same_shard"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if r.Status != OK || !strings.Contains(r.Summary, "single node") {
		t.Errorf("single-node yellow: %s %s", r.Status, r.Summary)
	}
}

func TestAFewDisconnectedAgentsAreNormal(t *testing.T) {
	w := healthyWorld()
	w.mgr.summary.Connection.Active, w.mgr.summary.Connection.Disconnected, w.mgr.summary.Connection.NeverConnected = 3, 1, 1
	if r := runAll(t, w, false)["agents"]; r.Status != OK {
		t.Errorf("1 of 4 disconnected: %s %s", r.Status, r.Summary)
	}
}

// TestManagerConfigWazuhAnalysisd: with the manager API down, the wazuh
// profile's default offline check is `{install_dir}/bin/wazuh-analysisd -t`
// (the real wazuh-control has no check): OK names it; the real -t error
// lines make it CRIT with the element.
func TestManagerConfigWazuhAnalysisd(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "var/ossec/bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	errLines := wazuhreal.Read(t, "tool-outputs", "wazuh-control-start-config-error.stderr.txt")
	if err := os.WriteFile(filepath.Join(root, "err.txt"), errLines, 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n[ \"$*\" = -t ] || exit 9\n[ -f " + root + "/broken ] || exit 0\ncat " + root + "/err.txt >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "wazuh-analysisd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(root, "none.yaml"), Profile: "wazuh", Env: []string{"SIEMCTL_ROOT=" + root}})
	if err != nil {
		t.Fatal(err)
	}
	tools := manager.Tools{InstallDir: cfg.Manager.InstallDir, ControlName: cfg.Manager.ControlTool, ConfigCheck: cfg.Manager.ConfigCheck, Runner: manager.ExecRunner(0)}
	e := &Env{Now: func() time.Time { return testNow }, Stack: Stack{Config: cfg, Tools: tools}}
	r := checkManagerConfig(context.Background(), e)
	if r.Status != OK || !strings.Contains(r.Summary, filepath.Join(bin, "wazuh-analysisd")+" -t") {
		t.Fatalf("valid: %s %s", r.Status, r.Summary)
	}
	if err := os.WriteFile(filepath.Join(root, "broken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = checkManagerConfig(context.Background(), e)
	if r.Status != Crit || !strings.Contains(r.Summary, "jsonout_outputt") || !strings.Contains(r.Fix, "ossec.conf") {
		t.Fatalf("broken: %s %s (fix %s)", r.Status, r.Summary, r.Fix)
	}
}

// TestVersionsWithoutPackageManager: no package manager is UNKNOWN naming
// why, never a verdict on versions.
func TestVersionsWithoutPackageManager(t *testing.T) {
	e := healthyWorld().env(t)
	e.Stack.Packages = clientset.Missing[packages.Querier](errors.New("neither dpkg-query nor rpm found"))
	r := runChecks(t, e, 5*time.Second, "versions")["versions"]
	if r.Status != Unknown || !strings.Contains(r.Summary, "neither dpkg-query nor rpm found") || !strings.Contains(r.Fix, "dpkg-query -W siem-indexer") {
		t.Errorf("versions %s: %s (fix %s)", r.Status, r.Summary, r.Fix)
	}
}

// TestSecretsCredentialEvidence: the secrets check passes --deep on to the
// default-credential tries and shows when they were last made.
func TestSecretsCredentialEvidence(t *testing.T) {
	for _, deep := range []bool{false, true} {
		w := healthyWorld()
		e := w.env(t)
		e.Deep = deep
		var gotDeep bool
		e.Stack.DefaultCredentials = func(_ context.Context, d bool) (CredentialReport, error) {
			gotDeep = d
			return CredentialReport{Evidence: []string{"manager default passwords last tried 2026-11-27T08:00:00Z (next try after 2026-11-28T08:00:00Z, or with --deep)"}}, nil
		}
		r := checkSecrets(context.Background(), e)
		if gotDeep != deep || r.Status != OK || !strings.Contains(strings.Join(r.Evidence, "\n"), "manager default passwords last tried 2026-11-27T08:00:00Z") {
			t.Errorf("deep %v: passed %v, %s %q", deep, gotDeep, r.Status, r.Evidence)
		}
	}
}

// TestVersionsReadTheReleaseTable: the versions check shows the OpenSearch the installed release
// carries (versions.Releases) against what the nodes run (_nodes), without judging the lab's own
// builds.
func TestVersionsReadTheReleaseTable(t *testing.T) {
	e := healthyWorld().env(t)
	r := runChecks(t, e, 5*time.Second, "versions")["versions"]
	ev := strings.Join(r.Evidence, "\n")
	if r.Status != OK || !strings.Contains(ev, "release table: Wazuh 4.9.0's indexer is OpenSearch 2.13.0") || !strings.Contains(ev, "indexer runs ") {
		t.Fatalf("versions %s: %s\n%s", r.Status, r.Summary, ev)
	}
}

// TestTemplateFixWhereTheShipperRuns: on a host without the shipper (an indexer or dashboard host of
// a distributed deployment) the template and pipeline fixes say where the shipper's binary is.
func TestTemplateFixWhereTheShipperRuns(t *testing.T) {
	w := healthyWorld()
	w.ix.tpl.Found, w.ix.pipe.Found = false, false
	e := w.env(t)
	e.Stack.Config.Components = []string{"indexer"}
	r := checkTemplates(context.Background(), e, w.ix)
	if !strings.Contains(r.Fix, "on a host that runs the shipper (a manager host; this one does not): ") || !strings.Contains(r.Fix, "setup --pipelines") {
		t.Errorf("indexer host: fix %q", r.Fix)
	}
	e.Stack.Config.Components = []string{"manager", "shipper"}
	if r := checkTemplates(context.Background(), e, w.ix); strings.Contains(r.Fix, "on a host that runs the shipper") || !strings.Contains(r.Fix, "setup --index-management") {
		t.Errorf("manager host: fix %q", r.Fix)
	}
}

// TestManagerConfigReadsAPIYAML: an api.yaml edited into invalid YAML keeps the API from starting at
// its next restart; manager.config says so now, with the file and the error, even when ossec.conf
// is valid, and adds it to an ossec.conf problem.
func TestManagerConfigReadsAPIYAML(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "api", "configuration")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(conf, "api.yaml"), []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	run := func(w *world) Result {
		e := w.env(t)
		e.Stack.Config.Manager.InstallDir = dir
		return runChecks(t, e, 5*time.Second, "manager.config")["manager.config"]
	}
	write("host: 0.0.0.0\nport: 55000\nhttps:\n  enabled: yes\n")
	if r := run(healthyWorld()); r.Status != OK {
		t.Fatalf("a valid api.yaml: %s %s", r.Status, r.Summary)
	}
	write("host: 0.0.0.0\nport: 55000\nhttps:\n  enabled: yes\n   key: server.key\n")
	r := run(healthyWorld())
	if r.Status != Crit || !strings.Contains(r.Summary, "api.yaml is not valid YAML: line 5") || !strings.Contains(r.Fix, "fix "+filepath.Join(conf, "api.yaml")) {
		t.Fatalf("a broken api.yaml: %s %s (fix %s)", r.Status, r.Summary, r.Fix)
	}
	w := healthyWorld()
	w.mgr.valid = manager.ConfigValidation{Errors: []string{"(1230): Invalid element in the configuration: 'log_alert_lvl'."}}
	r = run(w)
	if r.Status != Crit || !strings.Contains(r.Summary, "log_alert_lvl") || !strings.Contains(strings.Join(r.Evidence, "\n"), "api.yaml is not valid YAML") || !strings.Contains(r.Fix, "ossec.conf") || !strings.Contains(r.Fix, "api.yaml") {
		t.Fatalf("both broken: %s %s %q (fix %s)", r.Status, r.Summary, r.Evidence, r.Fix)
	}
	write("- just\n- a list\n")
	if r := run(healthyWorld()); r.Status != Crit || !strings.Contains(r.Summary, "not a mapping") {
		t.Fatalf("a list: %s %s", r.Status, r.Summary)
	}
}

// The real security plugin's 401 has an empty body: the shipper check's summary names the refusal
// and stops there (it once ended "…(401 Unauthorized): " with nothing after the colon).
func TestShipperRefusalSummaryEndsClean(t *testing.T) {
	w := healthyWorld()
	w.ship.transcript = transcript401
	r := runAll(t, w, true)["shipper"]
	if want := "output https://127.0.0.1:11200 refuses the shipper's output credentials (401 Unauthorized)"; r.Summary != want {
		t.Errorf("summary %q, want %q", r.Summary, want)
	}
}
