package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// The agents that must come back: agents.record and gate.agents_back over
// internal/ops/fleet's record and comparison.

// --- agents.record -----------------------------------------------------------------

func runAgentsRecord(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	mgr, err := d.manager()
	if err != nil {
		return engine.Outcome{}, err
	}
	rec, err := fleet.RecordBefore(ctx, mgr, d.now())
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
	}
	if err := env.Set(rundata.KeyAgentsBefore, rec); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("%d of %d agents active before the upgrade (%s)", len(rec.Active), rec.Fleet.Total, fleet.CountsLine(rec.Fleet.ByStatus))}, nil
}

// --- gate.agents_back --------------------------------------------------------------

// agentsBackParams: the share of the agents active before that must be
// active again, and how many missing agents a message names.
type agentsBackParams struct {
	MinRatio float64 `yaml:"min_ratio"`
	Show     int     `yaml:"show"`
}

func (p *agentsBackParams) Validate() error {
	if p.MinRatio <= 0 || p.MinRatio > 1 {
		return fmt.Errorf("min_ratio %v: want a share in (0, 1], e.g. 0.95", p.MinRatio)
	}
	if p.Show < 1 {
		return fmt.Errorf("show %d: want at least 1", p.Show)
	}
	return nil
}

func (p *agentsBackParams) Describe(pc engine.PlanContext) []string {
	return []string{fmt.Sprintf("manager GET /agents?select=%s (paged): at least %s of the agents active before (%s) active again; the missing ones named (id, name, last keep-alive)",
		strings.Join(fleet.BackFields, ","), pct(p.MinRatio), rundata.KeyAgentsBefore)}
}

func runAgentsBack(ctx context.Context, env Env, p *agentsBackParams) (engine.Outcome, error) {
	d := env.Deps()
	var before fleet.AgentsBefore
	ok, err := env.Get(rundata.KeyAgentsBefore, &before)
	if err != nil {
		return engine.Outcome{}, err
	}
	if !ok {
		return engine.Outcome{}, engine.NoGo("no record of the agents active before the upgrade (%s did not run): run the agents.record step before the manager stops", rundata.KeyAgentsBefore)
	}
	if len(before.Active) == 0 {
		return engine.Outcome{Message: "no agent was active before the upgrade: nothing to wait for"}, nil
	}
	mgr, err := d.manager()
	if err != nil {
		return engine.Outcome{}, err
	}
	res, err := fleet.CompareBack(ctx, mgr, before.Active)
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
	}
	if err := setIfChanged(env, rundata.KeyAgentsAfter, res.Fleet); err != nil {
		return engine.Outcome{}, err
	}
	line := fmt.Sprintf("%d of %d agents active before are active again (%s", res.Back, res.Before, pct(res.Ratio()))
	if res.Ratio() < p.MinRatio {
		return engine.Outcome{}, engine.Pending("%s < %s); missing: %s", line, pct(p.MinRatio), fleet.MissingLine(res.Missing, p.Show, d.now()))
	}
	msg := line + ")"
	if len(res.Missing) > 0 {
		msg += "; still missing: " + fleet.MissingLine(res.Missing, p.Show, d.now())
	}
	return engine.Outcome{Message: msg}, nil
}

// setIfChanged records v under key unless the run data already holds it
// (a gate polled every few seconds journals changes only).
func setIfChanged(env Env, key string, v snapshot.Agents) error {
	var old snapshot.Agents
	if ok, err := env.Get(key, &old); err == nil && ok && fmt.Sprint(old) == fmt.Sprint(v) {
		return nil
	}
	return env.Set(key, v)
}

func pct(r float64) string {
	s := fmt.Sprintf("%.1f", r*100)
	return strings.TrimSuffix(s, ".0") + "%"
}

func agentKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*noParams]{Name: "agents.record", ReadOnly: true, Run: runAgentsRecord,
			New: simple(func(*Planning) []string {
				return []string{fmt.Sprintf("manager GET /agents?select=%s (paged): journal the active agents and the fleet by status and version (%s)", strings.Join(fleet.BackFields, ","), rundata.KeyAgentsBefore)}
			})}),
		engine.Define(Spec[*agentsBackParams]{Name: "gate.agents_back", ReadOnly: true, Run: runAgentsBack,
			New: func() *agentsBackParams { return &agentsBackParams{MinRatio: 0.95, Show: 10} }}),
	}
}
