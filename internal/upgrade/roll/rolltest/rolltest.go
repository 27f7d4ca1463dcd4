// Package rolltest is a test rig of a roll: an indexer cluster of three nodes serving the
// coordination record (indexertest), a manager cluster of a master and a worker, and this host's
// roll.Deps over them, for the tests of internal/upgrade/roll and of its doors.
package rolltest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// The _nodes and _cat/cluster_manager answers of a three-node OpenSearch 2.19 cluster.
const (
	Nodes3 = `{"nodes":{"Xq1":{"name":"indexer-1","version":"2.19.3","roles":["cluster_manager","data","ingest"]},` +
		`"Xq2":{"name":"indexer-2","version":"2.19.3","roles":["cluster_manager","data","ingest"]},` +
		`"Xq3":{"name":"indexer-3","version":"2.19.3","roles":["cluster_manager","data","ingest"]}}}`
	Elected2 = `[{"node":"indexer-2"}]`
)

// RunID is the run Rolling creates.
const RunID = "20261128T010000Z-abc123"

// FakeManager is the manager cluster as /cluster/healthcheck lists it.
type FakeManager struct {
	Nodes []manager.ClusterNode
	Err   error
}

// ClusterHealthcheck implements rollout.ManagerFacts.
func (m FakeManager) ClusterHealthcheck(context.Context) ([]manager.ClusterNode, error) {
	return m.Nodes, m.Err
}

// Rig is the roll's world seen from this host.
type Rig struct {
	Deps  roll.Deps
	IX    rollout.API
	Docs  *indexertest.Documents
	Srv   *indexertest.Server
	Clock time.Time
	Cfg   *config.Config
}

// New is an indexer cluster of three nodes (indexer-2 elected), a master and a worker, a
// dashboard, and this host "host-a": indexer-1 (its opensearch.yml) unless components say
// otherwise. The rig's clock stands still until a test moves Clock.
func New(t *testing.T, components ...string) *Rig {
	t.Helper()
	docs := indexertest.NewDocuments(rollout.Index)
	routes := docs.Routes(rollout.DocID)
	routes["GET /_nodes"] = indexertest.Route{Body: []byte(Nodes3)}
	routes["GET /_cat/cluster_manager"] = indexertest.Route{Body: []byte(Elected2)}
	srv := indexertest.NewServer(t, routes)
	ix := srv.Client(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "opensearch.yml"), []byte("node.name: indexer-1\nnetwork.host: 127.0.0.11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(components) == 0 {
		components = []string{"indexer"}
	}
	cfg := &config.Config{Components: components, StateDir: t.TempDir(), Indexer: config.Indexer{ConfigDir: dir},
		Dashboard: config.Dashboard{URL: "https://127.0.0.31:5601"}}
	r := &Rig{IX: ix, Docs: docs, Srv: srv, Clock: time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC), Cfg: cfg}
	mgr := FakeManager{Nodes: []manager.ClusterNode{{Name: "manager-2", Type: "worker", Version: "4.9.0"}, {Name: "manager-1", Type: "master", Version: "4.9.0"}}}
	r.Deps = roll.Deps{
		Config:   func() (*config.Config, error) { return cfg, nil },
		Indexer:  func(context.Context) (roll.Indexer, error) { return ix, nil },
		Manager:  func(context.Context) (rollout.ManagerFacts, error) { return mgr, nil },
		Hostname: func() (string, error) { return "host-a", nil },
		Now:      func() time.Time { return r.Clock },
	}
	return r
}

// Store is the record's store over the rig's indexer, on the rig's clock.
func (r *Rig) Store() *rollout.Store {
	s := rollout.NewStore(r.IX)
	s.Now = func() time.Time { return r.Clock }
	return s
}

// Rolling creates run RunID from 4.9.0 to 4.10.0 in the record and moves it to phase rolling.
func (r *Rig) Rolling(t *testing.T) rollout.Record {
	t.Helper()
	ctx := context.Background()
	ix, _ := r.Deps.Indexer(ctx)
	mg, _ := r.Deps.Manager(ctx)
	facts, err := rollout.Gather(ctx, r.Cfg, ix, mg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rollout.NewRecord(RunID, "4.9.0", "4.10.0", "host-a", facts)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Store()
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	out, err := s.SetPhase(ctx, rec.RunID, nil, rollout.PhaseRolling, "")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Turn is this host's turn options in the rig (a minute's lease).
func (r *Rig) Turn() roll.TurnOptions {
	return roll.TurnOptions{Roll: r.Deps, Lease: time.Minute}
}
