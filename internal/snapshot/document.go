// Package snapshot captures a versioned JSON document of the SIEM stack's
// state, stores it atomically under state_dir/snapshots/, compares two
// documents ranked by severity and exports one as a node_exporter textfile.
//
// A snapshot never fails because a component is down: each part of the stack
// is read concurrently under one deadline, and a part that does not answer is
// recorded as unreachable with its (redacted) error.
//
// Capture reads through a Source; Live (live.go) is the one Source over the
// real clients, the only code that reads the running stack for a capture.
package snapshot

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// SchemaVersion is the version of the Document format written by this code.
const SchemaVersion = 1

// Document is one snapshot. Field names are a stable, documented contract
// (snake_case; lists are [] and maps are {} when empty, never null).
type Document struct {
	SchemaVersion  int                  `json:"schema_version"`
	ID             string               `json:"id"`
	Label          string               `json:"label"`
	TakenAt        string               `json:"taken_at"` // UTC RFC 3339 with microseconds (older siemctl: seconds)
	Host           string               `json:"host"`
	SiemctlVersion string               `json:"siemctl_version"`
	Summary        Summary              `json:"summary"`
	Components     map[string]Component `json:"components"`
	Indexer        Indexer              `json:"indexer"`
	Manager        Manager              `json:"manager"`
	Alerts         Alerts               `json:"alerts"`
	Health         []HealthResult       `json:"health"`
	// Errors lists the parts of the capture that failed (redacted).
	Errors []PartError `json:"errors"`
}

// Summary is a digest of the document, written before the bulky sections so
// that listing many snapshots only needs to read each file's head.
type Summary struct {
	Status          string   `json:"status"` // worst health status: OK|WARN|CRIT|UNKNOWN
	ComponentsUp    int      `json:"components_up"`
	ComponentsTotal int      `json:"components_total"`
	Down            []string `json:"down"`
	ClusterStatus   string   `json:"cluster_status"`
	Indices         int      `json:"indices"`
	Docs            int64    `json:"docs"`
	StoreBytes      int64    `json:"store_bytes"`
	Agents          int      `json:"agents"`
	PartErrors      int      `json:"part_errors"`
}

// Component is one stack component (indexer, manager, dashboard, shipper).
type Component struct {
	Unit           Unit   `json:"unit"`
	PackageVersion string `json:"package_version"` // "" when not installed or unknown
	APIVersion     string `json:"api_version"`
	// Reachable: its API answered (the shipper has no API: its unit is active).
	Reachable bool   `json:"reachable"`
	Error     string `json:"error"`
}

// Unit is a systemd unit's state.
type Unit struct {
	Name        string `json:"name"`
	LoadState   string `json:"load_state"`
	ActiveState string `json:"active_state"`
	SubState    string `json:"sub_state"`
	Since       string `json:"since"` // UTC RFC 3339 of the last state change, "" unknown
	NRestarts   uint32 `json:"n_restarts"`
}

// Indexer is the indexer's state.
type Indexer struct {
	Reachable        bool   `json:"reachable"`
	Error            string `json:"error"`
	ClusterName      string `json:"cluster_name"`
	ClusterUUID      string `json:"cluster_uuid"` // "" in snapshots of older siemctl
	PathData         string `json:"path_data"`    // opensearch.yml's path.data on this host, "" unknown
	Status           string `json:"status"`       // green|yellow|red, "" unknown
	NumberOfNodes    int    `json:"number_of_nodes"`
	ActiveShards     int    `json:"active_shards"`
	UnassignedShards int    `json:"unassigned_shards"`
	Relocating       int    `json:"relocating"`
	Initializing     int    `json:"initializing"`
	SettingsHash     string `json:"settings_hash"`
	// Settings holds the effective value (transient over persistent) of the
	// settings that matter to operations (see ImportantSettings); "" unset.
	Settings         map[string]string `json:"settings"`
	MaxShardsPerNode int               `json:"max_shards_per_node"`
	Templates        map[string]string `json:"templates"` // name → sha256:<hex> of canonical JSON
	// AlertsTemplates names the templates whose index patterns match today's
	// alerts index.
	AlertsTemplates    []string          `json:"alerts_templates"`
	Pipelines          map[string]string `json:"pipelines"` // id → sha256:<hex>
	Indices            []Index           `json:"indices"`
	ShardsByState      map[string]int    `json:"shards_by_state"`
	UnassignedByReason map[string]int    `json:"unassigned_by_reason"`
	Disk               []Disk            `json:"disk"`
	// Errors are sub-parts that failed while the rest answered (e.g.
	// "templates": "403 forbidden"); diff does not compare those sub-parts.
	Errors map[string]string `json:"errors"`
}

// Index is one row of _cat/indices.
type Index struct {
	Name       string `json:"name"`
	Health     string `json:"health"`
	Status     string `json:"status"` // open|close
	DocsCount  int64  `json:"docs_count"`
	StoreBytes int64  `json:"store_bytes"`
	Pri        int    `json:"pri"`
	Rep        int    `json:"rep"`
}

// Disk is one node's disk usage as the indexer sees it (_cat/allocation).
type Disk struct {
	Node       string  `json:"node"`
	Percent    float64 `json:"percent"`
	UsedBytes  int64   `json:"used_bytes"`
	TotalBytes int64   `json:"total_bytes"`
}

