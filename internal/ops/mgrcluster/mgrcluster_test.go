package mgrcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	master := manager.ClusterNode{Name: "master-node", Type: "master", Version: "4.9.0", IP: "10.0.0.1", ActiveAgents: 2}
	worker := func(name, version string, ka time.Duration) manager.ClusterNode {
		return manager.ClusterNode{Name: name, Type: "worker", Version: version, IP: "10.0.0.2", ActiveAgents: 5, LastKeepAlive: now.Add(-ka)}
	}
	tests := []struct {
		name    string
		f       Facts
		level   cluster.Level
		summary string
	}{
		{"healthy", Facts{Nodes: []manager.ClusterNode{master, worker("worker1", "4.9.0", 30*time.Second)},
			Ruleset: []manager.RulesetSync{{Name: "master-node", Synced: true}, {Name: "worker1", Synced: true}}, Expected: []string{"master-node", "worker1"}},
			cluster.OK, "2 node(s) connected, all on 4.9.0, keepalives fresh, rulesets in sync, 7 active agent(s)"},
		{"ruleset out of sync", Facts{Nodes: []manager.ClusterNode{master, worker("worker1", "4.9.0", 30*time.Second)},
			Ruleset: []manager.RulesetSync{{Name: "master-node", Synced: true}, {Name: "worker1", Synced: false}}},
			cluster.Warn, "worker1: ruleset not in sync with the master"},
		{"missing and stale", Facts{Nodes: []manager.ClusterNode{master, worker("worker1", "4.9.0", 3*time.Minute)},
			Expected: []string{"master-node", "worker1", "worker2"}},
			cluster.NoGo, "worker2 not connected to the master (2/3 nodes connected); worker1: last keepalive 3m0s ago (> 2m0s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Now = now
			v, lines := Judge(tc.f)
			if v.Level != tc.level || v.Summary != tc.summary {
				t.Fatalf("got %d %q, want %d %q", v.Level, v.Summary, tc.level, tc.summary)
			}
			if tc.level != cluster.OK && v.Fix == "" {
				t.Fatal("no fix")
			}
			for _, l := range lines {
				if !strings.HasPrefix(l.Text, l.Name+": ") {
					t.Errorf("line %q does not start with its node", l.Text)
				}
			}
		})
	}
}

// Each node's count is the master's database counted by the node its agents report to: the counts
// add up to the cluster's active agents, each agent once.
func TestActiveAgents(t *testing.T) {
	nodes := []manager.ClusterNode{{Name: "manager-1", Type: "master", Version: "4.9.0", ActiveAgents: 3},
		{Name: "manager-2", Type: "worker", Version: "4.9.0", ActiveAgents: 2}, {Name: "manager-3", Type: "worker", Version: "4.9.0"}}
	total, by := ActiveAgents(nodes)
	if total != 5 || len(by) != 3 || by["manager-1"] != 3 || by["manager-2"] != 2 || by["manager-3"] != 0 {
		t.Fatalf("total %d, by node %v", total, by)
	}
	if total, by := ActiveAgents(nil); total != 0 || len(by) != 0 {
		t.Fatalf("no node: %d %v", total, by)
	}
}
