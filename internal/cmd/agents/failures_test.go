package agents_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/manager/managertest"
)

// newEnvNoTools is newEnv on a host without the manager's tools (siemctl run
// away from the manager, or a broken install): no fallback hides the API's
// failure.
func newEnvNoTools(t *testing.T, apiURL, password string) env {
	e := newEnv(t, apiURL, password)
	if err := os.RemoveAll(filepath.Join(filepath.Dir(e.cfg), "siem")); err != nil {
		t.Fatal(err)
	}
	return e
}

const forbiddenBody = `{"title": "Permission Denied", "detail": "Permission denied: Resource type: *:*", ` +
	`"remediation": "Please, make sure you have permissions to execute the current request. For more information on how to set up permissions, please visit https://documentation.wazuh.com/4.9/user-manual/api/rbac/configuration.html", ` +
	`"error": 4000, "dapi_errors": {"unknown-node": {"error": "Permission denied: Resource type: *:*"}}}`

const proxyPage = `<!DOCTYPE html>
<html><head><title>503 Service Temporarily Unavailable</title></head>
<body><center><h1>503 Service Temporarily Unavailable</h1></center><hr><center>nginx/1.24.0</center>
` + `<!-- padding to look like a real error page ---------------------------------------------------------------------------------------- -->
</body></html>`

// TestFailureExitCodes: every way the manager API can fail gives the
// documented exit code and a message that names the failure and the fix,
// for list and show, with no agent_control to fall back on.
func TestFailureExitCodes(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	type tc struct {
		name    string
		setup   func(srv *managertest.Server)
		args    []string
		code    int
		want    []string
		notWant []string
	}
	tests := []tc{
		{name: "hung", setup: func(srv *managertest.Server) {
			srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) { hang(r, block) })
		}, args: []string{"--timeout", "300ms"}, code: 5, want: []string{"timed out", "--timeout"}},
		{name: "503 HTML", setup: func(srv *managertest.Server) {
			srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(proxyPage))
			})
		}, code: 5, want: []string{"HTTP 503", `"503 Service Temporarily Unavailable"`}, notWant: []string{"<html", "<center>", "nginx"}},
		{name: "403", setup: func(srv *managertest.Server) {
			srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(forbiddenBody))
			})
		}, code: 4, want: []string{"forbidden", "remediation: Please, make sure you have permissions", "hint:", "RBAC"}},
		{name: "redirect", setup: func(srv *managertest.Server) {
			srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://siem-api.example.org:55000/agents", http.StatusFound)
			})
		}, code: 1, want: []string{"redirected to https://siem-api.example.org:55000/agents"}},
	}
	for _, tt := range tests {
		for _, verb := range [][]string{{"list"}, {"show", "001"}} {
			t.Run(tt.name+"/"+verb[0], func(t *testing.T) {
				srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
				tt.setup(srv) // show asks GET /agents?agents_list=001: the same route
				e := newEnvNoTools(t, srv.URL, srv.Password())
				r := run(t, e, false, "", append(verb, tt.args...)...)
				if r.Code != tt.code {
					t.Errorf("exit %d, want %d\n%s", r.Code, tt.code, r.ErrOut)
				}
				for _, w := range tt.want {
					if !strings.Contains(r.ErrOut, w) {
						t.Errorf("stderr lacks %q:\n%s", w, r.ErrOut)
					}
				}
				for _, w := range tt.notWant {
					if strings.Contains(r.ErrOut, w) {
						t.Errorf("stderr has %q:\n%s", w, r.ErrOut)
					}
				}
				if strings.Contains(r.ErrOut, srv.Password()) {
					t.Errorf("password in stderr")
				}
			})
		}
	}
}

func TestRefusedExitsUnreachable(t *testing.T) {
	e := newEnvNoTools(t, clitest.ClosedURL(t), "Secr3t.Pass")
	for _, verb := range [][]string{{"list"}, {"show", "001"}} {
		r := run(t, e, false, "", verb...)
		if r.Code != 5 || !strings.Contains(r.ErrOut, "unreachable") || !strings.Contains(r.ErrOut, "services status") {
			t.Errorf("%s: exit %d\n%s", verb[0], r.Code, r.ErrOut)
		}
	}
}

