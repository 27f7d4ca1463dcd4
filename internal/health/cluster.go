package health

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/mgrcluster"
	"github.com/siemctl/siemctl/internal/packages"
)

// The deployment's clusters, judged from any host: the indexer cluster (ops/cluster.Nodes) and the
// manager cluster (ops/mgrcluster). On a single host (one indexer node, manager cluster disabled,
// nothing configured in indexer.nodes / manager.nodes) both checks leave the report.

// IndexerClusterAPI is what indexer.cluster reads besides IndexerAPI.
type IndexerClusterAPI interface {
	CatNodes(ctx context.Context) ([]indexer.Node, error)
	ClusterManager(ctx context.Context) (string, error)
}

// ManagerClusterAPI is what manager.cluster reads.
type ManagerClusterAPI interface {
	ClusterStatus(ctx context.Context) (manager.ClusterStatus, error)
	ClusterHealthcheck(ctx context.Context) ([]manager.ClusterNode, error)
	ClusterRulesetSync(ctx context.Context) ([]manager.RulesetSync, error)
}

var notApplicable = Result{NotApplicable: true}

func checkIndexerCluster(ctx context.Context, e *Env, ix IndexerAPI) Result {
	expected := e.Stack.Config.Indexer.Nodes
	h, err := indexerHealth(ctx, e)
	if err != nil {
		if len(expected) == 0 {
			return notApplicable
		}
		return depFailed(ctx, e, "cluster health", err)
	}
	api, isAPI := ix.(IndexerClusterAPI)
	if !isAPI {
		return notApplicable
	}
	if _, seen := e.seenIndexerNodes(); h.NumberOfNodes <= 1 && len(expected) <= 1 && len(seen.Nodes) <= 1 {
		return notApplicable // a single node, as far as this host knows
	}
	var f cluster.NodeFacts
	if f.Versions, err = ix.NodesVersions(ctx); err != nil {
		return depFailed(ctx, e, "the nodes (_nodes)", err)
	}
	present := make([]string, 0, len(f.Versions))
	for _, v := range f.Versions {
		present = append(present, v.Name)
	}
	want, remembered, note := e.expectedIndexerNodes(expected, present)
	f.Expected = want
	if f.Stats, err = api.CatNodes(ctx); err != nil {
		return depFailed(ctx, e, "the nodes' heap and disk (_cat/nodes)", err)
	}
	f.Manager, _ = api.ClusterManager(ctx)
	v, lines := cluster.Nodes(f, cluster.NodeLimits{HeapWarn: 90, DiskWarn: 85, DiskNoGo: 95})
	if remembered && len(v.Items) > 0 {
		v.Fix += "; if a node left the cluster for good, list the nodes it has now in indexer.nodes (this host remembers every node it has seen)"
	}
	r := clusterResult(v, lines)
	if note != "" {
		r.Evidence = append(r.Evidence, note)
	}
	r.Metrics = map[string]float64{"nodes": float64(len(f.Versions)), "expected": float64(max(len(f.Expected), len(f.Versions)))}
	return r
}

