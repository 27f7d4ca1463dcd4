package roll

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/usage"
)

// A roll runs in three phases, each an embedded runbook with the single-host guarantees (plan,
// journal, resume, dry run, lock, undos): `upgrade apply --cluster` on the first host
// (cluster-apply.yaml), `upgrade node` on every host in its turn (node.yaml, only the components
// the host runs), `upgrade finish --cluster` once at the end (cluster-finish.yaml).

// Phase is one planned phase of a roll on this host.
type Phase struct {
	Name     string // "apply --cluster", "node", "finish --cluster"
	Runbook  string
	To       string
	Only     []string
	Skip     []string
	DryRun   bool
	Watch    time.Duration
	Cmdline  string
	Question string
}

// HostSkips are the components this host does not run and those it runs: node.yaml and
// cluster-finish.yaml keep every step of a component under its name.
func HostSkips(ctx context.Context, c runs.Common) (notHere, here []string, err error) {
	deps, err := c.Deps(ctx)
	if err != nil {
		return nil, nil, err
	}
	return deps.Config.NotHere(), deps.Config.HostComponents(), nil
}

// inRunbook keeps the component subtrees the embedded runbook has (a selection naming no step
// is refused by the planner).
func inRunbook(name string, comps []string) ([]string, error) {
	rb, err := embedded(name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range comps {
		for _, s := range rb.Steps {
			if strings.HasPrefix(s.ID, c+"/") {
				out = append(out, c)
				break
			}
		}
	}
	return out, nil
}

// embedded decodes an embedded runbook.
func embedded(name string) (*runbook.Runbook, error) {
	raw, source, err := upgrade.LoadRunbook("", name)
	if err != nil {
		return nil, err
	}
	rb, probs := runbook.Decode(raw, source)
	if rb == nil {
		return nil, &engine.PlanError{Problems: probs}
	}
	return rb, nil
}

// RunPhase plans and runs one phase's runbook on this host, leaving out the step subtrees of the
// components in notHere.
func RunPhase(ctx context.Context, c runs.Common, ph Phase, notHere []string) error {
	deps, err := c.Deps(ctx)
	if err != nil {
		return err
	}
	skip, err := inRunbook(ph.Runbook, notHere)
	if err != nil {
		return err
	}
	ph.Skip = append(skip, ph.Skip...)
	p, err := upgrade.Prepare(ctx, deps, upgrade.Request{To: ph.To, Embedded: ph.Runbook, Selection: engine.Selection{Only: ph.Only, Skip: ph.Skip}})
	if err != nil {
		return err
	}
	if ph.Watch > 0 {
		if err := steps.RequestWatch(p.Plan, p.Seed, ph.Watch); err != nil {
			return &usage.Error{Err: err}
		}
		ph.Cmdline += " --watch " + ph.Watch.String()
	}
	r := runs.NewRunner(c, p, 0, ph.Cmdline, ph.DryRun)
	if ph.DryRun {
		fmt.Fprintf(c.IO.Out, "upgrade %s to %s (dry run) on this host (%s): %s\n", ph.Name, ph.To, strings.Join(deps.Config.HostComponents(), ", "), p.Changes())
		_, err := r.Run(ctx, p.Plan, engine.RunOptions{Seed: p.Seed})
		return err
	}
	q := fmt.Sprintf("%s (%s): %d steps on this host (%s). Proceed?", ph.Question, p.Changes(), p.Plan.Total(), strings.Join(deps.Config.HostComponents(), ", "))
	if err := c.Confirm(q); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.ErrOut, "upgrade %s to %s: %s; %d steps\n", ph.Name, ph.To, p.Changes(), p.Plan.Total())
	ri, err := r.Run(ctx, p.Plan, engine.RunOptions{Seed: p.Seed})
	return runs.Finish(c, p.Deps.Config.StateDir, ri, err)
}

// RunInProgress is the run the cluster's record holds that has not ended (a
// *rollout.RunExistsError), or nil: a second apply --cluster is refused before its preflight, as
// rollout/create refuses it after. A record that cannot be read leaves the judgement to the
// runbook's own gates (nil).
func RunInProgress(ctx context.Context, d Deps) error {
	if d.Indexer == nil {
		return nil
	}
	s, _, err := d.Store(ctx)
	if err != nil {
		return nil //nolint:nilerr // the preflight names an indexer that does not answer
	}
	rec, err := s.Load(ctx)
	if err != nil || rec.Phase.Ended() {
		return nil //nolint:nilerr // no run (or unreadable: the preflight judges)
	}
	return &rollout.RunExistsError{RunID: rec.RunID, Phase: rec.Phase, Target: rec.Target}
}
