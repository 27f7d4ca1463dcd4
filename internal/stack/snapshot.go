package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// DefaultAgentPageSize is how many agents one GET /agents page carries when
// a snapshot counts them: 100,000 agents cost 10 requests, far below the
// manager's 300 requests per minute, with memory flat (pages are streamed).
const DefaultAgentPageSize = 10000

// healthMargin is how much earlier than the capture's deadline the health
// checks must finish, so their results (UNKNOWN for the slow ones) arrive
// before Capture stops waiting.
const healthMargin = 500 * time.Millisecond

// SnapshotSource is the snapshot.Source over this stack's clients. Every
// method reads concurrently what it needs and honours ctx; a client that
// could not be built is that part's error (the component is recorded as
// down, the capture goes on).
type SnapshotSource struct {
	Stack *Stack
	// Checks run for the snapshot's health section (default: the catalogue
	// without the deep probes).
	Checks []health.Check
	// Now is the clock of the alert window and of the health run.
	Now func() time.Time
	// AgentPageSize is the GET /agents page size (default DefaultAgentPageSize).
	AgentPageSize int
}

var _ snapshot.Source = (*SnapshotSource)(nil)

// SnapshotSource returns the real snapshot.Source of this stack.
func (s *Stack) SnapshotSource() snapshot.Source { return &SnapshotSource{Stack: s} }

// SnapshotStore is the store under state_dir/snapshots.
func (s *Stack) SnapshotStore() *snapshot.Store {
	return &snapshot.Store{Dir: filepath.Join(s.Config.StateDir, "snapshots"), Logger: s.Logger}
}

// SnapshotCaptureOptions are the options a capture of this stack uses: host
// name, siemctl version, the alerts index prefix and the resolved secrets
// (so none of them can reach the document).
func (s *Stack) SnapshotCaptureOptions(label string) snapshot.CaptureOptions {
	host, _ := os.Hostname()
	return snapshot.CaptureOptions{
		Label:             label,
		Host:              host,
		SiemctlVersion:    buildinfo.Get().Version,
		AlertsIndexPrefix: s.Config.Indexer.AlertsIndexPrefix,
		Redactor:          s.Redactor,
	}
}

// CaptureSnapshot captures the stack's state and saves it atomically under
// state_dir/snapshots; it returns the document and its path. A component
// that is down is recorded in the document, not an error; ctx's deadline
// bounds the capture.
func (s *Stack) CaptureSnapshot(ctx context.Context, label string) (*snapshot.Document, string, error) {
	d, err := snapshot.Capture(ctx, s.SnapshotSource(), s.SnapshotCaptureOptions(label))
	if err != nil {
		return nil, "", err
	}
	path, err := s.SnapshotStore().Save(d)
	if err != nil {
		return nil, "", err
	}
	return d, path, nil
}

func (src *SnapshotSource) now() time.Time {
	if src.Now != nil {
		return src.Now()
	}
	return time.Now()
}

// Units reads the four units' states from systemd.
func (src *SnapshotSource) Units(ctx context.Context) (map[string]snapshot.UnitState, error) {
	u, err := src.Stack.Units(ctx)
	if err != nil {
		return nil, err
	}
	byComp := src.Stack.Config.Units()
	names := make([]string, 0, len(byComp))
	comps := make([]string, 0, len(byComp))
	for comp, unit := range byComp {
		if unit == "" {
			continue
		}
		comps = append(comps, comp)
		names = append(names, unit)
	}
	sts, err := u.Status(ctx, names...)
	if err != nil {
		return nil, err
	}
	if len(sts) != len(names) {
		return nil, fmt.Errorf("systemd answered %d unit states for %d units", len(sts), len(names))
	}
	out := make(map[string]snapshot.UnitState, len(sts))
	for i, st := range sts {
		out[comps[i]] = snapshot.UnitState{Name: st.Name, LoadState: st.LoadState, ActiveState: st.ActiveState,
			SubState: st.SubState, Since: st.StateChangedAt, NRestarts: st.NRestarts}
	}
	return out, nil
}

// PackageVersions reads the installed package versions.
func (src *SnapshotSource) PackageVersions(ctx context.Context) (map[string]string, error) {
	return src.Stack.InstalledVersions(ctx)
}

// parts runs named functions concurrently and collects their errors.
type parts struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs map[string]error
}

func (p *parts) run(name string, f func() error) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := f(); err != nil {
			p.mu.Lock()
			if p.errs == nil {
				p.errs = map[string]error{}
			}
			p.errs[name] = err
			p.mu.Unlock()
		}
	}()
}

func (p *parts) wait() map[string]error {
	p.wg.Wait()
	return p.errs
}

