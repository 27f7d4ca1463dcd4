// Package runbooks embeds siemctl's runbooks (upgrade.yaml, rollback.yaml).
// They are data: the step kinds they name are Go code in internal/steps, and
// internal/engine plans and runs them. A site can point siemctl at its own
// runbook file instead; it is validated the same way.
package runbooks

import "embed"

// FS holds every embedded runbook (*.yaml) at its root.
//
//go:embed *.yaml
var FS embed.FS

// Names of the embedded runbooks.
const (
	Upgrade  = "upgrade.yaml"
	Rollback = "rollback.yaml"
)

// Runbooks of a rolling upgrade of a distributed deployment: the first host's phase, each host's
// turn, and the end.
const (
	ClusterApply  = "cluster-apply.yaml"
	Node          = "node.yaml"
	ClusterFinish = "cluster-finish.yaml"
	// ClusterRollback is the rollback of a roll (siemctl rollback --cluster --phase P).
	ClusterRollback = "cluster-rollback.yaml"
)
