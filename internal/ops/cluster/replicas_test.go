package cluster

import (
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
)

func TestSearchGap(t *testing.T) {
	rows := []indexer.Index{
		{Name: "wazuh-alerts-4.x-2026.11.27", Status: "open", Pri: 3, Rep: 0},
		{Name: "wazuh-alerts-4.x-2026.11.28", Status: "open", Pri: 3, Rep: 1},
		{Name: "wazuh-alerts-4.x-2026.10.01", Status: "close", Pri: 3, Rep: 0},
	}
	if g := SearchGap(rows, "wazuh-alerts-*", 1); g != nil {
		t.Errorf("one node: %v, want no gap (no roll)", g)
	}
	if g := SearchGap(rows[1:2], "wazuh-alerts-*", 3); g != nil {
		t.Errorf("every open index replicated: %v, want no gap", g)
	}
	g := SearchGap(rows, "wazuh-alerts-*", 3)
	if g == nil || len(g.Indices) != 1 || g.Indices[0] != "wazuh-alerts-4.x-2026.11.27" {
		t.Fatalf("gap %+v, want the open index with no replica only", g)
	}
	if got := g.Fix.String(); got != `PUT /wazuh-alerts-%2A/_settings {"index":{"auto_expand_replicas":"0-1"}}` {
		t.Errorf("fix %s", got)
	}
	msg := g.String("https://10.0.0.1:9200", "admin", "/etc/ca.pem", false)
	for _, want := range []string{"1 alert indices have no replica (wazuh-alerts-4.x-2026.11.27)", "curl -u admin --cacert /etc/ca.pem -X PUT", "auto_expand_replicas", "wait for green", `"index.auto_expand_replicas": "0-1" in the alerts template`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
