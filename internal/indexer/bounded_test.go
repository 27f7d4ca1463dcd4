package indexer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
)

func plainClient(t *testing.T, h http.HandlerFunc) *indexer.Client {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newClient(t, indexer.Options{URL: srv.URL, Username: "admin", Password: "Adm1n.Pass"})
}

// TestAnswerOverCap: a 50 MB answer (opensearch-go would buffer it whole)
// is refused at the cap, naming the request and the cap.
func TestAnswerOverCap(t *testing.T) {
	c := plainClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[`))
		row := []byte(strings.Repeat(`{"index":"siem-alerts-4.x-2025.01.01","health":"green","docs.count":"1"},`, 512))
		for n := 0; n < 50<<20; n += len(row) {
			if _, err := w.Write(row); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`{}]`))
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.CatIndices(context.Background(), "*")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, netclient.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "/_cat/indices") || !strings.Contains(msg, "4 MiB") {
		t.Errorf("message does not name the answer and the cap: %s", msg)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MiB for a refused 50 MB answer", float64(alloc)/(1<<20))
	if alloc > 32<<20 {
		t.Errorf("allocated %d MiB", alloc>>20)
	}
}

// TestErrorAnswersSummarised: a proxy's HTML 5xx is summarised by its
// title, a redirect names its Location, a 429 is the indexer's (its own
// hint, not the manager API's).
func TestErrorAnswersSummarised(t *testing.T) {
	t.Run("HTML 502", func(t *testing.T) {
		c := plainClient(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"))
		})
		_, err := c.Health(context.Background(), indexer.HealthRequest{})
		if err == nil || !strings.Contains(err.Error(), `HTML page "502 Bad Gateway"`) || strings.Contains(err.Error(), "<") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		c := plainClient(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://indexer.example.org:9200"+r.URL.Path, http.StatusMovedPermanently)
		})
		_, err := c.Health(context.Background(), indexer.HealthRequest{})
		if err == nil || !strings.Contains(err.Error(), "redirected to https://indexer.example.org:9200/_cluster/health") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("429", func(t *testing.T) {
		c := plainClient(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"root_cause":[{"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation"}],"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation"},"status":429}`))
		})
		_, err := c.Health(context.Background(), indexer.HealthRequest{})
		var ne *netclient.Error
		if !errors.Is(err, netclient.ErrRateLimited) || !errors.As(err, &ne) || ne.Service != "indexer" {
			t.Errorf("err = %v", err)
		}
	})
}
