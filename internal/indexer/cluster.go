package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Info is the node's answer to GET /.
type Info struct {
	Name         string `json:"name"`
	ClusterName  string `json:"cluster_name"`
	ClusterUUID  string `json:"cluster_uuid"`
	Version      string `json:"version"`      // version.number; "7.10.2" under the compatibility override
	Distribution string `json:"distribution"` // "opensearch", or "" under the override
	Lucene       string `json:"lucene"`
	BuildType    string `json:"build_type,omitempty"`
	BuildDate    string `json:"build_date,omitempty"`
}

// CompatOverride reports whether the node hides its version behind
// compatibility.override_main_response_version (7.10.2, no distribution):
// use NodesVersions or the installed package for the real one.
func (i Info) CompatOverride() bool {
	return i.Distribution == "" && strings.HasPrefix(i.Version, "7.")
}

// ErrNotIndexer: the indexer's address answered, but not as the indexer
// (another HTTP server on its port, another cluster's node).
var ErrNotIndexer = errors.New("answered, but not as this indexer")

// Identity holds what GET / must say for the answer to be this indexer's:
// the cluster.name and node.name of its opensearch.yml ("" where the file
// does not set them: not compared).
type Identity struct {
	ClusterName string
	NodeName    string
}

// Check says whether i is the answer of the indexer id describes: a node
// name, a cluster name and a version.number, and the names id sets.
func (id Identity) Check(i Info) error {
	switch {
	case i.Name == "" || i.ClusterName == "" || i.Version == "":
		return fmt.Errorf("%w: GET / names no node, cluster or version (node %q, cluster %q, version %q)", ErrNotIndexer, i.Name, i.ClusterName, i.Version)
	case id.ClusterName != "" && i.ClusterName != id.ClusterName:
		return fmt.Errorf("%w: GET / answered as cluster %q (node %s), opensearch.yml sets cluster.name %q", ErrNotIndexer, i.ClusterName, i.Name, id.ClusterName)
	case id.NodeName != "" && i.Name != id.NodeName:
		return fmt.Errorf("%w: GET / answered as node %q of cluster %s, opensearch.yml sets node.name %q", ErrNotIndexer, i.Name, i.ClusterName, id.NodeName)
	}
	return nil
}

// Info calls GET /.
func (c *Client) Info(ctx context.Context) (Info, error) {
	r, err := c.call(ctx, http.MethodGet, request{path: "/"}, "/")
	if err != nil {
		return Info{}, err
	}
	var raw struct {
		Name        string `json:"name"`
		ClusterName string `json:"cluster_name"`
		ClusterUUID string `json:"cluster_uuid"`
		Version     struct {
			Number       string `json:"number"`
			Distribution string `json:"distribution"`
			BuildType    string `json:"build_type"`
			BuildDate    string `json:"build_date"`
			Lucene       string `json:"lucene_version"`
		} `json:"version"`
	}
	if err := c.decode(r, &raw); err != nil {
		return Info{}, err
	}
	if raw.Version.Number == "" {
		return Info{}, c.badResponse(r, nil, "no version.number")
	}
	return Info{Name: raw.Name, ClusterName: raw.ClusterName, ClusterUUID: raw.ClusterUUID,
		Version: raw.Version.Number, Distribution: raw.Version.Distribution, Lucene: raw.Version.Lucene,
		BuildType: raw.Version.BuildType, BuildDate: raw.Version.BuildDate}, nil
}

// NodeVersion is one node's real OpenSearch version from GET _nodes.
type NodeVersion struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Roles   []string `json:"roles"`
}

// NodesVersions returns every node's OpenSearch version, sorted by name. Unlike
// GET /, _nodes is not affected by the compatibility override.
func (c *Client) NodesVersions(ctx context.Context) ([]NodeVersion, error) {
	return c.nodes(ctx, "/_nodes", "no nodes")
}

