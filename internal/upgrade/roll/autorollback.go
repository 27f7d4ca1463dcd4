package roll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/runbooks"
)

// The point of no return of a roll and the automatic rollback past it (docs/distributed.md).

// pastPointOfNoReturn are the node.yaml steps past the point of no return (the step marked
// point_of_no_return and the later steps of its subtree: an indexer node that started at the new
// version, its data upgraded on the way), so a no-go from there rolls the whole deployment back.
var pastPointOfNoReturn = sync.OnceValues(func() ([]string, error) {
	rb, err := embedded(runbooks.Node)
	if err != nil {
		return nil, err
	}
	return rb.PastPointOfNoReturn(), nil
})

// noGoAfterStart says whether err, from this host's turn, is a no-go that rolls the deployment
// back: a node.yaml step failing past an indexer node's start, or a turn the engine already
// rolled back on this host (exit 10). It returns the failed step.
func noGoAfterStart(err error) (string, bool) {
	var fe *engine.FailedError
	if errors.As(err, &fe) {
		if past, perr := pastPointOfNoReturn(); perr == nil && slices.Contains(past, fe.Step) {
			return fe.Step, true
		}
	}
	var rb *engine.RolledBackError
	if errors.As(err, &rb) {
		return "", true
	}
	return "", false
}

// BeginAutoRollback moves the run to rolling-back after a no-go in this host's turn of entry and
// returns the *rollout.RollingBackError (exit 10) naming the node, the reason and the node's
// log's last error (diag).
func BeginAutoRollback(ctx context.Context, d Deps, rec rollout.Record, entry string, cause error, diag []string, errOut io.Writer) error {
	runID := rec.RunID
	host := ""
	if d.Hostname != nil {
		host, _ = d.Hostname()
	}
	out := &rollout.RollingBackError{RunID: runID, Entry: entry, Reason: cause, Diagnosis: diag}
	why := firstLine(cause.Error())
	if len(diag) > 0 {
		why += "; the node's log: " + strings.Join(diag[:min(len(diag), 3)], " ")
	}
	s, _, err := d.Store(ctx)
	if err == nil {
		_, err = s.Begin(ctx, runID, host, entry, why)
	}
	if err != nil { // not from here: the node this host talks to is the one that failed; keep it for prepare
		if cfg, cerr := d.Config(); cerr == nil {
			if cerr := rollout.SaveCopy(cfg.StateDir, rollout.BeganHere(rec, host, entry, why, d.Clock())); cerr == nil {
				fmt.Fprintf(errOut, "the cluster's record could not be written from this host (%v): this host kept the rollback's record (%s); the rollback's prepare on the other hosts marks the cluster's\n", firstLine(err.Error()), rollout.CopyFile)
			}
		}
	}
	out.Mark = err
	fmt.Fprintln(errOut, out.Error())
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// nodeDiagnosis is the diagnosis of this host's indexer after a no-go at an indexer step (the
// cause and the log lines it rests on, from internal/ops/diagnose), or nil.
func nodeDiagnosis(ctx context.Context, c runs.Common, step string) []string {
	if !strings.HasPrefix(step, "indexer/") {
		return nil
	}
	deps, err := c.Deps(ctx)
	if err != nil || deps.Diagnose == nil || deps.Units == nil {
		return nil
	}
	u, err := deps.Units(ctx)
	if err != nil {
		return nil
	}
	unit := deps.Config.Indexer.Unit
	sts, err := u.Status(ctx, unit)
	if err != nil || len(sts) == 0 {
		return nil
	}
	lines := deps.Diagnose(ctx, services.Component{Name: "indexer", Unit: unit}, sts[0]).Lines()
	if len(lines) > 8 {
		lines = append(lines[:8:8], "…")
	}
	return lines
}
