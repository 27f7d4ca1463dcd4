package dashboard

import (
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
		if u, p, _ := r.BasicAuth(); r.URL.Path == "/_plugins/_security/authinfo" && u == "admin" && p == "good" {
			_, _ = io.WriteString(w, `{"user_name":"admin","roles":["all_access"],"backend_roles":["admin"]}`)
			return
		}
		w.WriteHeader(401)
	}))
	defer indexer.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dashboard.yml")
	_ = os.WriteFile(cfg, []byte("server.port: 5601\nopensearch.hosts: "+indexer.URL+"\n"), 0o644)
	conf, err := LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(conf, "4.9.0", slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
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
