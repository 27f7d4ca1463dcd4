package manager

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkGetAgents100k measures GET /agents (default page, a status filter, and a sorted page)
// against a 100,000-agent database.
func BenchmarkGetAgents100k(b *testing.B) {
	h := Home{Dir: filepath.Join(b.TempDir(), "var", "siem")}
	for rel, data := range map[string][]byte{"VERSION": []byte("v4.9.0\n"), "etc/ossec.conf": DefaultOssecConf(1514, 1515, 5514)} {
		_ = os.MkdirAll(filepath.Dir(h.Path(rel)), 0o755)
		if err := os.WriteFile(h.Path(rel), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := Seed(h, 100000, false, testNow); err != nil {
		b.Fatal(err)
	}
	if err := NewUserStore(h).EnsureDefaults(); err != nil {
		b.Fatal(err)
	}
	if err := writePidfiles(h, runningDaemons(nil), os.Getpid()); err != nil {
		b.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	conf, _ := LoadAPIConfig("")
	conf.Access.MaxRequestPerMinute = 0
	api := NewAPIServer(APIOptions{Home: h, Config: conf, Now: func() time.Time { return testNow }, Hostname: "siem01", SignKey: key})
	req := httptest.NewRequest("POST", "/security/user/authenticate?raw=true", nil)
	req.SetBasicAuth("siem", "siem")
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	tok := rec.Body.String()
	for _, q := range []string{"", "?status=disconnected&limit=500", "?sort=-lastKeepAlive&limit=100&select=id,name,status", "?agents_list=050000"} {
		b.Run("query="+q, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("GET", "/agents"+q, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				rec := httptest.NewRecorder()
				api.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