// TestRateLimitedList is issue 15 item 4: a rate-limited API is reported as
// rate limited (with the Retry-After honoured), exit 5, not as a timeout.
func TestRateLimitedList(t *testing.T) {
	t.Run("retries used up", func(t *testing.T) {
		srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
		srv.RateLimit.Store(1000)
		srv.RetryAfter.Store(1)
		e := newEnvNoTools(t, srv.URL, srv.Password())
		r := run(t, e, false, "", "list")
		if r.Code != 5 || !strings.Contains(r.ErrOut, "rate limited (HTTP 429, code 6001)") ||
			!strings.Contains(r.ErrOut, "still rate limited after 3 retries") || !strings.Contains(r.ErrOut, "honoured Retry-After: 1") || strings.Contains(r.ErrOut, "no answer from the manager") {
			t.Errorf("exit %d\n%s", r.Code, r.ErrOut)
		}
	})
	t.Run("Retry-After beyond --timeout", func(t *testing.T) {
		srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
		srv.RateLimit.Store(1000)
		srv.RetryAfter.Store(30)
		e := newEnvNoTools(t, srv.URL, srv.Password())
		r := run(t, e, false, "", "list", "--timeout", "2s")
		if r.Code != 5 || !strings.Contains(r.ErrOut, "rate limited (HTTP 429, code 6001)") ||
			!strings.Contains(r.ErrOut, "Retry-After: 30") || strings.Contains(r.ErrOut, "context deadline exceeded") ||
			!strings.Contains(r.ErrOut, "300 by default") {
			t.Errorf("exit %d\n%s", r.Code, r.ErrOut)
		}
	})
}

// TestInterrupted: Ctrl-C (the signal context cancelled) while the manager
// hangs is "interrupted", exit 130, never "unreachable".
func TestInterrupted(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	arrived := make(chan struct{}, 4)
	srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) { arrived <- struct{}{}; hang(r, block) })
	e := newEnv(t, srv.URL, srv.Password()) // with tools: an interruption must not fall back either
	for _, verb := range [][]string{{"list"}, {"show", "001"}} {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-arrived:
			case <-time.After(30 * time.Second):
			}
			cancel()
		}()
		r := runCtx(ctx, e, append(verb, "--timeout", "60s")...)
		cancel()
		if r.Code != 130 || !strings.Contains(r.ErrOut, "interrupted") || strings.Contains(r.ErrOut, "unreachable") ||
			strings.Contains(r.ErrOut, "agent_control") {
			t.Errorf("%s: exit %d\n%s", verb[0], r.Code, r.ErrOut)
		}
	}
	if e.toolCalls() != "" {
		t.Errorf("fell back to agent_control after Ctrl-C: %q", e.toolCalls())
	}
}

// hang holds a request until the test ends or the client goes away.
func hang(r *http.Request, block <-chan struct{}) {
	select {
	case <-block:
	case <-r.Context().Done():
	}
}

// TestActionsHonourTimeout: restart and remove on a hung manager end at
// --timeout (exit 5) and say the action may still happen.
func TestActionsHonourTimeout(t *testing.T) {
	srv := managertest.New(t, managertest.Config{Agents: fixtureAgents()})
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	hung := func(w http.ResponseWriter, r *http.Request) { hang(r, block) }
	srv.Handle("PUT /agents/restart", hung)
	srv.Handle("DELETE /agents", hung)
	e := newEnv(t, srv.URL, srv.Password())
	for _, args := range [][]string{{"restart", "001", "--yes"}, {"restart", "--all", "--yes"}, {"remove", "003", "--yes"}} {
		// A guard far beyond --timeout, so a regression fails instead of hanging.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r := runCtx(ctx, e, append(args, "--timeout", "300ms")...)
		cancel()
		if r.Code != 5 || !strings.Contains(r.ErrOut, "within 300ms (--timeout)") || !strings.Contains(r.ErrOut, "agents list") {
			t.Errorf("%v: exit %d\n%s", args, r.Code, r.ErrOut)
		}
	}
}
