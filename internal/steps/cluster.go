package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/mgrcluster"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/rundata"
)

// The kinds of a rolling upgrade of a distributed deployment (runbooks cluster-apply.yaml,
// node.yaml, cluster-finish.yaml): the cluster-wide preflight gates, and the gates that judge one
// host's node back in its cluster. Their verdicts are ops/cluster's and ops/mgrcluster's; the
// kinds only read the facts and map the levels (OK/Warn go on, Wait polls, NoGo stops).

// clusterIndexerAPI is what the cluster kinds read besides IndexerAPI (*indexer.Client has it).
type clusterIndexerAPI interface {
	CatNodes(ctx context.Context) ([]indexer.Node, error)
	ClusterManager(ctx context.Context) (string, error)
	LocalNode(ctx context.Context) (indexer.NodeVersion, error)
}

// clusterManagerAPI is what the manager cluster kinds read (*manager.Client has it).
type clusterManagerAPI interface {
	ClusterHealthcheck(ctx context.Context) ([]manager.ClusterNode, error)
	ClusterLocalInfo(ctx context.Context) (manager.ClusterLocal, error)
}

// repoVerifier is what gate.snapshot_repo_nodes asks.
type repoVerifier interface {
	VerifyRepository(ctx context.Context, name string) ([]string, error)
}

func clusterIndexer(d *Deps) (IndexerAPI, clusterIndexerAPI, error) {
	ix, err := d.indexer()
	if err != nil {
		return nil, nil, err
	}
	c, err := clientset.As[clusterIndexerAPI](d.Indexer).Need("indexer")
	if err != nil {
		return nil, nil, err
	}
	return ix, c, nil
}

func clusterManager(d *Deps) (clusterManagerAPI, error) {
	return clientset.As[clusterManagerAPI](d.Manager).Need("manager API")
}

// levelErr maps an ops verdict to a gate's answer: OK/Warn go on, Wait polls, NoGo and Unknown stop.
func levelErr(v cluster.Verdict) error {
	msg := v.Summary
	if v.Fix != "" {
		msg += "; fix: " + v.Fix
	}
	switch v.Level {
	case cluster.OK, cluster.Warn:
		return nil
	case cluster.Wait:
		return engine.Pending("%s", msg)
	}
	return engine.NoGo("%s", msg)
}

// hostOnly skips a step whose component this host does not run.
func hostOnly(env Env, comp string) (string, bool, error) {
	c := env.Deps().Config
	if c.Runs(comp) {
		return "", false, nil
	}
	return fmt.Sprintf("%s does not run on this host (components: %s)", comp, strings.Join(c.HostComponents(), ", ")), true, nil
}

func clusterKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*clusterNodesParams]{Name: "gate.cluster_nodes", ReadOnly: true, Run: runGateClusterNodes,
			New: func() *clusterNodesParams { return &clusterNodesParams{} }}),
		engine.Define(Spec[*noParams]{Name: "gate.snapshot_repo_nodes", ReadOnly: true, Run: runGateRepoNodes,
			New: simple(func(*Planning) []string {
				return []string{"POST /_snapshot/<indexer.snapshot_repository>/_verify: every node of GET /_nodes wrote to and read from the repository (a cluster rollback restores from it)"}
			})}),
		engine.Define(Spec[*noParams]{Name: "indexer.node_record", Run: runNodeRecord,
			New: simple(func(*Planning) []string {
				return []string{"GET /_nodes/_local: record this host's indexer node (name, version) before it stops"}
			}),
			Skip: func(_ context.Context, env Env, _ *noParams) (string, bool, error) {
				if why, skip, err := hostOnly(env, "indexer"); skip || err != nil {
					return why, skip, err
				}
				var n indexer.NodeVersion
				if ok, err := env.Get(rundata.KeyIndexerNode, &n); err != nil || !ok {
					return "", false, err
				}
				return fmt.Sprintf("node %s (%s) already recorded", n.Name, n.Version), true, nil
			}}),
		engine.Define(Spec[*noParams]{Name: "gate.indexer_node_back", ReadOnly: true, Run: runGateNodeBack,
			New: simple(func(*Planning) []string {
				return []string{"GET /_nodes: the node recorded before the stop is back in the cluster at a newer OpenSearch version than it ran"}
			}),
			Skip: func(_ context.Context, env Env, _ *noParams) (string, bool, error) { return hostOnly(env, "indexer") }}),
		engine.Define(Spec[*noParams]{Name: "gate.cluster_roll_health", ReadOnly: true, Run: runGateRollHealth,
			New: simple(func(*Planning) []string {
				return []string{"GET /_cluster/settings: cluster.routing.allocation.enable back to all",
					"GET /_cluster/health: green, or yellow only because replicas cannot go to older nodes (decider node_version, GET /_cat/shards + POST /_cluster/allocation/explain per unassigned shard) while older nodes remain"}
			})}),
		engine.Define(Spec[*noParams]{Name: "gate.manager_node_back", ReadOnly: true, Run: runGateManagerBack,
			New: simple(func(*Planning) []string {
				return []string{"manager API GET /cluster/local/info (this node's name), GET /cluster/healthcheck (answered by the master): this node listed at the target version, a worker's keepalive fresh (3023: not connected; 3031 in its cluster.log: refused for its version)"}
			}),
			Skip: func(_ context.Context, env Env, _ *noParams) (string, bool, error) {
				if why, skip, err := hostOnly(env, "manager"); skip || err != nil {
					return why, skip, err
				}
				if len(env.Deps().Config.Manager.Nodes) == 0 {
					return "no manager cluster (manager.nodes is empty)", true, nil
				}
				return "", false, nil
			}}),
	}
}

