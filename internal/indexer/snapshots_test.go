package indexer_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

// Bodies as OpenSearch 2.11.1 answers them (taken from the lab's node).
const (
	pathRepoBody     = `{"nodes":{"lc5U6I7-QZOY48WwbNxh1w":{"settings":{"path":{"repo":["/var/lib/siem-snaprepo"]}}}}}`
	repoMissingBody  = `{"error":{"root_cause":[{"type":"repository_missing_exception","reason":"[nope] missing"}],"type":"repository_missing_exception","reason":"[nope] missing"},"status":404}`
	snapMissingBody  = `{"error":{"root_cause":[{"type":"snapshot_missing_exception","reason":"[siemctl:s2] is missing"}],"type":"snapshot_missing_exception","reason":"[siemctl:s2] is missing"},"status":404}`
	notUnderRepoBody = `{"error":{"root_cause":[{"type":"repository_exception","reason":"[siemctl] location [/tmp/x] doesn't match any of the locations specified by path.repo because this setting is empty"}],"type":"repository_exception","reason":"[siemctl] failed to create repository","caused_by":{"type":"repository_exception","reason":"[siemctl] location [/tmp/x] doesn't match any of the locations specified by path.repo because this setting is empty"}},"status":500}`
	snapStatusBody   = `{"snapshots":[{"snapshot":"s1","repository":"siemctl","uuid":"7XpDW8YLQnO9kLrMjUTBvA","state":"STARTED","include_global_state":true,"shards_stats":{"initializing":3,"started":2,"finalizing":0,"done":0,"failed":0,"total":5},"stats":{"incremental":{"file_count":17,"size_in_bytes":1132155},"processed":{"file_count":4,"size_in_bytes":283038},"total":{"file_count":17,"size_in_bytes":1132155},"start_time_in_millis":1795470310278,"time_in_millis":668},"indices":{}}]}`
	snapInfoBody     = `{"snapshots":[{"snapshot":"s1","uuid":"7XpDW8YLQnO9kLrMjUTBvA","version_id":136327927,"version":"2.11.1","remote_store_index_shallow_copy":false,"indices":["siem-alerts-4.x-2026.11.21","siem-alerts-4.x-2026.11.22",".opendistro_security","siem-alerts-4.x-2026.11.20","siem-alerts-4.x-2026.11.23"],"data_streams":[],"include_global_state":true,"state":"SUCCESS","start_time":"2026-11-23T21:45:10.278Z","start_time_in_millis":1795470310278,"end_time":"2026-11-23T21:45:12.835Z","end_time_in_millis":1795470312835,"duration_in_millis":2557,"failures":[],"shards":{"total":5,"failed":0,"successful":5}}]}`
	snapPartialBody  = `{"snapshots":[{"snapshot":"s1","uuid":"u","version":"2.11.1","indices":["a"],"state":"PARTIAL","start_time_in_millis":1,"duration_in_millis":2,"failures":[{"index":"a","index_uuid":"a","shard_id":0,"reason":"IndexShardSnapshotFailedException[no space left on device]","node_id":"n","status":"INTERNAL_SERVER_ERROR"}],"shards":{"total":1,"failed":1,"successful":0}}]}`
)

