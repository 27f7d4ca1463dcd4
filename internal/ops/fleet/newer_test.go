package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/verdict"
)

type listerFunc func() ([]manager.Agent, error)

func (f listerFunc) ListAgents(context.Context, manager.AgentQuery) ([]manager.Agent, error) {
	return f()
}

func agentsAt(versions ...string) []manager.Agent {
	out := []manager.Agent{{ID: "000", Name: "siem01", Version: "Wazuh v9.9.9"}} // the manager never counts
	for i, v := range versions {
		out = append(out, manager.Agent{ID: fmt.Sprintf("%03d", i+1), Name: fmt.Sprintf("web-%02d", i+1), Status: "active", Version: v})
	}
	return out
}

// One table for the verdict that `agents outdated`, the agents health check
// and gate.agents read.
func TestAgentsNewerThan(t *testing.T) {
	ref, _ := manager.ParseVersion("4.9.0")
	tests := []struct {
		name                    string
		agents                  []manager.Agent
		err                     error
		ok                      bool
		count, checked, unknown int
		first                   int
		text                    string
	}{
		{"same, older and unknown", agentsAt("Wazuh v4.9.0", "Wazuh v4.8.2", "", "garbage"), nil, true, 0, 2, 2, 0,
			"2 agents checked, none newer than the manager 4.9.0 (2 without a known version)"},
		{"only the manager", agentsAt(), nil, true, 0, 0, 0, 0, "0 agents checked, none newer than the manager 4.9.0"},
		{"one newer patch", agentsAt("Wazuh v4.9.0", "Wazuh v4.9.1"), nil, false, 1, 2, 0, 1,
			"1 agent(s) newer than the manager 4.9.0: 002 (web-02) 4.9.1"},
		{"seven newer: five named", agentsAt("v4.10.0", "v4.10.0", "v4.10.0", "v4.10.0", "v4.10.0", "v4.10.0", "v5.0.0"), nil, false, 7, 7, 0, 5,
			"7 agent(s) newer than the manager 4.9.0: 001 (web-01) 4.10.0, 002 (web-02) 4.10.0, 003 (web-03) 4.10.0, 004 (web-04) 4.10.0, 005 (web-05) 4.10.0 and 2 more"},
		{"listing fails", nil, &manager.APIError{Status: 502}, false, 0, 0, 0, 0, "list agents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := AgentsNewerThan(context.Background(), listerFunc(func() ([]manager.Agent, error) { return tt.agents, tt.err }), ref, "the manager")
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.text) {
					t.Fatalf("err = %v, want it to wrap %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.OK() != tt.ok || n.Count != tt.count || n.Checked != tt.checked || n.Unknown != tt.unknown || len(n.First) != tt.first {
				t.Errorf("verdict %+v", n)
			}
			if n.Summary != tt.text {
				t.Errorf("summary\n got %q\nwant %q", n.Summary, tt.text)
			}
			if wantLevel := map[bool]verdict.Level{true: verdict.OK, false: verdict.NoGo}[tt.ok]; n.Level != wantLevel || len(n.Items) != tt.first {
				t.Errorf("level %v items %q, want level %v and %d items", n.Level, n.Items, wantLevel, tt.first)
			}
		})
	}
}
