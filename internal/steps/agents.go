package steps

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// AgentRef names one agent.
type AgentRef struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// AgentsBefore is the fleet before the upgrade: the agents that were
// active (the ones that must come back) and the counts by status and
// version.
type AgentsBefore struct {
	Taken  time.Time       `json:"taken"`
	Active []AgentRef      `json:"active"`
	Fleet  snapshot.Agents `json:"fleet"`
}

// agentFields are the fields the agents kinds select.
var agentFields = []string{"id", "name", "status", "version", "lastKeepAlive"}

// listFleet lists every agent but 000 (the manager) through the manager
// API's one listing (ManagerAPI.ListAgents) and counts them by status and
// version as snapshots do.
func listFleet(ctx context.Context, mgr ManagerAPI) ([]manager.Agent, snapshot.Agents, error) {
	all, err := mgr.ListAgents(ctx, manager.AgentQuery{Select: agentFields})
	fleet := snapshot.Agents{ByStatus: map[string]int{}, ByVersion: map[string]int{}}
	if err != nil {
		return nil, fleet, err
	}
	out := all[:0]
	for _, a := range all {
		if a.IsManager() {
			continue
		}
		out = append(out, a)
		fleet.Total++
		fleet.ByStatus[orUnknown(a.Status)]++
		fleet.ByVersion[orUnknown(a.Version)]++
	}
	return out, fleet, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// --- agents.record -----------------------------------------------------------------

func runAgentsRecord(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	mgr, err := d.manager()
	if err != nil {
		return engine.Outcome{}, err
	}
	agents, fleet, err := listFleet(ctx, mgr)
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
	}
	rec := AgentsBefore{Taken: d.now().UTC(), Active: []AgentRef{}, Fleet: fleet}
	for _, a := range agents {
		if a.Status == manager.AgentActive {
			rec.Active = append(rec.Active, AgentRef{ID: a.ID, Name: a.Name, Version: a.Version})
		}
	}
	if err := env.Set(rundata.KeyAgentsBefore, rec); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("%d of %d agents active before the upgrade (%s)", len(rec.Active), fleet.Total, CountsLine(fleet.ByStatus))}, nil
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
		strings.Join(agentFields, ","), pct(p.MinRatio), rundata.KeyAgentsBefore)}
}

// agentsBack compares the fleet now with the agents active before.
type agentsBack struct {
	Before  int
	Back    int
	Missing []manager.Agent // not active now (LastKeepAlive zero when gone)
	Fleet   snapshot.Agents
}

func (b agentsBack) ratio() float64 {
	if b.Before == 0 {
		return 1
	}
	return float64(b.Back) / float64(b.Before)
}

func compareAgents(ctx context.Context, mgr ManagerAPI, before []AgentRef) (agentsBack, error) {
	agents, fleet, err := listFleet(ctx, mgr)
	if err != nil {
		return agentsBack{}, err
	}
	now := make(map[string]manager.Agent, len(agents))
	for _, a := range agents {
		now[a.ID] = a
	}
	res := agentsBack{Before: len(before), Fleet: fleet}
	for _, ref := range before {
		a, ok := now[ref.ID]
		switch {
		case ok && a.Status == manager.AgentActive:
			res.Back++
		case ok:
			res.Missing = append(res.Missing, a)
		default:
			res.Missing = append(res.Missing, manager.Agent{ID: ref.ID, Name: ref.Name, Status: "removed"})
		}
	}
	sort.Slice(res.Missing, func(i, j int) bool { return res.Missing[i].ID < res.Missing[j].ID })
	return res, nil
}

// missingLine names up to show missing agents with their last keep-alive.
func missingLine(missing []manager.Agent, show int, now time.Time) string {
	parts := make([]string, 0, min(show, len(missing))+1)
	for i, a := range missing {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(missing)-show))
			break
		}
		seen := "never"
		if !a.LastKeepAlive.IsZero() {
			seen = a.LastKeepAlive.UTC().Format(time.RFC3339) + " (" + now.Sub(a.LastKeepAlive).Round(time.Second).String() + " ago)"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s, last keep-alive %s", a.ID, a.Name, a.Status, seen))
	}
	return strings.Join(parts, "; ")
}

func runAgentsBack(ctx context.Context, env Env, p *agentsBackParams) (engine.Outcome, error) {
	d := env.Deps()
	var before AgentsBefore
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
	res, err := compareAgents(ctx, mgr, before.Active)
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
	}
	if err := setIfChanged(env, rundata.KeyAgentsAfter, res.Fleet); err != nil {
		return engine.Outcome{}, err
	}
	line := fmt.Sprintf("%d of %d agents active before are active again (%s", res.Back, res.Before, pct(res.ratio()))
	if res.ratio() < p.MinRatio {
		return engine.Outcome{}, engine.Pending("%s < %s); missing: %s", line, pct(p.MinRatio), missingLine(res.Missing, p.Show, d.now()))
	}
	msg := line + ")"
	if len(res.Missing) > 0 {
		msg += "; still missing: " + missingLine(res.Missing, p.Show, d.now())
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

// CountsLine prints "active 40, disconnected 2" sorted by name.
func CountsLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func agentKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*noParams]{Name: "agents.record", ReadOnly: true, Run: runAgentsRecord,
			New: simple(func(*Planning) []string {
				return []string{fmt.Sprintf("manager GET /agents?select=%s (paged): journal the active agents and the fleet by status and version (%s)", strings.Join(agentFields, ","), rundata.KeyAgentsBefore)}
			})}),
		engine.Define(Spec[*agentsBackParams]{Name: "gate.agents_back", ReadOnly: true, Run: runAgentsBack,
			New: func() *agentsBackParams { return &agentsBackParams{MinRatio: 0.95, Show: 10} }}),
	}
}
