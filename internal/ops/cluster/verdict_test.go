package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// check compares a verdict with the level and the phrases it must hold.
func check(t *testing.T, v cluster.Verdict, level cluster.Level, summary, fix string) {
	t.Helper()
	if v.Level != level || !strings.Contains(v.Summary, summary) || !strings.Contains(v.Fix, fix) || fix == "" && v.Fix != "" {
		t.Errorf("verdict %+v, want level %d, summary with %q, fix with %q", v, level, summary, fix)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name    string
		h       indexer.Health
		level   cluster.Level
		summary string
		fix     string
	}{
		{"green", indexer.Health{Status: "green", NumberOfNodes: 3, NumberOfDataNodes: 3}, cluster.OK, "", ""},
		{"yellow on one node: replicas cannot be placed", indexer.Health{Status: "yellow", NumberOfNodes: 1, NumberOfDataNodes: 1, UnassignedShards: 4}, cluster.OK, "single node", ""},
		{"yellow on one data node beside a master-only node", indexer.Health{Status: "yellow", NumberOfNodes: 2, NumberOfDataNodes: 1, UnassignedShards: 4}, cluster.OK, "single node", ""},
		{"yellow on several data nodes", indexer.Health{Status: "yellow", NumberOfNodes: 3, NumberOfDataNodes: 3, UnassignedShards: 1}, cluster.Warn, "multi-node", "siemctl indexer shards --unassigned"},
		{"red", indexer.Health{Status: "red", NumberOfNodes: 1, NumberOfDataNodes: 1}, cluster.NoGo, "primary shard is unassigned", "roll back"},
		{"unknown status", indexer.Health{Status: "purple"}, cluster.Unknown, `"purple"`, "_cluster/health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, cluster.Status(tt.h), tt.level, tt.summary, tt.fix) })
	}
}

func TestRed(t *testing.T) {
	primary := []indexer.Shard{{Index: "siem-alerts-1", Shard: 0, PriRep: "r", State: "UNASSIGNED"}, {Index: "siem-lab-red", Shard: 0, PriRep: "p", State: "UNASSIGNED"}}
	noNode := indexer.Explanation{CanAllocate: "no", AllocateExplanation: "cannot allocate because allocation is not permitted to any of the nodes",
		Deciders: []indexer.Decider{{Decider: "filter", Decision: "NO", Explanation: `node does not match index setting [index.routing.allocation.require] filters [_name:"missing"]`}, {Decider: "same_shard", Decision: "YES"}}}
	red := indexer.Health{Status: "red", UnassignedShards: 2}
	tests := []struct {
		name    string
		h       indexer.Health
		node    node
		level   cluster.Level
		summary string
		calls   string
	}{
		{"initializing: wait", indexer.Health{Status: "red", InitializingShards: 1}, node{}, cluster.Wait, "1 shards initializing", ""},
		{"delayed: wait", indexer.Health{Status: "red", DelayedUnassignedShards: 2}, node{}, cluster.Wait, "2 delayed", ""},
		{"primary cannot be allocated: no-go with the deciders", red, node{shards: primary, explain: noNode}, cluster.NoGo,
			`cluster red: primary shard siem-lab-red[0] cannot be allocated (no): cannot allocate because allocation is not permitted to any of the nodes; filter: node does not match`, "shards explain siem-lab-red[0]"},
		{"primary throttled: wait", red, node{shards: primary, explain: indexer.Explanation{CanAllocate: "throttled"}}, cluster.Wait, "allocation throttled", "shards explain siem-lab-red[0]"},
		{"explain fails: wait", red, node{shards: primary, explainErr: errors.New("boom")}, cluster.Wait, "unassigned (boom)", "shards explain siem-lab-red[0]"},
		{"shards not readable: wait", red, node{shardsErr: errors.New("timeout")}, cluster.Wait, "shards not readable: timeout", "shards"},
		{"no unassigned primary listed (yet): wait", red, node{shards: primary[:1]}, cluster.Wait, "2 unassigned shards", "shards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node
			v := cluster.Red(context.Background(), &n, tt.h)
			if v.Level != tt.level || !strings.Contains(v.Summary, tt.summary) {
				t.Errorf("verdict %+v, want level %d with %q", v, tt.level, tt.summary)
			}
			if got := strings.Join(n.calls, " "); got != tt.calls {
				t.Errorf("calls %q, want %q", got, tt.calls)
			}
		})
	}
}

