package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

func TestInfo(t *testing.T) {
	tests := []struct {
		file         string
		wantVersion  string
		wantDist     string
		wantOverride bool
	}{
		{"root-compat.json", "7.10.2", "", true},
		{"root-2.19.json", "2.19.2", "opensearch", false},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, c := fakeClient(t, map[string]indexertest.Route{"GET /": {File: tc.file}})
			info, err := c.Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info.Version != tc.wantVersion || info.Distribution != tc.wantDist || info.CompatOverride() != tc.wantOverride ||
				info.Lucene != "9.12.1" || info.ClusterName != "siem-cluster" {
				t.Fatalf("got %+v", info)
			}
		})
	}
}

func TestNodesVersions(t *testing.T) {
	srv, c := fakeClient(t, indexertest.Healthy())
	nv, err := c.NodesVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []indexer.NodeVersion{{ID: "x3Fq0cVnQ4yRk8m6Tz1bLw", Name: "node-1", Version: "2.19.2",
		Roles: []string{"cluster_manager", "data", "ingest", "remote_cluster_client"}}}
	if !reflect.DeepEqual(nv, want) {
		t.Fatalf("got %+v", nv)
	}
	req, _ := srv.Last("GET /_nodes")
	if req.Query.Get("filter_path") == "" {
		t.Error("no filter_path sent")
	}
	srv.Set("GET /_nodes", indexertest.Route{Body: []byte(`{"nodes":{}}`)})
	if _, err := c.NodesVersions(context.Background()); !errors.Is(err, netclient.ErrBadResponse) {
		t.Fatalf("no nodes: got %v", err)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		name  string
		route indexertest.Route
		req   indexer.HealthRequest
		want  indexer.Health
		query map[string]string
	}{
		{name: "green", route: indexertest.Route{File: "health-green.json"},
			want: indexer.Health{ClusterName: "siem-cluster", Status: "green", NumberOfNodes: 1, NumberOfDataNodes: 1,
				ActivePrimaryShards: 12, ActiveShards: 12, ActiveShardsPercent: 100}},
		{name: "yellow single node", route: indexertest.Route{File: "health-yellow-single.json"},
			want: indexer.Health{ClusterName: "siem-cluster", Status: "yellow", NumberOfNodes: 1, NumberOfDataNodes: 1,
				ActivePrimaryShards: 12, ActiveShards: 12, UnassignedShards: 1, ActiveShardsPercent: 92.3076923076923}},
		{name: "red", route: indexertest.Route{File: "health-red.json"},
			want: indexer.Health{ClusterName: "siem-cluster", Status: "red", NumberOfNodes: 1, NumberOfDataNodes: 1,
				ActivePrimaryShards: 9, ActiveShards: 9, UnassignedShards: 4, ActiveShardsPercent: 69.23076923076923}},
		{name: "408 wait timed out is an answer", route: indexertest.Route{Status: http.StatusRequestTimeout, File: "health-timeout-408.json"},
			req: indexer.HealthRequest{WaitForStatus: "green", Timeout: 30 * time.Second, WaitForNoRelocatingShards: true, WaitForNoInitializingShards: true, Level: "cluster"},
			want: indexer.Health{ClusterName: "siem-cluster", Status: "yellow", TimedOut: true, NumberOfNodes: 1, NumberOfDataNodes: 1,
				ActivePrimaryShards: 12, ActiveShards: 12, UnassignedShards: 1, ActiveShardsPercent: 92.3076923076923},
			query: map[string]string{"wait_for_status": "green", "timeout": "30000ms", "wait_for_no_relocating_shards": "true",
				"wait_for_no_initializing_shards": "true", "level": "cluster"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, c := fakeClient(t, map[string]indexertest.Route{"GET /_cluster/health": tc.route})
			h, err := c.Health(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", h, tc.want)
			}
			req, _ := srv.Last("GET /_cluster/health")
			for k, v := range tc.query {
				if got := req.Query.Get(k); got != v {
					t.Errorf("query %s = %q, want %q", k, got, v)
				}
			}
		})
	}
	t.Run("invalid wait status refused before any request", func(t *testing.T) {
		srv, c := fakeClient(t, indexertest.Healthy())
		if _, err := c.Health(context.Background(), indexer.HealthRequest{WaitForStatus: "blue"}); err == nil {
			t.Fatal("want an error")
		}
		if len(srv.Requests()) != 0 {
			t.Fatal("a request was sent")
		}
	})
}

