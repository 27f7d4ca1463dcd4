package manager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

// serveHuge streams a syntactically valid JSON answer of about size bytes
// without holding it in memory.
func serveHuge(size int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data": {"title": "Wazuh API REST", "api_version": "4.9.0", "pad": "`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}, "error": 0}`))
	}
}

// TestAnswerOverCap: a 50 MB answer is refused at the cap, named, without
// reading (or allocating) it whole.
func TestAnswerOverCap(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	e.srv.Handle("GET /", serveHuge(50<<20))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := e.c.Info(ctxT(t))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, netclient.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "GET /") || !strings.Contains(msg, netclient.FormatBytes(netclient.MaxAnswer)) {
		t.Errorf("message does not name the answer and its cap: %s", msg)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
		t.Errorf("allocated %d MiB reading a refused answer", alloc>>20)
	}
	t.Logf("allocated %.1f MiB", float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
}

func agentsPage(total int, ids ...string) string {
	items := make([]string, len(ids))
	for i, id := range ids {
		items[i] = fmt.Sprintf(`{"id": %q, "name": "agent-%s", "status": "active", "version": "Wazuh v4.9.0"}`, id, id)
	}
	return fmt.Sprintf(`{"data": {"affected_items": [%s], "total_affected_items": %d, "total_failed_items": 0, "failed_items": []}, "message": "All selected agents information was returned", "error": 0}`,
		strings.Join(items, ", "), total)
}

// TestPaginationServerIgnoresOffset: a server that serves the same page
// again, or more rows than it says exist, stops the listing with an error
// instead of looping or printing duplicates.
func TestPaginationServerIgnoresOffset(t *testing.T) {
	tests := []struct {
		name string
		page func(offset string) string
		want string
		rows int
	}{
		{"same page twice", func(string) string { return agentsPage(6, "001", "002") }, "ignores offset", 2},
		{"page overlaps the previous one", func(off string) string {
			if off == "0" {
				return agentsPage(6, "001", "002")
			}
			return agentsPage(6, "002", "003")
		}, "starts again with agent 002", 2},
		{"more rows than total", func(string) string { return agentsPage(1, "001", "002") }, "total_affected_items is 1", 2},
		{"more rows than the limit", func(string) string { return agentsPage(9, "001", "002", "003") }, "more than the 2 agents asked for", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, managertest.Config{}, nil)
			calls := 0
			e.srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) {
				calls++
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.page(r.URL.Query().Get("offset"))))
			})
			var rows []string
			var last error
			for a, err := range e.c.Agents(ctxT(t), manager.AgentQuery{Limit: 2}) {
				if err != nil {
					last = err
					break
				}
				rows = append(rows, a.ID)
			}
			if !errors.Is(last, netclient.ErrBadResponse) || !strings.Contains(fmt.Sprint(last), tt.want) {
				t.Errorf("err = %v, want %q", last, tt.want)
			}
			if len(rows) != tt.rows || calls > 2 {
				t.Errorf("rows %v after %d calls", rows, calls)
			}
		})
	}
}

// TestIDOrder: ids past 999 sort after 999 (pages of a big fleet).
func TestIDOrderAcrossPages(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	e.srv.Handle("GET /agents", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("offset") == "0" {
			_, _ = w.Write([]byte(agentsPage(4, "998", "999")))
			return
		}
		_, _ = w.Write([]byte(agentsPage(4, "1000", "1001")))
	})
	n := 0
	for _, err := range e.c.Agents(ctxT(t), manager.AgentQuery{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Errorf("%d agents", n)
	}
}

// TestRateLimitWaitInterrupted: Ctrl-C during a Retry-After wait is an
// interruption, not a rate limit.
func TestRateLimitWaitInterrupted(t *testing.T) {
	e := setup(t, managertest.Config{}, func(o *manager.Options) {
		o.Sleep = func(ctx context.Context, d time.Duration) error { <-ctx.Done(); return ctx.Err() }
	})
	e.srv.RateLimit.Store(100)
	e.srv.RetryAfter.Store(5)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := e.c.Info(ctx)
	if !errors.Is(err, netclient.ErrInterrupted) || errors.Is(err, netclient.ErrRateLimited) {
		t.Errorf("err = %v", err)
	}
}

// TestUsersServerIgnoresOffset: the user listing has the agent listing's
// guards.
func TestUsersServerIgnoresOffset(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	calls := 0
	e.srv.Handle("GET /security/users", func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data": {"affected_items": [{"id": 1, "username": "wazuh", "allow_run_as": true, "roles": [1]}, {"id": 2, "username": "wazuh-wui", "allow_run_as": true, "roles": [1]}], "total_affected_items": 1000, "total_failed_items": 0, "failed_items": []}, "message": "All specified users were returned", "error": 0}`))
	})
	users, err := e.c.Users(ctxT(t))
	if !errors.Is(err, netclient.ErrBadResponse) || !strings.Contains(fmt.Sprint(err), "ignores offset") || calls != 2 {
		t.Errorf("%d users after %d calls, err %v", len(users), calls, err)
	}
}