func TestSnapshotRepository(t *testing.T) {
	ctx := context.Background()
	srv, c := fakeClient(t, map[string]indexertest.Route{
		"GET /_nodes/settings":            {Body: []byte(pathRepoBody)},
		"GET /_snapshot/siemctl":          {Body: []byte(`{"siemctl":{"type":"fs","settings":{"compress":"true","location":"/var/lib/siem-snaprepo/siemctl"}}}`)},
		"GET /_snapshot/nope":             {Status: 404, Body: []byte(repoMissingBody)},
		"PUT /_snapshot/siemctl":          {Body: []byte(`{"acknowledged":true}`)},
		"PUT /_snapshot/elsewhere":        {Status: 500, Body: []byte(notUnderRepoBody)},
		"POST /_snapshot/siemctl/_verify": {Body: []byte(`{"nodes":{"lc5U6I7-QZOY48WwbNxh1w":{"name":"node-1"}}}`)},
	})
	if got, err := c.PathRepo(ctx); err != nil || !reflect.DeepEqual(got, []string{"/var/lib/siem-snaprepo"}) {
		t.Errorf("PathRepo = %v, %v", got, err)
	}
	if r, err := c.GetRepository(ctx, "siemctl"); err != nil || r.Type != "fs" || r.Location != "/var/lib/siem-snaprepo/siemctl" {
		t.Errorf("GetRepository = %+v, %v", r, err)
	}
	if _, err := c.GetRepository(ctx, "nope"); !errors.Is(err, indexer.ErrRepositoryMissing) {
		t.Errorf("missing repository: %v", err)
	}
	if err := c.PutFSRepository(ctx, "siemctl", "/var/lib/siem-snaprepo/siemctl"); err != nil {
		t.Fatal(err)
	}
	req, _ := srv.Last("PUT /_snapshot/siemctl")
	if string(req.Body) != `{"settings":{"compress":true,"location":"/var/lib/siem-snaprepo/siemctl","max_snapshot_bytes_per_sec":"0b"},"type":"fs"}` {
		t.Errorf("register body %s", req.Body)
	}
	err := c.PutFSRepository(ctx, "elsewhere", "/tmp/x")
	if err == nil || !strings.Contains(err.Error(), "path.repo: [/tmp/x]") || !strings.Contains(err.Error(), "restart the indexer") {
		t.Errorf("location outside path.repo: %v", err)
	}
	if nodes, err := c.VerifyRepository(ctx, "siemctl"); err != nil || !reflect.DeepEqual(nodes, []string{"node-1"}) {
		t.Errorf("verify = %v, %v", nodes, err)
	}
	// Names that are not a plain path segment never reach the node.
	before := len(srv.Requests())
	for _, bad := range []string{"", "../x", "Caps", "a/b", "a b", "a*"} {
		if err := c.PutFSRepository(ctx, bad, "/x"); err == nil {
			t.Errorf("repository name %q accepted", bad)
		}
		if _, err := c.GetSnapshot(ctx, "siemctl", bad); err == nil {
			t.Errorf("snapshot name %q accepted", bad)
		}
	}
	if len(srv.Requests()) != before {
		t.Errorf("invalid names were sent")
	}
}

func TestPathRepoAbsent(t *testing.T) {
	// A stock node has no path.repo: filter_path then answers an empty object.
	_, c := fakeClient(t, map[string]indexertest.Route{"GET /_nodes/settings": {Body: []byte(`{}`)}})
	if got, err := c.PathRepo(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("PathRepo = %v, %v; want none", got, err)
	}
	_, c = fakeClient(t, map[string]indexertest.Route{"GET /_nodes/settings": {Body: []byte(`{"nodes":{"a":{"settings":{"path":{"repo":"/b,/a"}}}}}`)}})
	if got, err := c.PathRepo(context.Background()); err != nil || !reflect.DeepEqual(got, []string{"/a", "/b"}) {
		t.Errorf("PathRepo from a string = %v, %v", got, err)
	}
}

