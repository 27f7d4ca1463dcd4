package upgrade

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/steps"
)

func TestReportFleetAndWatch(t *testing.T) {
	r := RunReport{RunID: "r1", Runbook: "upgrade", Status: "rolled-back", Steps: []StepReport{},
		Fleet: &FleetReport{
			Before: &snapshot.Agents{Total: 20, ByStatus: map[string]int{"active": 10, "disconnected": 10}, ByVersion: map[string]int{"Wazuh v4.9.0": 20}},
			After:  &snapshot.Agents{Total: 20, ByStatus: map[string]int{"active": 9, "disconnected": 11}, ByVersion: map[string]int{"Wazuh v4.9.0": 20}},
		},
		Watch: &steps.WatchState{Start: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), Window: "20m0s", Intervals: 7,
			Breach: &steps.WatchBreachEvidence{Criterion: steps.CritAgents, Reason: "9 of 10 agents active before are active (90% < 95%)"}},
	}
	ios, _, _, _ := output.Test()
	var b bytes.Buffer
	if err := r.Render(&b, false, ios.Colors()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"agents before: 20 agents: active 10, disconnected 10; by version: Wazuh v4.9.0 20",
		"agents after:  20 agents: active 9, disconnected 11; by version: Wazuh v4.9.0 20",
		"watch:         20m0s from 2026-11-24T01:00:00Z: breach after 7 intervals: agents: 9 of 10 agents active before are active (90% < 95%)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
