package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/units"
)

// DefaultAgentPageSize is how many agents one GET /agents page carries when
// a snapshot counts them: 100,000 agents cost 10 requests, far below the
// manager's 300 requests per minute, with memory flat (pages are streamed).
const DefaultAgentPageSize = 10000

// healthMargin is how much earlier than the capture's deadline the health
// checks must finish, so their results (UNKNOWN for the slow ones) arrive
// before Capture stops waiting.
const healthMargin = 500 * time.Millisecond

// Live is the one adapter that reads the running stack for a capture: the
// Source over the real clients. Every method reads concurrently what it
// needs and honours ctx; a client that could not be built is that part's
// error (the component is recorded as down, the capture goes on).
type Live struct {
	Config    *config.Config
	Indexer   clientset.Client[*indexer.Client]
	Manager   clientset.Client[*manager.Client]
	Systemd   func(ctx context.Context) (*units.Manager, error)
	Packages  clientset.Client[packages.Querier]
	Dashboard hostfacts.Dashboard
	// CheckHealth runs the health checks of the health section (the
	// caller's: internal/cli runs the catalogue without the deep probes);
	// nil: the section is an error.
	CheckHealth func(ctx context.Context) ([]HealthResult, error)
	// Now is the clock of the alert window and of the health run.
	Now func() time.Time
	// AgentPageSize is the GET /agents page size (default DefaultAgentPageSize).
	AgentPageSize int
}

func (src *Live) indexer() (*indexer.Client, error) { return src.Indexer.Need("indexer") }

func (src *Live) now() time.Time {
	if src.Now != nil {
		return src.Now()
	}
	return time.Now()
}

// HostComponents are the components this host runs (the components key, as
// health judges them): a capture records these and no others, so a
// distributed indexer host's snapshot has the indexer alone. The indexer,
// manager and alerts sections stay the deployment's view, read through the
// APIs this host reaches.
func (src *Live) HostComponents() []string { return src.Config.HostComponents() }

// Units reads the states of this host's units from systemd.
func (src *Live) Units(ctx context.Context) (map[string]UnitState, error) {
	if src.Systemd == nil {
		return nil, errors.New("systemd: not configured")
	}
	u, err := src.Systemd(ctx)
	if err != nil {
		return nil, err
	}
	byComp := src.Config.HostUnits()
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
	out := make(map[string]UnitState, len(sts))
	for i, st := range sts {
		out[comps[i]] = UnitState{Name: st.Name, LoadState: st.LoadState, ActiveState: st.ActiveState,
			SubState: st.SubState, Since: st.StateChangedAt, NRestarts: st.NRestarts}
	}
	return out, nil
}

// PackageVersions reads the installed versions of this host's packages.
func (src *Live) PackageVersions(ctx context.Context) (map[string]string, error) {
	pq, err := src.Packages.Need("packages")
	if err != nil {
		return nil, err
	}
	return packages.ByComponent(ctx, pq, src.Config.HostPackageNames())
}

// parts runs named functions concurrently and collects their errors. The
// one call passed to identity decides whether the component is up at all:
// wait returns its error apart from the parts' errors.
type parts struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  map[string]error
	idErr error
}

// identity runs f (the component's GET /) concurrently with the parts.
func (p *parts) identity(f func() error) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.idErr = f()
	}()
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

// wait waits for every call and returns the parts' errors and identity's.
func (p *parts) wait() (map[string]error, error) {
	p.wg.Wait()
	return p.errs, p.idErr
}

