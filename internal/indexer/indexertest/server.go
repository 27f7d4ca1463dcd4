// Package indexertest is a fake OpenSearch node for tests: an httptest server
// answering canned routes with the shared fixtures in testdata/api/indexer,
// with basic auth, recorded requests, and helpers to build an
// indexer.Options pointing at it.
package indexertest

import (
	"bytes"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
)

// Default credentials of the fake node.
const (
	Username = "admin"
	Password = "fake-indexer-secret"
)

// Route is one canned answer. Handler, when set, wins over the rest.
type Route struct {
	Status  int         // default 200
	Body    []byte      // sent as is
	File    string      // fixture name in testdata/api/indexer (used when Body is nil)
	Header  http.Header // extra headers; Content-Type defaults to application/json
	Handler http.HandlerFunc
}

// Locked is a route whose handler answers JSON while holding mu: a fake
// node's state shared by its routes.
func Locked(mu sync.Locker, h http.HandlerFunc) Route {
	return Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		h(w, r)
	}}
}

// Request is what the fake received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Body   []byte
	User   string // basic-auth user ("" if none)
}

// Server is a fake node. Routes are keyed "METHOD /path" (no query); an
// unknown route answers 400 "no handler found" like OpenSearch does.
type Server struct {
	*httptest.Server
	CAFile string // PEM of the server certificate (TLS servers only)

	tb       testing.TB
	mu       sync.Mutex
	routes   map[string]Route
	requests []Request
	noAuth   bool
}

// NewServer starts a plain-HTTP fake with routes (may be nil) requiring
// Username/Password.
func NewServer(tb testing.TB, routes map[string]Route) *Server {
	tb.Helper()
	s := newServer(tb, routes)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

// NewTLSServer starts an HTTPS fake and writes its certificate to CAFile.
func NewTLSServer(tb testing.TB, routes map[string]Route) *Server {
	tb.Helper()
	s := newServer(tb, routes)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are what TLS tests provoke
	s.StartTLS()
	tb.Cleanup(s.Close)
	s.CAFile = filepath.Join(tb.TempDir(), "root-ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(s.CAFile, pemBytes, 0o600); err != nil {
		tb.Fatalf("write CA file: %v", err)
	}
	return s
}

func newServer(tb testing.TB, routes map[string]Route) *Server {
	s := &Server{tb: tb, routes: map[string]Route{}}
	for k, r := range routes {
		s.routes[k] = r
	}
	return s
}

// DisableAuth makes the fake accept requests without credentials.
func (s *Server) DisableAuth() { s.mu.Lock(); s.noAuth = true; s.mu.Unlock() }

// Set adds or replaces a route, e.g. Set("GET /_cluster/health", Route{File: "health-red.json"}).
func (s *Server) Set(key string, r Route) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[key] = r
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Last returns the last request for key ("METHOD /path") and whether there was one.
func (s *Server) Last(key string) (Request, bool) {
	reqs := s.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method+" "+reqs[i].Path == key {
			return reqs[i], true
		}
	}
	return Request{}, false
}

// Options returns indexer.Options for this server with the fake's
// credentials (and its CA for TLS servers).
func (s *Server) Options() indexer.Options {
	return indexer.Options{URL: s.URL, Username: Username, Password: Password, CAFile: s.CAFile}
}

// Client is a client of this server (Options), closed when the test ends.
func (s *Server) Client(tb testing.TB) *indexer.Client {
	tb.Helper()
	c, err := indexer.New(s.Options())
	if err != nil {
		tb.Fatalf("indexer client: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	user, pass, _ := r.BasicAuth()
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, User: user})
	route, ok := s.routes[r.Method+" "+r.URL.Path]
	noAuth := s.noAuth
	s.mu.Unlock()

	if !noAuth && (user != Username || pass != Password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="OpenSearch Security"`)
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "Unauthorized")
		return
	}
	if !ok {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"no handler found for uri [`+r.URL.Path+`] and method [`+r.Method+`]"}`)
		return
	}
	if route.Handler != nil {
		r.Body = io.NopCloser(bytes.NewReader(body)) // read above for the record
		route.Handler(w, r)
		return
	}
	out := route.Body
	if out == nil && route.File != "" {
		out = Fixture(s.tb, route.File)
	}
	for k, vs := range route.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		ct := "application/json; charset=UTF-8"
		if strings.HasSuffix(route.File, ".txt") {
			ct = "text/plain; charset=UTF-8"
		}
		w.Header().Set("Content-Type", ct)
	}
	status := route.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// Healthy returns routes for a green single-node cluster with the
// compatibility override on GET /.
func Healthy() map[string]Route {
	return map[string]Route{
		"GET /":                            {File: "root-compat.json"},
		"GET /_nodes":                      {File: "nodes.json"},
		"GET /_cluster/health":             {File: "health-green.json"},
		"GET /_cluster/settings":           {File: "settings-empty.json"},
		"PUT /_cluster/settings":           {File: "settings-put-ack.json"},
		"POST /_flush":                     {File: "flush.json"},
		"POST /_flush/synced":              {File: "flush.json", Header: http.Header{"Warning": {`299 OpenSearch-2.19.2 "Synced flush was removed and a normal flush was performed instead. This transition will be removed in a future version."`}}},
		"GET /_cat/allocation":             {File: "cat-allocation.json"},
		"GET /_cat/nodes":                  {File: "cat-nodes.json"},
		"GET /_cluster/allocation/explain": {Status: http.StatusBadRequest, File: "explain-nothing-400.json"},
		"GET /_index_template":             {File: "index-templates-empty.json"},
	}
}

// RedByFilter returns Healthy's routes for a red node whose only unassigned
// shard is the primary of an index that requires a node that does not exist
// (the lab's cluster-red fault); the bodies are OpenSearch 2.11.1's.
func RedByFilter() map[string]Route {
	r := Healthy()
	r["GET /_cluster/health"] = Route{File: "health-red-filter.json"}
	r["GET /_cat/shards"] = Route{File: "cat-shards-red-filter.json"}
	r["GET /_cluster/allocation/explain"] = Route{File: "explain-filter-red.json"}
	return r
}

// Fixture returns the content of testdata/api/indexer/<name>.
func Fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(FixtureDir(), name))
	if err != nil {
		tb.Fatalf("fixture %s: %v", name, err)
	}
	return b
}

// FixtureDir is the absolute path of testdata/api/indexer.
func FixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "api", "indexer")
}
