package rollout_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// catShards is _cat/shards?format=json&h=index,shard,prirep,state,unassigned.reason,node of a
// three-node cluster mid-roll (indexer-1 already on the new version): the alerts index of the
// day has 3 shards and a replica each (Wazuh's template: auto_expand_replicas 0-1); shard 1's
// replica is recovering on indexer-2 after a restart, shard 2's primary is on indexer-1 with its
// replica unassigned (node_version: it cannot go to an older node); wazuh-monitoring has no
// replica (the dashboard's default wazuh.monitoring.replicas 0).
const catShards = `[
 {"index":"wazuh-alerts-4.x-2026.12.08","shard":"0","prirep":"p","state":"STARTED","unassigned.reason":null,"node":"indexer-3"},
 {"index":"wazuh-alerts-4.x-2026.12.08","shard":"0","prirep":"r","state":"STARTED","unassigned.reason":null,"node":"indexer-2"},
 {"index":"wazuh-alerts-4.x-2026.12.08","shard":"1","prirep":"p","state":"STARTED","unassigned.reason":null,"node":"indexer-3"},
 {"index":"wazuh-alerts-4.x-2026.12.08","shard":"1","prirep":"r","state":"INITIALIZING","unassigned.reason":"NODE_LEFT","node":"indexer-2"},
 {"index":"wazuh-alerts-4.x-2026.12.08","shard":"2","prirep":"p","state":"STARTED","unassigned.reason":null,"node":"indexer-1"},
 {"index":"wazuh-alerts-4.x-2026.12.08","shard":"2","prirep":"r","state":"UNASSIGNED","unassigned.reason":"INDEX_CREATED","node":null},
 {"index":"wazuh-monitoring-2026.49w","shard":"0","prirep":"p","state":"STARTED","unassigned.reason":null,"node":"indexer-3"},
 {"index":".opendistro_security","shard":"0","prirep":"p","state":"RELOCATING","unassigned.reason":null,"node":"indexer-3 -> 127.0.0.12 Xq2 indexer-2"},
 {"index":".opendistro_security","shard":"0","prirep":"r","state":"STARTED","unassigned.reason":null,"node":"indexer-1"},
 {"index":".kibana_1","shard":"0","prirep":"p","state":"RELOCATING","unassigned.reason":null,"node":"indexer-3 -> 127.0.0.11 Xq1 indexer-1"},
 {"index":".kibana_1","shard":"0","prirep":"r","state":"UNASSIGNED","unassigned.reason":"NODE_LEFT","node":null}
]`

func TestCopiesOn(t *testing.T) {
	var rows []struct {
		Index  string  `json:"index"`
		Shard  int     `json:"shard,string"`
		PriRep string  `json:"prirep"`
		State  string  `json:"state"`
		Node   *string `json:"node"`
	}
	if err := json.Unmarshal([]byte(catShards), &rows); err != nil {
		t.Fatal(err)
	}
	var shards []indexer.Shard
	for _, r := range rows {
		s := indexer.Shard{Index: r.Index, Shard: r.Shard, PriRep: r.PriRep, State: r.State}
		if r.Node != nil {
			s.Node = *r.Node
		}
		shards = append(shards, s)
	}
	for _, c := range []struct {
		node            string
		sole, noReplica []string
	}{
		// indexer-3 holds shard 1's only active copy (its replica still recovers): not yet.
		// .kibana_1's primary relocates away from it and its replica is unassigned: its only
		// active copy is still indexer-3's.
		{"indexer-3", []string{".kibana_1[0]", "wazuh-alerts-4.x-2026.12.08[1]"}, []string{"wazuh-monitoring-2026.49w[0]"}},
		// indexer-2 holds an active copy of shard 0 beside indexer-3's and a recovering one of 1.
		{"indexer-2", nil, nil},
		// indexer-1 holds shard 2's primary alone (its replica unassigned); the security index
		// has its relocating primary elsewhere, still active.
		{"indexer-1", []string{"wazuh-alerts-4.x-2026.12.08[2]"}, nil},
		{"indexer-9", nil, nil},
	} {
		got := rollout.CopiesOn(shards, c.node)
		if !slices.Equal(got.Sole, c.sole) || !slices.Equal(got.NoReplica, c.noReplica) {
			t.Errorf("%s: sole %v, no replica %v; want %v, %v", c.node, got.Sole, got.NoReplica, c.sole, c.noReplica)
		}
		if (got.Pending() == "") != (len(c.sole) == 0) || (got.Note() == "") != (len(c.noReplica) == 0) {
			t.Errorf("%s: pending %q, note %q", c.node, got.Pending(), got.Note())
		}
	}
}