func TestSettings(t *testing.T) {
	srv, c := fakeClient(t, map[string]indexertest.Route{"GET /_cluster/settings": {File: "settings-primaries.json"}})
	s, err := c.Settings(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := srv.Last("GET /_cluster/settings")
	if req.Query.Get("flat_settings") != "true" || req.Query.Get("include_defaults") != "true" {
		t.Errorf("query = %v", req.Query)
	}
	if got := s.AllocationEnable(); got != (indexer.Setting{Key: indexer.KeyAllocationEnable, Value: "primaries", Source: indexer.SourcePersistent}) {
		t.Errorf("AllocationEnable = %+v", got)
	}
	wm := s.Watermarks()
	want := indexer.Watermarks{
		Low:        indexer.Setting{Key: indexer.KeyWatermarkLow, Value: "85%", Source: indexer.SourceDefault},
		High:       indexer.Setting{Key: indexer.KeyWatermarkHigh, Value: "95%", Source: indexer.SourceTransient},
		FloodStage: indexer.Setting{Key: indexer.KeyWatermarkFlood, Value: "98%", Source: indexer.SourceTransient},
	}
	if wm != want {
		t.Errorf("Watermarks = %+v", wm)
	}
	if got := s.ArchivedKeys(); !reflect.DeepEqual(got, []string{"archived.cluster.routing.allocation.disk.watermark.enable_for_single_data_node"}) {
		t.Errorf("ArchivedKeys = %v", got)
	}
	if n, src := s.MaxShardsPerNode(); n != 1200 || src != indexer.SourcePersistent {
		t.Errorf("MaxShardsPerNode = %d %s", n, src)
	}
	if v, _ := s.Effective("cluster.routing.allocation.awareness.attributes"); v != "[]" {
		t.Errorf("array value = %q", v)
	}
	if ov := s.Overrides("cluster.routing.allocation.disk."); len(ov) != 2 || ov[0].Key != indexer.KeyWatermarkFlood {
		t.Errorf("Overrides = %+v", ov)
	}
	if _, src := s.Effective("no.such.key"); src != indexer.SourceUnset {
		t.Errorf("unset key source = %q", src)
	}

	srv.Set("GET /_cluster/settings", indexertest.Route{File: "settings-empty.json"})
	s, err = c.Settings(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.AllocationEnable(); got.Value != "all" || got.Source != indexer.SourceDefault {
		t.Errorf("empty AllocationEnable = %+v", got)
	}
	if n, _ := s.MaxShardsPerNode(); n != 1000 {
		t.Errorf("default max shards = %d", n)
	}
	if len(s.ArchivedKeys()) != 0 {
		t.Error("archived keys in empty settings")
	}
	n, err := c.ClusterMaxShardsPerNode(context.Background())
	if err != nil || n != 1000 {
		t.Errorf("ClusterMaxShardsPerNode = %d, %v", n, err)
	}
}

func TestPutSettings(t *testing.T) {
	tests := []struct {
		name     string
		route    indexertest.Route
		update   indexer.SettingsUpdate
		wantAck  bool
		wantErr  error
		wantBody string
		noSend   bool
	}{
		{name: "primaries acknowledged", route: indexertest.Route{File: "settings-put-ack.json"},
			update:   indexer.SettingsUpdate{Persistent: map[string]any{indexer.KeyAllocationEnable: "primaries"}},
			wantAck:  true,
			wantBody: `{"persistent":{"cluster.routing.allocation.enable":"primaries"},"transient":{}}`},
		{name: "nil resets", route: indexertest.Route{File: "settings-put-ack.json"},
			update:   indexer.SettingsUpdate{Transient: map[string]any{indexer.KeyWatermarkHigh: nil, indexer.KeyWatermarkFlood: nil}},
			wantAck:  true,
			wantBody: `{"persistent":{},"transient":{"cluster.routing.allocation.disk.watermark.flood_stage":null,"cluster.routing.allocation.disk.watermark.high":null}}`},
		{name: "not acknowledged", route: indexertest.Route{File: "settings-put-noack.json"},
			update:  indexer.SettingsUpdate{Persistent: map[string]any{indexer.KeyAllocationEnable: "all"}},
			wantErr: indexer.ErrNotAcknowledged},
		{name: "empty update refused", update: indexer.SettingsUpdate{}, wantErr: netclient.ErrBadResponse, noSend: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, c := fakeClient(t, map[string]indexertest.Route{"PUT /_cluster/settings": tc.route})
			ack, err := c.PutSettings(context.Background(), tc.update)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || ack {
					t.Fatalf("got %v, %v; want %v", ack, err, tc.wantErr)
				}
			} else if err != nil || ack != tc.wantAck {
				t.Fatalf("got %v, %v", ack, err)
			}
			req, sent := srv.Last("PUT /_cluster/settings")
			if sent == tc.noSend {
				t.Fatalf("sent = %v", sent)
			}
			if tc.wantBody != "" && !jsonEqual(t, req.Body, []byte(tc.wantBody)) {
				t.Errorf("body = %s", req.Body)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("unmarshal %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestFlush(t *testing.T) {
	_, c := fakeClient(t, indexertest.Healthy())
	s, err := c.Flush(context.Background())
	if err != nil || s.Total != 25 || s.Successful != 12 || s.Failed != 0 {
		t.Fatalf("Flush = %+v, %v", s, err)
	}
}

func TestSyncedFlush(t *testing.T) {
	tests := []struct {
		name        string
		route       indexertest.Route
		wantPartial bool
		wantFailed  int
		wantErr     error
	}{
		{name: "2.x shim 200", route: indexertest.Healthy()["POST /_flush/synced"]},
		{name: "409 partial failure", route: indexertest.Route{Status: http.StatusConflict, File: "flush-synced-409.json"}, wantPartial: true, wantFailed: 1},
		{name: "400 no handler", route: indexertest.Route{Status: http.StatusBadRequest, File: "no-handler-400.json"}, wantErr: indexer.ErrSyncedFlushUnsupported},
		{name: "404", route: indexertest.Route{Status: http.StatusNotFound, Body: []byte(`{}`)}, wantErr: indexer.ErrSyncedFlushUnsupported},
		{name: "503 still an error", route: indexertest.Route{Status: 503, File: "security-not-initialized-503.txt"}, wantErr: indexer.ErrSecurityNotInitialized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c := fakeClient(t, map[string]indexertest.Route{"POST /_flush/synced": tc.route})
			s, partial, err := c.SyncedFlush(context.Background())
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || partial != tc.wantPartial || s.Failed != tc.wantFailed {
				t.Fatalf("got %+v partial=%v err=%v", s, partial, err)
			}
			if tc.wantFailed > 0 && (len(s.Failures) != 1 || s.Failures[0] != "siem-alerts-4.x-2025.01.14[0]: illegal_state_exception pending operations") {
				t.Errorf("failures = %q", s.Failures)
			}
		})
	}
}

func TestAllocationExplain(t *testing.T) {
	tests := []struct {
		name     string
		route    indexertest.Route
		req      indexer.ExplainRequest
		want     indexer.Explanation
		wantErr  error
		wantBody string
	}{
		{name: "single-node replica, same shard", route: indexertest.Route{File: "explain-replica-same-shard.json"},
			want: indexer.Explanation{Index: ".opendistro-job-scheduler-lock", Shard: 0, Primary: false, CurrentState: "unassigned",
				UnassignedReason: "INDEX_CREATED", UnassignedAt: "2025-01-14T08:12:45.118Z", LastAllocationStatus: "no_attempt",
				CanAllocate: "no", AllocateExplanation: "cannot allocate because allocation is not permitted to any of the nodes",
				Deciders: []indexer.Decider{{Node: "node-1", Decider: "same_shard", Decision: "NO",
					Explanation: "a copy of this shard is already allocated to this node [[.opendistro-job-scheduler-lock][0], node[x3Fq0cVnQ4yRk8m6Tz1bLw], [P], s[STARTED], a[id=Vd6cFh3bQyS0qk2cXb9mXw]]"}}}},
		{name: "allocation left at primaries", route: indexertest.Route{File: "explain-primaries.json"},
			req:      indexer.ExplainRequest{Index: "siem-alerts-4.x-2025.01.13", Shard: 0, Primary: false},
			wantBody: `{"index":"siem-alerts-4.x-2025.01.13","shard":0,"primary":false}`,
			want: indexer.Explanation{Index: "siem-alerts-4.x-2025.01.13", CurrentState: "unassigned",
				UnassignedReason: "REPLICA_ADDED", UnassignedAt: "2025-01-14T09:01:02.334Z", LastAllocationStatus: "no_attempt",
				CanAllocate: "no", AllocateExplanation: "cannot allocate because allocation is not permitted to any of the nodes",
				Deciders: []indexer.Decider{
					{Node: "node-1", Decider: "enable", Decision: "NO", Explanation: "replica allocations are forbidden due to cluster setting [cluster.routing.allocation.enable=primaries]"},
					{Node: "node-1", Decider: "same_shard", Decision: "NO", Explanation: "a copy of this shard is already allocated to this node [[siem-alerts-4.x-2025.01.13][0], node[x3Fq0cVnQ4yRk8m6Tz1bLw], [P], s[STARTED], a[id=Pq1wErTyUiOpAsDfGhJkLz]]"},
				}}},
		{name: "nothing unassigned", route: indexertest.Route{Status: 400, File: "explain-nothing-400.json"}, wantErr: indexer.ErrNothingToExplain},
		{name: "other 400 stays an error", route: indexertest.Route{Status: 400, Body: []byte(`{"error":{"type":"illegal_argument_exception","reason":"shard [9] does not exist"},"status":400}`)},
			req: indexer.ExplainRequest{Index: "x", Shard: 9}, wantErr: netclient.ErrBadResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, c := fakeClient(t, map[string]indexertest.Route{"GET /_cluster/allocation/explain": tc.route})
			e, err := c.AllocationExplain(context.Background(), tc.req)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				if tc.wantErr == netclient.ErrBadResponse && errors.Is(err, indexer.ErrNothingToExplain) {
					t.Fatal("a different 400 must not be ErrNothingToExplain")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", e, tc.want)
			}
			if len(e.Blocking()) != len(tc.want.Deciders) {
				t.Errorf("Blocking = %+v", e.Blocking())
			}
			req, _ := srv.Last("GET /_cluster/allocation/explain")
			if tc.wantBody == "" && len(req.Body) != 0 {
				t.Errorf("zero request sent a body: %s", req.Body)
			}
			if tc.wantBody != "" && !jsonEqual(t, req.Body, []byte(tc.wantBody)) {
				t.Errorf("body = %s", req.Body)
			}
		})
	}
}

// PublishURL: the address a node bound, from each form OpenSearch prints a publish address in.
func TestPublishURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.2:9200":           "https://127.0.0.2:9200",
		"indexer-2/10.0.0.2:9200":  "https://10.0.0.2:9200",
		"[::1]:9200":               "https://[::1]:9200",
		"indexer-2/[fe80::1]:9201": "https://[fe80::1]:9201",
		"10.0.0.2":                 "",
		"":                         "",
	} {
		if got := indexer.PublishURL("https", in); got != want {
			t.Errorf("PublishURL(%q) = %q, want %q", in, got, want)
		}
	}
}
