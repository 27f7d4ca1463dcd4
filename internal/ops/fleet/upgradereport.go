package fleet

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// The report of an agent upgrade run, wave by wave: what the text report, `-o json` and the upgrade's
// HTML page show. It is computed from the run's state, so status, a stopped run and a finished one
// all report the same way.

// UpgradeReport is a run's waves and the agents waiting outside them.
type UpgradeReport struct {
	Waves []WaveReport `json:"waves"`
	// Pending are the agents not sent, each with why: disconnected at the plan or when their wave
	// sent them, or their cluster node cut from the master. resume sends those that are back.
	Pending []PendingAgent `json:"pending"`
}

// WaveReport is one wave: its agents, its times, what became of each agent and its gate's verdict.
type WaveReport struct {
	Wave     int            `json:"wave"` // 1-based
	Canary   bool           `json:"canary"`
	State    string         `json:"state"`
	Agents   []string       `json:"agents"`
	Started  time.Time      `json:"started,omitzero"`
	Ended    time.Time      `json:"ended,omitzero"`
	Upgraded []string       `json:"upgraded"`
	Failed   []FailedAgent  `json:"failed"`
	Pending  []PendingAgent `json:"pending"` // planned or in flight, or held out of the wave and still waiting
	Gate     GateVerdict    `json:"gate"`
}

// FailedAgent is a failed agent with its cause and fix.
type FailedAgent struct {
	ID    string       `json:"id"`
	Node  string       `json:"node,omitempty"`
	Cause UpgradeCause `json:"cause"`
}

// PendingAgent is an agent waiting, and why.
type PendingAgent struct {
	ID    string `json:"id"`
	Node  string `json:"node,omitempty"`
	State string `json:"state"` // planned, sent or pending
	Why   string `json:"why"`
	Code  int    `json:"code,omitempty"`
}

// GateVerdict is a wave's gate: go when at most Allowed of its agents failed, no-go otherwise, open
// while the wave has not ended.
type GateVerdict struct {
	Verdict string `json:"verdict"` // go | no-go | open | not started
	Failed  int    `json:"failed"`
	Allowed int    `json:"allowed"`
	Line    string `json:"line"`
}

// Report builds the run's report.
func (r *UpgradeRun) Report() UpgradeReport {
	rep := UpgradeReport{Waves: []WaveReport{}, Pending: []PendingAgent{}}
	for _, w := range r.Waves {
		wr := WaveReport{Wave: w.Index + 1, Canary: w.Index == 0 && r.Options.Canary > 0, State: w.State, Agents: append([]string{}, w.Agents...),
			Started: w.Started, Ended: w.Ended, Upgraded: []string{}, Failed: []FailedAgent{}, Pending: []PendingAgent{}}
		for _, id := range w.Agents {
			a := r.Agents[id]
			switch a.State {
			case AgentUpgraded:
				wr.Upgraded = append(wr.Upgraded, id)
			case AgentFailed:
				f := FailedAgent{ID: id, Node: a.Node}
				if a.Failure != nil {
					f.Cause = *a.Failure
				}
				wr.Failed = append(wr.Failed, f)
			case AgentSent:
				why := "in flight"
				if a.TaskStatus != "" {
					why += ", the task says " + a.TaskStatus
				}
				wr.Pending = append(wr.Pending, PendingAgent{ID: id, Node: a.Node, State: a.State, Why: why})
			default:
				wr.Pending = append(wr.Pending, PendingAgent{ID: id, Node: a.Node, State: a.State, Why: "not sent yet"})
			}
		}
		for _, id := range w.Held {
			if a := r.Agents[id]; a != nil && a.State == AgentPending {
				wr.Pending = append(wr.Pending, pendingOf(a))
			}
		}
		nFailed := len(wr.Failed)
		wr.Gate = GateVerdict{Failed: nFailed, Allowed: w.Allowed}
		switch w.State {
		case WavePassed:
			wr.Gate.Verdict = "go"
		case WaveFailed:
			wr.Gate.Verdict = "no-go"
		case WaveRunning:
			wr.Gate.Verdict = "open"
		default:
			wr.Gate.Verdict = "not started"
		}
		switch wr.Gate.Verdict {
		case "not started":
			wr.Gate.Line = fmt.Sprintf("not started: at most %d of %d may fail", w.Allowed, len(w.Agents))
		case "open":
			wr.Gate.Line = fmt.Sprintf("open: %d of %d failed so far, at most %d allowed", nFailed, len(w.Agents), w.Allowed)
		default:
			wr.Gate.Line = fmt.Sprintf("%s: %d of %d failed, at most %d allowed", wr.Gate.Verdict, nFailed, len(w.Agents), w.Allowed)
		}
		rep.Waves = append(rep.Waves, wr)
	}
	for _, a := range r.Agents {
		if a.State == AgentPending {
			rep.Pending = append(rep.Pending, pendingOf(a))
		}
	}
	sort.Slice(rep.Pending, func(i, j int) bool { return idLess(rep.Pending[i].ID, rep.Pending[j].ID) })
	return rep
}

func pendingOf(a *RunAgent) PendingAgent {
	p := PendingAgent{ID: a.ID, Node: a.Node, State: a.State, Why: "disconnected: not sent (the API refuses them); resume sends it once it is back"}
	if a.Failure != nil {
		p.Why, p.Code = a.Failure.Cause, a.Failure.Code
	}
	return p
}

// UpgradeRunSince is the latest agent upgrade run started at or after since (nil when there is none):
// the agents' part of a stack upgrade that started then.
func UpgradeRunSince(stateDir string, since time.Time) (*UpgradeRun, error) {
	entries, err := os.ReadDir(RunsDir(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent upgrade runs: %w", err)
	}
	var best *UpgradeRun
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		r, err := LoadUpgradeRun(stateDir, id)
		if err != nil {
			return nil, err
		}
		if !r.Started.Before(since) && (best == nil || r.Started.After(best.Started)) {
			best = r
		}
	}
	return best, nil
}
