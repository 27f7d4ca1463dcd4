package health

import (
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// The disk move: path.data pointed at a new, empty directory; the
// cluster is green and today's index takes new alerts (2 docs instead of
// 94), every earlier document out of view.
func TestJudgeDataForgotten(t *testing.T) {
	prev := &snapshot.Document{ID: "20261207T170000.000000Z-abc123", TakenAt: "2026-12-07T17:00:00.000000Z", Indexer: snapshot.Indexer{
		Reachable: true, ClusterUUID: "9vVwSOlTRLyLzWJUh7ZzPQ", PathData: "/var/lib/wazuh-indexer",
		Indices: []snapshot.Index{
			{Name: "wazuh-alerts-4.x-2026.12.07", DocsCount: 94},
			{Name: "wazuh-alerts-4.x-2026.12.06", DocsCount: 310},
			{Name: ".opendistro_security", DocsCount: 10},
		}}}
	holds := func(p string) bool { return p == "/var/lib/wazuh-indexer" }
	moved := DataNow{ClusterUUID: "Qx3lmL0ZTXq3J0cVbD5e7w", PathData: "/data/wazuh-indexer", Indices: []indexer.Index{
		{Name: "wazuh-alerts-4.x-2026.12.07", DocsCount: 2}, {Name: ".opendistro_security", DocsCount: 10}}}
	r := JudgeData(prev, moved, holds, "/etc/wazuh-indexer")
	ev := strings.Join(r.Evidence, "\n")
	if r.Status != Crit || !strings.Contains(r.Summary, "not the one of snapshot 20261207T170000.000000Z-abc123") ||
		!strings.Contains(ev, "path.data /var/lib/wazuh-indexer in snapshot") || !strings.Contains(ev, "/var/lib/wazuh-indexer still holds a node's data") ||
		!strings.Contains(ev, "wazuh-alerts-4.x-2026.12.06 (310 docs)") || !strings.Contains(ev, "wazuh-alerts-4.x-2026.12.07 94 → 2 docs") ||
		!strings.Contains(r.Fix, "set path.data back to /var/lib/wazuh-indexer in /etc/wazuh-indexer/opensearch.yml") {
		t.Fatalf("%s %q fix %q evidence %v", r.Status, r.Summary, r.Fix, r.Evidence)
	}
	// the same UUID unknown (an older snapshot) still sees it through path.data
	prev.Indexer.ClusterUUID = ""
	if r := JudgeData(prev, moved, holds, "/etc/wazuh-indexer"); r.Status != Crit || !strings.Contains(r.Summary, "forgot its data: 402 of 414 documents") {
		t.Fatalf("%s %q", r.Status, r.Summary)
	}
	// an index removed by retention: WARN, not CRIT
	kept := DataNow{PathData: "/var/lib/wazuh-indexer", Indices: []indexer.Index{{Name: "wazuh-alerts-4.x-2026.12.07", DocsCount: 120}, {Name: ".opendistro_security", DocsCount: 10}}}
	if r := JudgeData(prev, kept, holds, "/etc/wazuh-indexer"); r.Status != Warn || !strings.Contains(r.Fix, "alerts cleanup") {
		t.Fatalf("retention: %s %q %q", r.Status, r.Summary, r.Fix)
	}
	// all there, more documents: OK
	kept.Indices = append(kept.Indices, indexer.Index{Name: "wazuh-alerts-4.x-2026.12.06", DocsCount: 310})
	if r := JudgeData(prev, kept, holds, "/etc/wazuh-indexer"); r.Status != OK {
		t.Fatalf("continuous: %s %q %v", r.Status, r.Summary, r.Evidence)
	}
	// A new cluster with every document (siemctl's rollback from a snapshot: the old version on an
	// empty data directory, the snapshot restored): OK, the re-creation said.
	prev.Indexer.ClusterUUID = "9vVwSOlTRLyLzWJUh7ZzPQ"
	kept.ClusterUUID = "cxMpkDu3SZ-pEEjAOnjW8w"
	if r := JudgeData(prev, kept, holds, "/etc/wazuh-indexer"); r.Status != OK || !strings.Contains(r.Summary, "re-created (cluster UUID cxMpkDu3SZ-pEEjAOnjW8w, was 9vVwSOlTRLyLzWJUh7ZzPQ) and holds every index and document") {
		t.Fatalf("re-created with its data: %s %q %v", r.Status, r.Summary, r.Evidence)
	}
	// The same new cluster with an index gone: it forgot its data.
	kept.Indices = kept.Indices[:2]
	if r := JudgeData(prev, kept, holds, "/etc/wazuh-indexer"); r.Status != Crit || !strings.Contains(r.Summary, "not the one of snapshot") || !strings.Contains(r.Summary, "310 of 414 documents out of view") {
		t.Fatalf("re-created without an index: %s %q %v", r.Status, r.Summary, r.Evidence)
	}
}

// A node started on an empty path.data may not answer at all (no security index there either):
// the move is judged from the files, CRIT with the fix, not UNKNOWN behind indexer.api.
func TestJudgeMovedDataWithoutTheCluster(t *testing.T) {
	prev := &snapshot.Document{ID: "20261207T170000.000000Z-abc123", TakenAt: "2026-12-07T17:00:00.000000Z", Indexer: snapshot.Indexer{
		Reachable: true, PathData: "/var/lib/wazuh-indexer", Indices: []snapshot.Index{{Name: "wazuh-alerts-4.x-2026.12.07", DocsCount: 94}}}}
	// the node started on the new directory: nodes/0 there, none of the indices
	dirs := map[string]int{"/var/lib/wazuh-indexer": 12, "/data/wazuh-indexer": 0}
	count := func(p string) int { return dirs[p] }
	r, moved := judgeMovedData(prev, "/data/wazuh-indexer", count, "/etc/wazuh-indexer")
	if !moved || r.Status != Crit || !strings.Contains(r.Summary, "path.data moved away from the node's data: /data/wazuh-indexer in /etc/wazuh-indexer/opensearch.yml holds 0 of the 12 indices") ||
		!strings.Contains(r.Fix, "set path.data back to /var/lib/wazuh-indexer in /etc/wazuh-indexer/opensearch.yml") ||
		!strings.Contains(strings.Join(r.Evidence, " "), "/var/lib/wazuh-indexer still holds a node's data (12 index directories)") {
		t.Fatalf("moved: %v %s %q fix %q %v", moved, r.Status, r.Summary, r.Fix, r.Evidence)
	}
	// the new directory a copy of the old (a real disk move): nothing to say from the files
	dirs["/data/wazuh-indexer"] = 12
	if _, moved := judgeMovedData(prev, "/data/wazuh-indexer", count, "/etc/wazuh-indexer"); moved {
		t.Error("a copied data directory judged as moved away")
	}
	// path.data unchanged, or the old directory without indices: nothing to say
	if _, moved := judgeMovedData(prev, "/var/lib/wazuh-indexer", count, "/etc/wazuh-indexer"); moved {
		t.Error("unchanged path.data judged as moved")
	}
	dirs["/var/lib/wazuh-indexer"], dirs["/data/wazuh-indexer"] = 0, 0
	if _, moved := judgeMovedData(prev, "/data/wazuh-indexer", count, "/etc/wazuh-indexer"); moved {
		t.Error("moved from a directory that holds nothing")
	}
}