// IndexerState reads GET / (the node answering at all decides whether the
// indexer is up), cluster health, settings, templates, the shipper's ingest
// pipeline, indices, shards and disk allocation, all at once.
func (src *SnapshotSource) IndexerState(ctx context.Context) (*snapshot.IndexerState, error) {
	ix, err := src.Stack.NeedIndexer()
	if err != nil {
		return nil, err
	}
	cfg := src.Stack.Config
	st := &snapshot.IndexerState{Templates: map[string]json.RawMessage{}, Pipelines: map[string]json.RawMessage{}}
	var (
		info     indexer.Info
		infoErr  error
		legacy   []indexer.Template
		compos   []indexer.ComposableTemplate
		p        parts
		infoDone = make(chan struct{})
	)
	go func() { defer close(infoDone); info, infoErr = ix.Info(ctx) }()
	p.run("health", func() error {
		h, err := ix.Health(ctx, indexer.HealthRequest{})
		if err != nil {
			return err
		}
		st.ClusterName, st.Status, st.NumberOfNodes = h.ClusterName, h.Status, h.NumberOfNodes
		st.ActiveShards, st.UnassignedShards = h.ActiveShards, h.UnassignedShards
		st.RelocatingShards, st.InitializingShards = h.RelocatingShards, h.InitializingShards
		return nil
	})
	p.run("settings", func() error {
		s, err := ix.Settings(ctx, true)
		if err != nil {
			return err
		}
		body, err := json.Marshal(map[string]map[string]string{"persistent": s.Persistent, "transient": s.Transient, "defaults": s.Defaults})
		if err != nil {
			return fmt.Errorf("encode cluster settings: %w", err)
		}
		st.Settings = body
		return nil
	})
	p.run("templates", func() error {
		var lErr, cErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); legacy, lErr = ix.ListLegacyTemplates(ctx) }()
		go func() { defer wg.Done(); compos, cErr = ix.ComposableTemplates(ctx) }()
		wg.Wait()
		if err := errors.Join(lErr, cErr); err != nil {
			return err
		}
		for _, t := range legacy {
			st.Templates[t.Name] = t.Body
		}
		for _, t := range compos {
			// The client exposes a composable template's canonical hash, not
			// its body: hash what identifies it (patterns, priority,
			// components, content hash), so any change changes the digest.
			body, err := json.Marshal(map[string]any{"index_patterns": t.IndexPatterns, "priority": t.Priority,
				"composed_of": t.ComposedOf, "version": t.Version, "sha256": t.Hash})
			if err != nil {
				return fmt.Errorf("encode index template %s: %w", t.Name, err)
			}
			st.Templates["_index_template/"+t.Name] = body
		}
		return nil
	})
	if id := cfg.Shipper.Pipeline; id != "" {
		p.run("pipelines", func() error {
			pl, err := ix.Pipeline(ctx, id)
			if err != nil {
				return err
			}
			if pl.Found {
				st.Pipelines[pl.ID] = pl.Body
			}
			return nil
		})
	}
	p.run("indices", func() error {
		list, err := ix.CatIndices(ctx, "*")
		if err != nil {
			return err
		}
		st.Indices = make([]snapshot.Index, 0, len(list))
		for _, x := range list {
			st.Indices = append(st.Indices, snapshot.Index{Name: x.Name, Health: x.Health, Status: x.Status,
				DocsCount: x.DocsCount, StoreBytes: x.StoreBytes, Pri: x.Pri, Rep: x.Rep})
		}
		return nil
	})
	p.run("shards", func() error {
		list, err := ix.CatShards(ctx)
		if err != nil {
			return err
		}
		st.Shards = make([]snapshot.Shard, 0, len(list))
		for _, s := range list {
			st.Shards = append(st.Shards, snapshot.Shard{Index: s.Index, Shard: s.Shard, Primary: s.PriRep == "p",
				State: s.State, UnassignedReason: s.UnassignedReason})
		}
		return nil
	})
	p.run("disk", func() error {
		list, err := ix.CatAllocation(ctx)
		if err != nil {
			return err
		}
		for _, a := range list {
			if a.DiskTotal <= 0 { // the UNASSIGNED pseudo-node
				continue
			}
			pct := math.Round(float64(a.DiskUsed)*1000/float64(a.DiskTotal)) / 10
			st.Disk = append(st.Disk, snapshot.Disk{Node: a.Node, Percent: pct, UsedBytes: a.DiskUsed, TotalBytes: a.DiskTotal})
		}
		return nil
	})
	errs := p.wait()
	<-infoDone
	if infoErr != nil {
		// The node did not answer GET /: the indexer is down, whatever
		// else answered.
		return nil, infoErr
	}
	st.Version = info.Version
	if st.ClusterName == "" {
		st.ClusterName = info.ClusterName
	}
	st.Errors = errs
	return st, nil
}

