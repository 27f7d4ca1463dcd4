package indexer_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

func newClient(t *testing.T, opts indexer.Options) *indexer.Client {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	c, err := indexer.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fakeClient starts a fake node with routes and returns a client for it.
func fakeClient(t *testing.T, routes map[string]indexertest.Route) (*indexertest.Server, *indexer.Client) {
	t.Helper()
	srv := indexertest.NewServer(t, routes)
	return srv, newClient(t, srv.Options())
}

// listen accepts loopback connections and hands each to onConn until the
// test ends; returns its URL.
func listen(t *testing.T, onConn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			onConn(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// hangingListener accepts connections and never answers; returns its URL.
func hangingListener(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return listen(t, func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	})
}

// refusedURL returns a loopback URL nobody listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

// truncatingHandler declares a longer body than it sends, then hangs up.
func truncatingHandler(w http.ResponseWriter, _ *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("no hijacker")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	writeRaw(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"cluster_name\":\"siem-cluster\",\"status\":\"gr")
}

func writeRaw(buf *bufio.ReadWriter, s string) {
	_, _ = buf.WriteString(s)
	_ = buf.Flush()
}

func TestErrorKinds(t *testing.T) {
	blockUntilGone := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	tests := []struct {
		name      string
		route     indexertest.Route
		url       string // overrides the fake
		password  string // overrides the right one
		ctxTO     time.Duration
		wantKind  error
		wantErr   error  // extra sentinel
		notErr    error  // must not match
		wantInMsg string // substring of the error message
	}{
		{name: "401 wrong password (security plugin text)", password: "wrong", wantKind: netclient.ErrUnauthorized, wantInMsg: "Unauthorized"},
		{name: "401 JSON body", route: indexertest.Route{Status: 401, File: "unauthorized-401.json"}, wantKind: netclient.ErrUnauthorized, wantInMsg: "HTTP 401"},
		{name: "403 no permissions", route: indexertest.Route{Status: 403, File: "forbidden-403.json"}, wantKind: netclient.ErrForbidden, wantInMsg: "no permissions for [cluster:monitor/health]"},
		{name: "503 security not initialized", route: indexertest.Route{Status: 503, File: "security-not-initialized-503.txt"},
			wantKind: netclient.ErrNotReady, wantErr: indexer.ErrSecurityNotInitialized, wantInMsg: "OpenSearch Security not initialized."},
		{name: "503 other", route: indexertest.Route{Status: 503, Body: []byte(`{"error":{"type":"cluster_block_exception","reason":"blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];"},"status":503}`)},
			wantKind: netclient.ErrNotReady, notErr: indexer.ErrSecurityNotInitialized, wantInMsg: "cluster_block_exception"},
		{name: "429", route: indexertest.Route{Status: 429, Body: []byte(`{"error":{"type":"rejected_execution_exception","reason":"rejected"},"status":429}`)}, wantKind: netclient.ErrRateLimited},
		{name: "500 opensearch error", route: indexertest.Route{Status: 500, Body: []byte(`{"error":{"root_cause":[],"type":"exception","reason":"boom"},"status":500}`)}, wantKind: netclient.ErrBadResponse, wantInMsg: "exception: boom"},
		{name: "invalid JSON", route: indexertest.Route{Body: []byte(`<html>proxy error</html>`)}, wantKind: netclient.ErrBadResponse, wantInMsg: "<html>proxy error</html>"},
		{name: "truncated JSON", route: indexertest.Route{Body: []byte(`{"cluster_name":"siem-cluster","status":"gre`)}, wantKind: netclient.ErrBadResponse, wantInMsg: `{"cluster_name":"siem-cluster"`},
		{name: "body shorter than Content-Length", route: indexertest.Route{Handler: truncatingHandler}, wantKind: netclient.ErrBadResponse, wantInMsg: "truncated"},
		{name: "empty body", route: indexertest.Route{Body: []byte{}}, wantKind: netclient.ErrBadResponse, wantInMsg: "empty body"},
		{name: "slow server hits ctx deadline", route: indexertest.Route{Handler: blockUntilGone}, ctxTO: 100 * time.Millisecond,
			wantKind: netclient.ErrTimeout, wantErr: context.DeadlineExceeded},
		{name: "connection refused", url: "refused", wantKind: netclient.ErrUnreachable},
		{name: "accepts and never answers", url: "hang", ctxTO: 100 * time.Millisecond, wantKind: netclient.ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := indexertest.NewServer(t, map[string]indexertest.Route{"GET /_cluster/health": tc.route})
			opts := srv.Options()
			switch tc.url {
			case "refused":
				opts.URL = refusedURL(t)
			case "hang":
				opts.URL = hangingListener(t)
			}
			if tc.password != "" {
				opts.Password = tc.password
			}
			c := newClient(t, opts)
			ctx := context.Background()
			if tc.ctxTO > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctxTO)
				defer cancel()
			}
			_, err := c.Health(ctx, indexer.HealthRequest{})
			if err == nil {
				t.Fatal("want an error")
			}
			var ne *netclient.Error
			if !errors.As(err, &ne) {
				t.Fatalf("error %T is not *netclient.Error: %v", err, err)
			}
			if !errors.Is(err, tc.wantKind) {
				t.Errorf("kind: got %v, want %v (%v)", ne.Kind, tc.wantKind, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v does not match %v", err, tc.wantErr)
			}
			if tc.notErr != nil && errors.Is(err, tc.notErr) {
				t.Errorf("error %v must not match %v", err, tc.notErr)
			}
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("message %q lacks %q", err.Error(), tc.wantInMsg)
			}
			if strings.Contains(err.Error(), indexertest.Password) || strings.Contains(err.Error(), "wrong") && tc.password != "" {
				t.Errorf("message leaks the password: %q", err.Error())
			}
		})
	}
}

