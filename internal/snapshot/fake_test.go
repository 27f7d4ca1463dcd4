package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// fakeSource is a Source whose parts are fixed values or errors. A part
// whose block channel is set waits for it (or for ctx when ctxAware).
type fakeSource struct {
	units     map[string]UnitState
	unitsErr  error
	pkgs      map[string]string
	pkgsErr   error
	ix        *IndexerState
	ixErr     error
	mgr       *ManagerState
	mgrErr    error
	dash      *DashboardState
	dashErr   error
	alerts    *AlertStats
	alertsErr error
	health    []HealthResult
	healthErr error

	// blockManager makes ManagerState wait for ctx to end.
	blockManager bool
	// hangAlerts makes AlertStats ignore ctx and wait for this channel.
	hangAlerts chan struct{}
	// panicHealth makes Health panic.
	panicHealth bool
	// answered, when set, is called after each non-blocking part answers.
	answered func()
}

func (f *fakeSource) done() {
	if f.answered != nil {
		f.answered()
	}
}

func (f *fakeSource) Units(context.Context) (map[string]UnitState, error) {
	defer f.done()
	return f.units, f.unitsErr
}

func (f *fakeSource) PackageVersions(context.Context) (map[string]string, error) {
	defer f.done()
	return f.pkgs, f.pkgsErr
}

func (f *fakeSource) IndexerState(context.Context) (*IndexerState, error) {
	defer f.done()
	return f.ix, f.ixErr
}

func (f *fakeSource) ManagerState(ctx context.Context) (*ManagerState, error) {
	if f.blockManager {
		<-ctx.Done()
		return nil, fmt.Errorf("GET /manager/info: %w", ctx.Err())
	}
	return f.mgr, f.mgrErr
}

func (f *fakeSource) DashboardState(context.Context) (*DashboardState, error) {
	defer f.done()
	return f.dash, f.dashErr
}

func (f *fakeSource) AlertStats(context.Context) (*AlertStats, error) {
	if f.hangAlerts != nil {
		<-f.hangAlerts
	}
	return f.alerts, f.alertsErr
}

func (f *fakeSource) Health(context.Context) ([]HealthResult, error) {
	defer f.done()
	if f.panicHealth {
		var m map[string]int
		m["boom"]++ // nil map write: a Source bug Capture must survive
	}
	return f.health, f.healthErr
}

var fixedNow = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

func fixedOpts() CaptureOptions {
	return CaptureOptions{
		Label:             "pre-upgrade",
		Host:              "siem01",
		SiemctlVersion:    "v1.0.0",
		AlertsIndexPrefix: "siem-alerts-4.x-",
		Now:               func() time.Time { return fixedNow },
		Rand:              bytes.NewReader([]byte{0xab, 0xcd, 0xef}),
	}
}

func unitState(name, active, sub string, restarts uint32) UnitState {
	return UnitState{Name: name, LoadState: "loaded", ActiveState: active, SubState: sub,
		Since: fixedNow.Add(-48 * time.Hour), NRestarts: restarts}
}

const alertsTemplate = `{"index_patterns":["siem-alerts-4.x-*"],"order":0,"settings":{"index.refresh_interval":"5s","index.number_of_shards":"3"},"mappings":{"properties":{"@timestamp":{"type":"date"}}}}`

