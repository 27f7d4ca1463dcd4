package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

func TestCatShards(t *testing.T) {
	srv, c := fakeClient(t, map[string]indexertest.Route{"GET /_cat/shards": {File: "cat-shards.json"}})
	shards, err := c.CatShards(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := srv.Last("GET /_cat/shards")
	if req.Query.Get("h") != "index,shard,prirep,state,unassigned.reason,node" || req.Query.Get("format") != "json" {
		t.Errorf("query = %v", req.Query)
	}
	if len(shards) != 7 {
		t.Fatalf("got %d shards", len(shards))
	}
	want := map[int]indexer.Shard{
		0: {Index: ".opendistro-job-scheduler-lock", Shard: 0, PriRep: "p", State: "STARTED", Node: "node-1"},
		1: {Index: ".opendistro-job-scheduler-lock", Shard: 0, PriRep: "r", State: "UNASSIGNED", UnassignedReason: "INDEX_CREATED"},
		5: {Index: "siem-alerts-4.x-2025.01.13", Shard: 0, PriRep: "r", State: "UNASSIGNED", UnassignedReason: "REPLICA_ADDED"},
		6: {Index: "siem-alerts-4.x-2025.01.12", Shard: 1, PriRep: "p", State: "UNASSIGNED", UnassignedReason: "ALLOCATION_FAILED"},
	}
	for i, w := range want {
		if shards[i] != w {
			t.Errorf("shard %d = %+v, want %+v", i, shards[i], w)
		}
	}
	srv.Set("GET /_cat/shards", indexertest.Route{Body: []byte(`[{"index":"a","shard":"x","prirep":"p","state":"STARTED"}]`)})
	if _, err := c.CatShards(context.Background()); !errors.Is(err, netclient.ErrBadResponse) {
		t.Fatalf("bad shard number: got %v", err)
	}
}

func TestCatAllocation(t *testing.T) {
	srv, c := fakeClient(t, indexertest.Healthy())
	al, err := c.CatAllocation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []indexer.Allocation{
		{Node: "node-1", Host: "127.0.0.1", IP: "127.0.0.1", Shards: 12, DiskIndices: 1073741824, DiskUsed: 45097156608,
			DiskAvail: 8589934592, DiskTotal: 53687091200, DiskPercent: 84},
		{Node: "UNASSIGNED", Shards: 1},
	}
	if !reflect.DeepEqual(al, want) {
		t.Fatalf("got %+v", al)
	}
	if req, _ := srv.Last("GET /_cat/allocation"); req.Query.Get("bytes") != "b" {
		t.Errorf("bytes = %q", req.Query.Get("bytes"))
	}
}

func TestCatIndices(t *testing.T) {
	tests := []struct {
		name     string
		pattern  string
		route    indexertest.Route
		path     string
		wantLen  int
		wantErr  error
		checkAll bool
	}{
		{name: "all", route: indexertest.Route{File: "cat-indices.json"}, path: "/_cat/indices", wantLen: 3, checkAll: true},
		{name: "wildcard matching nothing (404)", pattern: "siem-alerts-4.x-2099.*", path: "/_cat/indices/siem-alerts-4.x-2099.*",
			route: indexertest.Route{Status: 404, File: "index-not-found-404.json"}, wantLen: 0},
		{name: "wildcard matching nothing (200 [])", pattern: "nothing-*", path: "/_cat/indices/nothing-*",
			route: indexertest.Route{Body: []byte(`[]`)}, wantLen: 0},
		{name: "concrete missing index", pattern: "siem-alerts-4.x-2099.01.01", path: "/_cat/indices/siem-alerts-4.x-2099.01.01",
			route: indexertest.Route{Status: 404, File: "index-not-found-404.json"}, wantErr: indexer.ErrIndexNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, c := fakeClient(t, map[string]indexertest.Route{"GET " + tc.path: tc.route})
			idx, err := c.CatIndices(context.Background(), tc.pattern)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, netclient.ErrBadResponse) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if idx == nil || len(idx) != tc.wantLen {
				t.Fatalf("got %+v", idx)
			}
			req, _ := srv.Last("GET " + tc.path)
			if req.Query.Get("expand_wildcards") != "all" || req.Query.Get("bytes") != "b" {
				t.Errorf("query = %v", req.Query)
			}
			if !tc.checkAll {
				return
			}
			want := []indexer.Index{
				{Name: ".opendistro-job-scheduler-lock", Health: "yellow", Status: "open", UUID: "0e5mP2dVQmSOf3fK1nXzkQ", Pri: 1, Rep: 1,
					DocsCount: 2, StoreBytes: 10342, CreationDate: time.UnixMilli(1736000000000).UTC()},
				{Name: "siem-alerts-4.x-2024.10.01", Status: "close", UUID: "Z8bC1dE2fG3hI4jK5lM6nO", Pri: 3,
					CreationDate: time.UnixMilli(1727740800000).UTC()},
				{Name: "siem-alerts-4.x-2025.01.14", Health: "green", Status: "open", UUID: "l3H8qkRvTJ6w0y8oZs1aHw", Pri: 3,
					DocsCount: 15342, StoreBytes: 20971520, CreationDate: time.UnixMilli(1736812800123).UTC()},
			}
			if !reflect.DeepEqual(idx, want) {
				t.Fatalf("got  %+v\nwant %+v", idx, want)
			}
		})
	}
}

