package cluster

import (
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
)

// RollSearchGap is what a rolling upgrade does to searches of indices with no replica: while the
// node holding such an index's shards restarts, searches of it fail ("all shards failed", HTTP 503,
// from every node), since no other node has a copy to answer from. Wazuh's template creates the
// alert indices with number_of_replicas 0, so a stock multi-node site has this gap.
type RollSearchGap struct {
	Indices []string `json:"indices"` // open indices with no replica
	Fix     APICall  `json:"fix"`     // one replica on every index of the pattern
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
	return &RollSearchGap{Indices: gap, Fix: *indexSettings([]string{pattern}, `{"index":{"number_of_replicas":1}}`)}
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
		"(each index's data is copied once more: check the disk)",
		len(g.Indices), strings.Join(sample, ", "), more, g.Fix.Curl(baseURL, user, caFile, insecure))
}
