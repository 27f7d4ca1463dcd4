package upgrade

import (
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/fleet"
)

// The page of a stack run shows the agent upgrade run that followed it, wave by wave: each wave's
// agents, times, counts and gate verdict, each failed agent with its cause and fix, the pending agents
// with why; an agent run older than the stack run is not its.
func TestEvidenceAgents(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	old := &fleet.UpgradeRun{ID: "old", Target: "4.9.0", State: fleet.RunDone, Started: t0.Add(-time.Hour), Agents: map[string]*fleet.RunAgent{}}
	if err := old.Save(dir); err != nil {
		t.Fatal(err)
	}
	if a := agentsEvidence(dir, t0); a != nil {
		t.Fatalf("an agent run before the stack run: %+v", a)
	}
	cause := fleet.CauseOf(1819, "The WPK for this platform is not available")
	r := &fleet.UpgradeRun{ID: "20261207T181000.000Z", Target: "4.10.0", State: fleet.RunStopped, Started: t0.Add(10 * time.Minute),
		Options: fleet.UpgradeWaveOptions{Canary: 1}, Reason: "wave 2: 1 of 2 agents failed, at most 0 allowed (--max-failed)", Requests: 3,
		Waves: []*fleet.RunWave{
			{Index: 0, Agents: []string{"001"}, State: fleet.WavePassed, Started: t0.Add(10 * time.Minute), Ended: t0.Add(11 * time.Minute)},
			{Index: 1, Agents: []string{"002", "003"}, State: fleet.WaveFailed, Started: t0.Add(11 * time.Minute), Ended: t0.Add(12 * time.Minute), Held: []string{"005"}},
			{Index: 2, Agents: []string{"004"}, State: fleet.WavePending},
		},
		Agents: map[string]*fleet.RunAgent{
			"001": {ID: "001", Wave: 0, State: fleet.AgentUpgraded, Node: "master"},
			"002": {ID: "002", Wave: 1, State: fleet.AgentUpgraded, Node: "master"},
			"003": {ID: "003", Wave: 1, State: fleet.AgentFailed, Node: "worker1", Failure: &cause},
			"004": {ID: "004", Wave: 2, State: fleet.AgentPlanned, Node: "master"},
			"005": {ID: "005", Wave: -1, State: fleet.AgentPending, Node: "worker2", Failure: &fleet.UpgradeCause{Code: 3022, Cause: "cluster node worker2 is not connected to the master (3022)"}},
			"006": {ID: "006", Wave: -1, State: fleet.AgentPending, Node: "master"},
		}}
	if err := r.Save(dir); err != nil {
		t.Fatal(err)
	}
	a := agentsEvidence(dir, t0)
	if a == nil || a.RunID != r.ID || len(a.Report.Waves) != 3 || len(a.PendingShown) != 2 {
		t.Fatalf("agents evidence: %+v", a)
	}
	page, err := RenderHTML(&Evidence{Report: RunReport{RunID: "stack1", Started: t0}, Gates: []GateRow{}, Versions: []VersionRow{}, Agents: a})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<h2>Agents</h2>`, `data-k="agents_state">stopped</span>`, `<tr data-wave="1"><td class="num">1 (canary)</td>`,
		`<span data-k="agents">2</span>: <code>002, 003</code>`, `<span class="badge no-go">no-go</span> no-go: 1 of 2 failed, at most 0 allowed`,
		`<span class="badge go">go</span>`, `<span class="badge not started">not started</span>`, `data-wave="2" data-agent="003"`, "(1819)",
		"fix: ", `<tr data-pending="005">`, "worker2 is not connected to the master (3022)</td>", `<tr data-pending="006">`, "disconnected: not sent",
		"2026-12-07 18:11:00Z"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(string(page), `"old"`) {
		t.Error("the older agent run is on the page")
	}
}
