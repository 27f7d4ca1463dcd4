package indexer_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
)

type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Status: http.StatusText(b.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b.body)),
		ContentLength: int64(len(b.body)), Request: r}, nil
}

// FuzzDecodeResponses feeds one answer (status, body) to every decoder of
// the indexer client: whatever a node or an impostor answers, the client
// returns a value or an error, never panics.
func FuzzDecodeResponses(f *testing.F) {
	for _, s := range []struct {
		status int
		body   string
	}{
		{200, `{"name":"n","cluster_name":"c","version":{"number":"2.19.1","distribution":"opensearch"}}`},
		{200, `{"cluster_name":"c","status":"yellow","timed_out":false,"number_of_nodes":1,"unassigned_shards":3}`},
		{408, `{"cluster_name":"c","status":"red","timed_out":true}`},
		{200, `[{"index":"siem-alerts-4.x-2025.01.01","uuid":"u","health":"green","status":"open","docs.count":"10","store.size":"100"}]`},
		{200, `{"persistent":{"cluster":{"routing":{"allocation":{"enable":"primaries"}}}},"transient":{}}`},
		{200, `{"_shards":{"total":2,"successful":1,"failed":1}}`},
		{200, `{"hits":{"total":{"value":1},"hits":[{"_id":"1","_source":{"timestamp":"2025-01-01T00:00:00Z"},"sort":[1,"1"]}]}}`},
		{200, `{"count":7}`},
		{403, `{"error":{"type":"security_exception","reason":"no permissions"},"status":403}`},
		{404, `{"error":{"type":"index_not_found_exception"},"status":404}`},
		{503, `Security not initialized`},
		{500, `<html><title>boom</title></html>`},
		{200, ``},
		{200, `null`},
		{200, `{"nodes":{"x":{"version":"2.19.1","name":"n"}}}`},
		{200, `{"index_templates":[{"name":"t","index_template":{"index_patterns":["siem-alerts-*"],"priority":1}}]}`},
		{200, `{"template":{"settings":{}},"overlapping":[{"name":"o","index_patterns":["*"]}]}`},
	} {
		f.Add(s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 599 {
			status = 200
		}
		c, err := indexer.New(indexer.Options{URL: "http://127.0.0.1:9200", Timeout: time.Second, Transport: bodyTransport{status, body}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		_, _ = c.Info(ctx)
		_, _ = c.NodesVersions(ctx)
		_, _ = c.Health(ctx, indexer.HealthRequest{})
		_, _ = c.Settings(ctx, true)
		_, _ = c.ClusterMaxShardsPerNode(ctx)
		_, _ = c.PutSettings(ctx, indexer.SettingsUpdate{})
		_, _ = c.Flush(ctx)
		_, _, _ = c.SyncedFlush(ctx)
		_, _ = c.AllocationExplain(ctx, indexer.ExplainRequest{})
		_, _ = c.CatShards(ctx)
		_, _ = c.CatAllocation(ctx)
		_, _ = c.CatIndices(ctx, "siem-alerts-4.x-*")
		_, _ = c.CatNodes(ctx)
		_, _ = c.IndexBlocks(ctx, "siem-alerts-4.x-*")
		_, _ = c.Refresh(ctx, "siem-alerts-4.x-*")
		_, _ = c.Search(ctx, indexer.SearchRequest{Index: "siem-alerts-4.x-*", Size: 10})
		_, _ = c.Count(ctx, "siem-alerts-4.x-*", "", time.Now().Add(-time.Minute))
		_, _, _ = c.Newest(ctx, "siem-alerts-4.x-*", "timestamp")
		_, _ = c.LegacyTemplate(ctx, "siem")
		_, _ = c.ListLegacyTemplates(ctx)
		_, _ = c.ComposableTemplates(ctx)
		_, _ = c.SimulateIndex(ctx, "siem-alerts-4.x-2025.01.01")
		_, _ = c.Pipeline(ctx, "p")
	})
}
