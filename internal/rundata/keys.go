// Package rundata is the upgrade session's contract with its step kinds
// (internal/steps): the keys of the run data the kinds and the session
// write and read (the engine journals each value), and the data
// directories a run sets aside (named by its run id), which restore
// creates and `upgrade prune` lists and removes. It sits below both
// internal/steps and internal/upgrade, which import it.
package rundata

// Run data keys of the upgrade itself.
const (
	// KeyTarget is the target upstream version ("4.10.0").
	KeyTarget = "target"
	// KeyTargetVersions maps component → exact package version to install.
	KeyTargetVersions = "target_versions"
	// KeyPreviousVersions maps component → exact package version found
	// before the first install (recorded before anything is installed).
	KeyPreviousVersions = "previous_versions"
	// KeyExpectVersions maps component → version expected at the end (diff).
	KeyExpectVersions = "expect_versions"
	// KeyBackups is a steps.Backups value.
	KeyBackups = "backups"
	// KeySnapshots maps a snapshot label → snapshot id captured by the run.
	KeySnapshots = "snapshots"
	// KeyLastSnapshot is the id of the newest snapshot the run captured.
	KeyLastSnapshot = "last_snapshot"
	// KeyDiff is a steps.DiffSummary of the run's snapshot diff.
	KeyDiff = "diff"
)

// Run data keys of the agents kinds.
const (
	// KeyAgentsBefore is the fleet.AgentsBefore agents.record journals before
	// the manager stops.
	KeyAgentsBefore = "agents_before"
	// KeyAgentsAfter is the fleet (snapshot.Agents) gate.agents_back saw
	// last.
	KeyAgentsAfter = "agents_after"
)

// KeyPrimariesRecoveries is the run value holding the recovery settings as they were before the
// run raised them (steps' recoveriesRecord), so the restore (a later step, a finally-step, a resumed
// run, a rollback run) puts back exactly that.
const KeyPrimariesRecoveries = "primaries_recoveries"

// KeyIndexerPrimaries is the run value holding the primary shards the node held before the
// indexer stopped (steps' primariesRecord); a rollback run starts with the upgrade's count.
const KeyIndexerPrimaries = "indexer_primaries"

// KeyIndexerNode is the run value of the indexer node this host serves in a rolling upgrade,
// recorded before it stops (indexer.node_record): its name and the OpenSearch version it ran.
const KeyIndexerNode = "indexer_node"

// KeyProbeAhead is the data-flow probe's event the probe.send step sent ahead (steps'
// probeAhead), for gate.probe to follow instead of sending its own.
const KeyProbeAhead = "probe_ahead"

// Run data keys of the watch window.
const (
	// KeyWatch is the watch.Request `upgrade apply --watch` seeds.
	KeyWatch = "watch"
	// KeyWatchState is the window's watch.State: its start (a resumed run
	// continues the remaining window) and each criterion's last value.
	KeyWatchState = "watch_state"
)
