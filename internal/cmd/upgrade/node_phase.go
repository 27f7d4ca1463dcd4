package upgrade

import (
	"context"
	"errors"

	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// ErrNodePhaseNotBuilt: `upgrade node` took this host's turn but the per-node upgrade (the
// single-host runbook limited to the turn's components, with the node gates) is not wired in yet.
var ErrNodePhaseNotBuilt = errors.New("the per-node upgrade of a rolling upgrade is not built yet")

// RunNode upgrades this host's components for the turn's entry (turn.Entry(): Components, Role,
// Node; turn.Target()). It runs inside turn.Run: the lease is renewed while it works, its context
// is cancelled when the turn is lost, and the entry is marked done when it returns nil, failed
// with its error otherwise. turn.Resumed says this host had left the entry running (kill -9):
// resume its journal rather than start over.
//
// The node phase's home: the runbooks and step kinds of `upgrade node` fill this in.
func RunNode(ctx context.Context, turn *rollout.Turn) error {
	return ErrNodePhaseNotBuilt
}