// TestAllocationBack: every value of cluster.routing.allocation.enable, in
// the cases OpenSearch accepts; and the two doors in this package that map
// it: Leftovers (a problem with its item) and Shards (a hint, only with
// unassigned shards).
func TestAllocationBack(t *testing.T) {
	tests := []struct {
		name  string
		s     indexer.Settings
		level cluster.Level
		item  string
	}{
		{"unset", indexer.Settings{}, cluster.OK, ""},
		{"default all", indexer.Settings{Defaults: map[string]string{indexer.KeyAllocationEnable: "all"}}, cluster.OK, ""},
		{"all set back persistently", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "all"}}, cluster.OK, ""},
		{"ALL: OpenSearch reads any case", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "ALL"}}, cluster.OK, ""},
		{"primaries", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "primaries"}}, cluster.Wait, "cluster.routing.allocation.enable=primaries (persistent)"},
		{"new_primaries", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "new_primaries"}}, cluster.Wait, "cluster.routing.allocation.enable=new_primaries (persistent)"},
		{"none, transient over a persistent all", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "all"}, Transient: map[string]string{indexer.KeyAllocationEnable: "none"}},
			cluster.Wait, "cluster.routing.allocation.enable=none (transient)"},
		{"PRIMARIES", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "PRIMARIES"}}, cluster.Wait, "cluster.routing.allocation.enable=PRIMARIES (persistent)"},
	}
	unassigned := []indexer.Shard{{Index: "idx", Shard: 0, PriRep: "r", State: "UNASSIGNED"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := cluster.AllocationBack(tt.s)
			wantFix := ""
			if tt.level != cluster.OK {
				wantFix = "siemctl indexer allocation all"
			}
			if v.Level != tt.level || strings.Join(v.Items, "|") != tt.item || v.Fix != wantFix {
				t.Fatalf("AllocationBack = %+v, want level %d, item %q, fix %q", v, tt.level, tt.item, wantFix)
			}
			if l := cluster.Leftovers(tt.s, cluster.LeftoverOptions{}); l.Level != tt.level || strings.Join(l.Items, "|") != tt.item {
				t.Errorf("Leftovers = %+v, want level %d with item %q", l, tt.level, tt.item)
			}
			n := &node{persistent: tt.s.Persistent, transient: tt.s.Transient, shards: unassigned, explainErr: errors.New("no explanation")}
			rep, err := cluster.Shards(context.Background(), n, true, 0)
			if err != nil {
				t.Fatal(err)
			}
			hint := strings.Join(rep.Hints, "|")
			if got := strings.Contains(hint, "set it back with `siemctl indexer allocation all`"); got != (tt.level != cluster.OK) {
				t.Errorf("Shards hints %q (want the allocation hint: %v)", hint, tt.level != cluster.OK)
			}
		})
	}
	n := &node{persistent: map[string]string{indexer.KeyAllocationEnable: "primaries"}, shards: []indexer.Shard{{Index: "idx", State: "STARTED", PriRep: "p"}}}
	if rep, err := cluster.Shards(context.Background(), n, false, 0); err != nil || len(rep.Hints) != 0 {
		t.Errorf("no unassigned shard, no hint: %q %v", rep.Hints, err)
	}
}