func TestCatNodes(t *testing.T) {
	_, c := fakeClient(t, indexertest.Healthy())
	nodes, err := c.CatNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []indexer.Node{{Name: "node-1", IP: "127.0.0.1", Version: "7.10.2", Roles: "dimr", HeapPercent: 41, RAMPercent: 93, CPU: 7, DiskUsedPercent: 84}}
	if !reflect.DeepEqual(nodes, want) {
		t.Fatalf("got %+v", nodes)
	}
}

func TestIndexBlocks(t *testing.T) {
	srv, c := fakeClient(t, map[string]indexertest.Route{
		"GET /siem-alerts-*/_settings/index.blocks.*": {File: "index-blocks.json"},
		"GET /_all/_settings/index.blocks.*":          {Body: []byte(`{}`)},
	})
	blocks, err := c.IndexBlocks(context.Background(), "siem-alerts-*")
	if err != nil {
		t.Fatal(err)
	}
	want := []indexer.IndexBlock{
		{Index: "siem-alerts-4.x-2025.01.13", Blocks: []string{"write"}},
		{Index: "siem-alerts-4.x-2025.01.14", Blocks: []string{"read_only_allow_delete"}},
	}
	if !reflect.DeepEqual(blocks, want) {
		t.Fatalf("got %+v", blocks)
	}
	if req, _ := srv.Last("GET /siem-alerts-*/_settings/index.blocks.*"); req.Query.Get("flat_settings") != "true" {
		t.Errorf("query = %v", req.Query)
	}
	blocks, err = c.IndexBlocks(context.Background(), "")
	if err != nil || blocks == nil || len(blocks) != 0 {
		t.Fatalf("all: %+v %v", blocks, err)
	}
}

func TestLegacyTemplate(t *testing.T) {
	srv, c := fakeClient(t, map[string]indexertest.Route{
		"GET /_template/siem":    {File: "template-siem.json"},
		"GET /_template/missing": {Status: 404, Body: []byte(`{}`)},
		"PUT /_template/siem":    {File: "acknowledged.json"},
	})
	tpl, err := c.LegacyTemplate(context.Background(), "siem")
	if err != nil {
		t.Fatal(err)
	}
	if !tpl.Found || tpl.Order != 0 || tpl.Version == nil || *tpl.Version != 1 ||
		!reflect.DeepEqual(tpl.IndexPatterns, []string{"siem-alerts-4.x-*", "siem-archives-4.x-*"}) {
		t.Fatalf("got %+v", tpl)
	}
	// The hash is of the canonical template: same content, other layout, same hash.
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(indexertest.Fixture(t, "template-siem.json"), &outer); err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal(outer["siem"], &v)
	compact, _ := json.Marshal(v)
	if h, _ := indexer.CanonicalHash(compact); h != tpl.Hash || len(h) != 64 {
		t.Errorf("canonical hash differs: %s vs %s", h, tpl.Hash)
	}
	if tpl.MappingsHash == "" || tpl.MappingsHash == tpl.Hash {
		t.Errorf("mappings hash = %q", tpl.MappingsHash)
	}

	miss, err := c.LegacyTemplate(context.Background(), "missing")
	if err != nil || miss.Found || miss.Name != "missing" {
		t.Fatalf("missing: %+v %v", miss, err)
	}
	if _, err := c.LegacyTemplate(context.Background(), "si*"); err == nil {
		t.Error("wildcard name accepted")
	}
	body := []byte(`{"index_patterns":["siem-alerts-4.x-*"],"order":0}`)
	if err := c.PutLegacyTemplate(context.Background(), "siem", body); err != nil {
		t.Fatal(err)
	}
	if req, _ := srv.Last("PUT /_template/siem"); string(req.Body) != string(body) {
		t.Errorf("sent %s", req.Body)
	}
	if err := c.PutLegacyTemplate(context.Background(), "siem", []byte(`{`)); err == nil {
		t.Error("invalid JSON accepted")
	}
}

