package roll

import (
	"context"
	"fmt"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/runbooks"
)

// NodeRequest is this host's turn of a roll (`upgrade node`).
type NodeRequest struct {
	To     string
	DryRun bool
	Only   []string
	Skip   []string
	// Turn is this host's turn in the roll's coordination record; NoTurn leaves the order to the
	// operator or the fleet driver.
	Turn   TurnOptions
	NoTurn bool
}

// Node runs this host's turn of a roll: node.yaml for the components this host runs, under its
// turn in the record (taken, or waited for), resuming this host's node run left unfinished. A
// no-go past the point of no return rolls the whole deployment back (BeginAutoRollback).
func Node(ctx context.Context, c runs.Common, req NodeRequest) error {
	notHere, _, err := HostSkips(ctx, c)
	if err != nil {
		return err
	}
	ph := Phase{Name: "node", Runbook: runbooks.Node, To: req.To, Only: req.Only, Skip: req.Skip,
		DryRun: req.DryRun, Cmdline: runs.CommandLine("upgrade", "node", "--to", req.To),
		Question: "Upgrade this host's components to " + req.To + " (its turn of the rolling upgrade)"}
	if req.NoTurn {
		return resumeOrRunNode(ctx, c, ph, notHere)
	}
	if req.DryRun {
		calls, err := TurnCalls(ctx, req.Turn)
		if err != nil {
			fmt.Fprintf(c.IO.Out, "# the turn: %v\n", err)
		}
		for _, l := range calls {
			fmt.Fprintf(c.IO.Out, "turn: %s\n", l)
		}
		return RunPhase(ctx, c, ph, notHere)
	}
	var (
		rec   rollout.Record
		entry string
	)
	err = InTurn(ctx, req.Turn, c.IO.ErrOut, func(ctx context.Context, turn *rollout.Turn) error {
		rec, entry = turn.Record(), turn.Entry().Name
		if packages.Upstream(turn.Target()) != packages.Upstream(req.To) {
			return fmt.Errorf("%w: run %s goes to %s, not --to %s", rollout.ErrNothingDone, turn.RunID(), turn.Target(), req.To)
		}
		// A fresh indexer turn first waits until no shard's only active copy is on its node (a
		// resumed one has already stopped it, or rejoined with its copies).
		if _, resuming := resumableNode(ctx, c); !resuming {
			if err := awaitCopies(ctx, req.Turn, turn.Entry(), c.IO.ErrOut); err != nil {
				return err
			}
		}
		return resumeOrRunNode(ctx, c, ph, notHere)
	})
	// A no-go past the point of no return (an indexer node that ran the new version and is not
	// back, or a turn the engine rolled back on this host): the whole deployment rolls back.
	if step, ok := noGoAfterStart(err); ok && ctx.Err() == nil && rec.RunID != "" {
		return BeginAutoRollback(ctx, req.Turn.Roll, rec, entry, err, nodeDiagnosis(ctx, c, step), c.IO.ErrOut)
	}
	return err
}

// resumeOrRunNode resumes this host's node run left unfinished (a failure, kill -9) or starts it.
func resumeOrRunNode(ctx context.Context, c runs.Common, ph Phase, notHere []string) error {
	if !ph.DryRun {
		if _, err := c.Deps(ctx); err != nil {
			return err
		}
		if ri, ok := resumableNode(ctx, c); ok {
			fmt.Fprintf(c.IO.ErrOut, "resuming this host's node run %s (stopped: %s)\n", ri.ID, ri.Error)
			return resumeNode(ctx, c, ri.ID)
		}
	}
	return RunPhase(ctx, c, ph, notHere)
}

// resumableNode is this host's node run left unfinished (a failure, kill -9), if any.
func resumableNode(ctx context.Context, c runs.Common) (*engine.RunInfo, bool) {
	deps, err := c.Deps(ctx)
	if err != nil {
		return nil, false
	}
	ri, err := engine.Status(deps.Config.StateDir, "")
	return ri, err == nil && ri.Runbook.Name == upgrade.NodeRunbook && ri.Resumable()
}

// resumeNode resumes the node run id as `siemctl upgrade resume ID` does (a node run has no
// window and no guided mode).
func resumeNode(ctx context.Context, c runs.Common, id string) error {
	deps, err := c.Deps(ctx)
	if err != nil {
		return err
	}
	ri, err := engine.Status(deps.Config.StateDir, id)
	if err != nil {
		return err
	}
	sess, err := upgrade.Reopen(deps, ri)
	if err != nil {
		return err
	}
	r := runs.NewRunner(c, sess, 0, runs.CommandLine("upgrade", "resume", ri.ID), false)
	if !ri.Resumable() {
		return fmt.Errorf("run %s is %s: %w", ri.ID, ri.Status, engine.ErrNotResumable)
	}
	if err := c.Confirm(fmt.Sprintf("Resume run %s (%s, stopped: %s)?", ri.ID, ri.Runbook.Name, output.Dash(ri.Error))); err != nil {
		return err
	}
	out, err := r.Resume(ctx, ri.ID)
	return runs.Finish(c, r.StateDir, out, err)
}
