package snapshot

import (
	"context"
	"encoding/json"
	"time"
)

// Source reads the stack's state for a capture. Each method returns its part
// or an error; Capture calls them concurrently and records an error as that
// part being down or unreachable instead of failing. Methods must honour ctx.
//
// Maps are keyed by component name ("indexer", "manager", "dashboard",
// "shipper"). Errors may quote anything: Capture redacts the configured
// secrets from every string before the document leaves it.
type Source interface {
	// Units returns each component's systemd unit state.
	Units(ctx context.Context) (map[string]UnitState, error)
	// PackageVersions returns each component's installed package version
	// ("" when the package is not installed).
	PackageVersions(ctx context.Context) (map[string]string, error)
	// IndexerState reads the indexer; sub-parts that fail while the node
	// answers go into IndexerState.Errors.
	IndexerState(ctx context.Context) (*IndexerState, error)
	// ManagerState reads the manager API; sub-parts that fail go into
	// ManagerState.Errors.
	ManagerState(ctx context.Context) (*ManagerState, error)
	// DashboardState probes the dashboard's GET /.
	DashboardState(ctx context.Context) (*DashboardState, error)
	// AlertStats counts alerts in the last 5 minutes and finds the newest.
	AlertStats(ctx context.Context) (*AlertStats, error)
	// Health runs the health checks (without --deep).
	Health(ctx context.Context) ([]HealthResult, error)
}

// UnitState is a systemd unit's state as the Source reads it.
type UnitState struct {
	Name        string // e.g. siem-indexer.service
	LoadState   string
	ActiveState string
	SubState    string
	Since       time.Time // StateChangeTimestamp; zero when unknown
	NRestarts   uint32
}

// IndexerState is what the Source reads from the indexer.
type IndexerState struct {
	Version            string // GET / version.number (often a 7.10.2 compatibility value)
	ClusterName        string
	ClusterUUID        string // GET / cluster_uuid: a cluster that forgot its data has a new one
	PathData           string // opensearch.yml's path.data ("" where it sets none or is not read)
	Status             string // green|yellow|red
	NumberOfNodes      int
	ActiveShards       int
	UnassignedShards   int
	RelocatingShards   int
	InitializingShards int
	// Settings is the body of GET _cluster/settings, nested or with
	// flat_settings=true (persistent, transient and optionally defaults).
	Settings json.RawMessage
	// Templates maps a template name to its body (legacy _template or
	// composable _index_template; prefix names if both kinds are read).
	Templates map[string]json.RawMessage
	// Pipelines maps an ingest pipeline id to its body.
	Pipelines map[string]json.RawMessage
	Indices   []Index
	Shards    []Shard
	Disk      []Disk
	// Errors maps a failed sub-part (health, settings, templates,
	// pipelines, indices, shards, disk) to its error.
	Errors map[string]error
}

// Shard is one row of _cat/shards.
type Shard struct {
	Index            string
	Shard            int
	Primary          bool
	State            string // STARTED|UNASSIGNED|INITIALIZING|RELOCATING
	UnassignedReason string
}

// ManagerState is what the Source reads from the manager.
type ManagerState struct {
	Version string            // GET / data.api_version or /manager/info version
	Info    map[string]string // /manager/info, scalar fields as strings
	Daemons map[string]string // /manager/status: daemon → running|stopped
	// AgentList is every agent (Capture aggregates it and skips 000, the
	// manager). Leave it nil and set AgentCounts when the Source reads
	// pre-aggregated counts (e.g. /agents/summary/status and
	// /agents/stats/distinct?fields=version).
	AgentList   []Agent
	AgentCounts *Agents
	APIUsers    []string // user names only
	// Errors maps a failed sub-part (info, daemons, agents, api_users) to
	// its error.
	Errors map[string]error
}

// Agent is one agent, as much as a snapshot needs.
type Agent struct {
	ID      string // three-digit zero-padded; 000 is the manager
	Status  string // active|disconnected|never_connected|pending
	Version string // e.g. "Wazuh v4.9.0"; "" when never connected
}

// DashboardState is the dashboard's answer to GET /.
type DashboardState struct {
	Version    string // from the osd-version header or status API, "" unknown
	StatusCode int
}

// AlertStats is the alert flow.
type AlertStats struct {
	Last5m int64
	Newest time.Time // zero when there is no alert
}