func TestCanonicalHash(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, "{\n \"b\" : [1, 2],\n \"a\" : 1\n}", true},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":1.0}`, `{"a":1}`, false}, // numbers kept as written
	}
	for _, tc := range tests {
		ha, err1 := indexer.CanonicalHash([]byte(tc.a))
		hb, err2 := indexer.CanonicalHash([]byte(tc.b))
		if err1 != nil || err2 != nil {
			t.Fatalf("%v %v", err1, err2)
		}
		if (ha == hb) != tc.same {
			t.Errorf("%s vs %s: same=%v", tc.a, tc.b, ha == hb)
		}
	}
	if _, err := indexer.CanonicalHash([]byte(`{"a":`)); err == nil {
		t.Error("truncated JSON hashed")
	}
}

func TestSimulateIndex(t *testing.T) {
	const index = "siem-alerts-4.x-2025.01.15"
	tests := []struct {
		name       string
		simulate   string
		composable string
		want       indexer.Simulation
		shadowed   []string
	}{
		{name: "composable template eclipses the legacy one", simulate: "simulate-index.json", composable: "index-templates.json",
			want: indexer.Simulation{Index: index, Composable: "alerts-shadow",
				Legacy:  []indexer.LegacyMatch{{Name: "siem", Order: 0}, {Name: "catch-all-alerts", Order: 5}},
				Applied: []string{"alerts-shadow"}, Winner: "alerts-shadow",
				Overlapping: []indexer.Overlap{{Name: "alerts-low", IndexPatterns: []string{"siem-*"}},
					{Name: "siem", IndexPatterns: []string{"siem-alerts-4.x-*", "siem-archives-4.x-*"}},
					{Name: "catch-all-alerts", IndexPatterns: []string{"siem-alerts-*"}}}},
			shadowed: []string{"alerts-shadow"}},
		{name: "legacy only: higher order overrides", simulate: "simulate-index-none.json", composable: "index-templates-empty.json",
			want: indexer.Simulation{Index: index,
				Legacy:  []indexer.LegacyMatch{{Name: "siem", Order: 0}, {Name: "catch-all-alerts", Order: 5}},
				Applied: []string{"siem", "catch-all-alerts"}, Winner: "catch-all-alerts", Overlapping: []indexer.Overlap{}},
			shadowed: []string{"catch-all-alerts"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c := fakeClient(t, map[string]indexertest.Route{
				"POST /_index_template/_simulate_index/" + index: {File: tc.simulate},
				"GET /_index_template":                           {File: tc.composable},
				"GET /_template":                                 {File: "templates-legacy.json"},
			})
			sim, err := c.SimulateIndex(context.Background(), index)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sim, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", sim, tc.want)
			}
			if got := sim.ShadowedBy("siem"); !reflect.DeepEqual(got, tc.shadowed) {
				t.Errorf("ShadowedBy(siem) = %v, want %v", got, tc.shadowed)
			}
			if got := sim.ShadowedBy(sim.Winner); len(got) != 0 {
				t.Errorf("winner shadowed by %v", got)
			}
		})
	}
}

