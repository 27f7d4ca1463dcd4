// Package health is siemctl's check catalogue and its concurrent runner.
//
// Every check runs in its own goroutine under one deadline. Checks that need
// the same remote fact (the indexer's cluster health, the manager's login)
// share one call through Env's memo, so a dead component costs its timeout
// once per run, not once per check. A check that has not answered by the
// deadline is reported UNKNOWN; nothing waits beyond it.
//
// Checks talk to Stack (stack.go), which the CLI's client set fills once;
// the default-password verdict's logins live in credentials.go. The package
// returns a Report; rendering it (table, JSON, Nagios, Prometheus) is the
// health command's job.
package health

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Status of a check, ordered by severity for the verdict.
type Status int

const (
	OK Status = iota
	Warn
	Crit
	Unknown
)

func (s Status) String() string {
	switch s {
	case OK:
		return "OK"
	case Warn:
		return "WARN"
	case Crit:
		return "CRIT"
	default:
		return "UNKNOWN"
	}
}

// MarshalText renders the status word in JSON.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Result is one check's answer.
type Result struct {
	ID        string        `json:"id"`
	Component string        `json:"component"`
	Status    Status        `json:"status"`
	Summary   string        `json:"summary"`
	Evidence  []string      `json:"evidence"`
	Fix       string        `json:"fix"`
	Duration  time.Duration `json:"-"`
	// Metrics are numeric facts for perfdata / prometheus (name → value).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// NotApplicable drops the result from the report: the check judges
	// something this deployment does not have (a cluster on a single host).
	NotApplicable bool `json:"-"`
}

// Check is one entry of the catalogue.
type Check struct {
	ID        string
	Component string
	Title     string
	Deep      bool // only with --deep
	Run       func(ctx context.Context, e *Env) Result
	// Needs names the shared probes (see prefetchers) the check reads, so
	// Run can start them all at once instead of one after another.
	Needs []string
}

// Report is a whole run.
type Report struct {
	CheckedAt time.Time     `json:"checked_at"`
	Duration  time.Duration `json:"-"`
	Verdict   Status        `json:"verdict"`
	Results   []Result      `json:"checks"`
	Notes     []string      `json:"notes"`
}

// Verdict is the worst status by the Nagios convention: any CRIT → CRIT;
// else any WARN → WARN; else any UNKNOWN → UNKNOWN; else OK.
func Verdict(results []Result) Status {
	var warn, unknown bool
	for _, r := range results {
		switch r.Status {
		case Crit:
			return Crit
		case Warn:
			warn = true
		case Unknown:
			unknown = true
		}
	}
	switch {
	case warn:
		return Warn
	case unknown:
		return Unknown
	}
	return OK
}

// Counts returns how many results have each status.
func Counts(results []Result) map[Status]int {
	m := map[Status]int{}
	for _, r := range results {
		m[r.Status]++
	}
	return m
}

// Selection filters the catalogue.
type Selection struct {
	Only []string // --check
	Skip []string // --skip
	Deep bool
}

// Select returns the checks to run, in catalogue order, or an error naming
// unknown ids.
func Select(catalogue []Check, sel Selection) ([]Check, error) {
	known := map[string]bool{}
	for _, c := range catalogue {
		known[c.ID] = true
	}
	var unknown []string
	for _, id := range append(append([]string{}, sel.Only...), sel.Skip...) {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		ids := make([]string, 0, len(catalogue))
		for _, c := range catalogue {
			ids = append(ids, c.ID)
		}
		return nil, fmt.Errorf("unknown check id %s (known: %s)", strings.Join(unknown, ", "), strings.Join(ids, ", "))
	}
	only := toSet(sel.Only)
	skip := toSet(sel.Skip)
	var out []Check
	for _, c := range catalogue {
		if skip[c.ID] {
			continue
		}
		if len(only) > 0 {
			if only[c.ID] {
				out = append(out, c)
			}
			continue
		}
		if c.Deep && !sel.Deep {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func toSet(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// Run executes checks concurrently; every check that has not finished by the
// context's deadline is reported UNKNOWN. Results keep catalogue order.
func Run(ctx context.Context, e *Env, checks []Check) Report {
	start := e.now()
	prefetch(ctx, e, checks)
	results := make([]Result, len(checks))
	done := make([]bool, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	finished := make(chan struct{})
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := e.now()
			r := safeRun(ctx, e, c)
			r.ID, r.Component, r.Duration = c.ID, c.Component, e.now().Sub(t0)
			if r.Evidence == nil {
				r.Evidence = []string{}
			}
			mu.Lock()
			results[i], done[i] = r, true
			mu.Unlock()
		}()
	}
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		// Give in-flight checks a moment to turn the cancellation into a
		// precise result, but never wait long.
		select {
		case <-finished:
		case <-time.After(100 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]Result, len(checks))
	for i, c := range checks {
		if done[i] {
			out[i] = results[i]
			continue
		}
		out[i] = Result{ID: c.ID, Component: c.Component, Status: Unknown, Evidence: []string{},
			Summary: "no answer before the deadline", Fix: "raise --timeout or check why " + c.Component + " is slow"}
	}
	kept := out[:0]
	for _, r := range out {
		if !r.NotApplicable {
			kept = append(kept, r)
		}
	}
	out = kept
	rep := Report{CheckedAt: start.UTC(), Duration: e.now().Sub(start), Verdict: Verdict(out), Results: out, Notes: e.Notes()}
	return rep
}

func safeRun(ctx context.Context, e *Env, c Check) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Status: Unknown, Summary: fmt.Sprintf("check crashed: %v", p), Fix: "report this as a siemctl bug"}
		}
	}()
	return c.Run(ctx, e)
}

// memo runs each keyed function once per run and shares its outcome with all
// callers; a caller whose context ends stops waiting.
type memo struct {
	mu    sync.Mutex
	calls map[string]*call
}

type call struct {
	done chan struct{}
	val  any
	err  error
}

func (m *memo) do(ctx context.Context, key string, fn func(ctx context.Context) (any, error)) (any, error) {
	m.mu.Lock()
	if m.calls == nil {
		m.calls = map[string]*call{}
	}
	c, ok := m.calls[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		m.calls[key] = c
		m.mu.Unlock()
		go func() {
			defer close(c.done)
			defer func() {
				if p := recover(); p != nil {
					c.err = fmt.Errorf("internal error in %s: %v", key, p)
				}
			}()
			c.val, c.err = fn(ctx)
		}()
	} else {
		m.mu.Unlock()
	}
	// An outcome already there wins over a context that ended meanwhile.
	select {
	case <-c.done:
		return c.val, c.err
	default:
	}
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Shared returns the memoised result of fn under key, typed.
func Shared[T any](ctx context.Context, e *Env, key string, fn func(ctx context.Context) (T, error)) (T, error) {
	v, err := e.memo.do(ctx, key, func(ctx context.Context) (any, error) { return fn(ctx) })
	var zero T
	if err != nil {
		return zero, err
	}
	t, _ := v.(T)
	return t, nil
}