func TestNoRetries(t *testing.T) {
	for _, status := range []int{502, 503, 504, 429} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv, c := fakeClient(t, map[string]indexertest.Route{"GET /": {Status: status, Body: []byte(`{}`)}})
			if _, err := c.Info(context.Background()); err == nil {
				t.Fatal("want an error")
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("got %d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

func TestNoRetryOnConnectionReset(t *testing.T) {
	var accepted atomic.Int32
	url := listen(t, func(c net.Conn) {
		accepted.Add(1)
		_ = c.Close() // hang up before answering
	})
	c := newClient(t, indexer.Options{URL: url})
	_, err := c.Info(context.Background())
	if !errors.Is(err, netclient.ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1 (no retries)", n)
	}
}

func TestCredentialsFromURLNeverInErrors(t *testing.T) {
	srv := indexertest.NewServer(t, map[string]indexertest.Route{"GET /": {Status: 500, Body: []byte(`{}`)}})
	u := strings.Replace(srv.URL, "http://", "http://"+indexertest.Username+":"+indexertest.Password+"@", 1)
	c := newClient(t, indexer.Options{URL: u})
	_, err := c.Info(context.Background())
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), indexertest.Password) || strings.Contains(c.URL(), indexertest.Password) {
		t.Fatalf("password leaked: %v / %s", err, c.URL())
	}
	if req, ok := srv.Last("GET /"); !ok || req.User != indexertest.Username {
		t.Fatalf("credentials from the URL were not used: %+v", req)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "://bad"} {
		if _, err := indexer.New(indexer.Options{URL: u}); err == nil {
			t.Errorf("New(%q): want an error", u)
		}
	}
	if _, err := indexer.New(indexer.Options{URL: "https://127.0.0.1:9200", CAFile: "/nonexistent/ca.pem"}); err == nil {
		t.Error("missing CA file: want an error")
	}
}

func TestTLS(t *testing.T) {
	srv := indexertest.NewTLSServer(t, indexertest.Healthy())
	otherCA := writeOtherCA(t) // a CA that did not sign the server
	tests := []struct {
		name     string
		mod      func(*indexer.Options)
		wantKind error // nil: success
	}{
		{name: "CA file verifies", mod: func(*indexer.Options) {}},
		{name: "system roots reject", mod: func(o *indexer.Options) { o.CAFile = "" }, wantKind: netclient.ErrTLS},
		{name: "wrong CA rejects", mod: func(o *indexer.Options) { o.CAFile = otherCA }, wantKind: netclient.ErrTLS},
		{name: "insecure skips verification", mod: func(o *indexer.Options) { o.CAFile = ""; o.Insecure = true }},
		{name: "http to https port", mod: func(o *indexer.Options) { o.URL = strings.Replace(o.URL, "https://", "http://", 1) }, wantKind: netclient.ErrBadResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := srv.Options()
			tc.mod(&opts)
			c := newClient(t, opts)
			info, err := c.Info(context.Background())
			if tc.wantKind == nil {
				if err != nil {
					t.Fatalf("Info: %v", err)
				}
				if info.Name != "node-1" {
					t.Fatalf("Info.Name = %q", info.Name)
				}
				return
			}
			if !errors.Is(err, tc.wantKind) {
				t.Fatalf("got %v, want kind %v", err, tc.wantKind)
			}
		})
	}
}

func writeOtherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               pkix.Name{CommonName: "other-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
