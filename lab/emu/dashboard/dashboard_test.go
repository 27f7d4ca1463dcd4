package dashboard

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDashboard(t *testing.T) {
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		switch {
		case r.URL.Path == "/_plugins/_security/authinfo" && u == "admin" && p == "good":
			_, _ = io.WriteString(w, `{"user_name":"admin","roles":["all_access"],"backend_roles":["admin"]}`)
		case r.URL.Path == "/" && u == "kibanaserver" && p == "ks-secret":
			_, _ = io.WriteString(w, `{"name":"node-1","cluster_name":"siem","version":{"distribution":"opensearch","number":"2.11.1"},"tagline":"The OpenSearch Project: https://opensearch.org/"}`)
		default:
			w.Header().Set("WWW-Authenticate", `Basic realm="OpenSearch Security"`)
			w.WriteHeader(401)
			_, _ = io.WriteString(w, "Unauthorized")
		}
	}))
	defer indexer.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dashboard.yml")
	_ = os.WriteFile(cfg, []byte("server.port: 5601\nopensearch.hosts: "+indexer.URL+"\nopensearch.username: kibanaserver\n"), 0o644)
	// The password is in the keystore, as the Wazuh installer puts it.
	if err := WriteKeystore(filepath.Join(dir, KeystoreName), map[string]string{"opensearch.password": "ks-secret"}); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, cfg)
	if err := s.CheckIndexer(context.Background()); err != nil {
		t.Fatalf("indexer check with the keystore's password: %v", err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		name, method, path, body string
		xsrf                     bool
		status                   int
		want                     string
	}{
		{"root redirects", "GET", "/", "", false, 302, ""},
		{"login page", "GET", "/app/login", "", false, 200, "<form"},
		{"status", "GET", "/api/status", "", false, 200, `"number":"4.9.0"`},
		{"no xsrf", "POST", "/auth/login", `{"username":"admin","password":"good"}`, false, 400, "osd-xsrf"},
		{"bad credentials", "POST", "/auth/login", `{"username":"admin","password":"bad"}`, true, 401, `{"statusCode":401,"error":"Unauthorized","message":"Invalid username or password"}`},
		{"good credentials", "POST", "/auth/login", `{"username":"admin","password":"good"}`, true, 200, `"username":"admin"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.xsrf {
				req.Header.Set("osd-xsrf", "true")
			}
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if tc.status == 302 && resp.Header.Get("Location") != "/app/login?nextUrl=%2F" {
				t.Fatalf("location %q", resp.Header.Get("Location"))
			}
		})
	}
}

// TestDashboardNotReady: a dashboard that cannot reach its indexer (or is refused its credentials)
// answers every route as the real NotReady server does; once the indexer answers it serves, and a
// later loss turns /api/status red while logins fail with 500.
func TestDashboardNotReady(t *testing.T) {
	pw := "wrong"
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); u == "kibanaserver" && p == pw {
			_, _ = io.WriteString(w, `{"name":"node-1","version":{"number":"2.11.1"}}`)
			return
		}
		w.WriteHeader(401)
	}))
	defer indexer.Close()
	for _, tc := range []struct{ name, hosts string }{
		{"hosts point nowhere", "https://127.0.0.1:1"},
		{"credentials refused", indexer.URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "dashboard.yml")
			_ = os.WriteFile(cfg, []byte("opensearch.hosts: "+tc.hosts+"\nopensearch.username: kibanaserver\nopensearch.password: nope\n"), 0o644)
			s := newServer(t, cfg)
			if err := s.CheckIndexer(context.Background()); err == nil {
				t.Fatal("indexer check passed")
			}
			srv := httptest.NewServer(s)
			defer srv.Close()
			for _, path := range []string{"/", "/api/status", "/app/login"} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 503 || string(b) != "OpenSearch Dashboards server is not ready yet" || resp.Header.Get("Retry-After") != "30" {
					t.Errorf("GET %s: %d %q Retry-After %q", path, resp.StatusCode, b, resp.Header.Get("Retry-After"))
				}
			}
		})
	}
	// Ready once the credentials work; then the indexer refuses them: red status, login 500.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dashboard.yml")
	_ = os.WriteFile(cfg, []byte("opensearch.hosts: "+indexer.URL+"\nopensearch.username: kibanaserver\nopensearch.password: right\n"), 0o644)
	s := newServer(t, cfg)
	pw = "right"
	if err := s.CheckIndexer(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	indexer.Close()
	_ = s.CheckIndexer(context.Background())
	resp, err := http.Get(srv.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"state":"red"`) || !strings.Contains(string(b), "Unable to retrieve version information from OpenSearch nodes.") {
		t.Errorf("status after the indexer left: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/auth/login", strings.NewReader(`{"username":"admin","password":"x"}`))
	req.Header.Set("osd-xsrf", "true")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("login with the indexer gone: %d, want 500", resp.StatusCode)
	}
}

func TestKeystoreRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), KeystoreName)
	if err := WriteKeystore(p, map[string]string{"opensearch.username": "kibanaserver", "opensearch.password": "s3cret"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(b), "1:") || strings.Contains(string(b), "s3cret") {
		t.Fatalf("keystore file %q", b)
	}
	m, err := ReadKeystore(p)
	if err != nil || m["opensearch.password"] != "s3cret" || m["opensearch.username"] != "kibanaserver" {
		t.Fatalf("%v %v", m, err)
	}
	_ = os.WriteFile(p, []byte("1:AAAA"), 0o600)
	if _, err := ReadKeystore(p); err == nil {
		t.Fatal("corrupt keystore read")
	}
}

// newServer is the dashboard of the configuration file cfg, at 4.9.0.
func newServer(t *testing.T, cfg string) *Server {
	t.Helper()
	conf, err := LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(conf, "4.9.0", slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
