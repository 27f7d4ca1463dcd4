package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/netclient"
)

// ErrRepositoryMissing: the snapshot repository is not registered.
var ErrRepositoryMissing = errors.New("snapshot repository not registered")

// ErrSnapshotMissing: the repository holds no snapshot of that name.
var ErrSnapshotMissing = errors.New("snapshot not found")

// snapshotName is what siemctl accepts as a repository or snapshot name: OpenSearch's own rules
// (lowercase, no whitespace, none of \/*?"<>|,#) narrowed to a safe path segment.
var snapshotName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,199}$`)

func validSnapshotName(op, what, name string) error {
	if !snapshotName.MatchString(name) {
		return &netclient.Error{Op: op, Kind: netclient.ErrBadResponse,
			Detail: fmt.Sprintf("invalid %s name %q (lowercase letters, digits, '.', '_' and '-')", what, name)}
	}
	return nil
}

// snapshotPath is /_snapshot/<repo>/<name><suffix> once both names are
// valid (a refused name is an error naming method and path).
func snapshotPath(method, repo, name, suffix string) (string, error) {
	path := "/_snapshot/" + repo + "/" + name + suffix
	if err := validSnapshotName(method+" "+path, "repository", repo); err != nil {
		return "", err
	}
	if err := validSnapshotName(method+" "+path, "snapshot", name); err != nil {
		return "", err
	}
	return path, nil
}

// snapshotCall sends method to /_snapshot/<repo>/<name><suffix>; a 404 is ErrRepositoryMissing
// when the node says the repository is missing, else ErrSnapshotMissing.
func (c *Client) snapshotCall(ctx context.Context, method, repo, name, suffix string) (*response, error) {
	path, err := snapshotPath(method, repo, name, suffix)
	if err != nil {
		return nil, err
	}
	r, err := c.call(ctx, method, request{path: path}, path, http.StatusNotFound)
	if err != nil {
		return nil, err
	}
	if r.status == http.StatusNotFound {
		if typ, reason := parseError(r.body); typ == "repository_missing_exception" {
			return nil, c.typedError(r, netclient.ErrBadResponse, ErrRepositoryMissing, reason)
		}
		return nil, c.typedError(r, netclient.ErrBadResponse, ErrSnapshotMissing, fmt.Sprintf("no snapshot %q in repository %q", name, repo))
	}
	return r, nil
}

// PathRepo returns the union of path.repo over the nodes: the directories a file-system snapshot
// repository may live under (empty when none is configured, the stock case).
func (c *Client) PathRepo(ctx context.Context) ([]string, error) {
	byNode, err := c.NodesPathRepo(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, list := range byNode {
		for _, p := range list {
			seen[p] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// NodesPathRepo returns each node's path.repo by node name (an empty list for a node without one).
func (c *Client) NodesPathRepo(ctx context.Context) (map[string][]string, error) {
	const path = "/_nodes/settings"
	r, err := c.call(ctx, http.MethodGet, request{path: path, query: url.Values{"filter_path": {"nodes.*.name,nodes.*.settings.path.repo"}}}, path)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Nodes map[string]struct {
			Name     string `json:"name"`
			Settings struct {
				Path struct {
					Repo json.RawMessage `json:"repo"`
				} `json:"path"`
			} `json:"settings"`
		} `json:"nodes"`
	}
	if len(r.body) > 0 && string(r.body) != "{}" {
		if err := c.decode(r, &raw); err != nil {
			return nil, err
		}
	}
	out := map[string][]string{}
	for id, n := range raw.Nodes {
		name := n.Name
		if name == "" {
			name = id
		}
		out[name] = []string{}
		if len(n.Settings.Path.Repo) == 0 {
			continue
		}
		var list []string
		if err := json.Unmarshal(n.Settings.Path.Repo, &list); err != nil {
			var one string
			if err := json.Unmarshal(n.Settings.Path.Repo, &one); err != nil {
				return nil, c.badResponse(r, err, "path.repo is neither a list nor a string")
			}
			list = strings.Split(one, ",")
		}
		for _, p := range list {
			if p = strings.TrimSpace(p); p != "" {
				out[name] = append(out[name], p)
			}
		}
	}
	return out, nil
}

// Repository is a registered snapshot repository.
type Repository struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Location string `json:"location"` // fs repositories
	// SnapshotRate is its max_snapshot_bytes_per_sec as registered; "" is
	// the node's default, 40 MB/s.
	SnapshotRate string `json:"max_snapshot_bytes_per_sec,omitempty"`
}

// UnthrottledSnapshots is the max_snapshot_bytes_per_sec PutFSRepository
// registers: no limit. The node's default (40 MB/s per node) made the
// data-safety snapshot of an upgrade's window copy 1 GiB of new data in
// 26 s where the disk copies it in 2; the snapshot runs while the shipper
// and the dashboard are stopped. A repository the site registered itself
// keeps its own limit.
const UnthrottledSnapshots = "0b"

// GetRepository returns the repository name; ErrRepositoryMissing when it is not registered.
func (c *Client) GetRepository(ctx context.Context, name string) (Repository, error) {
	path := "/_snapshot/" + name
	if err := validSnapshotName("GET "+path, "repository", name); err != nil {
		return Repository{}, err
	}
	r, err := c.call(ctx, http.MethodGet, request{path: path}, path, http.StatusNotFound)
	if err != nil {
		return Repository{}, err
	}
	if r.status == http.StatusNotFound {
		return Repository{}, c.typedError(r, netclient.ErrBadResponse, ErrRepositoryMissing, fmt.Sprintf("repository %q is not registered", name))
	}
	var raw map[string]struct {
		Type     string `json:"type"`
		Settings struct {
			Location     string `json:"location"`
			SnapshotRate string `json:"max_snapshot_bytes_per_sec"`
		} `json:"settings"`
	}
	if err := c.decode(r, &raw); err != nil {
		return Repository{}, err
	}
	got, ok := raw[name]
	if !ok {
		return Repository{}, c.badResponse(r, nil, "the answer does not name repository "+name)
	}
	return Repository{Name: name, Type: got.Type, Location: got.Settings.Location, SnapshotRate: got.Settings.SnapshotRate}, nil
}

// PutFSRepository registers (or updates) a file-system repository at location, which must lie under
// one of the nodes' path.repo directories (the node refuses it otherwise, and says so), its
// snapshots unthrottled (UnthrottledSnapshots).
func (c *Client) PutFSRepository(ctx context.Context, name, location string) error {
	path := "/_snapshot/" + name
	if err := validSnapshotName("PUT "+path, "repository", name); err != nil {
		return err
	}
	b, err := marshal("PUT "+path, map[string]any{"type": "fs", "settings": map[string]any{"location": location, "compress": true,
		"max_snapshot_bytes_per_sec": UnthrottledSnapshots}})
	if err != nil {
		return err
	}
	r, err := c.call(ctx, http.MethodPut, request{path: path, body: b}, path)
	if err != nil && r != nil && strings.Contains(string(r.body), "path.repo") {
		var ne *netclient.Error
		if errors.As(err, &ne) {
			ne.Detail = fmt.Sprintf("%s is not under the node's path.repo (add `path.repo: [%s]` or a parent of it to opensearch.yml and restart the indexer)", location, location)
		}
	}
	return err
}

// VerifyRepository asks every node to write to and read from the repository; it returns the names
// of the nodes that could.
func (c *Client) VerifyRepository(ctx context.Context, name string) ([]string, error) {
	path := "/_snapshot/" + name + "/_verify"
	if err := validSnapshotName("POST "+path, "repository", name); err != nil {
		return nil, err
	}
	r, err := c.call(ctx, http.MethodPost, request{path: path}, path, http.StatusNotFound)
	if err != nil {
		return nil, err
	}
	if r.status == http.StatusNotFound {
		_, reason := parseError(r.body)
		return nil, c.typedError(r, netclient.ErrBadResponse, ErrRepositoryMissing, reason)
	}
	var raw struct {
		Nodes map[string]struct {
			Name string `json:"name"`
		} `json:"nodes"`
	}
	if err := c.decode(r, &raw); err != nil {
		return nil, err
	}
	var nodes []string
	for _, n := range raw.Nodes {
		nodes = append(nodes, n.Name)
	}
	sort.Strings(nodes)
	if len(nodes) == 0 {
		return nil, c.badResponse(r, nil, "no node verified the repository")
	}
	return nodes, nil
}

// SnapshotRequest says what CreateSnapshot takes.
type SnapshotRequest struct {
	Repository         string
	Name               string
	Indices            []string // names or patterns; empty: every index
	IncludeGlobalState bool     // persistent settings, templates, pipelines
}

// CreateSnapshot starts a snapshot and returns at once (wait_for_completion=false); follow it with
// SnapshotStatus and confirm it with GetSnapshot.
func (c *Client) CreateSnapshot(ctx context.Context, sr SnapshotRequest) error {
	return c.startSnapshotJob(ctx, http.MethodPut, sr.Repository, sr.Name, "", sr.Indices, sr.IncludeGlobalState)
}

// startSnapshotJob starts a snapshot or a restore (wait_for_completion=false) of indices (empty:
// every index), unavailable indices ignored.
func (c *Client) startSnapshotJob(ctx context.Context, method, repo, name, suffix string, indices []string, global bool) error {
	path, err := snapshotPath(method, repo, name, suffix)
	if err != nil {
		return err
	}
	body := map[string]any{"ignore_unavailable": true, "include_global_state": global}
	if len(indices) > 0 {
		body["indices"] = strings.Join(indices, ",")
	}
	b, err := marshal(method+" "+path, body)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, method, request{path: path, query: url.Values{"wait_for_completion": {"false"}}, body: b}, path)
	return err
}

// SnapshotInfo is a finished (or running) snapshot as the repository lists it.
type SnapshotInfo struct {
	Name          string   `json:"name"`
	UUID          string   `json:"uuid"`
	Version       string   `json:"version"` // of the node that took it
	State         string   `json:"state"`   // IN_PROGRESS, SUCCESS, PARTIAL, FAILED, INCOMPATIBLE
	Indices       []string `json:"indices"`
	ShardsTotal   int      `json:"shards_total"`
	ShardsOK      int      `json:"shards_successful"`
	ShardsFailed  int      `json:"shards_failed"`
	Failures      []string `json:"failures"`
	StartMillis   int64    `json:"start_time_in_millis"`
	DurationMilli int64    `json:"duration_in_millis"`
}

// Complete reports whether the snapshot holds every shard it was asked for.
func (s SnapshotInfo) Complete() bool {
	return s.State == "SUCCESS" && s.ShardsFailed == 0 && s.ShardsOK == s.ShardsTotal
}

// GetSnapshot returns one snapshot of repo; ErrSnapshotMissing when there is none of that name.
func (c *Client) GetSnapshot(ctx context.Context, repo, name string) (SnapshotInfo, error) {
	r, err := c.snapshotCall(ctx, http.MethodGet, repo, name, "")
	if err != nil {
		return SnapshotInfo{}, err
	}
	all, err := c.parseSnapshots(r)
	if err != nil {
		return SnapshotInfo{}, err
	}
	for _, info := range all {
		if info.Name == name {
			return info, nil
		}
	}
	return SnapshotInfo{}, c.badResponse(r, nil, "the answer does not list snapshot "+name)
}

// SnapshotProgress is a running (or just finished) snapshot's progress from _status: shards by
// stage and bytes processed of the bytes this snapshot must copy (incremental: only the segments
// the repository does not hold yet).
type SnapshotProgress struct {
	State            string `json:"state"` // STARTED, IN_PROGRESS, SUCCESS, FAILED, ABORTED
	ShardsDone       int    `json:"shards_done"`
	ShardsFailed     int    `json:"shards_failed"`
	ShardsTotal      int    `json:"shards_total"`
	IncrementalBytes int64  `json:"incremental_bytes"` // to copy in this snapshot
	ProcessedBytes   int64  `json:"processed_bytes"`   // copied so far
	TotalBytes       int64  `json:"total_bytes"`       // the indices' whole size (mostly already in the repository)
	IncrementalFiles int    `json:"incremental_files"`
	ProcessedFiles   int    `json:"processed_files"`
}

// Percent is the share of the incremental bytes copied (100 for a snapshot with nothing new).
func (p SnapshotProgress) Percent() float64 {
	if p.IncrementalBytes <= 0 {
		if p.ShardsTotal > 0 {
			return 100 * float64(p.ShardsDone) / float64(p.ShardsTotal)
		}
		return 100
	}
	return min(100, 100*float64(p.ProcessedBytes)/float64(p.IncrementalBytes))
}

// SnapshotStatus returns the progress of snapshot name in repo; ErrSnapshotMissing when there is
// none of that name, ErrRepositoryMissing when the repository is not registered.
func (c *Client) SnapshotStatus(ctx context.Context, repo, name string) (SnapshotProgress, error) {
	r, err := c.snapshotCall(ctx, http.MethodGet, repo, name, "/_status")
	if err != nil {
		return SnapshotProgress{}, err
	}
	type files struct {
		Count int   `json:"file_count"`
		Bytes int64 `json:"size_in_bytes"`
	}
	var raw struct {
		Snapshots []struct {
			Snapshot string `json:"snapshot"`
			State    string `json:"state"`
			Shards   struct {
				Done   int `json:"done"`
				Failed int `json:"failed"`
				Total  int `json:"total"`
			} `json:"shards_stats"`
			Stats struct {
				Incremental files `json:"incremental"`
				Processed   files `json:"processed"`
				Total       files `json:"total"`
			} `json:"stats"`
		} `json:"snapshots"`
	}
	if err := c.decode(r, &raw); err != nil {
		return SnapshotProgress{}, err
	}
	for _, s := range raw.Snapshots {
		if s.Snapshot != name {
			continue
		}
		return SnapshotProgress{State: s.State, ShardsDone: s.Shards.Done, ShardsFailed: s.Shards.Failed, ShardsTotal: s.Shards.Total,
			IncrementalBytes: s.Stats.Incremental.Bytes, ProcessedBytes: s.Stats.Processed.Bytes, TotalBytes: s.Stats.Total.Bytes,
			IncrementalFiles: s.Stats.Incremental.Count, ProcessedFiles: s.Stats.Processed.Count}, nil
	}
	return SnapshotProgress{}, c.badResponse(r, nil, "the answer does not list snapshot "+name)
}

// RestoreRequest says what RestoreSnapshot brings back.
type RestoreRequest struct {
	Repository         string
	Name               string
	Indices            []string // empty: every index in the snapshot
	IncludeGlobalState bool
}

// RestoreSnapshot starts restoring a snapshot and returns at once; the restored indices recover like
// any other (follow them with cluster health or _recovery). Indices of the same name must not be
// open: delete or close them first.
func (c *Client) RestoreSnapshot(ctx context.Context, rr RestoreRequest) error {
	return c.startSnapshotJob(ctx, http.MethodPost, rr.Repository, rr.Name, "/_restore", rr.Indices, rr.IncludeGlobalState)
}

// DeleteSnapshot removes one snapshot (the segments other snapshots share stay); ErrSnapshotMissing
// and ErrRepositoryMissing as SnapshotStatus.
func (c *Client) DeleteSnapshot(ctx context.Context, repo, name string) error {
	_, err := c.snapshotCall(ctx, http.MethodDelete, repo, name, "")
	return err
}

// Snapshots lists every snapshot of repo, oldest first; ErrRepositoryMissing when it is not registered.
func (c *Client) Snapshots(ctx context.Context, repo string) ([]SnapshotInfo, error) {
	path := "/_snapshot/" + repo + "/_all"
	if err := validSnapshotName("GET "+path, "repository", repo); err != nil {
		return nil, err
	}
	r, err := c.call(ctx, http.MethodGet, request{path: path}, path, http.StatusNotFound)
	if err != nil {
		return nil, err
	}
	if r.status == http.StatusNotFound {
		_, reason := parseError(r.body)
		return nil, c.typedError(r, netclient.ErrBadResponse, ErrRepositoryMissing, reason)
	}
	return c.parseSnapshots(r)
}

func (c *Client) parseSnapshots(r *response) ([]SnapshotInfo, error) {
	var raw struct {
		Snapshots []struct {
			Snapshot      string   `json:"snapshot"`
			UUID          string   `json:"uuid"`
			Version       string   `json:"version"`
			State         string   `json:"state"`
			Indices       []string `json:"indices"`
			StartMillis   int64    `json:"start_time_in_millis"`
			DurationMilli int64    `json:"duration_in_millis"`
			Failures      []struct {
				Index  string `json:"index"`
				Shard  int    `json:"shard_id"`
				Reason string `json:"reason"`
			} `json:"failures"`
			Shards struct {
				Total      int `json:"total"`
				Failed     int `json:"failed"`
				Successful int `json:"successful"`
			} `json:"shards"`
		} `json:"snapshots"`
	}
	if err := c.decode(r, &raw); err != nil {
		return nil, err
	}
	out := []SnapshotInfo{}
	for _, s := range raw.Snapshots {
		info := SnapshotInfo{Name: s.Snapshot, UUID: s.UUID, Version: s.Version, State: s.State, Indices: s.Indices,
			ShardsTotal: s.Shards.Total, ShardsOK: s.Shards.Successful, ShardsFailed: s.Shards.Failed,
			StartMillis: s.StartMillis, DurationMilli: s.DurationMilli, Failures: []string{}}
		if info.Indices == nil {
			info.Indices = []string{}
		}
		sort.Strings(info.Indices)
		for _, f := range s.Failures {
			info.Failures = append(info.Failures, fmt.Sprintf("%s[%d]: %s", f.Index, f.Shard, f.Reason))
		}
		out = append(out, info)
	}
	return out, nil
}

// ShardRecovery is one row of _cat/recovery (bytes): a shard being (or done) recovered from a
// snapshot ("snapshot"), its own files ("existing_store"), nothing ("empty_store") or another node
// ("peer").
type ShardRecovery struct {
	Index          string `json:"index"`
	Shard          int    `json:"shard"`
	Type           string `json:"type"`
	Stage          string `json:"stage"` // init, index, verify_index, translog, finalize, done
	Snapshot       string `json:"snapshot,omitempty"`
	BytesRecovered int64  `json:"bytes_recovered"`
	BytesTotal     int64  `json:"bytes_total"`
}

// Recoveries calls _cat/recovery[/<pattern>]?bytes=b, with active_only when asked (only the shards
// still recovering). An empty pattern means every index; a pattern matching nothing gives none.
func (c *Client) Recoveries(ctx context.Context, pattern string, activeOnly bool) ([]ShardRecovery, error) {
	q := url.Values{"bytes": {"b"}, "active_only": {fmt.Sprint(activeOnly)},
		"h": {"index,shard,type,stage,snapshot,bytes_recovered,bytes_total"}}
	return catList(ctx, c, catPath("/_cat/recovery", pattern), pattern, q, func(p *rowParser, row map[string]string) ShardRecovery {
		return ShardRecovery{Index: row["index"], Shard: p.int(row, "shard"), Type: row["type"], Stage: row["stage"],
			Snapshot: row["snapshot"], BytesRecovered: p.int64(row, "bytes_recovered"), BytesTotal: p.int64(row, "bytes_total")}
	})
}
