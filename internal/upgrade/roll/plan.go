package roll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/runbooks"
)

// Plan is the roll's plan (`upgrade plan --cluster`'s output).
type Plan struct {
	Target         string          `json:"target"`
	Verdict        string          `json:"verdict"` // GO | NO-GO
	ElectedManager string          `json:"elected_cluster_manager"`
	Order          []rollout.Entry `json:"order"`
	// Indexer is what the indexer crosses (indexerpath.go).
	Indexer versions.Path `json:"indexer_versions"`
	// Problems stop the roll (NO-GO), each with its fix.
	Problems []string `json:"problems"`
	// Warnings do not stop the roll; each says what it costs and its fix.
	Warnings []string `json:"warnings"`
	// Preflight are the preflight gates of upgrade apply --cluster evaluated now from this host,
	// as the single-host plan evaluates its own (a gate that is not GO is a problem).
	Preflight []upgrade.GateResult `json:"preflight"`
	Gates     []rollout.PhaseGates `json:"gates"`
	Budget    upgrade.RollBudget   `json:"budget"`
	// Run is the run already in the cluster, if any.
	Run *RunSummary `json:"run,omitempty"`
	// Calls are the coordination record's requests, per verb.
	Calls map[string][]string `json:"calls"`
}

// RunSummary names a run in the cluster.
type RunSummary struct {
	RunID  string        `json:"run_id"`
	Target string        `json:"target"`
	Phase  rollout.Phase `json:"phase"`
}

// NewPlan judges a roll to the target to from this host, read only, within timeout: the order from
// both clusters' facts, the preflight gates of upgrade apply --cluster (when c has Deps), the
// indexer's version path, no downgrade, no run in progress, and the time budget.
func NewPlan(ctx context.Context, c runs.Common, d Deps, to string, timeout time.Duration) (Plan, error) {
	cfg, err := d.Config()
	if err != nil {
		return Plan{}, err
	}
	qctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	s, ix, err := d.Store(qctx)
	if err != nil {
		return Plan{}, err
	}
	mg, mgErr := d.Manager(qctx)
	facts, err := rollout.Gather(qctx, cfg, ix, mg, mgErr)
	if err != nil {
		return Plan{}, err
	}
	rep := Plan{Target: to, ElectedManager: facts.ElectedManager, Problems: []string{}, Warnings: []string{}, Preflight: []upgrade.GateResult{},
		Gates: rollout.Gates, Calls: Calls()}
	rep.Problems = append(rep.Problems, noDowngrade(to, facts)...)
	clusterIndexerPath(&rep, facts)
	if c.Deps != nil {
		gates, err := clusterPreflight(qctx, c, to)
		if err != nil {
			return Plan{}, err
		}
		if err := ctx.Err(); err != nil {
			return Plan{}, err // interrupted: no verdict from half-asked gates
		}
		rep.Preflight = gates
		for _, g := range gates {
			if g.Verdict != upgrade.VerdictGo {
				rep.Problems = append(rep.Problems, g.Step+": "+g.Detail)
			}
		}
	}
	if g := facts.SearchGap; g != nil {
		c := cfg.Indexer
		rep.Warnings = append(rep.Warnings, g.String(c.URL, c.Username, c.CAFile, c.Insecure))
	}
	order, oerr := rollout.Order(facts)
	var oe *rollout.OrderError
	switch {
	case errors.As(oerr, &oe):
		rep.Problems = append(rep.Problems, oe.Problems...)
	case oerr != nil:
		return Plan{}, oerr
	}
	rep.Order = order
	if rep.Order == nil {
		rep.Order = []rollout.Entry{}
	}
	switch rec, err := s.Load(qctx); {
	case errors.Is(err, rollout.ErrNoRun):
	case err != nil:
		return Plan{}, err
	default:
		rep.Run = &RunSummary{RunID: rec.RunID, Target: rec.Target, Phase: rec.Phase}
		if !rec.Phase.Ended() {
			rep.Problems = append(rep.Problems, fmt.Sprintf("run %s to %s is in phase %s: siemctl upgrade status --cluster shows it; finish or roll it back before another", rec.RunID, rec.Target, rec.Phase))
		}
	}
	turns := make([]upgrade.RollTurn, 0, len(order))
	for _, e := range order {
		turns = append(turns, upgrade.RollTurn{Name: e.Name, Components: e.Components})
	}
	rep.Budget = upgrade.EstimateRoll(turns, 0)
	rep.Verdict = upgrade.VerdictGo
	if len(rep.Problems) > 0 {
		rep.Verdict = upgrade.VerdictNoGo
	}
	return rep, nil
}

// clusterPreflight evaluates, read-only, the preflight gates of upgrade apply --cluster
// (runbooks/cluster-apply.yaml) from this host: the indexer cluster green, every node of both
// clusters present at one version with disk, the snapshot repository verified by every node, this
// host's packages offering the target (no downgrade, no major jump), no archived settings. The
// packages of the other hosts are judged in their own turns (node.yaml preflight/versions).
func clusterPreflight(ctx context.Context, c runs.Common, to string) ([]upgrade.GateResult, error) {
	deps, err := c.Deps(ctx)
	if err != nil {
		return nil, err
	}
	skip, err := inRunbook(runbooks.ClusterApply, deps.Config.NotHere())
	if err != nil {
		return nil, err
	}
	p, err := upgrade.Prepare(ctx, deps, upgrade.Request{To: to, Embedded: runbooks.ClusterApply, Selection: engine.Selection{Skip: skip}})
	if err != nil {
		return nil, err
	}
	gates := upgrade.PreflightGates(ctx, p.Plan, p.Deps, p.Seed)
	if gates == nil {
		gates = []upgrade.GateResult{}
	}
	return gates, nil
}

// noDowngrade names the manager nodes that run a newer version than the target: a roll goes
// forward only (going back is siemctl rollback --cluster, from the run's snapshot).
func noDowngrade(to string, f rollout.Facts) []string {
	target := packages.Upstream(to)
	var out []string
	for _, n := range f.ManagerNodes {
		v := strings.TrimPrefix(n.Version, "v")
		if v != "" && target != "" && packages.CompareDeb(target, v) < 0 {
			out = append(out, fmt.Sprintf("manager node %s runs %s, newer than the target %s: a rolling upgrade does not downgrade (siemctl rollback --cluster goes back from the run's snapshot; choose a target at or above %s)", n.Name, v, target, v))
		}
	}
	return out
}

// clusterIndexerPath is the cluster plan's indexerPath: the installed release is the manager
// master's (else any manager's), the OpenSearch versions those the nodes reported; a 5.x target
// adds its no-go to the plan's problems.
func clusterIndexerPath(rep *Plan, facts rollout.Facts) {
	installed := ""
	for _, n := range facts.ManagerNodes {
		if installed == "" || n.Type == "master" {
			installed = strings.TrimPrefix(n.Version, "v")
		}
	}
	rep.Indexer = versions.Cross(installed, rep.Target, facts.IndexerNodes)
	if rep.Indexer.NoGo != "" {
		rep.Problems = append(rep.Problems, rep.Indexer.NoGo+"; read "+rep.Indexer.Read)
	}
}