// clusterNodesParams: with at_target, every manager node must run the run's target version (the
// end of a roll; the indexer's OpenSearch version has no fixed tie to it: one version everywhere).
type clusterNodesParams struct {
	AtTarget bool `yaml:"at_target"`
}

func (p *clusterNodesParams) Validate() error { return nil }

func (p *clusterNodesParams) Describe(pc engine.PlanContext) []string {
	m := "manager API GET /cluster/healthcheck: every node of manager.nodes connected, one version, keepalives fresh (skipped without manager.nodes)"
	if p.AtTarget {
		m += ", that version the target " + planningOf(pc).version("target", "manager")
	}
	return []string{"GET /_nodes (real version per node), GET /_cat/nodes (disk, heap), GET /_cat/cluster_manager: every node of indexer.nodes present, one version, an elected cluster manager, disk below thresholds.disk_nogo_percent on every node", m}
}

func runGateClusterNodes(ctx context.Context, env Env, p *clusterNodesParams) (engine.Outcome, error) {
	d := env.Deps()
	ix, api, err := clusterIndexer(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	var f cluster.NodeFacts
	if f.Versions, err = ix.NodesVersions(ctx); err != nil {
		return engine.Outcome{}, err
	}
	if f.Stats, err = api.CatNodes(ctx); err != nil {
		return engine.Outcome{}, err
	}
	f.Manager, _ = api.ClusterManager(ctx)
	f.Expected = d.Config.Indexer.Nodes
	t := d.Config.Thresholds
	v, lines := cluster.Nodes(f, cluster.NodeLimits{HeapWarn: 90, DiskWarn: t.DiskWarnPercent, DiskNoGo: t.DiskNogoPercent})
	versions := map[string]bool{}
	for _, n := range f.Versions {
		versions[n.Version] = true
	}
	if len(versions) > 1 {
		// Identical versions are a precondition of a roll: a half-done one is finished first.
		v.Level = cluster.NoGo
	}
	if err := levelErr(v); err != nil {
		return engine.Outcome{}, err
	}
	msgs := []string{"indexer: " + v.Summary}
	data := map[string]any{"indexer_nodes": len(f.Versions), "cluster_manager": f.Manager}
	for _, l := range lines {
		msgs = append(msgs, l.Text)
	}
	if len(d.Config.Manager.Nodes) > 0 {
		m, err := clusterManager(d)
		if err != nil {
			return engine.Outcome{}, err
		}
		nodes, err := m.ClusterHealthcheck(ctx)
		if err != nil {
			return engine.Outcome{}, fmt.Errorf("manager cluster: %w", err)
		}
		mv, mlines := mgrcluster.Judge(mgrcluster.Facts{Nodes: nodes, Expected: d.Config.Manager.Nodes, Now: d.now()})
		if err := levelErr(mv); err != nil {
			return engine.Outcome{}, err
		}
		if p.AtTarget {
			var target string
			if _, err := env.Get(rundata.KeyTarget, &target); err != nil {
				return engine.Outcome{}, err
			}
			var behind []string
			for _, n := range nodes {
				if strings.TrimPrefix(n.Version, "v") != packages.Upstream(target) {
					behind = append(behind, n.Name+" "+n.Version)
				}
			}
			if len(behind) > 0 {
				return engine.Outcome{}, engine.NoGo("manager node(s) not at the target %s: %s (siemctl upgrade node on each)", target, strings.Join(behind, ", "))
			}
		}
		msgs = append(msgs, "manager: "+mv.Summary)
		for _, l := range mlines {
			msgs = append(msgs, l.Text)
		}
		data["manager_nodes"] = len(nodes)
	}
	return engine.Outcome{Message: strings.Join(msgs, "; "), Data: data}, nil
}

func runGateRepoNodes(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	rv, err := clientset.As[repoVerifier](d.Indexer).Need("indexer")
	if err != nil {
		return engine.Outcome{}, err
	}
	nodes, err := ix.NodesVersions(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	name := d.Config.Indexer.SnapshotRepository
	verified, err := rv.VerifyRepository(ctx, name)
	if errors.Is(err, indexer.ErrRepositoryMissing) {
		// path.repo is named only when a node lacks it: on a site where every node lists the
		// shared path, the repository only needs registering.
		fix := "run " + PrepareCommand + " --yes on an indexer host (path.repo is set on every node)"
		if lacking := nodesWithoutPathRepo(ctx, d); len(lacking) > 0 {
			fix = fmt.Sprintf("no path.repo on %s: add the shared path (a file system every indexer node mounts) to path.repo in opensearch.yml there, restart those nodes one at a time, then run %s --yes", strings.Join(lacking, ", "), PrepareCommand)
		}
		return engine.Outcome{}, engine.NoGo("snapshot repository %q is not registered (a cluster rollback restores the snapshot taken in it): %s", name, fix)
	}
	if err != nil {
		return engine.Outcome{}, engine.NoGo("snapshot repository %q does not verify on every node (%v): every node must reach its location (the shared path mounted and listed in path.repo on each); %s --yes says which node cannot", name, err, PrepareCommand)
	}
	var missing []string
	for _, n := range nodes {
		if !slices.Contains(verified, n.Name) {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		return engine.Outcome{}, engine.NoGo("snapshot repository %q is not reachable from %s (verified by %s): mount the shared path on those nodes and list it in their path.repo", name, strings.Join(missing, ", "), strings.Join(verified, ", "))
	}
	return engine.Outcome{Message: fmt.Sprintf("snapshot repository %q verified by every node: %s", name, strings.Join(verified, ", ")), Data: map[string]any{"nodes": verified}}, nil
}

// pathRepoReader is what gate.snapshot_repo_nodes asks to name the nodes without a path.repo.
type pathRepoReader interface {
	NodesPathRepo(ctx context.Context) (map[string][]string, error)
}

// nodesWithoutPathRepo names the indexer nodes whose path.repo is empty, sorted (none when it cannot
// be read: the no-go then names only the registration).
func nodesWithoutPathRepo(ctx context.Context, d *Deps) []string {
	pr, err := clientset.As[pathRepoReader](d.Indexer).Need("indexer")
	if err != nil {
		return nil
	}
	byNode, err := pr.NodesPathRepo(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for n, list := range byNode {
		if len(list) == 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func runNodeRecord(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	_, api, err := clusterIndexer(env.Deps())
	if err != nil {
		return engine.Outcome{}, err
	}
	n, err := api.LocalNode(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := env.Set(rundata.KeyIndexerNode, n); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("this host's indexer node is %s, OpenSearch %s", n.Name, n.Version), Data: map[string]any{"node": n.Name, "version": n.Version}}, nil
}

func runGateNodeBack(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	var rec indexer.NodeVersion
	if ok, err := env.Get(rundata.KeyIndexerNode, &rec); err != nil {
		return engine.Outcome{}, err
	} else if !ok || rec.Name == "" {
		return engine.Outcome{}, errors.New("no indexer node recorded before the stop (run data " + rundata.KeyIndexerNode + "): indexer.node_record must run first")
	}
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	nodes, err := ix.NodesVersions(ctx)
	if err != nil {
		return engine.Outcome{}, engine.Pending("the cluster does not answer yet (%v)", err)
	}
	var names []string
	present := map[string]bool{}
	for _, n := range nodes {
		names = append(names, n.Name+" "+n.Version)
		present[n.Name] = true
	}
	// A node that has not joined yet answers _nodes with itself alone: back means back among the
	// nodes of indexer.nodes (every other node runs while one rolls) under an elected manager.
	var missing []string
	for _, want := range d.Config.Indexer.Nodes {
		if !present[want] {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		return engine.Outcome{}, engine.Pending("%s answers but the cluster it sees lacks %s (nodes: %s): not rejoined yet", rec.Name, strings.Join(missing, ", "), strings.Join(names, ", "))
	}
	if len(nodes) < 2 && len(d.Config.Indexer.Nodes) == 0 {
		return engine.Outcome{}, engine.Pending("%s sees itself alone (nodes: %s): not rejoined yet (list the cluster's nodes in indexer.nodes)", rec.Name, strings.Join(names, ", "))
	}
	if _, api, err := clusterIndexer(d); err == nil {
		if m, err := api.ClusterManager(ctx); err != nil || m == "" {
			return engine.Outcome{}, engine.Pending("%s back, but no elected cluster manager yet", rec.Name)
		}
	}
	for _, n := range nodes {
		if n.Name != rec.Name {
			continue
		}
		if packages.CompareDeb(n.Version, rec.Version) <= 0 {
			return engine.Outcome{}, engine.Pending("%s rejoined at %s, not newer than the %s it ran before the stop", n.Name, n.Version, rec.Version)
		}
		return engine.Outcome{Message: fmt.Sprintf("%s back in the cluster at OpenSearch %s (was %s); nodes: %s", n.Name, n.Version, rec.Version, strings.Join(names, ", ")),
			Data: map[string]any{"node": n.Name, "version": n.Version, "was": rec.Version}}, nil
	}
	return engine.Outcome{}, engine.Pending("%s not in the cluster yet (nodes: %s)", rec.Name, strings.Join(names, ", "))
}

// rollYellow judges a yellow cluster mid-roll: fine when every unassigned shard is a replica kept
// off the older nodes by the node_version decider alone (its primary sits on a newer node; the
// node holding the primary says same_shard); pending otherwise, with the first other reason.
func rollYellow(ctx context.Context, ix IndexerAPI) (string, error) {
	shards, err := ix.CatShards(ctx)
	if err != nil {
		return "", engine.Pending("cluster yellow (shards not readable: %v)", err)
	}
	waiting := 0
	for _, s := range shards {
		if s.State != "UNASSIGNED" {
			continue
		}
		if s.PriRep == "p" {
			return "", engine.Pending("cluster yellow with primary %s[%d] unassigned", s.Index, s.Shard)
		}
		ex, err := ix.AllocationExplain(ctx, indexer.ExplainRequest{Index: s.Index, Shard: s.Shard, Primary: false})
		if err != nil {
			return "", engine.Pending("cluster yellow: replica %s[%d] unassigned (%v)", s.Index, s.Shard, err)
		}
		versionOnly, other := false, []string{}
		for _, dec := range ex.Blocking() {
			switch dec.Decider {
			case "node_version":
				versionOnly = true
			case "same_shard":
			default:
				other = append(other, dec.Node+": "+dec.Decider+": "+dec.Explanation)
			}
		}
		if !versionOnly || len(other) > 0 {
			sort.Strings(other)
			why := ex.AllocateExplanation
			if len(other) > 0 {
				why = strings.Join(other, "; ")
			}
			return "", engine.Pending("cluster yellow: replica %s[%d] unassigned for another reason than the node_version decider: %s", s.Index, s.Shard, why)
		}
		waiting++
	}
	return fmt.Sprintf("yellow only because of the node_version decider: %d replica(s) wait for newer nodes (older nodes remain)", waiting), nil
}

func runGateRollHealth(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	ix, err := env.Deps().indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	st, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, engine.Pending("cluster settings not readable yet (%v)", err)
	}
	if err := levelErr(cluster.AllocationBack(st)); err != nil {
		return engine.Outcome{}, err
	}
	h, err := ix.Health(ctx, indexer.HealthRequest{})
	if err != nil {
		return engine.Outcome{}, engine.Pending("cluster health not readable yet (%v)", err)
	}
	data := map[string]any{"status": h.Status, "nodes": h.NumberOfNodes, "unassigned": h.UnassignedShards}
	switch h.Status {
	case "green":
		return engine.Outcome{Message: fmt.Sprintf("cluster green, %d nodes, allocation all", h.NumberOfNodes), Data: data}, nil
	case "yellow":
		if h.InitializingShards > 0 || h.RelocatingShards > 0 {
			return engine.Outcome{}, engine.Pending("cluster yellow: %d shard(s) initializing, %d relocating", h.InitializingShards, h.RelocatingShards)
		}
		msg, err := rollYellow(ctx, ix)
		if err != nil {
			return engine.Outcome{}, err
		}
		return engine.Outcome{Message: "cluster " + msg, Data: data}, nil
	case "red":
		return engine.Outcome{}, levelOrPending(cluster.Red(ctx, ix, h))
	}
	return engine.Outcome{}, levelOrPending(cluster.Status(h))
}

// levelOrPending is levelErr for a verdict that may not pass (a red cluster): OK still waits.
func levelOrPending(v cluster.Verdict) error {
	if err := levelErr(v); err != nil {
		return err
	}
	return engine.Pending("%s", v.Summary)
}

// keepAliveSkew is how much earlier than this node's wazuh-clusterd pid file a keepalive of its
// new connection may be dated: the master's clock against this host's (NTP), and the daemon's
// hello before its pid file is written. The old connection's last keepalive is older than that:
// it was sent before the turn stopped the manager, backed it up and installed the package.
const keepAliveSkew = 10 * time.Second

func runGateManagerBack(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	m, err := clusterManager(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	var target string
	if _, err := env.Get(rundata.KeyTarget, &target); err != nil {
		return engine.Outcome{}, err
	}
	local, err := m.ClusterLocalInfo(ctx)
	if err != nil {
		return engine.Outcome{}, engine.Pending("this manager's API does not say its cluster node yet (%v)", err)
	}
	nodes, err := m.ClusterHealthcheck(ctx)
	var ae *manager.APIError
	if errors.As(err, &ae) && ae.Code == 3023 {
		if line := mgrcluster.LastConnectError(d.Config.Manager.InstallDir); mgrcluster.Refused3031(line) {
			// This node runs the target (gate.manager_api before this one): the master does not.
			return engine.Outcome{}, engine.Pending("%s is refused by its master with 3031: the master runs another version than this node's %s (logs/cluster.log: %q); "+
				"the fix: bring the master to %s (on the master: siemctl health --cluster names its version; siemctl upgrade node there if its turn is not done, else install the manager package at %s there and siemctl services restart manager); "+
				"this gate waits for it (the worker tries again every 10 s), after its deadline siemctl upgrade resume here continues", local.Node, target, line, target, target)
		}
		return engine.Outcome{}, engine.Pending("%s is a worker not connected to its master (3023): if its logs/cluster.log says 3031, the master runs another version; upgrade the master first (in a roll the master goes first, each worker right after it)", local.Node)
	}
	if err != nil {
		return engine.Outcome{}, engine.Pending("the master's /cluster/healthcheck does not answer yet (%v)", err)
	}
	var master string
	for _, n := range nodes {
		if n.Type == "master" {
			master = n.Name + " " + n.Version
		}
		if n.Name != local.Node {
			continue
		}
		if v := strings.TrimPrefix(n.Version, "v"); target != "" && v != packages.Upstream(target) {
			return engine.Outcome{}, engine.Pending("%s listed by the master at %s, not the target %s yet", n.Name, n.Version, target)
		}
		if n.Type != "master" {
			age := d.now().Sub(n.LastKeepAlive)
			if n.LastKeepAlive.IsZero() || age > mgrcluster.MaxKeepAliveAge {
				return engine.Outcome{}, engine.Pending("%s listed but its last keepalive is %s old (> %s)", n.Name, age.Round(1e9), mgrcluster.MaxKeepAliveAge)
			}
			// A keepalive from before this node's wazuh-clusterd started is the old connection's:
			// the master sets one when the restarted worker says hello.
			if started, ok := mgrcluster.ClusterdStarted(d.Config.Manager.InstallDir); ok && n.LastKeepAlive.Before(started.Add(-keepAliveSkew)) {
				return engine.Outcome{}, engine.Pending("%s listed with a keepalive from %s, before its wazuh-clusterd started (%s): not connected again yet",
					n.Name, n.LastKeepAlive.UTC().Format(time.RFC3339), started.UTC().Format(time.RFC3339))
			}
		}
		return engine.Outcome{Message: fmt.Sprintf("%s (%s) listed by the master at %s, keepalive fresh", n.Name, n.Type, n.Version),
			Data: map[string]any{"node": n.Name, "version": n.Version, "type": n.Type}}, nil
	}
	return engine.Outcome{}, engine.Pending("%s not listed by the master (master %s): a worker refused with 3031 (versions differ) is not listed; see its logs/cluster.log", local.Node, master)
}
