package rollout

// PhaseGates are the gates of one phase of a roll (the plan shows them; the apply, node and finish
// runbooks hold them).
type PhaseGates struct {
	Phase   string   `json:"phase"`
	Command string   `json:"command"`
	Gates   []string `json:"gates"`
}

// Gates are the roll's gates, phase by phase and role by role (issue 25's "must hold").
var Gates = []PhaseGates{
	{Phase: "apply", Command: "siemctl upgrade apply --cluster --to V (on the first host)", Gates: []string{
		"indexer cluster green, every node of indexer.nodes in it",
		"one version on every indexer node and every manager node",
		"disk on every indexer node under the no-go threshold",
		"a snapshot repository every indexer node can reach (verified)",
		"backups: this host's configs, the indexer security configuration, the master's databases",
		"a snapshot of the cluster, allocation primaries, flush",
		"the run's coordination record created (" + Index + "/_doc/" + DocID + ")",
	}},
	{Phase: "node: " + string(RoleIndexer) + ", " + string(RoleIndexerManager), Command: "siemctl upgrade node (on each indexer host in its turn)", Gates: []string{
		"its turn taken (exit 7 naming whose turn it is otherwise)",
		"before anything changes, no shard's only active copy on the node (the turn waits for the other copy to recover)",
		"the node back in _nodes at the target version",
		"allocation back; cluster green, or yellow only because of the node_version decider while older nodes remain",
	}},
	{Phase: "node: " + string(RoleManagerMaster) + ", " + string(RoleManagerWorker), Command: "siemctl upgrade node (the master first, each worker right after it)", Gates: []string{
		"its turn taken",
		"the node listed by the master at the target version with a fresh keepalive",
		"the shipper's test output",
	}},
	{Phase: "node: " + string(RoleDashboard), Command: "siemctl upgrade node (on each dashboard host)", Gates: []string{
		"its turn taken",
		"the dashboard answers",
	}},
	{Phase: "finish", Command: "siemctl upgrade finish --cluster (once, on any host)", Gates: []string{
		"every entry of the order done",
		"security initialised once, template, pipelines and index management once",
		"validation on every node, the watch window, the evidence of the whole roll",
	}},
}