// healthySource is a small, healthy stack.
func healthySource() *fakeSource {
	return &fakeSource{
		units: map[string]UnitState{
			"indexer":   unitState("siem-indexer.service", "active", "running", 0),
			"manager":   unitState("siem-manager.service", "active", "running", 1),
			"dashboard": unitState("siem-dashboard.service", "active", "running", 0),
			"shipper":   unitState("shipper.service", "active", "running", 0),
		},
		pkgs: map[string]string{"indexer": "4.9.0-1", "manager": "4.9.0-1", "dashboard": "4.9.0-1", "shipper": "7.10.2-1"},
		ix: &IndexerState{
			Version: "7.10.2", ClusterName: "siem", Status: "yellow", NumberOfNodes: 1,
			ActiveShards: 9, UnassignedShards: 1,
			Settings: json.RawMessage(`{"persistent":{"cluster":{"routing":{"allocation":{"enable":"all"}}}},"transient":{"cluster.routing.allocation.disk.watermark.high":"95%","cluster.routing.allocation.disk.watermark.flood_stage":"98%"}}`),
			Templates: map[string]json.RawMessage{
				"siem":       json.RawMessage(alertsTemplate),
				"siem-agent": json.RawMessage(`{"index_patterns":["siem-agent-*"],"order":1}`),
			},
			Pipelines: map[string]json.RawMessage{
				"shipper-7.10.2-siem-alerts": json.RawMessage(`{"description":"siem alerts","processors":[{"json":{"field":"message"}}]}`),
			},
			Indices: []Index{
				{Name: "siem-alerts-4.x-2026.11.21", Health: "green", Status: "open", DocsCount: 1520, StoreBytes: 2_400_000, Pri: 3, Rep: 0},
				{Name: "siem-alerts-4.x-2026.11.20", Health: "green", Status: "open", DocsCount: 90210, StoreBytes: 88_000_000, Pri: 3, Rep: 0},
				{Name: ".opendistro_security", Health: "yellow", Status: "open", DocsCount: 10, StoreBytes: 60_000, Pri: 1, Rep: 1},
			},
			Shards: []Shard{
				{Index: "siem-alerts-4.x-2026.11.21", Shard: 0, Primary: true, State: "STARTED"},
				{Index: "siem-alerts-4.x-2026.11.21", Shard: 1, Primary: true, State: "STARTED"},
				{Index: ".opendistro_security", Shard: 0, Primary: false, State: "UNASSIGNED", UnassignedReason: "INDEX_CREATED"},
			},
			Disk: []Disk{{Node: "node-1", Percent: 41.5, UsedBytes: 41_500_000_000, TotalBytes: 100_000_000_000}},
		},
		mgr: &ManagerState{
			Version: "v4.9.0",
			Info:    map[string]string{"version": "v4.9.0", "type": "server", "path": "/var/siem", "tz_name": "UTC"},
			Daemons: map[string]string{"siem-analysisd": "running", "siem-remoted": "running", "siem-apid": "running", "siem-maild": "stopped"},
			AgentList: []Agent{
				{ID: "000", Status: "active", Version: "Wazuh v4.9.0"},
				{ID: "001", Status: "active", Version: "Wazuh v4.9.0"},
				{ID: "002", Status: "active", Version: "Wazuh v4.8.2"},
				{ID: "003", Status: "disconnected", Version: "Wazuh v4.9.0"},
				{ID: "004", Status: "never_connected"},
			},
			APIUsers: []string{"siem", "siem-wui"},
		},
		dash:   &DashboardState{Version: "2.13.0", StatusCode: 302},
		alerts: &AlertStats{Last5m: 42, Newest: fixedNow.Add(-20 * time.Second)},
		health: []HealthResult{
			{ID: "units", Status: "OK", Summary: "4/4 units active"},
			{ID: "indexer.health", Status: "OK", Summary: "yellow on a single node: .opendistro_security wants a replica"},
			{ID: "agents", Status: "WARN", Summary: "1 disconnected, 1 never connected"},
		},
	}
}

// bigSource is a stack with nIndices daily indices (two shards each) and
// nAgents agents, for benchmarks.
func bigSource(nIndices, nAgents int) *fakeSource {
	src := healthySource()
	ix := *src.ix
	ix.Indices = make([]Index, 0, nIndices)
	ix.Shards = make([]Shard, 0, 2*nIndices)
	day := fixedNow
	for i := range nIndices {
		prefix := fmt.Sprintf("siem-tenant%02d-alerts-", i%20)
		name := prefix + day.AddDate(0, 0, -(i/20)).Format("2006.01.02")
		ix.Indices = append(ix.Indices, Index{Name: name, Health: "green", Status: "open", DocsCount: int64(1000 + i), StoreBytes: int64(1_000_000 + i), Pri: 1, Rep: 1})
		ix.Shards = append(ix.Shards, Shard{Index: name, Primary: true, State: "STARTED"}, Shard{Index: name, State: "UNASSIGNED", UnassignedReason: "INDEX_CREATED"})
	}
	src.ix = &ix
	mgr := *src.mgr
	mgr.AgentList = make([]Agent, 0, nAgents)
	statuses := []string{"active", "active", "active", "disconnected", "never_connected", "pending"}
	versions := []string{"Wazuh v4.9.0", "Wazuh v4.8.2", "Wazuh v4.7.5"}
	for i := range nAgents {
		mgr.AgentList = append(mgr.AgentList, Agent{ID: fmt.Sprintf("%03d", i+1), Status: statuses[i%len(statuses)], Version: versions[i%len(versions)]})
	}
	src.mgr = &mgr
	return src
}