func TestSnapshotLifecycle(t *testing.T) {
	ctx := context.Background()
	srv, c := fakeClient(t, map[string]indexertest.Route{
		"PUT /_snapshot/siemctl/s1":           {Body: []byte(`{"accepted":true}`)},
		"GET /_snapshot/siemctl/s1/_status":   {Body: []byte(snapStatusBody)},
		"GET /_snapshot/siemctl/s1":           {Body: []byte(snapInfoBody)},
		"GET /_snapshot/siemctl/s2":           {Status: 404, Body: []byte(snapMissingBody)},
		"GET /_snapshot/siemctl/s2/_status":   {Status: 404, Body: []byte(snapMissingBody)},
		"GET /_snapshot/nope/s1":              {Status: 404, Body: []byte(repoMissingBody)},
		"GET /_snapshot/nope/s1/_status":      {Status: 404, Body: []byte(repoMissingBody)},
		"DELETE /_snapshot/nope/s1":           {Status: 404, Body: []byte(repoMissingBody)},
		"DELETE /_snapshot/siemctl/s2":        {Status: 404, Body: []byte(snapMissingBody)},
		"POST /_snapshot/siemctl/s1/_restore": {Body: []byte(`{"accepted":true}`)},
		"DELETE /_snapshot/siemctl/s1":        {Body: []byte(`{"acknowledged":true}`)},
	})
	if err := c.CreateSnapshot(ctx, indexer.SnapshotRequest{Repository: "siemctl", Name: "s1", Indices: []string{"siem-alerts-4.x-*", ".opendistro_security"}, IncludeGlobalState: true}); err != nil {
		t.Fatal(err)
	}
	req, _ := srv.Last("PUT /_snapshot/siemctl/s1")
	if req.Query.Get("wait_for_completion") != "false" || string(req.Body) != `{"ignore_unavailable":true,"include_global_state":true,"indices":"siem-alerts-4.x-*,.opendistro_security"}` {
		t.Errorf("create: query %v body %s", req.Query, req.Body)
	}
	p, err := c.SnapshotStatus(ctx, "siemctl", "s1")
	if err != nil || p.State != "STARTED" || p.ShardsTotal != 5 || p.IncrementalBytes != 1132155 || p.ProcessedBytes != 283038 || p.Percent() < 24.9 || p.Percent() > 25.1 {
		t.Errorf("status = %+v (%.1f%%), %v", p, p.Percent(), err)
	}
	info, err := c.GetSnapshot(ctx, "siemctl", "s1")
	if err != nil || !info.Complete() || info.Version != "2.11.1" || len(info.Indices) != 5 || info.Indices[0] != ".opendistro_security" || info.DurationMilli != 2557 {
		t.Errorf("info = %+v, %v", info, err)
	}
	if _, err := c.GetSnapshot(ctx, "siemctl", "s2"); !errors.Is(err, indexer.ErrSnapshotMissing) {
		t.Errorf("missing snapshot: %v", err)
	}
	if _, err := c.SnapshotStatus(ctx, "siemctl", "s2"); !errors.Is(err, indexer.ErrSnapshotMissing) {
		t.Errorf("missing snapshot status: %v", err)
	}
	if _, err := c.GetSnapshot(ctx, "nope", "s1"); !errors.Is(err, indexer.ErrRepositoryMissing) {
		t.Errorf("missing repository: %v", err)
	}
	// The node's 404 for a missing repository is that, for every call on a snapshot.
	if _, err := c.SnapshotStatus(ctx, "nope", "s1"); !errors.Is(err, indexer.ErrRepositoryMissing) {
		t.Errorf("missing repository status: %v", err)
	}
	if err := c.DeleteSnapshot(ctx, "nope", "s1"); !errors.Is(err, indexer.ErrRepositoryMissing) {
		t.Errorf("missing repository delete: %v", err)
	}
	if err := c.DeleteSnapshot(ctx, "siemctl", "s2"); !errors.Is(err, indexer.ErrSnapshotMissing) {
		t.Errorf("missing snapshot delete: %v", err)
	}
	if err := c.RestoreSnapshot(ctx, indexer.RestoreRequest{Repository: "siemctl", Name: "s1", Indices: []string{"siem-alerts-4.x-*"}}); err != nil {
		t.Fatal(err)
	}
	req, _ = srv.Last("POST /_snapshot/siemctl/s1/_restore")
	if string(req.Body) != `{"ignore_unavailable":true,"include_global_state":false,"indices":"siem-alerts-4.x-*"}` {
		t.Errorf("restore body %s", req.Body)
	}
	if err := c.DeleteSnapshot(ctx, "siemctl", "s1"); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotPartialIsNotComplete(t *testing.T) {
	_, c := fakeClient(t, map[string]indexertest.Route{"GET /_snapshot/siemctl/s1": {Body: []byte(snapPartialBody)}})
	info, err := c.GetSnapshot(context.Background(), "siemctl", "s1")
	if err != nil || info.Complete() || len(info.Failures) != 1 || !strings.Contains(info.Failures[0], "a[0]: IndexShardSnapshotFailedException[no space left on device]") {
		t.Errorf("partial = %+v, %v", info, err)
	}
	// A broken answer is a bad response, not a panic or an empty success.
	_, c = fakeClient(t, map[string]indexertest.Route{"GET /_snapshot/siemctl/s1": {Body: []byte(`{"snapshots":[{"snapshot":"other"}]}`)}})
	if _, err := c.GetSnapshot(context.Background(), "siemctl", "s1"); !errors.Is(err, netclient.ErrBadResponse) {
		t.Errorf("answer without s1: %v", err)
	}
}

func TestSnapshotsList(t *testing.T) {
	ctx := context.Background()
	_, c := fakeClient(t, map[string]indexertest.Route{
		"GET /_snapshot/siemctl/_all": {Body: []byte(snapInfoBody)},
		"GET /_snapshot/nope/_all":    {Status: 404, Body: []byte(repoMissingBody)},
	})
	all, err := c.Snapshots(ctx, "siemctl")
	if err != nil || len(all) != 1 || all[0].Name != "s1" || !all[0].Complete() || len(all[0].Indices) != 5 {
		t.Fatalf("Snapshots = %+v, %v", all, err)
	}
	if _, err := c.Snapshots(ctx, "nope"); !errors.Is(err, indexer.ErrRepositoryMissing) {
		t.Errorf("missing repository: %v", err)
	}
	if _, err := c.Snapshots(ctx, "../x"); err == nil {
		t.Error("invalid repository name accepted")
	}
}

func TestRecoveries(t *testing.T) {
	ctx := context.Background()
	// GET /_cat/recovery/siem-alerts-4.x-*?format=json&bytes=b&h=… on 2.11.1 while restoring.
	body := `[{"index":"siem-alerts-4.x-2026.11.22","shard":"0","type":"snapshot","stage":"index","snapshot":"siemctl-r1","bytes_recovered":"524288","bytes_total":"1048576"},` +
		`{"index":"siem-alerts-4.x-2026.11.23","shard":"0","type":"existing_store","stage":"done","snapshot":"n/a","bytes_recovered":"0","bytes_total":"0"}]`
	srv, c := fakeClient(t, map[string]indexertest.Route{
		"GET /_cat/recovery/siem-alerts-4.x-*": {Body: []byte(body)},
		"GET /_cat/recovery":                   {Body: []byte(`[{"index":"a","shard":"x"}]`)},
	})
	got, err := c.Recoveries(ctx, "siem-alerts-4.x-*", false)
	want := []indexer.ShardRecovery{
		{Index: "siem-alerts-4.x-2026.11.22", Shard: 0, Type: "snapshot", Stage: "index", Snapshot: "siemctl-r1", BytesRecovered: 524288, BytesTotal: 1048576},
		{Index: "siem-alerts-4.x-2026.11.23", Shard: 0, Type: "existing_store", Stage: "done", Snapshot: "n/a"},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("recoveries %+v, %v", got, err)
	}
	if req, _ := srv.Last("GET /_cat/recovery/siem-alerts-4.x-*"); req.Query.Get("bytes") != "b" || req.Query.Get("active_only") != "false" {
		t.Errorf("query %v", req.Query)
	}
	if _, err := c.Recoveries(ctx, "", true); err == nil || !strings.Contains(err.Error(), "column shard") {
		t.Errorf("a bad row: %v", err)
	}
}
