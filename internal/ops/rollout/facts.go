package rollout

import (
	"context"
	"errors"
	"fmt"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// IndexerFacts is what Gather reads of the indexer cluster (*indexer.Client).
type IndexerFacts interface {
	NodesVersions(ctx context.Context) ([]indexer.NodeVersion, error)
	ClusterManager(ctx context.Context) (string, error)
}

// indexCatalog lists indices (*indexer.Client): Gather reads the alert indices' replicas with it.
type indexCatalog interface {
	CatIndices(ctx context.Context, pattern string) ([]indexer.Index, error)
}

// ManagerFacts is what Gather reads of the manager cluster (*manager.Client).
type ManagerFacts interface {
	ClusterHealthcheck(ctx context.Context) ([]manager.ClusterNode, error)
}

// FactCalls are the read-only calls Gather makes, for dry runs and plans.
var FactCalls = []string{"GET /_nodes (indexer)", "GET /_cat/cluster_manager?format=json&h=node (indexer)", "GET /_cat/indices/<indexer.alerts_index_prefix>* (indexer: indices with no replica)", "GET /cluster/healthcheck (manager API)"}

// Gather reads the facts the order is computed from, from any host: the indexer cluster's nodes and
// elected cluster manager, the manager cluster's nodes (a manager whose cluster is disabled, 3013,
// is the one manager: manager.nodes' only name, or this host's ossec.conf <node_name>), the
// dashboards (dashboard.nodes, else the host of dashboard.url) and the expected nodes
// (indexer.nodes, manager.nodes). mg may be nil when the manager API could not be built (mgErr
// says why).
func Gather(ctx context.Context, cfg *config.Config, ix IndexerFacts, mg ManagerFacts, mgErr error) (Facts, error) {
	f := Facts{ExpectedIndexer: cfg.Indexer.Nodes, ExpectedManager: cfg.Manager.Nodes}
	var err error
	if f.IndexerNodes, err = ix.NodesVersions(ctx); err != nil {
		return f, fmt.Errorf("the indexer cluster's nodes: %w", err)
	}
	if f.ElectedManager, err = ix.ClusterManager(ctx); err != nil {
		return f, fmt.Errorf("the indexer cluster's elected cluster manager: %w", err)
	}
	if ci, ok := ix.(indexCatalog); ok && cfg.Indexer.AlertsIndexPrefix != "" {
		pattern := cfg.Indexer.AlertsIndexPrefix + "*"
		if rows, err := ci.CatIndices(ctx, pattern); err == nil {
			f.SearchGap = cluster.SearchGap(rows, pattern, len(f.IndexerNodes))
		}
	}
	if mg == nil {
		return f, fmt.Errorf("the manager API: %w", mgErr)
	}
	nodes, err := mg.ClusterHealthcheck(ctx)
	var ae *manager.APIError
	switch {
	case errors.As(err, &ae) && ae.Code == manager.CodeClusterNotRunning:
		switch {
		case len(cfg.Manager.Nodes) == 1:
			f.ManagerSingle = cfg.Manager.Nodes[0]
		case cfg.Runs("manager"):
			if f.ManagerSingle, err = ManagerNodeName(cfg); err != nil {
				return f, err
			}
		}
		if f.ManagerSingle == "" {
			return f, fmt.Errorf("the manager cluster is not running (3013) and manager.nodes does not name the one manager: set manager.nodes to its <node_name>")
		}
	case err != nil:
		return f, fmt.Errorf("the manager cluster's nodes: %w", err)
	default:
		f.ManagerNodes = nodes
	}
	f.Dashboards = cfg.Dashboard.Nodes
	if len(f.Dashboards) == 0 && cfg.Dashboard.URL != "" {
		name, err := DashboardName(cfg.Dashboard.URL)
		if err != nil {
			return f, err
		}
		f.Dashboards = []string{name}
	}
	return f, nil
}
