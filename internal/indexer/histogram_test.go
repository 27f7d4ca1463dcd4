package indexer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

func TestHistogram(t *testing.T) {
	since := time.Date(2026, 1, 2, 10, 30, 0, 0, time.UTC)
	until := since.Add(3 * time.Hour)
	ctx := context.Background()

	// No index matches the pattern: OpenSearch answers without aggregations; every interval is 0.
	_, c := fakeClient(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Body: []byte(
		`{"took":0,"timed_out":false,"_shards":{"total":0,"successful":0,"skipped":0,"failed":0},"hits":{"total":{"value":0,"relation":"eq"},"max_score":0.0,"hits":[]}}`)}})
	got, err := c.Histogram(ctx, "siem-alerts-4.x-*", "", since, until, time.Hour)
	if err != nil || len(got) != 4 || !got[0].Start.Equal(since) || got[3].Count != 0 {
		t.Errorf("no indices: %v %+v", err, got)
	}

	// A bucket without a key is a broken answer, said as such.
	_, c = fakeClient(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Body: []byte(
		`{"aggregations":{"per":{"buckets":[{"doc_count":3}]}}}`)}})
	if _, err := c.Histogram(ctx, "siem-alerts-4.x-*", "", since, until, time.Hour); !errors.Is(err, netclient.ErrBadResponse) {
		t.Errorf("keyless bucket: %v, want a bad response", err)
	}

	// A failed request names it once, like every other request of the client.
	_, c = fakeClient(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Status: 500, Body: []byte(`{"error":"boom","status":500}`)}})
	_, err = c.Histogram(ctx, "siem-alerts-4.x-*", "", since, until, time.Hour)
	if err == nil || !strings.HasPrefix(err.Error(), "POST /siem-alerts-4.x-") || strings.Count(err.Error(), "POST") != 1 {
		t.Errorf("failed request: %v, want it to start with the request, named once", err)
	}

	// Intervals the API cannot take, or too many buckets, are refused before sending.
	srv, c := fakeClient(t, map[string]indexertest.Route{})
	for _, iv := range []time.Duration{0, 1500 * time.Millisecond} {
		if _, err := c.Histogram(ctx, "siem-alerts-4.x-*", "", since, until, iv); err == nil {
			t.Errorf("interval %s accepted", iv)
		}
	}
	if _, err := c.Histogram(ctx, "siem-alerts-4.x-*", "", since, since.Add(30*24*time.Hour), time.Second); err == nil {
		t.Error("2.6 million buckets accepted")
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for refused histograms", n)
	}
}
