package lab

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// countServer answers POST /<index>/_count like OpenSearch 2.x with
// ignore_unavailable/allow_no_indices: counts[i] for the i-th call (the
// last one repeats); it records the paths and bodies it saw.
type countServer struct {
	*httptest.Server
	mu     sync.Mutex
	counts []int
	paths  []string
	bodies []string
}

func newCountServer(t *testing.T, counts ...int) (*countServer, *indexerClient) {
	t.Helper()
	cs := &countServer{counts: counts}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "pw" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		cs.mu.Lock()
		i := min(len(cs.paths), len(cs.counts)-1)
		cs.paths = append(cs.paths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		cs.bodies = append(cs.bodies, string(b))
		n := cs.counts[i]
		cs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		total := 0
		if n > 0 {
			total = 1
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"count": n, "_shards": map[string]int{"total": total, "successful": total, "skipped": 0, "failed": 0}})
	}))
	t.Cleanup(cs.Close)
	return cs, &indexerClient{base: cs.URL, user: "admin", password: "pw", hc: cs.Client()}
}

func TestFirstAlertWaitsForTodaysIndex(t *testing.T) {
	cs, c := newCountServer(t, 0, 0, 1)
	day := time.Date(2026, 11, 23, 23, 59, 59, 0, time.UTC)
	calls := 0
	now := func() time.Time { calls++; return day.Add(time.Duration(calls) * 500 * time.Millisecond) }
	index, err := firstAlert(context.Background(), c, "siem-alerts-4.x-", time.Millisecond, 10*time.Second, now, filepath.Join(t.TempDir(), "alerts.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The wait crossed midnight: it looks at the new day's index.
	if index != "siem-alerts-4.x-2026.11.24" || len(cs.paths) != 3 {
		t.Fatalf("index %s after %d calls %v", index, len(cs.paths), cs.paths)
	}
	if cs.paths[0] != "POST /siem-alerts-4.x-2026.11.23/_count?ignore_unavailable=true&allow_no_indices=true" {
		t.Errorf("first call %s", cs.paths[0])
	}
	if cs.bodies[0] != `{"query":{"range":{"timestamp":{"gte":"now-5m"}}}}` {
		t.Errorf("body %s", cs.bodies[0])
	}
}

func TestFirstAlertNamesTheBrokenHop(t *testing.T) {
	dir := t.TempDir()
	noFile := filepath.Join(dir, "none", "alerts.json")
	written := filepath.Join(dir, "alerts.json")
	if err := os.WriteFile(written, []byte(`{"timestamp":"2026-11-23T21:30:00.000+0000","rule":{"id":"5710"}}`+"\n"+`{"timestamp":"2026-11-23T21:30:20.000+0000","rule":{"id":"5710"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, want string
	}{
		{noFile, "broken hop: manager: it wrote no alert to " + noFile},
		{written, "broken hop: shipper: the manager wrote 2 alert(s) to " + written + ", none reached the indexer"},
	} {
		_, c := newCountServer(t, 0)
		now := func() time.Time { return time.Date(2026, 11, 23, 21, 31, 0, 0, time.UTC) }
		_, err := firstAlert(context.Background(), c, "siem-alerts-4.x-", 5*time.Millisecond, 200*time.Millisecond, now, tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "no alert searchable in siem-alerts-4.x-2026.11.23 after 200ms") {
			t.Errorf("error %v\nwant %q", err, tc.want)
		}
	}
	// Cancelled by the caller: no diagnosis, the cancellation.
	_, c := newCountServer(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := firstAlert(ctx, c, "siem-alerts-4.x-", time.Millisecond, time.Minute, time.Now, noFile); err == nil || strings.Contains(err.Error(), "broken hop") {
		t.Errorf("cancelled: %v", err)
	}
}
