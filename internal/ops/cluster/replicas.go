package cluster

import (
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
)

// RollSearchGap is what a rolling upgrade does to searches of indices with no replica: while the
// node holding such an index's shards restarts, searches of it fail ("all shards failed", HTTP 503,
// from every node), since no other node has a copy to answer from. Wazuh's template gives the alert
// indices auto_expand_replicas "0-1" (which wins over its number_of_replicas 0), so on a stock
// multi-node site every alerts index has a replica; the gap is a site's that changed the template
// or the indices.
type RollSearchGap struct {
	Indices []string `json:"indices"` // open indices with no replica
	// Fix gives every index of the pattern Wazuh's auto_expand_replicas "0-1" (one replica on two
	// or more nodes; number_of_replicas alone is overridden where auto_expand_replicas is set).
	Fix APICall `json:"fix"`
	// Template is what keeps tomorrow's index replicated too: the same setting in the alerts
	// template.
	Template string `json:"template"`
}

// SearchGap finds the open indices of _cat/indices rows (those of pattern) with no replica on a
// cluster of nodes nodes; nil when there is none or one node (a single node has no roll).
func SearchGap(rows []indexer.Index, pattern string, nodes int) *RollSearchGap {
	if nodes < 2 {
		return nil
	}
	var gap []string
	for _, r := range rows {
		if r.Rep == 0 && r.Status != "close" {
			gap = append(gap, r.Name)
		}
	}
	if len(gap) == 0 {
		return nil
	}
	return &RollSearchGap{Indices: gap, Fix: *indexSettings([]string{pattern}, `{"index":{"auto_expand_replicas":"0-1"}}`),
		Template: `set "index.auto_expand_replicas": "0-1" in the alerts template the shipper loads (Wazuh's wazuh-template.json has it; ` +
			`an upgrade loads the one shipper.template_source names) and load it again, so each new daily index has its replica too`}
}

// String names the gap, its cost and its fix (curl against baseURL as user, TLS by caFile).
func (g RollSearchGap) String(baseURL, user, caFile string, insecure bool) string {
	sample := g.Indices
	more := ""
	if len(sample) > 3 {
		sample, more = sample[:3], fmt.Sprintf(" and %d more", len(g.Indices)-3)
	}
	return fmt.Sprintf("%d alert indices have no replica (%s%s): searches of them fail while the node holding their shards "+
		"restarts; for whole searches through the roll, before upgrade apply --cluster: %s, then wait for green "+
		"(each index's data is copied once more: check the disk); and %s",
		len(g.Indices), strings.Join(sample, ", "), more, g.Fix.Curl(baseURL, user, caFile, insecure), g.Template)
}
