package cluster_test

import (
	"context"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

func TestShardsHintRemovesTheAllocationFilter(t *testing.T) {
	rep, err := cluster.Shards(context.Background(), indexertest.NewServer(t, indexertest.RedByFilter()).Client(t), true, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `the allocation filter index.routing.allocation.require._name="siem-lab-missing-node" on index siem-lab-red matches none of the nodes (node-1): remove it: PUT /siem-lab-red/_settings {"index.routing.allocation.require._name":null}`
	if len(rep.Hints) != 1 || rep.Hints[0] != want {
		t.Errorf("hints %q\nwant [%q]", rep.Hints, want)
	}
	for _, h := range rep.Hints {
		if strings.Contains(h, "number_of_replicas") {
			t.Errorf("a primary kept off by a filter gets the replica advice: %s", h)
		}
	}
}

func TestRemedies(t *testing.T) {
	no := func(decider, node, expl string) indexer.Decider {
		return indexer.Decider{Node: node, Decider: decider, Decision: "NO", Explanation: expl}
	}
	tests := []struct {
		name     string
		deciders []indexer.Decider
		want     []string
	}{
		{"index require on two nodes", []indexer.Decider{
			no("filter", "node-2", `node does not match index setting [index.routing.allocation.require] filters [_name:"gone"]`),
			no("filter", "node-1", `node does not match index setting [index.routing.allocation.require] filters [_name:"gone"]`)},
			[]string{`the allocation filter index.routing.allocation.require._name="gone" on index idx matches none of the nodes (node-1, node-2): remove it: PUT /idx/_settings {"index.routing.allocation.require._name":null}`}},
		{"index include with two attributes", []indexer.Decider{
			no("filter", "node-1", `node does not match index setting [index.routing.allocation.include] filters [_host:"h1,h2",zone:"b"]`)},
			[]string{`the allocation filter index.routing.allocation.include._host="h1,h2", index.routing.allocation.include.zone="b" on index idx matches none of the nodes (node-1): remove it: PUT /idx/_settings {"index.routing.allocation.include._host":null,"index.routing.allocation.include.zone":null}`}},
		{"cluster exclude", []indexer.Decider{
			no("filter", "node-1", `node matches cluster setting [cluster.routing.allocation.exclude] filters [_ip:"127.0.0.1"]`)},
			[]string{`the cluster-wide allocation filter cluster.routing.allocation.exclude._ip="127.0.0.1" excludes every node (node-1): remove it: PUT /_cluster/settings {"persistent":{"cluster.routing.allocation.exclude._ip":null},"transient":{"cluster.routing.allocation.exclude._ip":null}}`}},
		{"filter on one node of two", []indexer.Decider{
			no("filter", "node-1", `node does not match index setting [index.routing.allocation.require] filters [_name:"node-2"]`),
			no("disk_threshold", "node-2", "the node is above the high watermark cluster setting [cluster.routing.allocation.disk.watermark.high=90%]")},
			[]string{`the allocation filter index.routing.allocation.require._name="node-2" on index idx keeps the shard off some nodes (node-1): remove it: PUT /idx/_settings {"index.routing.allocation.require._name":null}`,
				"the disk watermark blocks allocation: free disk space, or temporarily `siemctl indexer watermark --recover`"}},
		{"replica on a single node", []indexer.Decider{
			no("same_shard", "node-1", "a copy of this shard is already allocated to this node [[idx][0], node[x], [P], s[STARTED], a[id=y]]")},
			[]string{`a replica cannot sit on the node holding its primary: on a single node accept yellow or drop the replicas: PUT /idx/_settings {"index.number_of_replicas":0}`}},
		{"replica with a node of three away", []indexer.Decider{
			no("same_shard", "node-1", "a copy of this shard is already allocated to this node [[idx][0], node[x], [P], s[STARTED], a[id=y]]"),
			no("same_shard", "node-2", "a copy of this shard is already allocated to this node [[idx][0], node[z], [R], s[STARTED], a[id=w]]")},
			[]string{"every node that could hold this replica (node-1, node-2) already holds a copy of the shard: the cluster has fewer nodes than the index has copies: " +
				"bring the missing indexer node back (`siemctl services start indexer` on its host) and the replica recovers on it; until then the index stays yellow"}},
		{"replica: one node holds its primary, the other is full", []indexer.Decider{
			no("same_shard", "node-1", "a copy of this shard is already allocated to this node"),
			no("disk_threshold", "node-2", "the node is above the high watermark cluster setting [cluster.routing.allocation.disk.watermark.high=90%]")},
			[]string{"the disk watermark blocks allocation: free disk space, or temporarily `siemctl indexer watermark --recover`"}},
		{"filter before disk", []indexer.Decider{
			no("disk_threshold", "node-1", "the node is above the high watermark cluster setting [cluster.routing.allocation.disk.watermark.high=90%]"),
			no("filter", "node-1", `node does not match index setting [index.routing.allocation.require] filters [_name:"gone"]`)},
			[]string{`the allocation filter index.routing.allocation.require._name="gone" on index idx matches none of the nodes (node-1): remove it: PUT /idx/_settings {"index.routing.allocation.require._name":null}`,
				"the disk watermark blocks allocation: free disk space, or temporarily `siemctl indexer watermark --recover`"}},
		{"unreadable filter text", []indexer.Decider{no("filter", "node-1", "something else")}, nil},
		{"throttled only", []indexer.Decider{{Node: "node-1", Decider: "throttling", Decision: "THROTTLE"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range cluster.Remedies(indexer.Explanation{Index: "idx", Deciders: tt.deciders}) {
				got = append(got, r.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestMergeJoinsIndicesAndCurl(t *testing.T) {
	var rs []cluster.Remedy
	for _, ix := range []string{"a", "b", "a"} {
		rs = append(rs, cluster.Remedies(indexer.Explanation{Index: ix, Deciders: []indexer.Decider{{Node: "n", Decider: "same_shard", Decision: "NO"}}})...)
	}
	m := cluster.Merge(rs)
	if len(m) != 1 || m[0].Call.String() != `PUT /a,b/_settings {"index.number_of_replicas":0}` {
		t.Fatalf("merged %+v", m)
	}
	got := m[0].Call.Curl("https://127.0.0.1:9200/", "admin", "/etc/siem indexer/root-ca.pem", false)
	want := `curl -u admin --cacert '/etc/siem indexer/root-ca.pem' -X PUT 'https://127.0.0.1:9200/a,b/_settings' -H 'Content-Type: application/json' -d '{"index.number_of_replicas":0}'`
	if got != want {
		t.Errorf("curl\n%s\nwant\n%s", got, want)
	}
	if got := (cluster.APICall{Method: "PUT", Path: "/x/_settings", Body: `{"k":"it's"}`}).Curl("http://h:9200", "o'brien", "", true); got != `curl -u 'o'\''brien' -k -X PUT http://h:9200/x/_settings -H 'Content-Type: application/json' -d '{"k":"it'\''s"}'` {
		t.Errorf("quoting: %s", got)
	}
}
