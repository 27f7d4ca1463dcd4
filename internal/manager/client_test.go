package manager_test

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

// sleeper records backoff waits instead of waiting.
type sleeper struct {
	mu    sync.Mutex
	slept []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.slept = append(s.slept, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) Slept() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.slept...)
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2025, 3, 2, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "api", "manager", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serveFixture(t testing.TB, status int, name string) http.HandlerFunc {
	body := fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		ct := "application/json"
		if status >= 400 {
			ct = "application/problem+json; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

type env struct {
	srv   *managertest.Server
	c     *manager.Client
	sleep *sleeper
	clock *fakeClock
}

func setup(t *testing.T, cfg managertest.Config, tweak func(*manager.Options)) env {
	t.Helper()
	clock := newClock()
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	srv := managertest.New(t, cfg)
	sl := &sleeper{}
	opts := manager.Options{URL: srv.URL, Username: srv.Username(), Password: srv.Password(),
		HTTPClient: srv.Client(), Clock: clock.Now, Sleep: sl.Sleep}
	if tweak != nil {
		tweak(&opts)
	}
	c, err := manager.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return env{srv: srv, c: c, sleep: sl, clock: clock}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts manager.Options
		want string
	}{
		{"no url", manager.Options{Username: "u"}, "no API URL"},
		{"bad scheme", manager.Options{URL: "ftp://x:1", Username: "u"}, "want http(s)"},
		{"credentials in url", manager.Options{URL: "https://u:hunter2@127.0.0.1:55000", Username: "u"}, "must not carry credentials"},
		{"no user", manager.Options{URL: "https://127.0.0.1:55000"}, "no API username"},
		{"missing CA", manager.Options{URL: "https://127.0.0.1:55000", Username: "u", CAFile: "/nonexistent/ca.pem"}, "CA file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manager.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("password leaked: %v", err)
			}
		})
	}
}

func TestLoginOnceAndReuseToken(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	ctx := ctxT(t)
	for range 3 {
		info, err := e.c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.APIVersion != "4.9.0" || info.Hostname != "siem01" || info.Title != "Wazuh API REST" {
			t.Fatalf("info = %+v", info)
		}
	}
	if n := e.srv.Logins.Load(); n != 1 {
		t.Fatalf("logins = %d, want 1", n)
	}
	if m := e.srv.LoginMethods(); len(m) != 1 || m[0] != http.MethodPost {
		t.Fatalf("login methods = %v, want [POST]", m)
	}
}

func TestTokenRenewedBeforeExpiry(t *testing.T) {
	e := setup(t, managertest.Config{TokenTTL: 900 * time.Second}, nil)
	ctx := ctxT(t)
	steps := []struct {
		advance time.Duration
		logins  int32
	}{
		{0, 1},
		{800 * time.Second, 1}, // still well inside the lifetime
		{45 * time.Second, 2},  // 845 s: inside the last minute → new login
		{100 * time.Second, 2},
		{900 * time.Second, 3}, // long expired
	}
	for i, s := range steps {
		e.clock.Advance(s.advance)
		if _, err := e.c.Info(ctx); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if n := e.srv.Logins.Load(); n != s.logins {
			t.Fatalf("step %d: logins = %d, want %d", i, n, s.logins)
		}
	}
}

func TestInvalidTokenReloginOnce(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		ctx := ctxT(t)
		if _, err := e.c.Info(ctx); err != nil {
			t.Fatal(err)
		}
		e.srv.RejectTokens.Store(1)
		if _, err := e.c.Info(ctx); err != nil {
			t.Fatal(err)
		}
		if n := e.srv.Logins.Load(); n != 2 {
			t.Fatalf("logins = %d, want 2", n)
		}
	})
	t.Run("gives up after one re-login", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		e.srv.RejectTokens.Store(100)
		_, err := e.c.Info(ctxT(t))
		if !errors.Is(err, netclient.ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
		if n := e.srv.Logins.Load(); n != 2 {
			t.Fatalf("logins = %d, want 2", n)
		}
		if n := e.srv.Requests.Load(); n != 4 { // login, GET, login, GET
			t.Fatalf("requests = %d, want 4", n)
		}
	})
}