// nodes reads the name, real version and roles of the nodes GET path selects (/_nodes,
// /_nodes/_local), sorted by name; none is a bad response saying none.
func (c *Client) nodes(ctx context.Context, path, none string) ([]NodeVersion, error) {
	q := url.Values{"filter_path": {"nodes.*.name,nodes.*.version,nodes.*.roles"}}
	r, err := c.call(ctx, http.MethodGet, request{path: path, query: q}, path)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Nodes map[string]struct {
			Name    string   `json:"name"`
			Version string   `json:"version"`
			Roles   []string `json:"roles"`
		} `json:"nodes"`
	}
	if err := c.decode(r, &raw); err != nil {
		return nil, err
	}
	if len(raw.Nodes) == 0 {
		return nil, c.badResponse(r, nil, none)
	}
	out := make([]NodeVersion, 0, len(raw.Nodes))
	for id, n := range raw.Nodes {
		roles := n.Roles
		if roles == nil {
			roles = []string{}
		}
		out = append(out, NodeVersion{ID: id, Name: n.Name, Version: n.Version, Roles: roles})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// HealthRequest asks for a server-side wait. Zero values wait for nothing.
type HealthRequest struct {
	WaitForStatus               string // green | yellow | red
	WaitForNoRelocatingShards   bool
	WaitForNoInitializingShards bool
	Timeout                     time.Duration // server-side wait; the client allows this plus a margin
	Level                       string        // cluster (default) | indices | shards
}

// Health is GET _cluster/health. TimedOut=true means the requested wait did
// not complete in time ("not yet"), not a failure.
type Health struct {
	ClusterName             string                 `json:"cluster_name"`
	Status                  string                 `json:"status"`
	TimedOut                bool                   `json:"timed_out"`
	NumberOfNodes           int                    `json:"number_of_nodes"`
	NumberOfDataNodes       int                    `json:"number_of_data_nodes"`
	ActivePrimaryShards     int                    `json:"active_primary_shards"`
	ActiveShards            int                    `json:"active_shards"`
	RelocatingShards        int                    `json:"relocating_shards"`
	InitializingShards      int                    `json:"initializing_shards"`
	UnassignedShards        int                    `json:"unassigned_shards"`
	DelayedUnassignedShards int                    `json:"delayed_unassigned_shards"`
	NumberOfPendingTasks    int                    `json:"number_of_pending_tasks"`
	ActiveShardsPercent     float64                `json:"active_shards_percent_as_number"`
	Indices                 map[string]IndexHealth `json:"indices,omitempty"`
}

// IndexHealth is one index's health with Level "indices" or "shards".
type IndexHealth struct {
	Status              string `json:"status"`
	NumberOfShards      int    `json:"number_of_shards"`
	NumberOfReplicas    int    `json:"number_of_replicas"`
	ActivePrimaryShards int    `json:"active_primary_shards"`
	ActiveShards        int    `json:"active_shards"`
	RelocatingShards    int    `json:"relocating_shards"`
	InitializingShards  int    `json:"initializing_shards"`
	UnassignedShards    int    `json:"unassigned_shards"`
}

// healthMargin is how long past a server-side wait the client keeps
// listening for the answer.
const healthMargin = 10 * time.Second

// Health calls GET _cluster/health. A 408 answer (the wait timed out) is
// returned as Health with TimedOut=true and no error.
func (c *Client) Health(ctx context.Context, hr HealthRequest) (Health, error) {
	switch hr.WaitForStatus {
	case "", "green", "yellow", "red":
	default:
		return Health{}, &netclient.Error{Op: "GET /_cluster/health", Kind: netclient.ErrBadResponse,
			Detail: fmt.Sprintf("invalid wait_for_status %q", hr.WaitForStatus)}
	}
	p := opensearchapi.ClusterHealthParams{WaitForStatus: hr.WaitForStatus, Timeout: hr.Timeout, Level: hr.Level}
	if hr.WaitForNoRelocatingShards {
		p.WaitForNoRelocatingShards = new(true)
	}
	if hr.WaitForNoInitializingShards {
		p.WaitForNoInitializingShards = new(true)
	}
	ceiling := c.timeout
	if hr.Timeout > 0 && ceiling > 0 && ceiling < hr.Timeout+healthMargin {
		ceiling = hr.Timeout + healthMargin
	}
	r, err := c.callWithin(ctx, ceiling, http.MethodGet, opensearchapi.ClusterHealthReq{Params: p}, "/_cluster/health", http.StatusRequestTimeout)
	if err != nil {
		return Health{}, err
	}
	var h Health
	if err := c.decode(r, &h); err != nil {
		return Health{}, err
	}
	if h.Status == "" {
		return Health{}, c.badResponse(r, nil, "no status")
	}
	if r.status == http.StatusRequestTimeout {
		h.TimedOut = true
	}
	return h, nil
}

// Source says where a setting's effective value comes from.
type Source string

// Setting sources, in precedence order.
const (
	SourceTransient  Source = "transient"
	SourcePersistent Source = "persistent"
	SourceDefault    Source = "default"
	SourceUnset      Source = ""
)

// Settings is GET _cluster/settings with flat keys. Array values are kept as
// compact JSON ("[]", `["a","b"]`).
type Settings struct {
	Persistent map[string]string `json:"persistent"`
	Transient  map[string]string `json:"transient"`
	Defaults   map[string]string `json:"defaults,omitempty"`
}

// Setting is one key with its effective value and where it comes from.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source Source `json:"source"`
}

