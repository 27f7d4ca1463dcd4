package hostfacts

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// TestComponentCerts: each https endpoint's leaf is read (http ones are
// not dialled), each CA file once under its label, and a missing CA file
// is skipped while an unreadable endpoint is reported with its error.
func TestComponentCerts(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, ca.pem, 0o644)
	now := time.Now()
	node := serveTLS(t, ca.leaf(t, "node-1", now.Add(-time.Hour), now.Add(30*24*time.Hour)))
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	got := ComponentCerts(context.Background(), []Endpoint{
		{Component: "indexer", CALabel: "indexer CA", URL: "https://" + node, TLS: netclient.TLSOptions{CAFile: caFile}},
		{Component: "manager API", CALabel: "manager CA", URL: "https://" + closed, TLS: netclient.TLSOptions{CAFile: caFile}},
		{Component: "dashboard", CALabel: "dashboard CA", URL: "http://" + node, TLS: netclient.TLSOptions{CAFile: filepath.Join(dir, "missing.pem")}},
	})
	slices.SortFunc(got, func(a, b ComponentCert) int { return strings.Compare(a.Component, b.Component) })
	if len(got) != 3 {
		t.Fatalf("got %d certs: %+v", len(got), got)
	}
	if c := got[0]; c.Component != "indexer" || c.Source != node || c.Subject != "CN=node-1" || c.Err != nil {
		t.Errorf("indexer leaf = %+v", c)
	}
	if c := got[1]; c.Component != "indexer CA" || c.Source != caFile || c.Subject != "CN=test root CA" || c.NotAfter.IsZero() {
		t.Errorf("CA file (read once, under the first label) = %+v", c)
	}
	if c := got[2]; c.Component != "manager API" || !errors.Is(c.Err, netclient.ErrUnreachable) {
		t.Errorf("closed endpoint = %+v", c)
	}
}

// TestDashboardStatus: the answer to GET / (a 302 to the login page) with
// its Location, the version from /api/status when it answers 200, none
// when it does not, and a refused port is unreachable.
func TestDashboardStatus(t *testing.T) {
	statusCode := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Location", "/app/login?nextUrl=%2F")
			w.WriteHeader(http.StatusFound)
		case "/api/status":
			w.WriteHeader(statusCode)
			w.Write([]byte(`{"name":"dashboard","version":{"number":"2.19.1","build_number":8000}}`))
		}
	}))
	defer srv.Close()
	ans, err := Dashboard{URL: srv.URL + "/"}.Status(context.Background())
	if err != nil || ans.Status != http.StatusFound || ans.Location != "/app/login?nextUrl=%2F" || ans.Version != "2.19.1" {
		t.Fatalf("Status = %+v, %v", ans, err)
	}
	statusCode = http.StatusServiceUnavailable
	if ans, err := (Dashboard{URL: srv.URL}).Status(context.Background()); err != nil || ans.Status != http.StatusFound || ans.Version != "" {
		t.Fatalf("status API down: %+v, %v", ans, err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	if _, err := (Dashboard{URL: "http://" + closed}).Status(context.Background()); !errors.Is(err, netclient.ErrUnreachable) {
		t.Fatalf("closed port = %v", err)
	}
}