func TestInvalidCredentialsNoRetry(t *testing.T) {
	e := setup(t, managertest.Config{}, func(o *manager.Options) { o.Password = "Wr0ng.Password" })
	_, err := e.c.Info(ctxT(t))
	if !errors.Is(err, netclient.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if n := e.srv.Requests.Load(); n != 1 {
		t.Fatalf("requests = %d, want 1 (no retry loop)", n)
	}
	msg := err.Error()
	if !strings.Contains(msg, "invalid credentials") || !strings.Contains(msg, `"wazuh"`) {
		t.Fatalf("message = %q, want a clear detail naming the user", msg)
	}
	if strings.Contains(msg, "Wr0ng.Password") || strings.Contains(msg, e.srv.Password()) {
		t.Fatalf("password in error: %q", msg)
	}
}

func TestNoSecretsInLogs(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := setup(t, managertest.Config{}, func(o *manager.Options) { o.Logger = logger })
	e.srv.RejectTokens.Store(1)
	e.srv.RateLimit.Store(1)
	if _, err := e.c.Info(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "manager login") || !strings.Contains(out, "rate limited") {
		t.Fatalf("expected login and backoff logs, got:\n%s", out)
	}
	if strings.Contains(out, e.srv.Password()) || strings.Contains(out, "eyJ") { // JWTs start with eyJ
		t.Fatalf("secret in logs:\n%s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestLoginIPBlocked(t *testing.T) {
	srv := httptest.NewServer(serveFixture(t, http.StatusForbidden, "error_ip_blocked.json"))
	defer srv.Close()
	c, err := manager.New(manager.Options{URL: srv.URL, Username: "wazuh", Password: "x", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Info(ctxT(t))
	if !errors.Is(err, netclient.ErrForbidden) || !manager.HasCode(err, manager.CodeIPBlocked) {
		t.Fatalf("err = %v, want ErrForbidden with code 6000", err)
	}
	var ae *manager.APIError
	if !errors.As(err, &ae) || ae.Title != "Permission Denied" {
		t.Fatalf("APIError = %+v", ae)
	}
}

func TestRateLimitBackoff(t *testing.T) {
	tests := []struct {
		name       string
		limited    int32
		retryAfter int32
		wantErr    error
		wantSleeps []time.Duration
	}{
		{"backs off then succeeds", 2, 0, nil, []time.Duration{2 * time.Second, 4 * time.Second}},
		{"honours Retry-After", 1, 7, nil, []time.Duration{7 * time.Second}},
		{"gives up after the retries", 100, 0, netclient.ErrRateLimited, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, managertest.Config{}, nil)
			e.srv.RateLimit.Store(tt.limited)
			e.srv.RetryAfter.Store(tt.retryAfter)
			_, err := e.c.ManagerInfo(ctxT(t))
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || !manager.HasCode(err, manager.CodeRateLimited)) {
				t.Fatalf("err = %v, want %v with code 6001", err, tt.wantErr)
			}
			if got := e.sleep.Slept(); !equalDurations(got, tt.wantSleeps) {
				t.Fatalf("slept %v, want %v", got, tt.wantSleeps)
			}
		})
	}
	t.Run("no wait past the deadline", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		if _, err := e.c.Info(ctxT(t)); err != nil { // log in first
			t.Fatal(err)
		}
		e.srv.RateLimit.Store(1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // shorter than the 2 s backoff
		defer cancel()
		_, err := e.c.Info(ctx)
		if !errors.Is(err, netclient.ErrRateLimited) {
			t.Fatalf("err = %v, want ErrRateLimited", err)
		}
		if s := e.sleep.Slept(); len(s) != 0 {
			t.Fatalf("slept %v past the deadline", s)
		}
	})
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDaemonsNotReadyWait(t *testing.T) {
	t.Run("waits then succeeds", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		e.srv.NotReady.Store(3)
		if _, err := e.c.ManagerInfo(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if got := e.sleep.Slept(); !equalDurations(got, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}) {
			t.Fatalf("slept %v", got)
		}
	})
	t.Run("bounded wait ends in ErrNotReady", func(t *testing.T) {
		e := setup(t, managertest.Config{}, func(o *manager.Options) { o.NotReadyWait = 10 * time.Second })
		e.srv.NotReady.Store(1000)
		_, err := e.c.ManagerInfo(ctxT(t))
		if !errors.Is(err, netclient.ErrNotReady) || !manager.HasCode(err, manager.CodeDaemonsNotReady) {
			t.Fatalf("err = %v, want ErrNotReady code 1017", err)
		}
		if n := len(e.sleep.Slept()); n != 5 {
			t.Fatalf("waited %d times, want 5 (10 s / 2 s)", n)
		}
		if !strings.Contains(err.Error(), "wazuh-modulesd->restarting") {
			t.Fatalf("detail lost: %v", err)
		}
	})
	t.Run("status endpoint is exempt", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		// The real API gates login too (it goes through the distributed API): only a client that
		// already holds a token reads /manager/status while the daemons are not ready.
		if _, err := e.c.ManagerStatus(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		e.srv.NotReady.Store(1000)
		e.srv.SetDaemon("wazuh-modulesd", "restarting")
		st, err := e.c.ManagerStatus(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if nr := st.NotReady(); len(nr) != 1 || nr[0] != "wazuh-modulesd (restarting)" {
			t.Fatalf("NotReady = %v", nr)
		}
	})
}

func TestConcurrentCallsShareOneLogin(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.c.Info(ctx)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := e.srv.Logins.Load(); n != 1 {
		t.Fatalf("logins = %d, want 1", n)
	}
}

func TestTransportFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		c, err := manager.New(manager.Options{URL: "http://" + addr, Username: "wazuh", Password: "x"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Info(ctxT(t))
		if !errors.Is(err, netclient.ErrUnreachable) {
			t.Fatalf("err = %v, want ErrUnreachable", err)
		}
	})
	t.Run("slow server hits the deadline", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		release := make(chan struct{})
		defer close(release)
		e.srv.Handle("GET /", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := e.c.Info(ctx)
		if !errors.Is(err, netclient.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	})
	t.Run("truncated JSON", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		body := fixture(t, "info.json")
		e.srv.Handle("GET /", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body[:len(body)/2]) })
		_, err := e.c.Info(ctxT(t))
		if !errors.Is(err, netclient.ErrBadResponse) {
			t.Fatalf("err = %v, want ErrBadResponse", err)
		}
	})
	t.Run("truncated agents page", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		body := fixture(t, "agents.json")
		e.srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body[:len(body)*2/3]) })
		n := 0
		var last error
		for _, err := range e.c.Agents(ctxT(t), manager.AgentQuery{}) {
			if err != nil {
				last = err
				break
			}
			n++
		}
		if !errors.Is(last, netclient.ErrBadResponse) || n == 0 {
			t.Fatalf("agents = %d, err = %v; want some agents then ErrBadResponse", n, last)
		}
	})
}

