package fleet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// The agents that must come back after an upgrade: the fleet recorded
// before the manager stops (agents.record), compared with the fleet
// afterwards (gate.agents_back and the watch window's agents criterion).

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

// BackFields are the fields the record and the comparison select.
var BackFields = []string{"id", "name", "status", "version", "lastKeepAlive"}

// ListFleet lists every agent but 000 (the manager) through the manager
// API's one listing and counts them by status and version as snapshots do.
func ListFleet(ctx context.Context, l Lister) ([]manager.Agent, snapshot.Agents, error) {
	all, err := l.ListAgents(ctx, manager.AgentQuery{Select: BackFields})
	counts := snapshot.Agents{ByStatus: map[string]int{}, ByVersion: map[string]int{}}
	if err != nil {
		return nil, counts, err
	}
	out := all[:0]
	for _, a := range all {
		if a.IsManager() {
			continue
		}
		out = append(out, a)
		counts.Total++
		counts.ByStatus[orUnknown(a.Status)]++
		counts.ByVersion[orUnknown(a.Version)]++
	}
	return out, counts, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// RecordBefore lists the fleet and keeps its active agents, taken at now.
func RecordBefore(ctx context.Context, l Lister, now time.Time) (AgentsBefore, error) {
	agents, counts, err := ListFleet(ctx, l)
	if err != nil {
		return AgentsBefore{}, err
	}
	rec := AgentsBefore{Taken: now.UTC(), Active: []AgentRef{}, Fleet: counts}
	for _, a := range agents {
		if a.Status == manager.AgentActive {
			rec.Active = append(rec.Active, AgentRef{ID: a.ID, Name: a.Name, Version: a.Version})
		}
	}
	return rec, nil
}

// Back compares the fleet now with the agents active before.
type Back struct {
	Before  int
	Back    int
	Missing []manager.Agent // not active now, sorted by id ("removed" when gone)
	Fleet   snapshot.Agents
}

// Ratio is the share of the agents active before that are active now (1
// when none was).
func (b Back) Ratio() float64 {
	if b.Before == 0 {
		return 1
	}
	return float64(b.Back) / float64(b.Before)
}

// CompareBack lists the fleet and finds which of before are active again.
func CompareBack(ctx context.Context, l Lister, before []AgentRef) (Back, error) {
	agents, counts, err := ListFleet(ctx, l)
	if err != nil {
		return Back{}, err
	}
	now := make(map[string]manager.Agent, len(agents))
	for _, a := range agents {
		now[a.ID] = a
	}
	res := Back{Before: len(before), Fleet: counts}
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

// MissingLine names up to show missing agents with their last keep-alive.
func MissingLine(missing []manager.Agent, show int, now time.Time) string {
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

// CountsLine prints "active 40, disconnected 2" sorted by name ("none"
// when empty).
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