func TestSettingsVerdicts(t *testing.T) {
	const low = "cluster.routing.allocation.disk.watermark.low"
	tests := []struct {
		name       string
		s          indexer.Settings
		persistent bool
		level      cluster.Level
		items      string
		fix        string
	}{
		{"clean", indexer.Settings{}, true, cluster.OK, "", ""},
		{"allocation left at primaries", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "primaries"}}, false,
			cluster.Wait, "cluster.routing.allocation.enable=primaries (persistent)", "siemctl indexer allocation all"},
		{"transient watermark override", indexer.Settings{Transient: map[string]string{low: "95%"}}, false,
			cluster.Wait, "transient " + low + "=95%", "siemctl indexer watermark --clear"},
		{"persistent watermark override: not an upgrade's leftover", indexer.Settings{Persistent: map[string]string{low: "90%"}}, false, cluster.OK, "", ""},
		{"persistent watermark override, counted", indexer.Settings{Persistent: map[string]string{low: "90%"}}, true,
			cluster.Wait, "persistent " + low + "=90%", "siemctl indexer watermark --clear"},
		{"both, one fix each", indexer.Settings{Persistent: map[string]string{indexer.KeyAllocationEnable: "none"}, Transient: map[string]string{low: "95%", "cluster.routing.allocation.disk.watermark.high": "95%"}}, false,
			cluster.Wait, "cluster.routing.allocation.enable=none (persistent)|transient cluster.routing.allocation.disk.watermark.high=95%|transient " + low + "=95%",
			"siemctl indexer allocation all; siemctl indexer watermark --clear"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := cluster.Leftovers(tt.s, cluster.LeftoverOptions{Persistent: tt.persistent})
			if v.Level != tt.level || strings.Join(v.Items, "|") != tt.items || v.Fix != tt.fix {
				t.Errorf("verdict %+v, want level %d, items %q, fix %q", v, tt.level, tt.items, tt.fix)
			}
		})
	}
	check(t, cluster.Archived(indexer.Settings{}), cluster.OK, "no archived", "")
	check(t, cluster.Archived(indexer.Settings{Persistent: map[string]string{"archived.xpack.monitoring.enabled": "true"}, Transient: map[string]string{"archived.foo": "1"}}),
		cluster.NoGo, "2 archived (unknown) settings: archived.foo, archived.xpack.monitoring.enabled", `{"persistent":{"archived.*":null},"transient":{"archived.*":null}}`)
}

func TestShadowing(t *testing.T) {
	const idx = "siem-alerts-4.x-2025.01.13"
	tests := []struct {
		name    string
		sim     indexer.Simulation
		level   cluster.Level
		summary string
		fix     string
	}{
		{"legacy template wins", indexer.Simulation{Legacy: []indexer.LegacyMatch{{Name: "siem", Order: 1}}, Applied: []string{"siem"}}, cluster.OK, "template siem wins for " + idx, ""},
		{"higher-order legacy template", indexer.Simulation{Legacy: []indexer.LegacyMatch{{Name: "siem", Order: 1}, {Name: "custom", Order: 5}}, Applied: []string{"siem", "custom"}},
			cluster.NoGo, `template "siem" is shadowed for ` + idx + " by custom", "delete or narrow the shadowing template(s) (custom)"},
		{"composable template wins over legacy", indexer.Simulation{Composable: "logs", Legacy: []indexer.LegacyMatch{{Name: "siem", Order: 1}}, Applied: []string{"logs"}},
			cluster.NoGo, "by logs", "roll over to a new index"},
		{"not loaded yet", indexer.Simulation{Applied: []string{}}, cluster.OK, "does not apply to " + idx + " yet (applied: none)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, cluster.Shadowing(tt.sim, "siem", idx), tt.level, tt.summary, tt.fix) })
	}
}

func TestDisk(t *testing.T) {
	limits := cluster.DiskLimits{Warn: 85, NoGo: 95, MinFree: 20}
	tests := []struct {
		name    string
		use     cluster.DiskUse
		limits  cluster.DiskLimits
		level   cluster.Level
		summary string
		fix     string
	}{
		{"plenty free", cluster.DiskUse{UsedPercent: 40}, limits, cluster.OK, "disk 40% used, no read-only blocks", ""},
		{"above the warning level, enough free for an upgrade", cluster.DiskUse{UsedPercent: 79}, cluster.DiskLimits{Warn: 75, NoGo: 95, MinFree: 20}, cluster.Warn, "disk 79% used (> 75%)", "siemctl alerts cleanup --disk-above 75"},
		{"too little free for an upgrade", cluster.DiskUse{UsedPercent: 86}, limits, cluster.NoGo, "14% free: an upgrade needs at least 20% free", "siemctl alerts cleanup --disk-above 85"},
		{"health has no free-space minimum: warn", cluster.DiskUse{UsedPercent: 86}, cluster.DiskLimits{Warn: 85, NoGo: 95}, cluster.Warn, "disk 86% used (> 85%)", "cleanup"},
		{"above the no-go limit", cluster.DiskUse{UsedPercent: 97}, limits, cluster.NoGo, "disk 97% used (> 95%)", "free disk: siemctl alerts cleanup --disk-above 85"},
		{"read-only blocks beat everything", cluster.DiskUse{UsedPercent: 10, Blocked: []string{"siem-alerts-1 (read_only_allow_delete)"}}, limits, cluster.NoGo, "1 index(es) blocked read-only", `"index.blocks.read_only_allow_delete": null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, cluster.Disk(tt.use, tt.limits), tt.level, tt.summary, tt.fix) })
	}
}
