package manager

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// logs/api.log: wazuh-apid writes one line per request, in its plain format (api/alogging.py):
//
//	2024/04/16 12:44:21 INFO: wazuh 127.0.0.1 "GET /agents" with parameters {"limit": "500"} and body {} done in 0.077s: 200
//
// It is where an operator looks for the client that hammers the API (the 6001 rate limit) and what
// the lab's tests count a client's requests with. The body is not logged here (the emulator's
// bodies carry passwords: the real API masks them).

// APILog returns the API's log file.
func (h Home) APILog() string { return h.Path("logs", "api.log") }

type apiLog struct {
	mu   sync.Mutex
	f    *os.File
	fail bool
}

// write appends one request line; a log that cannot be opened is given up on (the API answers anyway).
func (l *apiLog) write(h Home, now time.Time, user string, r *http.Request, status int, took time.Duration) {
	if h.Dir == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && !l.fail {
		p := h.APILog()
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err == nil {
			l.f, err = os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o640)
		}
		l.fail = l.f == nil
	}
	if l.f == nil {
		return
	}
	_, _ = fmt.Fprintf(l.f, "%s\n", apiLogLine(now, user, r, status, took))
}

// apiLogLine is one request's line.
func apiLogLine(now time.Time, user string, r *http.Request, status int, took time.Duration) string {
	if user == "" {
		user = "unknown_user"
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	params := make([]string, 0, len(keys))
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(q.Get(k))
		params = append(params, string(kb)+": "+string(vb))
	}
	return fmt.Sprintf("%s INFO: %s %s \"%s %s\" with parameters {%s} and body {} done in %.3fs: %d",
		now.Format("2006/01/02 15:04:05"), user, clientIP(r), r.Method, r.URL.Path, strings.Join(params, ", "), took.Seconds(), status)
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