func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTLS(t *testing.T) {
	srv := managertest.New(t, managertest.Config{TLS: true})
	tests := []struct {
		name    string
		opts    manager.Options
		wantErr error
	}{
		{"verified with the CA file", manager.Options{CAFile: writeCA(t, srv.Server)}, nil},
		{"unknown CA", manager.Options{}, netclient.ErrTLS},
		{"insecure opt-out", manager.Options{Insecure: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.URL, o.Username, o.Password, o.Timeout = srv.URL, srv.Username(), srv.Password(), 10*time.Second
			c, err := manager.New(o)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ManagerInfo(ctxT(t))
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// A failed or stopped basic daemon does not come back by waiting: the client stops at the first
// 1017 that names one (the login's own answer included), and only waits while daemons restart.
func TestDaemonsDownStopsRetrying(t *testing.T) {
	for _, state := range []string{"failed", "stopped"} {
		t.Run("analysisd "+state, func(t *testing.T) {
			e := setup(t, managertest.Config{}, nil) // default 30 s wait, 2 s polls
			e.srv.SetDaemon("wazuh-analysisd", state)
			_, err := e.c.ManagerInfo(ctxT(t))
			if !errors.Is(err, netclient.ErrNotReady) || !manager.HasCode(err, manager.CodeDaemonsNotReady) {
				t.Fatalf("err = %v, want 1017", err)
			}
			if s := e.sleep.Slept(); len(s) != 0 {
				t.Fatalf("waited %v for a %s daemon", s, state)
			}
			if n := e.srv.Requests.Load(); n != 1 {
				t.Fatalf("%d requests, want 1 (the refused login, no retry)", n)
			}
			if !strings.Contains(err.Error(), "wazuh-analysisd ("+state+"): waiting does not help") || strings.Contains(err.Error(), "wait and retry") {
				t.Fatalf("error does not name the daemon or still advises waiting: %v", err)
			}
			st, ok := manager.NotReadyError(err)
			if !ok || st["wazuh-analysisd"] != state {
				t.Fatalf("NotReadyError = %v %v", st, ok)
			}
		})
	}
	t.Run("a token at hand reads /manager/status", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		if _, err := e.c.Info(ctxT(t)); err != nil { // log in first
			t.Fatal(err)
		}
		// an answer that names no daemon; /manager/status says which one is down
		e.srv.Handle("GET /manager/info", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"title":"Bad Request","detail":"Some Wazuh daemons are not ready yet","error":1017}`)
		})
		e.srv.Handle("GET /manager/status", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"data":{"affected_items":[{"wazuh-modulesd":"running","wazuh-analysisd":"running","wazuh-execd":"running","wazuh-db":"failed","wazuh-remoted":"running"}],"total_affected_items":1,"total_failed_items":0,"failed_items":[]},"message":"Processes status was successfully read","error":0}`)
		})
		before := e.srv.Requests.Load()
		_, err := e.c.ManagerInfo(ctxT(t))
		if !manager.HasCode(err, manager.CodeDaemonsNotReady) || len(e.sleep.Slept()) != 0 {
			t.Fatalf("err = %v, slept %v", err, e.sleep.Slept())
		}
		if n := e.srv.Requests.Load() - before; n != 2 {
			t.Fatalf("%d requests, want 2 (the 1017 and /manager/status)", n)
		}
	})
	t.Run("restarting still waits, bounded", func(t *testing.T) {
		e := setup(t, managertest.Config{}, func(o *manager.Options) { o.NotReadyWait = 6 * time.Second })
		e.srv.SetDaemon("wazuh-modulesd", "restarting")
		_, err := e.c.ManagerInfo(ctxT(t))
		if !manager.HasCode(err, manager.CodeDaemonsNotReady) || !strings.Contains(err.Error(), "wait and retry") {
			t.Fatalf("err = %v", err)
		}
		if n := len(e.sleep.Slept()); n != 3 {
			t.Fatalf("waited %d times, want 3 (6 s / 2 s)", n)
		}
	})
}