// Effective returns the value in force: transient over persistent over
// defaults. Source is SourceUnset when the key is nowhere (defaults are only
// present when fetched with includeDefaults).
func (s Settings) Effective(key string) (string, Source) {
	if v, ok := s.Transient[key]; ok {
		return v, SourceTransient
	}
	if v, ok := s.Persistent[key]; ok {
		return v, SourcePersistent
	}
	if v, ok := s.Defaults[key]; ok {
		return v, SourceDefault
	}
	return "", SourceUnset
}

func (s Settings) effectiveOr(key, def string) Setting {
	v, src := s.Effective(key)
	if src == SourceUnset {
		return Setting{Key: key, Value: def, Source: SourceDefault}
	}
	return Setting{Key: key, Value: v, Source: src}
}

// Well-known keys.
const (
	KeyAllocationEnable = "cluster.routing.allocation.enable"
	KeyWatermarkLow     = "cluster.routing.allocation.disk.watermark.low"
	KeyWatermarkHigh    = "cluster.routing.allocation.disk.watermark.high"
	KeyWatermarkFlood   = "cluster.routing.allocation.disk.watermark.flood_stage"
	KeyMaxShardsPerNode = "cluster.max_shards_per_node"
)

// AllocationEnable returns cluster.routing.allocation.enable ("all" when unset).
func (s Settings) AllocationEnable() Setting { return s.effectiveOr(KeyAllocationEnable, "all") }

// Watermarks are the three disk watermarks in force.
type Watermarks struct {
	Low        Setting `json:"low"`
	High       Setting `json:"high"`
	FloodStage Setting `json:"flood_stage"`
}

// Watermarks returns the disk watermarks (OpenSearch defaults 85%/90%/95%).
func (s Settings) Watermarks() Watermarks {
	return Watermarks{
		Low:        s.effectiveOr(KeyWatermarkLow, "85%"),
		High:       s.effectiveOr(KeyWatermarkHigh, "90%"),
		FloodStage: s.effectiveOr(KeyWatermarkFlood, "95%"),
	}
}