// concurrently runs fs at once and joins their errors.
func concurrently(fs ...func() error) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// IndexerState reads GET / (the node answering at all decides whether the
// indexer is up), cluster health, settings, templates, the shipper's ingest
// pipeline, indices, shards and disk allocation, all at once.
func (src *Live) IndexerState(ctx context.Context) (*IndexerState, error) {
	ix, err := src.indexer()
	if err != nil {
		return nil, err
	}
	cfg := src.Config
	st := &IndexerState{Templates: map[string]json.RawMessage{}, Pipelines: map[string]json.RawMessage{}}
	var (
		info   indexer.Info
		legacy []indexer.Template
		compos []indexer.ComposableTemplate
		p      parts
	)
	p.identity(func() (err error) { info, err = ix.Info(ctx); return err })
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
		if err := concurrently(
			func() (err error) { legacy, err = ix.ListLegacyTemplates(ctx); return err },
			func() (err error) { compos, err = ix.ComposableTemplates(ctx); return err },
		); err != nil {
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
		st.Indices = make([]Index, 0, len(list))
		for _, x := range list {
			st.Indices = append(st.Indices, Index{Name: x.Name, Health: x.Health, Status: x.Status,
				DocsCount: x.DocsCount, StoreBytes: x.StoreBytes, Pri: x.Pri, Rep: x.Rep})
		}
		return nil
	})
	p.run("shards", func() error {
		list, err := ix.CatShards(ctx)
		if err != nil {
			return err
		}
		st.Shards = make([]Shard, 0, len(list))
		for _, s := range list {
			st.Shards = append(st.Shards, Shard{Index: s.Index, Shard: s.Shard, Primary: s.PriRep == "p",
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
			st.Disk = append(st.Disk, Disk{Node: a.Node, Percent: pct, UsedBytes: a.DiskUsed, TotalBytes: a.DiskTotal})
		}
		return nil
	})
	errs, err := p.wait()
	if err != nil {
		// The node did not answer GET /: the indexer is down, whatever
		// else answered.
		return nil, err
	}
	st.Version, st.ClusterUUID = info.Version, info.ClusterUUID
	st.PathData = diagnose.IndexerPathData(cfg.Indexer.ConfigDir)
	if st.ClusterName == "" {
		st.ClusterName = info.ClusterName
	}
	st.Errors = errs
	return st, nil
}

// ManagerState reads GET / (the API answering decides whether the manager is
// up), /manager/info, /manager/status, the API users' names and every agent's
// status and version (streamed in pages and counted, never held in memory).
func (src *Live) ManagerState(ctx context.Context) (*ManagerState, error) {
	mc, err := src.Manager.Need("manager API")
	if err != nil {
		return nil, err
	}
	st := &ManagerState{}
	var (
		api      manager.APIInfo
		p        parts
		pageSize = src.AgentPageSize
	)
	if pageSize <= 0 {
		pageSize = DefaultAgentPageSize
	}
	p.identity(func() (err error) { api, err = mc.Info(ctx); return err })
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
		counts := &Agents{ByStatus: map[string]int{}, ByVersion: map[string]int{}}
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
	errs, err := p.wait()
	if err != nil {
		return nil, err
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
func (src *Live) DashboardState(ctx context.Context) (*DashboardState, error) {
	ans, err := src.Dashboard.Status(ctx)
	if err != nil {
		return nil, err
	}
	if ans.Status >= http.StatusInternalServerError {
		return nil, fmt.Errorf("GET / answered %d %s", ans.Status, http.StatusText(ans.Status))
	}
	return &DashboardState{Version: ans.Version, StatusCode: ans.Status}, nil
}

// AlertStats counts the alerts of the last 5 minutes and finds the newest in
// alerts_index_prefix*.
func (src *Live) AlertStats(ctx context.Context) (*AlertStats, error) {
	ix, err := src.indexer()
	if err != nil {
		return nil, err
	}
	pattern := src.Config.Indexer.AlertsIndexPrefix + "*"
	now := src.now()
	var (
		n      int64
		newest time.Time
	)
	if err := concurrently(
		func() (err error) { n, err = ix.Count(ctx, pattern, "", now.Add(-5*time.Minute)); return err },
		func() (err error) { newest, _, err = ix.Newest(ctx, pattern, indexer.DefaultTimeField); return err },
	); err != nil {
		return nil, err
	}
	return &AlertStats{Last5m: n, Newest: newest}, nil
}

// Health runs CheckHealth, which keeps id, status and summary of each
// check. The checks get a deadline a little before ctx's so that slow
// checks are recorded as UNKNOWN instead of the whole section missing.
func (src *Live) Health(ctx context.Context) ([]HealthResult, error) {
	if src.CheckHealth == nil {
		return nil, errors.New("health: no checks configured")
	}
	if dl, ok := ctx.Deadline(); ok {
		margin := min(healthMargin, time.Until(dl)/10)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
		defer cancel()
	}
	return src.CheckHealth(ctx)
}

var _ Source = (*Live)(nil)
