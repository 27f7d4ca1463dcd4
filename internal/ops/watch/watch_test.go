package watch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/units"
)

type stack struct {
	status   string
	count    int64
	agents   []manager.Agent
	unit     units.UnitStatus
	probeErr error
}

func (s *stack) Health(context.Context, indexer.HealthRequest) (indexer.Health, error) {
	return indexer.Health{Status: s.status}, nil
}

func (s *stack) Count(context.Context, string, string, time.Time) (int64, error) { return s.count, nil }

func (s *stack) ListAgents(context.Context, manager.AgentQuery) ([]manager.Agent, error) {
	return s.agents, nil
}

func (s *stack) Status(context.Context, ...string) ([]units.UnitStatus, error) {
	return []units.UnitStatus{s.unit}, nil
}

func (s *stack) sources() Sources {
	return Sources{
		Indexer:     func() (Indexer, error) { return s, nil },
		Manager:     func() (fleet.Lister, error) { return s, nil },
		Units:       func(context.Context) (Units, error) { return s, nil },
		UnitNames:   []string{s.unit.Name},
		AlertsIndex: "siem-alerts-*",
		Probe: func(context.Context) (probe.Report, error) {
			if s.probeErr != nil {
				return probe.Report{}, s.probeErr
			}
			return probe.Report{OK: true}, nil
		},
	}
}

// TestJudge: one table of stacks against the default criteria, judged
// twice (the criteria that need intervals in a row breach on the second);
// a quiet stack passes and every criterion is judged.
func TestJudge(t *testing.T) {
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	active := units.UnitStatus{Name: "siem-manager.service", ActiveState: units.Active, ActiveSince: start}
	web := manager.Agent{ID: "001", Name: "web-01", Status: manager.AgentActive}
	before := []fleet.AgentRef{{ID: "001", Name: "web-01"}}
	for _, tt := range []struct {
		name  string
		s     stack
		crit  string
		match string
	}{
		{"quiet", stack{status: "green", count: 50, agents: []manager.Agent{web}, unit: active}, "", ""},
		{"red", stack{status: "red", count: 50, agents: []manager.Agent{web}, unit: active}, CritCluster, "cluster status red"},
		{"agents gone", stack{status: "green", count: 50, unit: active}, CritAgents, "0 of 1 agents active before are active"},
		{"unit down", stack{status: "green", count: 50, agents: []manager.Agent{web}, unit: units.UnitStatus{Name: "siem-manager.service", ActiveState: "failed", SubState: "failed"}}, CritUnits, "not active for 2 intervals"},
		{"probe fails", stack{status: "green", count: 50, agents: []manager.Agent{web}, unit: active, probeErr: errors.New("no event indexed")}, CritProbe, "failed 2 times in a row"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCriteria()
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			st := NewState(start, 20*time.Minute)
			st.AlertBaseline = 10
			w := New(tt.s.sources(), c, st, before, true, 20*time.Minute)
			var b *BreachError
			for i, now := range []time.Time{start.Add(6 * time.Minute), start.Add(7 * time.Minute)} {
				if b = w.Judge(context.Background(), now, i == 1); b != nil {
					break
				}
			}
			switch {
			case tt.crit == "" && b != nil:
				t.Fatalf("breach on a quiet stack: %v", b)
			case tt.crit == "":
				if nj := st.NotJudged(); len(nj) != 0 {
					t.Errorf("not judged: %v (%s)", nj, st.Line())
				}
			case b == nil || b.Criterion != tt.crit || !strings.Contains(b.Reason, tt.match):
				t.Fatalf("breach %v, want %s: %q", b, tt.crit, tt.match)
			}
		})
	}
}

func TestCriteria(t *testing.T) {
	c := NewCriteria()
	if least, _ := c.MinWindow(); least != 2*time.Minute {
		t.Errorf("min window with the probe: %s, want 4 × max(30s interval, 30s probe timeout)", least)
	}
	c.ProbeEvery = 0
	if least, _ := c.MinWindow(); least != 6*time.Minute {
		t.Errorf("min window without the probe: %s, want the 5m lookback and 2 intervals", least)
	}
	bad := NewCriteria()
	bad.ClusterBreach, bad.AgentsMinRatio = "orange", 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "cluster_breach") || !strings.Contains(err.Error(), "agents_min_ratio") {
		t.Errorf("every problem at once: %v", err)
	}
}