// Overrides returns the persistent and transient settings whose key starts
// with prefix (e.g. "cluster.routing.allocation.disk."), sorted by key;
// transient ones first when a key is in both.
func (s Settings) Overrides(prefix string) []Setting {
	out := []Setting{}
	for _, m := range []struct {
		vals map[string]string
		src  Source
	}{{s.Transient, SourceTransient}, {s.Persistent, SourcePersistent}} {
		for k, v := range m.vals {
			if strings.HasPrefix(k, prefix) {
				out = append(out, Setting{Key: k, Value: v, Source: m.src})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Source == SourceTransient
	})
	return out
}

// ArchivedKeys lists persistent and transient keys starting with
// "archived." (unknown or invalid settings the node archived), sorted.
func (s Settings) ArchivedKeys() []string {
	seen := map[string]bool{}
	out := []string{}
	for _, m := range []map[string]string{s.Persistent, s.Transient} {
		for k := range m {
			if strings.HasPrefix(k, "archived.") && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// MaxShardsPerNode returns cluster.max_shards_per_node (1000 when unset or
// unparsable).
func (s Settings) MaxShardsPerNode() (int, Source) {
	v, src := s.Effective(KeyMaxShardsPerNode)
	n, err := strconv.Atoi(v)
	if src == SourceUnset || err != nil || n <= 0 {
		return 1000, SourceDefault
	}
	return n, src
}

// Settings calls GET _cluster/settings?flat_settings=true.
func (c *Client) Settings(ctx context.Context, includeDefaults bool) (Settings, error) {
	q := url.Values{"flat_settings": {"true"}}
	if includeDefaults {
		q.Set("include_defaults", "true")
	}
	r, err := c.call(ctx, http.MethodGet, request{path: "/_cluster/settings", query: q}, "/_cluster/settings")
	if err != nil {
		return Settings{}, err
	}
	var raw struct {
		Persistent map[string]json.RawMessage `json:"persistent"`
		Transient  map[string]json.RawMessage `json:"transient"`
		Defaults   map[string]json.RawMessage `json:"defaults"`
	}
	if err := c.decode(r, &raw); err != nil {
		return Settings{}, err
	}
	s := Settings{Persistent: flatValues(raw.Persistent), Transient: flatValues(raw.Transient)}
	if includeDefaults {
		s.Defaults = flatValues(raw.Defaults)
	}
	return s, nil
}

// ClusterMaxShardsPerNode fetches settings with defaults and returns
// cluster.max_shards_per_node.
func (c *Client) ClusterMaxShardsPerNode(ctx context.Context) (int, error) {
	s, err := c.Settings(ctx, true)
	if err != nil {
		return 0, err
	}
	n, _ := s.MaxShardsPerNode()
	return n, nil
}

func flatValues(m map[string]json.RawMessage) map[string]string {
	out := make(map[string]string, len(m))
	for k, raw := range m {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			out[k] = s
			continue
		}
		// Arrays (and anything else) stay compact JSON; nested objects only
		// appear without flat_settings, which we always send.
		var buf []byte
		var v any
		if err := json.Unmarshal(raw, &v); err == nil {
			buf, _ = json.Marshal(v)
		} else {
			buf = raw
		}
		out[k] = string(buf)
	}
	return out
}

// SettingsUpdate is a PUT _cluster/settings body. A nil value resets the key.
type SettingsUpdate struct {
	Persistent map[string]any
	Transient  map[string]any
}

func (u SettingsUpdate) body() map[string]map[string]any {
	body := map[string]map[string]any{"persistent": u.Persistent, "transient": u.Transient}
	if body["persistent"] == nil {
		body["persistent"] = map[string]any{}
	}
	if body["transient"] == nil {
		body["transient"] = map[string]any{}
	}
	return body
}

// Call is the request PutSettings sends for u, for dry runs:
// "PUT /_cluster/settings {…}".
func (u SettingsUpdate) Call() string {
	b, _ := json.Marshal(u.body()) // maps of strings and nil: cannot fail
	return "PUT /_cluster/settings " + string(b)
}

// FlushCalls are the requests Flush and SyncedFlush send, for dry runs.
func FlushCalls() []string { return []string{"POST /_flush", "POST /_flush/synced"} }

// PutSettings calls PUT _cluster/settings and verifies acknowledged=true; an
// unacknowledged change returns false and ErrNotAcknowledged.
func (c *Client) PutSettings(ctx context.Context, u SettingsUpdate) (bool, error) {
	const op = "/_cluster/settings"
	body := u.body()
	if len(body["persistent"])+len(body["transient"]) == 0 {
		return false, &netclient.Error{Op: "PUT " + op, Kind: netclient.ErrBadResponse, Detail: "empty settings update"}
	}
	b, err := marshal("PUT "+op, body)
	if err != nil {
		return false, err
	}
	return c.change(ctx, http.MethodPut, request{path: op, query: url.Values{"flat_settings": {"true"}}, body: b}, op)
}

// change sends a request that changes the cluster (settings, an index, a
// template) and verifies acknowledged=true; an unacknowledged change returns
// false and ErrNotAcknowledged.
func (c *Client) change(ctx context.Context, method string, req opensearch.Request, op string) (bool, error) {
	r, err := c.call(ctx, method, req, op)
	if err != nil {
		return false, err
	}
	var ack struct {
		Acknowledged *bool `json:"acknowledged"`
	}
	if err := c.decode(r, &ack); err != nil {
		return false, err
	}
	if ack.Acknowledged == nil {
		return false, c.badResponse(r, nil, "no acknowledged field")
	}
	if !*ack.Acknowledged {
		return false, c.typedError(r, netclient.ErrBadResponse, ErrNotAcknowledged, "acknowledged=false")
	}
	return true, nil
}

// ShardsSummary is the _shards header of a broadcast answer.
type ShardsSummary struct {
	Total      int      `json:"total"`
	Successful int      `json:"successful"`
	Failed     int      `json:"failed"`
	Failures   []string `json:"failures,omitempty"` // "index[shard]: reason"
}

type shardsHeader struct {
	Shards *struct {
		Total      int `json:"total"`
		Successful int `json:"successful"`
		Failed     int `json:"failed"`
		Failures   []struct {
			Index  string `json:"index"`
			Shard  int    `json:"shard"`
			Reason struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"reason"`
		} `json:"failures"`
	} `json:"_shards"`
}

func (c *Client) shards(r *response) (ShardsSummary, error) {
	var h shardsHeader
	if err := c.decode(r, &h); err != nil {
		return ShardsSummary{}, err
	}
	if h.Shards == nil {
		return ShardsSummary{}, c.badResponse(r, nil, "no _shards")
	}
	s := ShardsSummary{Total: h.Shards.Total, Successful: h.Shards.Successful, Failed: h.Shards.Failed}
	for _, f := range h.Shards.Failures {
		s.Failures = append(s.Failures, fmt.Sprintf("%s[%d]: %s", f.Index, f.Shard, strings.TrimSpace(f.Reason.Type+" "+f.Reason.Reason)))
	}
	return s, nil
}

// Flush calls POST _flush. Shard failures are reported in the summary, not as
// an error.
func (c *Client) Flush(ctx context.Context) (ShardsSummary, error) {
	r, err := c.call(ctx, http.MethodPost, request{path: "/_flush"}, "/_flush")
	if err != nil {
		return ShardsSummary{}, err
	}
	return c.shards(r)
}

// SyncedFlush calls POST _flush/synced. On OpenSearch 2.x it is a deprecated
// shim that performs a normal flush (200, Warning header); 409 means some
// shards failed (partial=true, no error). A node without the endpoint
// (400/404/405) yields ErrSyncedFlushUnsupported: callers should fall back to
// Flush.
func (c *Client) SyncedFlush(ctx context.Context) (ShardsSummary, bool, error) {
	r, err := c.call(ctx, http.MethodPost, request{path: "/_flush/synced"}, "/_flush/synced",
		http.StatusConflict, http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed)
	if err != nil {
		return ShardsSummary{}, false, err
	}
	switch r.status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		_, reason := parseError(r.body)
		return ShardsSummary{}, false, c.typedError(r, netclient.ErrBadResponse, ErrSyncedFlushUnsupported, reason)
	}
	s, err := c.shards(r)
	if err != nil {
		return ShardsSummary{}, false, err
	}
	return s, r.status == http.StatusConflict || s.Failed > 0, nil
}

// ExplainRequest selects a shard copy; the zero value asks for the first
// unassigned shard the node finds.
type ExplainRequest struct {
	Index   string
	Shard   int
	Primary bool
}

// Explanation is the answer of _cluster/allocation/explain.
type Explanation struct {
	Index                string    `json:"index"`
	Shard                int       `json:"shard"`
	Primary              bool      `json:"primary"`
	CurrentState         string    `json:"current_state"`
	CurrentNode          string    `json:"current_node,omitempty"`
	UnassignedReason     string    `json:"unassigned_reason,omitempty"` // INDEX_CREATED, REPLICA_ADDED, ALLOCATION_FAILED, NODE_LEFT, …
	UnassignedAt         string    `json:"unassigned_at,omitempty"`
	UnassignedDetails    string    `json:"unassigned_details,omitempty"`
	LastAllocationStatus string    `json:"last_allocation_status,omitempty"`
	CanAllocate          string    `json:"can_allocate,omitempty"` // yes | no | throttled | awaiting_info | no_valid_shard_copy | …
	AllocateExplanation  string    `json:"allocate_explanation,omitempty"`
	CanRemain            string    `json:"can_remain_on_current_node,omitempty"`
	Deciders             []Decider `json:"deciders"`
}

// Decider is one non-YES decision of one node about the shard.
type Decider struct {
	Node        string `json:"node"`
	Decider     string `json:"decider"`  // same_shard, enable, disk_threshold, max_retry, …
	Decision    string `json:"decision"` // NO | THROTTLE | YES
	Explanation string `json:"explanation"`
}

// Blocking returns the deciders whose decision is NO.
func (e Explanation) Blocking() []Decider {
	out := []Decider{}
	for _, d := range e.Deciders {
		if d.Decision == "NO" {
			out = append(out, d)
		}
	}
	return out
}

// AllocationExplain calls GET _cluster/allocation/explain. With a zero
// request and nothing unassigned it returns ErrNothingToExplain.
func (c *Client) AllocationExplain(ctx context.Context, er ExplainRequest) (Explanation, error) {
	const op = "/_cluster/allocation/explain"
	req := request{path: op}
	if er.Index != "" {
		b, err := marshal("GET "+op, map[string]any{"index": er.Index, "shard": er.Shard, "primary": er.Primary})
		if err != nil {
			return Explanation{}, err
		}
		req.body = b
	}
	r, err := c.call(ctx, http.MethodGet, req, op, http.StatusBadRequest)
	if err != nil {
		return Explanation{}, err
	}
	if r.status == http.StatusBadRequest {
		typ, reason := parseError(r.body)
		if strings.Contains(reason, "unable to find any unassigned shards to explain") {
			return Explanation{}, c.typedError(r, netclient.ErrBadResponse, ErrNothingToExplain, reason)
		}
		return Explanation{}, c.statusError(r.op, r.status, r.header, []byte(fmt.Sprintf(`{"error":{"type":%q,"reason":%q}}`, typ, reason)))
	}
	var raw struct {
		Index        string `json:"index"`
		Shard        int    `json:"shard"`
		Primary      bool   `json:"primary"`
		CurrentState string `json:"current_state"`
		CurrentNode  *struct {
			Name string `json:"name"`
		} `json:"current_node"`
		UnassignedInfo *struct {
			Reason               string `json:"reason"`
			At                   string `json:"at"`
			LastAllocationStatus string `json:"last_allocation_status"`
			Details              string `json:"details"`
		} `json:"unassigned_info"`
		CanAllocate             string `json:"can_allocate"`
		AllocateExplanation     string `json:"allocate_explanation"`
		Explanation             string `json:"explanation"`
		CanRemainOnCurrentNode  string `json:"can_remain_on_current_node"`
		NodeAllocationDecisions []struct {
			NodeName string `json:"node_name"`
			NodeID   string `json:"node_id"`
			Deciders []struct {
				Decider     string `json:"decider"`
				Decision    string `json:"decision"`
				Explanation string `json:"explanation"`
			} `json:"deciders"`
		} `json:"node_allocation_decisions"`
	}
	if err := c.decode(r, &raw); err != nil {
		return Explanation{}, err
	}
	if raw.Index == "" {
		return Explanation{}, c.badResponse(r, nil, "no index in explanation")
	}
	e := Explanation{Index: raw.Index, Shard: raw.Shard, Primary: raw.Primary, CurrentState: raw.CurrentState,
		CanAllocate: raw.CanAllocate, AllocateExplanation: raw.AllocateExplanation, CanRemain: raw.CanRemainOnCurrentNode,
		Deciders: []Decider{}}
	if e.AllocateExplanation == "" {
		e.AllocateExplanation = raw.Explanation
	}
	if raw.CurrentNode != nil {
		e.CurrentNode = raw.CurrentNode.Name
	}
	if ui := raw.UnassignedInfo; ui != nil {
		e.UnassignedReason, e.UnassignedAt, e.UnassignedDetails, e.LastAllocationStatus = ui.Reason, ui.At, ui.Details, ui.LastAllocationStatus
	}
	for _, nd := range raw.NodeAllocationDecisions {
		node := nd.NodeName
		if node == "" {
			node = nd.NodeID
		}
		for _, d := range nd.Deciders {
			e.Deciders = append(e.Deciders, Decider{Node: node, Decider: d.Decider, Decision: d.Decision, Explanation: d.Explanation})
		}
	}
	return e, nil
}
