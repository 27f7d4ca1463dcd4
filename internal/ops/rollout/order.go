package rollout

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// Kinds of entry names: an entry's Name is "<kind>/<node>", so an indexer node and a manager node
// may carry the same node name (Wazuh's defaults do: node-1, node01) and still be two entries.
const (
	KindIndexer   = "indexer"
	KindManager   = "manager"
	KindDashboard = "dashboard"
)

// Key is the entry name of node in kind's cluster (KindIndexer, KindManager, KindDashboard).
func Key(kind, node string) string { return kind + "/" + node }

// Node is the node part of an entry name.
func Node(name string) string {
	_, n, ok := strings.Cut(name, "/")
	if !ok {
		return name
	}
	return n
}

// The components each kind of entry upgrades in its turn: a manager node's host also runs its
// Filebeat (it ships that node's alerts).
var (
	IndexerComponents   = []string{"indexer"}
	ManagerComponents   = []string{"manager", "shipper"}
	DashboardComponents = []string{"dashboard"}
)

// Facts are what the order is computed from, read from any host: the indexer cluster's nodes
// (_nodes: the real version per node) and its elected cluster manager (_cat/cluster_manager), the
// manager cluster's nodes as the master lists them (/cluster/healthcheck or /cluster/nodes), and
// the dashboards (config dashboard.nodes, else the host of dashboard.url).
type Facts struct {
	IndexerNodes   []indexer.NodeVersion
	ElectedManager string
	ManagerNodes   []manager.ClusterNode
	// ManagerSingle names the one manager of a deployment whose manager cluster is disabled (its
	// ossec.conf <node_name>); it rolls as the master.
	ManagerSingle string
	Dashboards    []string
	// ExpectedIndexer and ExpectedManager are the configured node names (indexer.nodes,
	// manager.nodes): one that is not in the facts stops the order (it could not be upgraded).
	ExpectedIndexer []string
	ExpectedManager []string
	// SearchGap: the alert indices with no replica, whose searches fail while their node restarts
	// (nil when every one has a replica, or when they could not be read: the roll does not
	// depend on it).
	SearchGap *cluster.RollSearchGap
}

// OrderError lists what stops the order from being computed, each with its fix.
type OrderError struct{ Problems []string }

func (e *OrderError) Error() string {
	return "cannot order the rolling upgrade: " + strings.Join(e.Problems, "; ")
}

// Order computes the roll's order: the indexer nodes one at a time by name with the elected
// cluster manager last (new nodes cannot join a cluster whose cluster managers all run a newer
// version), then the manager master, then the workers by name right after it (the master refuses
// a worker of another version with 3031), then the dashboards.
func Order(f Facts) ([]Entry, error) {
	var problems []string
	var out []Entry
	idx := slices.Clone(f.IndexerNodes)
	sort.Slice(idx, func(i, j int) bool { return idx[i].Name < idx[j].Name })
	present := map[string]bool{}
	var last *Entry
	for _, n := range idx {
		present[n.Name] = true
		e := Entry{Name: Key(KindIndexer, n.Name), Node: n.Name, Role: RoleIndexer, Components: slices.Clone(IndexerComponents), Version: n.Version, State: Pending}
		if n.Name == f.ElectedManager {
			e.Role = RoleIndexerManager
			last = &e
			continue
		}
		out = append(out, e)
	}
	if len(idx) > 0 {
		if last == nil {
			problems = append(problems, fmt.Sprintf("no elected cluster manager among the indexer nodes (elected %q): start the cluster-manager-eligible nodes until one is elected (GET _cat/cluster_manager)", f.ElectedManager))
		} else {
			out = append(out, *last)
		}
	} else {
		problems = append(problems, "the indexer cluster lists no nodes (GET _nodes)")
	}
	for _, want := range f.ExpectedIndexer {
		if !present[want] {
			problems = append(problems, fmt.Sprintf("indexer node %s (indexer.nodes) is not in the cluster: start it (siemctl services start indexer on it) or remove it from indexer.nodes", want))
		}
	}

	mgr := slices.Clone(f.ManagerNodes)
	sort.Slice(mgr, func(i, j int) bool { return mgr[i].Name < mgr[j].Name })
	var master *manager.ClusterNode
	for i, n := range mgr {
		if n.Type == "master" {
			if master != nil {
				problems = append(problems, fmt.Sprintf("two manager masters listed: %s and %s", master.Name, n.Name))
			}
			master = &mgr[i]
		}
	}
	mpresent := map[string]bool{}
	switch {
	case master != nil:
		out = append(out, Entry{Name: Key(KindManager, master.Name), Node: master.Name, Role: RoleManagerMaster, Components: slices.Clone(ManagerComponents), Version: master.Version, State: Pending})
		mpresent[master.Name] = true
		for _, n := range mgr {
			if n.Type == "master" {
				continue
			}
			mpresent[n.Name] = true
			out = append(out, Entry{Name: Key(KindManager, n.Name), Node: n.Name, Role: RoleManagerWorker, Components: slices.Clone(ManagerComponents), Version: n.Version, State: Pending})
		}
	case len(mgr) > 0:
		problems = append(problems, "the manager cluster lists no master: see the master's logs/cluster.log")
	case f.ManagerSingle != "":
		mpresent[f.ManagerSingle] = true
		out = append(out, Entry{Name: Key(KindManager, f.ManagerSingle), Node: f.ManagerSingle, Role: RoleManagerMaster, Components: slices.Clone(ManagerComponents), State: Pending})
	default:
		problems = append(problems, "no manager node known: the manager API's /cluster/healthcheck listed none (and no manager.nodes for a single manager)")
	}
	for _, want := range f.ExpectedManager {
		if !mpresent[want] {
			problems = append(problems, fmt.Sprintf("manager node %s (manager.nodes) is not connected to the master: siemctl health --cluster on it says why", want))
		}
	}
	seen := map[string]bool{}
	for _, d := range f.Dashboards {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, Entry{Name: Key(KindDashboard, d), Node: d, Role: RoleDashboard, Components: slices.Clone(DashboardComponents), State: Pending})
	}
	if len(problems) > 0 {
		return out, &OrderError{Problems: problems}
	}
	return out, nil
}
