package diagnose

import (
	"context"
	"regexp"
)

// KindClusterJoin: an indexer node that runs but cannot join its cluster (a rolling upgrade's
// node that does not rejoin within its deadline).
const KindClusterJoin = "cluster-join"

// clusterNameMismatch is OpenSearch's handshake failure between nodes of different cluster.name.
var clusterNameMismatch = regexp.MustCompile(`remote cluster name \[([^\]]*)\] does not match local cluster name \[([^\]]*)\]`)

// joinFailures are OpenSearch's lines of a node that has not joined a cluster.
var joinFailures = []string{"does not match local cluster name", "cluster-manager not discovered", "master not discovered"}

// detectClusterJoin: a node that runs but has not joined its cluster. A handshake refused for
// another cluster.name names both names (preferred: it says why); "cluster-manager not discovered"
// is a node that finds no elected cluster manager.
func detectClusterJoin(_ context.Context, ev *Evidence) (Finding, bool) {
	last, line := ev.find(joinFailures...)
	if last < 0 {
		return Finding{}, false
	}
	f := Finding{Evidence: []string{line}, at: last}
	if i, l := ev.find(joinFailures[0]); i >= 0 {
		if m := clusterNameMismatch.FindStringSubmatch(ev.Lines[i]); m != nil {
			f.Evidence = []string{l}
			f.Cause = "the node cannot join its cluster: it runs with cluster.name [" + m[2] + "], the other nodes with [" + m[1] + "] (every handshake is refused)"
			f.Fix = "set cluster.name: " + m[1] + " in " + ev.indexerYAMLFile() + " (and no -Ecluster.name in the unit's command line), then stop and start the indexer"
			return f, true
		}
	}
	f.Cause = "the node has not joined a cluster: it finds no elected cluster manager"
	f.Fix = "check discovery.seed_hosts and cluster.initial_cluster_manager_nodes in " + ev.indexerYAMLFile() + ", the transport port between the nodes and their certificates"
	return f, true
}

// notJoinedSince: the node said it has not joined a cluster after line i (its security index is
// then out of reach: "not initialised" is a consequence, not the cause).
func (ev *Evidence) notJoinedSince(i int) bool {
	j, _ := ev.find(joinFailures...)
	return j > i
}
