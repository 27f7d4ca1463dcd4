package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock advances only when waited on: gates poll without sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	t := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- t
	return ch
}

// behaviour scripts one call of a fake kind.
type behaviour func(ctx context.Context, env Env[string]) (Outcome, error)

// recorder records the order of calls and answers them from scripts keyed
// by "<what> <step>" (what is run, undo, verify or skip).
type recorder struct {
	mu     sync.Mutex
	calls  []string
	script map[string][]behaviour // consumed in order; the last one repeats
	verify map[string]bool
	skip   map[string]string
}

func newRecorder() *recorder {
	return &recorder{script: map[string][]behaviour{}, verify: map[string]bool{}, skip: map[string]string{}}
}

func (r *recorder) on(key string, b ...behaviour) { r.script[key] = append(r.script[key], b...) }

func (r *recorder) call(ctx context.Context, env Env[string], what string) (Outcome, error) {
	key := what + " " + env.StepID()
	r.mu.Lock()
	r.calls = append(r.calls, key)
	bs := r.script[key]
	var b behaviour
	if len(bs) > 0 {
		b = bs[0]
		if len(bs) > 1 {
			r.script[key] = bs[1:]
		}
	}
	r.mu.Unlock()
	if b == nil {
		return Outcome{Message: "done " + key}, nil
	}
	return b(ctx, env)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func fails(msg string) behaviour {
	return func(context.Context, Env[string]) (Outcome, error) { return Outcome{}, errors.New(msg) }
}

func pending(reason string) behaviour {
	return func(context.Context, Env[string]) (Outcome, error) { return Outcome{}, Pending("%s", reason) }
}

func nogo(reason string) behaviour {
	return func(context.Context, Env[string]) (Outcome, error) { return Outcome{}, NoGo("%s", reason) }
}

type fakeParams struct {
	Note  string         `yaml:"note"`
	Count int            `yaml:"count"`
	Wait  time.Duration  `yaml:"wait"`
	Extra map[string]any `yaml:"extra"`
}

// Describe names the planning context the engine handed it (a string in
// these tests).
func (p *fakeParams) Describe(pc PlanContext) []string {
	return []string{fmt.Sprintf("fake call note=%q in %v", p.Note, pc)}
}

func (p *fakeParams) Validate() error {
	if p.Count < 0 {
		return fmt.Errorf("count must not be negative")
	}
	return nil
}

func fakeKind(rec *recorder, name string, ro bool) Kind[string] {
	return Define(Spec[*fakeParams, string]{
		Name:     name,
		ReadOnly: ro,
		New:      func() *fakeParams { return &fakeParams{} },
		Run: func(ctx context.Context, env Env[string], p *fakeParams) (Outcome, error) {
			what := "run"
			if strings.HasPrefix(p.Note, "undo") {
				what = "undo"
			}
			return rec.call(ctx, env, what)
		},
		Verify: func(ctx context.Context, env Env[string], p *fakeParams) (bool, error) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.calls = append(rec.calls, "verify "+env.StepID())
			return rec.verify[env.StepID()], nil
		},
		Skip: func(ctx context.Context, env Env[string], p *fakeParams) (string, bool, error) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			reason, ok := rec.skip[env.StepID()]
			return reason, ok, nil
		},
	})
}

func fakeRegistry(t testing.TB, rec *recorder, names ...string) *Registry[string] {
	t.Helper()
	reg := &Registry[string]{}
	for _, n := range names {
		if err := reg.Register(fakeKind(rec, n, strings.HasPrefix(n, "gate.") || strings.HasSuffix(n, ".gate"))); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// progressLog collects observer notifications.
type progressLog struct {
	mu sync.Mutex
	ps []Progress
}

func (l *progressLog) Observe(p Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ps = append(l.ps, p)
}

func (l *progressLog) of(typ string) []Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Progress
	for _, p := range l.ps {
		if p.Type == typ {
			out = append(out, p)
		}
	}
	return out
}
