package cluster

import (
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
)

func TestNodes(t *testing.T) {
	roles := []string{"cluster_manager", "data", "ingest"}
	versions := []indexer.NodeVersion{{Name: "n1", Version: "2.19.3", Roles: roles}, {Name: "n2", Version: "2.19.3", Roles: roles}}
	stats := []indexer.Node{{Name: "n1", HeapPercent: 40, DiskUsedPercent: 50}, {Name: "n2", HeapPercent: 95, DiskUsedPercent: 50}}
	limits := NodeLimits{HeapWarn: 90, DiskWarn: 85, DiskNoGo: 95}
	v, lines := Nodes(NodeFacts{Versions: versions, Stats: stats, Manager: "n1"}, limits)
	if v.Level != Warn || v.Summary != "n2 heap 95% used" || len(lines) != 2 || lines[1].Level != Warn {
		t.Fatalf("heap: %+v %+v", v, lines)
	}
	v, _ = Nodes(NodeFacts{Versions: versions, Stats: stats[:1]}, limits)
	if v.Level != NoGo || v.Summary != "no elected cluster manager" {
		t.Fatalf("no manager: %+v", v)
	}
	stats[1].HeapPercent, stats[1].DiskUsedPercent = 10, 97
	v, _ = Nodes(NodeFacts{Versions: versions, Stats: stats, Manager: "n1"}, limits)
	if v.Level != NoGo || v.Fix != "free disk on n2" {
		t.Fatalf("disk: %+v", v)
	}
}
