package hostfacts

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Bodies as the real OpenSearch Dashboards answers them: the NotReady server's text on every route
// (src/core/server/http/http_service.ts), and /api/status's legacy format with core:opensearch red
// (src/core/server/status/legacy_status.ts; the route answers 200 even when red).
const (
	realNotReady  = "OpenSearch Dashboards server is not ready yet"
	realRedStatus = `{"name":"dashboard","uuid":"5b2de169-2785-441b-ae8c-186a1936b17d","version":{"number":"2.11.1","build_hash":"6b1986e964d440be9137eba1413015c31c5a7752","build_number":6625,"build_snapshot":false},
"status":{"overall":{"since":"2026-11-27T10:12:01.123Z","state":"red","title":"Red","nickname":"Danger Will Robinson! Danger!","icon":"danger","uiColor":"danger"},
"statuses":[{"id":"core:opensearch@2.11.1","message":"Unable to retrieve version information from OpenSearch nodes.","since":"2026-11-27T10:12:01.123Z","state":"red","icon":"danger","uiColor":"danger"},
{"id":"core:savedObjects@2.11.1","message":"SavedObjects service has completed migrations and is available","since":"2026-11-27T10:12:01.123Z","state":"green","icon":"success","uiColor":"secondary"}]},
"metrics":{"last_updated":"2026-11-27T10:12:05.000Z","collection_interval_in_millis":5000}}`
)

func TestDashboardStatusReachesIndexer(t *testing.T) {
	tests := []struct {
		name             string
		handler          http.HandlerFunc
		status           int
		notReady, state  string
		opensearch, vers string
	}{
		{"not ready", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(503)
			_, _ = io.WriteString(w, realNotReady)
		}, 503, realNotReady, "", "", ""},
		{"red", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/status" {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = io.WriteString(w, realRedStatus)
				return
			}
			w.Header().Set("Location", "/app/login?nextUrl=%2F")
			w.WriteHeader(302)
		}, 302, "", "red", "Unable to retrieve version information from OpenSearch nodes.", "2.11.1"},
		{"status needs login", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/status" {
				w.WriteHeader(401)
				_, _ = io.WriteString(w, `{"statusCode":401,"error":"Unauthorized","message":"Authentication required"}`)
				return
			}
			w.Header().Set("Location", "/app/login?nextUrl=%2F")
			w.WriteHeader(302)
		}, 302, "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			a, err := Dashboard{URL: srv.URL}.Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != tt.status || a.NotReady != tt.notReady || a.State != tt.state || a.OpenSearch != tt.opensearch || a.Version != tt.vers {
				t.Errorf("%+v", a)
			}
		})
	}
}

func TestReachIndexerHosts(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	d := DashboardConf{Hosts: []string{"https://127.0.0.1:1", srv.URL}, VerifyMode: "certificate"}
	got := ReachIndexerHosts(context.Background(), d)
	if got[0].OK || !strings.Contains(got[0].Detail, "connection refused") {
		t.Errorf("closed port: %+v", got[0])
	}
	// The dashboard has no CA for the test server's certificate: rejected, as the dashboard would.
	if got[1].OK || !strings.Contains(got[1].Detail, "rejects the indexer certificate") {
		t.Errorf("unknown CA: %+v", got[1])
	}
	d.VerifyMode = "none"
	if got := ReachIndexerHosts(context.Background(), d); !got[1].OK {
		t.Errorf("verificationMode none: %+v", got[1])
	}
}