func TestComposableTemplates(t *testing.T) {
	_, c := fakeClient(t, map[string]indexertest.Route{"GET /_index_template": {File: "index-templates.json"}})
	cts, err := c.ComposableTemplates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cts) != 3 || cts[0].Name != "alerts-low" || cts[1].Priority != 10 || cts[2].Name != "ss4o_logs_template" ||
		cts[2].Version == nil || *cts[2].Version != 1 || cts[2].Hash == "" {
		t.Fatalf("got %+v", cts)
	}
}

func TestPipeline(t *testing.T) {
	const id = "filebeat-7.10.2-siem-alerts-pipeline"
	_, c := fakeClient(t, map[string]indexertest.Route{
		"GET /_ingest/pipeline/" + id: {File: "pipeline.json"},
		"GET /_ingest/pipeline/gone":  {Status: 404, Body: []byte(`{}`)},
	})
	p, err := c.Pipeline(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Found || p.ID != id || p.Description != "Siem alerts pipeline" || len(p.Hash) != 64 {
		t.Fatalf("got %+v", p)
	}
	gone, err := c.Pipeline(context.Background(), "gone")
	if err != nil || gone.Found {
		t.Fatalf("gone: %+v %v", gone, err)
	}
}

func TestSearch(t *testing.T) {
	srv, c := fakeClient(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {File: "search.json"}})
	since := time.Date(2025, 1, 14, 10, 10, 0, 0, time.UTC)
	until := since.Add(10 * time.Minute)
	q := `rule.id:5710 AND full_log:"siemctl-probe-7f3a" & x=1`
	res, err := c.Search(context.Background(), indexer.SearchRequest{
		Index: "siem-alerts-4.x-*", Query: q, Since: since, Until: until, Size: 2,
		SearchAfter: []any{1736849710000}, Source: []string{"rule", "full_log"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 2 || res.TotalRelation != "eq" || len(res.Hits) != 2 ||
		res.Hits[0].ID != "r8N2WZQBx1y7m0fQ2c3d" || res.Hits[0].Index != "siem-alerts-4.x-2025.01.14" ||
		!strings.Contains(string(res.Hits[0].Source), "siemctl-probe-7f3a") || len(res.Hits[0].Sort) != 1 {
		t.Fatalf("got %+v", res)
	}
	req, _ := srv.Last("POST /siem-alerts-4.x-*/_search")
	for k := range req.Query {
		if k != "ignore_unavailable" && k != "allow_no_indices" {
			t.Errorf("unexpected query parameter %s", k)
		}
	}
	want := `{"size":2,"track_total_hits":true,
	  "query":{"bool":{"filter":[{"query_string":{"query":` + mustJSON(q) + `}},
	    {"range":{"timestamp":{"format":"epoch_millis","gte":1736849400000,"lte":1736850000000}}}]}},
	  "sort":[{"timestamp":{"order":"desc","unmapped_type":"date"}}],
	  "search_after":[1736849710000],"_source":["rule","full_log"]}`
	if !jsonEqual(t, req.Body, []byte(want)) {
		t.Errorf("body = %s", req.Body)
	}

	// Defaults: match_all, size 10, explicit sort honoured.
	if _, err := c.Search(context.Background(), indexer.SearchRequest{Index: "siem-alerts-4.x-*", Sort: []indexer.SortField{{Field: "@timestamp", Order: "asc"}}}); err != nil {
		t.Fatal(err)
	}
	req, _ = srv.Last("POST /siem-alerts-4.x-*/_search")
	want = `{"size":10,"track_total_hits":true,"query":{"match_all":{}},"sort":[{"@timestamp":{"order":"asc","unmapped_type":"date"}}]}`
	if !jsonEqual(t, req.Body, []byte(want)) {
		t.Errorf("default body = %s", req.Body)
	}
	if _, err := c.Search(context.Background(), indexer.SearchRequest{Index: "a b"}); err == nil {
		t.Error("index with a space accepted")
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestCountAndNewest(t *testing.T) {
	srv, c := fakeClient(t, map[string]indexertest.Route{
		"POST /siem-alerts-4.x-*/_count":  {File: "count.json"},
		"POST /siem-alerts-4.x-*/_search": {File: "newest.json"},
		"POST /nothing-*/_search":         {File: "newest-empty.json"},
	})
	since := time.Date(2025, 1, 14, 10, 10, 0, 0, time.UTC)
	n, err := c.Count(context.Background(), "siem-alerts-4.x-*", "rule.level:>=5", since)
	if err != nil || n != 42 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	req, _ := srv.Last("POST /siem-alerts-4.x-*/_count")
	want := `{"query":{"bool":{"filter":[{"query_string":{"query":"rule.level:>=5"}},{"range":{"timestamp":{"format":"epoch_millis","gte":1736849400000}}}]}}}`
	if !jsonEqual(t, req.Body, []byte(want)) {
		t.Errorf("count body = %s", req.Body)
	}

	ts, found, err := c.Newest(context.Background(), "siem-alerts-4.x-*", "@timestamp")
	if err != nil || !found || !ts.Equal(time.UnixMilli(1736849702123)) {
		t.Fatalf("Newest = %v %v %v", ts, found, err)
	}
	_, found, err = c.Newest(context.Background(), "nothing-*", "")
	if err != nil || found {
		t.Fatalf("Newest(empty) = %v %v", found, err)
	}
}

func TestDeleteIndices(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		ok    bool
		path  string
	}{
		{name: "two concrete", names: []string{"siem-alerts-4.x-2024.01.01", "siem-alerts-4.x-2024.01.02", "siem-alerts-4.x-2024.01.01"}, ok: true,
			path: "/siem-alerts-4.x-2024.01.01,siem-alerts-4.x-2024.01.02"},
		{name: "empty list", names: nil},
		{name: "star", names: []string{"siem-alerts-*"}},
		{name: "question mark", names: []string{"siem-alerts-4.x-2024.01.0?"}},
		{name: "comma list in one name", names: []string{"a,b"}},
		{name: "_all", names: []string{"_all"}},
		{name: "exclusion", names: []string{"-siem"}},
		{name: "empty name", names: []string{"ok", ""}},
		{name: "slash", names: []string{"a/../b"}},
		{name: "dot", names: []string{"."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			routes := map[string]indexertest.Route{}
			if tc.path != "" {
				routes["DELETE "+tc.path] = indexertest.Route{File: "acknowledged.json"}
			}
			srv, c := fakeClient(t, routes)
			err := c.DeleteIndices(context.Background(), tc.names)
			if !tc.ok {
				if !errors.Is(err, indexer.ErrUnsafeIndexName) {
					t.Fatalf("got %v, want ErrUnsafeIndexName", err)
				}
				if n := len(srv.Requests()); n != 0 {
					t.Fatalf("%d requests sent for a refused delete", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			req, ok := srv.Last("DELETE " + tc.path)
			if !ok {
				t.Fatal("no DELETE received")
			}
			if req.Query.Get("expand_wildcards") != "none" || req.Query.Get("allow_no_indices") != "false" {
				t.Errorf("query = %v", req.Query)
			}
		})
	}
	t.Run("missing index fails", func(t *testing.T) {
		_, c := fakeClient(t, map[string]indexertest.Route{"DELETE /siem-alerts-4.x-2099.01.01": {Status: http.StatusNotFound, File: "index-not-found-404.json"}})
		if err := c.DeleteIndices(context.Background(), []string{"siem-alerts-4.x-2099.01.01"}); !errors.Is(err, indexer.ErrIndexNotFound) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCreateIndexDocumentRefresh(t *testing.T) {
	const idx = "siem-alerts-4.x-2025.01.15"
	srv, c := fakeClient(t, map[string]indexertest.Route{
		"PUT /" + idx:                {File: "create-index.json"},
		"POST /" + idx + "/_doc":     {Status: http.StatusCreated, File: "index-doc.json"},
		"PUT /" + idx + "/_doc/my-1": {Status: http.StatusCreated, File: "index-doc.json"},
		"POST /siem-*/_refresh":      {File: "flush.json"},
	})
	ctx := context.Background()
	if err := c.CreateIndex(ctx, idx, []byte(`{"settings":{"number_of_replicas":0}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateIndex(ctx, "bad*", nil); !errors.Is(err, indexer.ErrUnsafeIndexName) {
		t.Fatalf("wildcard create: %v", err)
	}
	id, err := c.IndexDocument(ctx, idx, map[string]any{"timestamp": "2025-01-15T00:00:00Z"}, indexer.IndexOptions{Pipeline: "p1", Refresh: true})
	if err != nil || id != "b1Xy2ZQBx1y7m0fQ9z8y" {
		t.Fatalf("IndexDocument = %q, %v", id, err)
	}
	req, _ := srv.Last("POST /" + idx + "/_doc")
	if req.Query.Get("pipeline") != "p1" || req.Query.Get("refresh") != "wait_for" {
		t.Errorf("query = %v", req.Query)
	}
	if _, err := c.IndexDocument(ctx, idx, json.RawMessage(`{"a":1}`), indexer.IndexOptions{ID: "my-1"}); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Refresh(ctx, "siem-*"); err != nil || s.Total != 25 {
		t.Fatalf("Refresh = %+v %v", s, err)
	}
}

// TestSearchShardFailures: an answer of 200 in which shards failed is not "no alerts". OpenSearch
// answers so when the shards it did not skip (can_match drops those whose time range cannot match,
// once a pattern spans more than 128 shards) failed: a query_string that does not parse is the
// caller's query (a 400, so the commands name it); other shard failures keep the partial answer.
func TestSearchShardFailures(t *testing.T) {
	rejected := []byte(`{"took":3,"timed_out":false,"_shards":{"total":150,"successful":0,"skipped":149,"failed":1,"failures":[{"shard":1,"index":"wazuh-alerts-4.x-2026.12.07","node":"Jx2p","reason":{"type":"query_shard_exception","reason":"Failed to parse query [rule.id:[5710]","index":"wazuh-alerts-4.x-2026.12.07","index_uuid":"aB3","caused_by":{"type":"parse_exception","reason":"Cannot parse 'rule.id:[5710': Encountered \"<EOF>\" at line 1, column 13."}}}]},"hits":{"total":{"value":0,"relation":"eq"},"max_score":null,"hits":[]}}`)
	breaker := []byte(`{"took":3,"timed_out":false,"_shards":{"total":3,"successful":2,"skipped":0,"failed":1,"failures":[{"shard":0,"index":"wazuh-alerts-4.x-2026.12.07","node":"Jx2p","reason":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"}}]},"hits":{"total":{"value":4,"relation":"eq"},"max_score":null,"hits":[]}}`)
	count := []byte(`{"count":0,"_shards":{"total":150,"successful":0,"skipped":149,"failed":1,"failures":[{"shard":1,"index":"wazuh-alerts-4.x-2026.12.07","reason":{"type":"query_shard_exception","reason":"Failed to parse query [full_log:\"unbalanced]"}}]}}`)
	_, c := fakeClient(t, map[string]indexertest.Route{
		"POST /rejected-*/_search": {Body: rejected},
		"POST /breaker-*/_search":  {Body: breaker},
		"POST /rejected-*/_count":  {Body: count},
	})
	var ne *netclient.Error
	_, err := c.Search(context.Background(), indexer.SearchRequest{Index: "rejected-*", Query: "rule.id:[5710"})
	if !errors.As(err, &ne) || ne.Status != 400 || !strings.Contains(ne.Detail, "1 of 150 shards failed (query_shard_exception on wazuh-alerts-4.x-2026.12.07): Failed to parse query [rule.id:[5710]: Cannot parse 'rule.id:[5710'") {
		t.Fatalf("rejected query: %v", err)
	}
	if _, err := c.Count(context.Background(), "rejected-*", `full_log:"unbalanced`, time.Time{}); !errors.As(err, &ne) || ne.Status != 400 {
		t.Fatalf("rejected count: %v", err)
	}
	if res, err := c.Search(context.Background(), indexer.SearchRequest{Index: "breaker-*"}); err != nil || res.Total != 4 {
		t.Fatalf("a shard out of memory: the partial answer is kept as before: %+v %v", res, err)
	}
}