func checkManagerCluster(ctx context.Context, e *Env) Result {
	expected := e.Stack.Config.Manager.Nodes
	mg, err := e.Stack.Manager.Get()
	if err != nil {
		if len(expected) == 0 {
			return notApplicable
		}
		return noClient("manager", err, false)
	}
	api, isAPI := mg.(ManagerClusterAPI)
	if !isAPI {
		return notApplicable
	}
	st, err := api.ClusterStatus(ctx)
	if err != nil {
		if len(expected) == 0 {
			return notApplicable
		}
		return depFailed(ctx, e, "manager cluster status", err)
	}
	if !st.Enabled && len(expected) == 0 {
		return notApplicable
	}
	if !st.Enabled || !st.Running {
		return crit(fmt.Sprintf("manager cluster enabled %v, running %v, but manager.nodes expects %s", st.Enabled, st.Running, strings.Join(expected, ", ")),
			"enable <cluster> in ossec.conf (disabled no) and siemctl services restart manager; or empty manager.nodes for a single manager")
	}
	nodes, err := api.ClusterHealthcheck(ctx)
	var ae *manager.APIError
	if errors.As(err, &ae) && ae.Code == 3023 {
		// This node is a worker that cannot reach its master: its own cluster.log says why.
		r := crit("this node is a worker not connected to its master (3023): cluster-wide calls fail, its agents are out of the cluster",
			"see logs/cluster.log here; if it says error 3031, this node's version is not the master's: bring the older of the two to the newer version (in a roll the master first, each worker right after it); then siemctl services restart manager")
		if st, err := managerStatus(ctx, e); err == nil && st["wazuh-clusterd"] != "" && st["wazuh-clusterd"] != manager.DaemonRunning {
			r.Summary = "wazuh-clusterd is " + st["wazuh-clusterd"] + " on this worker: it is out of the cluster (3023)"
			r.Fix = "siemctl services restart manager (then siemctl health --cluster); if it stops again, see logs/cluster.log"
			return r
		}
		if line := lastClusterError(e); line != "" {
			r.Evidence = append(r.Evidence, "cluster.log: "+line)
			if mgrcluster.Refused3031(line) {
				r.Summary = "this worker is refused by its master: versions differ (3031)"
				r.Fix = versionMismatchFix(ctx, e)
			}
		}
		return r
	}
	if err != nil {
		return depFailed(ctx, e, "manager cluster healthcheck", err)
	}
	rs, _ := api.ClusterRulesetSync(ctx)
	v, lines := mgrcluster.Judge(mgrcluster.Facts{Nodes: nodes, Ruleset: rs, Expected: expected, Now: e.now()})
	// Each node's count is the master's, by the node its agents report to: they add up.
	active, byNode := mgrcluster.ActiveAgents(nodes)
	r := clusterResult(v, lines)
	r.Metrics = map[string]float64{"nodes": float64(len(nodes)), "active_agents": float64(active)}
	for name, n := range byNode {
		r.Metrics["active_agents."+name] = float64(n)
	}
	return r
}

// clusterResult is a cluster verdict as a check's result, a line per node as its evidence.
func clusterResult(v cluster.Verdict, lines []cluster.NodeLine) Result {
	ev := make([]string, 0, len(lines))
	for _, l := range lines {
		ev = append(ev, l.Text)
	}
	switch v.Level {
	case cluster.OK:
		return ok(v.Summary, ev...)
	case cluster.Warn, cluster.Wait:
		return warn(v.Summary, v.Fix, ev...)
	default:
		return crit(v.Summary, v.Fix, ev...)
	}
}

// versionMismatchFix is the fix of a worker the master refuses with 3031: the older of the two
// nodes gets the newer manager package, the manager alone (a manager node of a distributed site
// runs no indexer or dashboard, which siemctl upgrade apply upgrades with it), then its manager is
// restarted; a worker retries every 10 s. The worker cannot ask its master which version it runs:
// health --cluster on the master prints it on the master's line.
func versionMismatchFix(ctx context.Context, e *Env) string {
	pkg := e.Stack.Config.Manager.Package
	mine := ""
	if inst, err := packageVersions(ctx, e); err == nil {
		mine = inst["manager"]
	}
	install := func(v string) string {
		pq, _ := e.Stack.Packages.Get()
		if pm, ok := pq.(*packages.Manager); ok && pm != nil {
			if cmds := pm.InstallCommands(map[string]string{pkg: v}, packages.InstallOptions{}, nil); len(cmds) == 1 {
				return strings.Join(cmds[0].Argv, " ")
			}
		}
		return "install " + pkg + " " + v + " with the package manager"
	}
	if mine == "" {
		return "bring the older of this node and the master to the newer " + pkg + " (siemctl health --cluster on the master names its version, siemctl version here this one's):" +
			" on the older node install the newer package, the manager alone, then siemctl services restart manager there; in a roll the master goes first, each worker right after it"
	}
	return fmt.Sprintf("this worker runs %s %s, the master the version on its line of siemctl health --cluster there: bring the older of the two to the newer, "+
		"the manager package alone (in a roll the master goes first, each worker right after it): if the master is older, on the master: %s, then siemctl services restart manager; "+
		"if this worker is older, here: %s, then siemctl services restart manager", pkg, mine, install(mine), install("<the master's package version>"))
}

// lastClusterError is the last "Could not connect to master" line of this host's logs/cluster.log.
func lastClusterError(e *Env) string {
	return mgrcluster.LastConnectError(e.Stack.Config.Manager.InstallDir)
}
