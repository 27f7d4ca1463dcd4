package health

import (
	"sync"
	"time"
)

// Env is what checks see: the stack's clients (filled by the caller), the
// thresholds, a clock and the per-run memo of shared probes.
type Env struct {
	Now   func() time.Time
	memo  memo
	mu    sync.Mutex
	notes []string
	Stack Stack
	// Deep is a --deep run: the shipper check also runs the output test.
	Deep bool
}

// Note adds a run-level note (e.g. "TLS verification disabled for the
// indexer"), shown once under the table.
func (e *Env) Note(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.notes {
		if n == s {
			return
		}
	}
	e.notes = append(e.notes, s)
}

// Notes returns the notes so far.
func (e *Env) Notes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string{}, e.notes...)
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}