// Manager is the manager's state.
type Manager struct {
	Reachable bool              `json:"reachable"`
	Error     string            `json:"error"`
	Version   string            `json:"version"`
	Info      map[string]string `json:"info"`
	Daemons   map[string]string `json:"daemons"` // name → running|stopped|…
	Agents    Agents            `json:"agents"`
	APIUsers  []string          `json:"api_users"` // names only
	Errors    map[string]string `json:"errors"`
}

// Agents aggregates the manager's agents (agent 000, the manager itself, is
// not counted).
type Agents struct {
	ByStatus  map[string]int `json:"by_status"`
	ByVersion map[string]int `json:"by_version"`
	Total     int            `json:"total"`
}

// Alerts is the alert flow.
type Alerts struct {
	Reachable bool   `json:"reachable"`
	Error     string `json:"error"`
	Last5m    int64  `json:"last_5m"`
	Newest    string `json:"newest"` // UTC RFC 3339 of the newest alert, "" none
}

// HealthResult is one health check's result.
type HealthResult struct {
	ID      string `json:"id"`
	Status  string `json:"status"` // OK|WARN|CRIT|UNKNOWN
	Summary string `json:"summary"`
}

// PartError is one part of the capture that failed.
type PartError struct {
	Part  string `json:"part"`
	Error string `json:"error"`
}

// Time parses TakenAt.
func (d *Document) Time() time.Time {
	t, err := time.Parse(time.RFC3339Nano, d.TakenAt)
	if err != nil {
		return time.Time{}
	}
	return t
}

// normalize makes every list and map non-nil and every list sorted, so the
// JSON is stable and never holds null.
func (d *Document) normalize() {
	if d.Components == nil {
		d.Components = map[string]Component{}
	}
	if d.Summary.Down == nil {
		d.Summary.Down = []string{}
	}
	ix := &d.Indexer
	ix.Settings = nonNilMap(ix.Settings)
	ix.Templates = nonNilMap(ix.Templates)
	ix.Pipelines = nonNilMap(ix.Pipelines)
	ix.ShardsByState = nonNilMap(ix.ShardsByState)
	ix.UnassignedByReason = nonNilMap(ix.UnassignedByReason)
	ix.Errors = nonNilMap(ix.Errors)
	ix.AlertsTemplates = sortedBy(ix.AlertsTemplates, func(s string) string { return s })
	ix.Indices = sortedBy(ix.Indices, func(x Index) string { return x.Name })
	ix.Disk = sortedBy(ix.Disk, func(x Disk) string { return x.Node })
	m := &d.Manager
	m.Info = nonNilMap(m.Info)
	m.Daemons = nonNilMap(m.Daemons)
	m.Errors = nonNilMap(m.Errors)
	m.Agents.ByStatus = nonNilMap(m.Agents.ByStatus)
	m.Agents.ByVersion = nonNilMap(m.Agents.ByVersion)
	m.APIUsers = sortedBy(m.APIUsers, func(s string) string { return s })
	d.Health = sortedBy(d.Health, func(h HealthResult) string { return h.ID })
	d.Errors = sortedBy(d.Errors, func(e PartError) string { return e.Part })
}

// sortedBy sorts s by key (stable: equal keys keep their order) and returns
// it, [] instead of nil.
func sortedBy[T any](s []T, key func(T) string) []T {
	if s == nil {
		return []T{}
	}
	slices.SortStableFunc(s, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return s
}

func nonNilMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// summarize fills Summary from the rest of the document.
func (d *Document) summarize() {
	s := Summary{Down: []string{}, ClusterStatus: d.Indexer.Status, Agents: d.Manager.Agents.Total, PartErrors: len(d.Errors)}
	s.Status = worstHealth(d.Health)
	for _, name := range sortedKeys(d.Components) {
		s.ComponentsTotal++
		if d.Components[name].Reachable {
			s.ComponentsUp++
		} else {
			s.Down = append(s.Down, name)
		}
	}
	for _, ix := range d.Indexer.Indices {
		s.Indices++
		s.Docs += ix.DocsCount
		s.StoreBytes += ix.StoreBytes
	}
	d.Summary = s
}

// worstHealth is the Nagios verdict: any CRIT → CRIT; else any WARN → WARN;
// else any UNKNOWN (or no result at all) → UNKNOWN; else OK.
func worstHealth(rs []HealthResult) string {
	if len(rs) == 0 {
		return "UNKNOWN"
	}
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Status] = true
	}
	for _, s := range []string{"CRIT", "WARN", "UNKNOWN"} {
		if seen[s] {
			return s
		}
	}
	for st := range seen {
		if st != "OK" {
			return "UNKNOWN"
		}
	}
	return "OK"
}

// Marshal renders the document as indented JSON with a trailing newline.
func Marshal(d *Document) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return append(b, '\n'), nil
}

// Unmarshal decodes and validates a document.
func Unmarshal(b []byte) (*Document, error) {
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := checkSchema(d.SchemaVersion, d.ID); err != nil {
		return nil, err
	}
	d.normalize()
	return &d, nil
}

func checkSchema(v int, id string) error {
	switch {
	case v == 0 || id == "":
		return fmt.Errorf("%w: not a snapshot document (no schema_version or id)", ErrCorrupt)
	case v > SchemaVersion:
		return fmt.Errorf("%w: schema_version %d, this siemctl reads up to %d", ErrUnsupportedSchema, v, SchemaVersion)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