// ManagerState reads GET / (the API answering decides whether the manager is
// up), /manager/info, /manager/status, the API users' names and every agent's
// status and version (streamed in pages and counted, never held in memory).
func (src *SnapshotSource) ManagerState(ctx context.Context) (*snapshot.ManagerState, error) {
	mc, err := src.Stack.NeedManager()
	if err != nil {
		return nil, err
	}
	st := &snapshot.ManagerState{}
	var (
		api      manager.APIInfo
		apiErr   error
		p        parts
		apiDone  = make(chan struct{})
		pageSize = src.AgentPageSize
	)
	if pageSize <= 0 {
		pageSize = DefaultAgentPageSize
	}
	go func() { defer close(apiDone); api, apiErr = mc.Info(ctx) }()
	p.run("info", func() error {
		mi, err := mc.ManagerInfo(ctx)
		if err != nil {
			return err
		}
		st.Info = map[string]string{"path": mi.Path, "version": mi.Version, "type": mi.Type, "max_agents": mi.MaxAgents,
			"openssl_support": mi.OpenSSLSupport, "tz_offset": mi.TZOffset, "tz_name": mi.TZName}
		return nil
	})
	p.run("daemons", func() error {
		d, err := mc.ManagerStatus(ctx)
		if err != nil {
			return err
		}
		st.Daemons = map[string]string(d)
		return nil
	})
	p.run("agents", func() error {
		counts := &snapshot.Agents{ByStatus: map[string]int{}, ByVersion: map[string]int{}}
		q := manager.AgentQuery{Select: []string{"id", "status", "version"}, Limit: pageSize}
		for a, err := range mc.Agents(ctx, q) {
			if err != nil {
				return err
			}
			if a.IsManager() {
				continue
			}
			counts.Total++
			counts.ByStatus[orUnknown(a.Status)]++
			counts.ByVersion[orUnknown(a.Version)]++
		}
		st.AgentCounts = counts
		return nil
	})
	p.run("api_users", func() error {
		us, err := mc.Users(ctx)
		if err != nil {
			return err
		}
		st.APIUsers = make([]string, 0, len(us))
		for _, u := range us {
			st.APIUsers = append(st.APIUsers, u.Username)
		}
		return nil
	})
	errs := p.wait()
	<-apiDone
	if apiErr != nil {
		return nil, apiErr
	}
	st.Version = api.APIVersion
	if st.Version == "" && st.Info != nil {
		st.Version = st.Info["version"]
	}
	st.Errors = errs
	return st, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// DashboardState asks the dashboard for GET /; a 5xx answer counts as down.
func (src *SnapshotSource) DashboardState(ctx context.Context) (*snapshot.DashboardState, error) {
	ans, err := src.Stack.Dashboard(ctx)
	if err != nil {
		return nil, err
	}
	if ans.Status >= http.StatusInternalServerError {
		return nil, fmt.Errorf("GET / answered %d %s", ans.Status, http.StatusText(ans.Status))
	}
	return &snapshot.DashboardState{Version: ans.Version, StatusCode: ans.Status}, nil
}

// AlertStats counts the alerts of the last 5 minutes and finds the newest in
// alerts_index_prefix*.
func (src *SnapshotSource) AlertStats(ctx context.Context) (*snapshot.AlertStats, error) {
	ix, err := src.Stack.NeedIndexer()
	if err != nil {
		return nil, err
	}
	pattern := src.Stack.Config.Indexer.AlertsIndexPrefix + "*"
	now := src.now()
	var (
		n               int64
		newest          time.Time
		cErr, nErr      error
		wg              sync.WaitGroup
		alertsTimeField = indexer.DefaultTimeField
	)
	wg.Add(2)
	go func() { defer wg.Done(); n, cErr = ix.Count(ctx, pattern, "", now.Add(-5*time.Minute)) }()
	go func() { defer wg.Done(); newest, _, nErr = ix.Newest(ctx, pattern, alertsTimeField) }()
	wg.Wait()
	if err := errors.Join(cErr, nErr); err != nil {
		return nil, err
	}
	return &snapshot.AlertStats{Last5m: n, Newest: newest}, nil
}

// Health runs the health checks (no deep probes) and keeps id, status and
// summary of each. They finish a little before ctx's deadline so that slow
// checks are recorded as UNKNOWN instead of the whole section missing.
func (src *SnapshotSource) Health(ctx context.Context) ([]snapshot.HealthResult, error) {
	checks := src.Checks
	if checks == nil {
		all, err := health.Select(health.Catalogue(), health.Selection{})
		if err != nil {
			return nil, err
		}
		checks = all
	}
	if dl, ok := ctx.Deadline(); ok {
		margin := min(healthMargin, time.Until(dl)/10)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
		defer cancel()
	}
	env := &health.Env{Now: src.now, Stack: src.Stack.HealthStack()}
	rep := health.Run(ctx, env, checks)
	out := make([]snapshot.HealthResult, 0, len(rep.Results))
	for _, r := range rep.Results {
		out = append(out, snapshot.HealthResult{ID: r.ID, Status: r.Status.String(), Summary: r.Summary})
	}
	return out, nil
}
