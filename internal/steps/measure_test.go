package steps_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
)

// takeMeasures returns the measures reported so far and forgets them.
func (e *env) takeMeasures() []engine.Measure {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.measures
	e.measures = nil
	return m
}

// checkCopyMeasures: a copy reports bytes of the known total, never going
// back, the first while copying and the last at the total.
func checkCopyMeasures(t *testing.T, ms []engine.Measure, what string, total int64) {
	t.Helper()
	if len(ms) < 2 {
		t.Fatalf("%s: %d measures, want the first and the last at least: %+v", what, len(ms), ms)
	}
	var prev int64
	for _, m := range ms {
		if m.What != what || m.Unit != engine.UnitBytes || m.Total != total || m.Done < prev || m.Done > total {
			t.Fatalf("%s: bad measure %+v (previous done %d) in %+v", what, m, prev, ms)
		}
		prev = m.Done
	}
	if ms[0].Done >= total {
		t.Errorf("%s: the first measure is already the total: %+v", what, ms)
	}
	if last := ms[len(ms)-1]; last.Done != total {
		t.Errorf("%s: the last measure %+v is not the total %d", what, last, total)
	}
}

// dsStatusOf is a _snapshot/<repo>/<snap>/_status body as OpenSearch
// 2.11.1 answers it.
func dsStatusOf(state string, done, failed, total int, incremental, processed int64) string {
	return fmt.Sprintf(`{"snapshots":[{"snapshot":"%s","repository":"siemctl","uuid":"7XpDW8YLQnO9kLrMjUTBvA","state":"%s","include_global_state":true,`+
		`"shards_stats":{"initializing":0,"started":%d,"finalizing":0,"done":%d,"failed":%d,"total":%d},`+
		`"stats":{"incremental":{"file_count":17,"size_in_bytes":%d},"processed":{"file_count":4,"size_in_bytes":%d},"total":{"file_count":40,"size_in_bytes":%d},"start_time_in_millis":1795470310278,"time_in_millis":668},"indices":{}}]}`,
		dsRunSnap, state, total-done-failed, done, failed, total, incremental, processed, incremental*3)
}

func TestSnapshotTakeReportsStatusPercent(t *testing.T) {
	idx := []string{"siem-alerts-4.x-2026.11.22", "siem-alerts-4.x-2026.11.23"}
	const inc = 1132155
	for _, tc := range []struct {
		name     string
		statuses []string
		percents []float64
		unit     string
		err      string
	}{
		{name: "bytes", statuses: []string{dsStatusOf("STARTED", 0, 0, 2, inc, 0), dsStatusOf("STARTED", 1, 0, 2, inc, inc/2), dsStatusOf("SUCCESS", 2, 0, 2, inc, inc)},
			// SUCCESS twice: the first GET of the snapshot says it is still finalising.
			percents: []float64{0, 50, 100, 100}, unit: engine.UnitBytes},
		// The second snapshot into the same repository: no new segments, the shards tell.
		{name: "nothing new", statuses: []string{dsStatusOf("STARTED", 1, 0, 2, 0, 0), dsStatusOf("SUCCESS", 2, 0, 2, 0, 0)},
			percents: []float64{50, 100, 100}, unit: engine.UnitShards},
		{name: "failed", statuses: []string{dsStatusOf("STARTED", 0, 0, 2, inc, 1000), dsStatusOf("FAILED", 0, 2, 2, inc, 1000)},
			percents: []float64{0.09, 0.09}, unit: engine.UnitBytes, err: "ended FAILED (2 of 2 shards failed)"},
		{name: "partial", statuses: []string{dsStatusOf("PARTIAL", 1, 1, 2, inc, inc/4)},
			percents: []float64{25}, unit: engine.UnitBytes, err: "ended PARTIAL (1 of 2 shards failed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRepo{registered: true, secInit: true, indices: idx, snapIndices: idx, statuses: tc.statuses}
			d, _ := snapshotDeps(t, "snapshot", f)
			e := newEnv(d, nil)
			_, err := run(t, d, e, "indexer.snapshot_take", nil)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			ms := e.takeMeasures()
			if len(ms) != len(tc.percents) {
				t.Fatalf("measures %+v, want %d", ms, len(tc.percents))
			}
			for i, m := range ms {
				if m.What != "snapshot" || m.Unit != tc.unit || fmt.Sprintf("%.2f", m.Percent()) != fmt.Sprintf("%.2f", tc.percents[i]) {
					t.Errorf("measure %d = %+v (%.2f%%), want %s at %.2f%%", i, m, m.Percent(), tc.unit, tc.percents[i])
				}
			}
		})
	}
}

// While the health gate waits server-side for yellow, the shards still
// recovering are reported as a measure (the bytes of the active ones).
func TestClusterHealthGateReportsRecovery(t *testing.T) {
	routes := healthRoutes(indexertest.Route{Status: http.StatusRequestTimeout, File: "health-timeout-408.json"})
	routes["GET /_cat/recovery"] = indexertest.Route{Body: []byte(`[{"index":"siem-alerts-4.x-2026.11.22","shard":"0","type":"existing_store","stage":"translog","snapshot":"n/a","bytes_recovered":"700","bytes_total":"1000"},` +
		`{"index":"siem-alerts-4.x-2026.11.23","shard":"0","type":"existing_store","stage":"index","snapshot":"n/a","bytes_recovered":"300","bytes_total":"1000"}]`)}
	srv := indexertest.NewServer(t, routes)
	d := indexerDeps(t, srv)
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "gate.cluster_health", map[string]any{"status": "yellow"}); err == nil {
		t.Fatal("a timed-out wait passed")
	}
	ms := e.takeMeasures()
	if len(ms) == 0 || ms[0] != (engine.Measure{What: "recovery", Unit: engine.UnitBytes, Done: 1000, Total: 2000, Detail: "0/2 shards recovered"}) {
		t.Fatalf("measures %+v", ms)
	}
	if req, _ := srv.Last("GET /_cat/recovery"); req.Query.Get("active_only") != "true" {
		t.Errorf("query %v", req.Query)
	}
}
