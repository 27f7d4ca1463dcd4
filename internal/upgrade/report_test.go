package upgrade

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/steps"
)

// reportHas renders r as text and checks that it holds each of wants.
func reportHas(t *testing.T, r RunReport, wants ...string) {
	t.Helper()
	ios, _, _, _ := output.Test()
	var b bytes.Buffer
	if err := r.Render(&b, false, ios.Colors()); err != nil {
		t.Fatal(err)
	}
	for _, want := range wants {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestReportFleetAndWatch(t *testing.T) {
	r := RunReport{RunID: "r1", Runbook: "upgrade", Status: "rolled-back", Steps: []StepReport{},
		Fleet: &FleetReport{
			Before: &snapshot.Agents{Total: 20, ByStatus: map[string]int{"active": 10, "disconnected": 10}, ByVersion: map[string]int{"Wazuh v4.9.0": 20}},
			After:  &snapshot.Agents{Total: 20, ByStatus: map[string]int{"active": 9, "disconnected": 11}, ByVersion: map[string]int{"Wazuh v4.9.0": 20}},
		},
		Watch: &watch.State{Start: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), Window: "20m0s", Intervals: 7,
			Breach: &watch.BreachEvidence{Criterion: watch.CritAgents, Reason: "9 of 10 agents active before are active (90% < 95%)"}},
	}
	reportHas(t, r,
		"agents before: 20 agents: active 10, disconnected 10; by version: Wazuh v4.9.0 20",
		"agents after:  20 agents: active 9, disconnected 11; by version: Wazuh v4.9.0 20",
		"watch:         20m0s from 2026-11-24T01:00:00Z: breach after 7 intervals: agents: 9 of 10 agents active before are active (90% < 95%)",
	)
}

// The finish of a roll journals the roll's summary: the run's report (text, JSON, the HTML page)
// shows every entry of the record and the totals.
func TestReportRoll(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	rec := rollout.Record{RunID: "roll1", From: "4.9.0", Target: "4.10.0", Phase: rollout.PhaseDone, Created: t0, CreatedBy: "indexer-1",
		Order: []rollout.Entry{
			{Name: "indexer/indexer-1", Role: rollout.RoleIndexer, Host: "indexer-1", State: rollout.Done, Attempts: 1, Started: t0.Add(10 * time.Second), Finished: t0.Add(40 * time.Second)},
			{Name: "manager/manager-2", Role: rollout.RoleManagerWorker, Host: "manager-2", State: rollout.Done, Attempts: 2, Started: t0.Add(50 * time.Second), Finished: t0.Add(95 * time.Second)},
		}}
	raw, err := json.Marshal(rec.Summarize(t0.Add(100 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	ri := &engine.RunInfo{ID: "r1", Runbook: engine.RunbookRef{Name: "cluster-finish"}, Status: engine.StatusSucceeded, Started: t0, Data: map[string]json.RawMessage{steps.KeyRoll: raw}}
	r := NewRunReport(ri, nil)
	if r.Roll == nil || len(r.Roll.Entries) != 2 {
		t.Fatalf("report's roll: %+v", r.Roll)
	}
	reportHas(t, r,
		"roll1 4.9.0 → 4.10.0: 2 entries (2 done), 3 attempts, turns 75.0s of 100.0s wall; resumed: manager/manager-2",
		"manager/manager-2\tmanager-worker\tmanager-2\t2026-11-28T04:00:50Z\t45.0s\tdone\t2",
	)
	page, err := RenderHTML(&Evidence{Report: r, Gates: []GateRow{}, Versions: []VersionRow{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<h2>The roll</h2>`, `data-entry="indexer/indexer-1"`, `data-seconds="45.000"`, "resumed: manager/manager-2"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
