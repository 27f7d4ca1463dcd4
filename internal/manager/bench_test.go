package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
)

// bigServer serves n pre-rendered agents so that the measurements are the
// client's, not the server's JSON encoding.
type bigServer struct {
	*httptest.Server
	items    [][]byte
	requests atomic.Int64
}

var (
	bigOnce  sync.Once
	bigItems [][]byte
)

func renderAgents(n int) [][]byte {
	bigOnce.Do(func() {
		all := append([]managertest.Agent{{ID: "000", Name: "siem01", IP: "127.0.0.1", RegisterIP: "127.0.0.1", Status: "active",
			Version: "Wazuh v4.9.0", DateAdd: "2025-01-10T08:00:00Z", LastKeepAlive: "9999-12-31T23:59:59Z"}}, managertest.GenerateAgents(99999)...)
		for _, a := range all {
			b, err := json.Marshal(a)
			if err != nil {
				panic(err)
			}
			bigItems = append(bigItems, b)
		}
	})
	return bigItems[:n]
}

func newBigServer(tb testing.TB, n int) *bigServer {
	s := &bigServer{items: renderAgents(n)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/security/user/authenticate" {
			_, _ = w.Write([]byte(`{"data":{"token":"opaque"},"error":0}`))
			return
		}
		s.requests.Add(1)
		q := r.URL.Query()
		off, _ := strconv.Atoi(q.Get("offset"))
		lim, _ := strconv.Atoi(q.Get("limit"))
		end := min(off+lim, len(s.items))
		off = min(off, end)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"affected_items":[`))
		for i, it := range s.items[off:end] {
			if i > 0 {
				_, _ = w.Write([]byte{','})
			}
			_, _ = w.Write(it)
		}
		fmt.Fprintf(w, `],"total_affected_items":%d,"total_failed_items":0,"failed_items":[]},"message":"All selected agents information was returned","error":0}`, len(s.items))
	}))
	tb.Cleanup(s.Close)
	return s
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func BenchmarkAgents100k(b *testing.B) {
	for _, limit := range []int{500, 10000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			srv := newBigServer(b, 100000)
			c, err := manager.New(manager.Options{URL: srv.URL, Username: "wazuh", Password: "x", HTTPClient: srv.Client()})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			runtime.GC()
			base := liveHeap()
			var peak uint64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				n := 0
				for _, err := range c.Agents(ctx, manager.AgentQuery{Limit: limit}) {
					if err != nil {
						b.Fatal(err)
					}
					if n++; n%25000 == 0 {
						peak = max(peak, liveHeap())
					}
				}
				if n != 100000 {
					b.Fatalf("agents = %d", n)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(srv.requests.Load())/float64(b.N), "requests/op")
			if peak > base {
				b.ReportMetric(float64(peak-base)/(1<<20), "live-heap-growth-MB")
			} else {
				b.ReportMetric(0, "live-heap-growth-MB")
			}
		})
	}
}

// TestAgentsFlatMemory: iterating 100,000 agents keeps only one agent
// alive; buffering them would retain tens of megabytes.
func TestAgentsFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100k agents")
	}
	srv := newBigServer(t, 100000)
	c, err := manager.New(manager.Options{URL: srv.URL, Username: "wazuh", Password: "x", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	n := 0
	var grown uint64
	for _, err := range c.Agents(context.Background(), manager.AgentQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 90000 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base {
				grown = ms.HeapAlloc - base
			}
		}
	}
	if n != 100000 || srv.requests.Load() != 200 {
		t.Fatalf("agents = %d in %d requests, want 100000 in 200", n, srv.requests.Load())
	}
	if grown > 8<<20 {
		t.Fatalf("live heap grew by %d MiB while streaming; memory is not flat", grown>>20)
	}
}
