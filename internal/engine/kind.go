// Package engine runs runbooks: it plans before any side effect, takes the
// host lock, journals every transition to an append-only, fsync'd JSONL file,
// polls gates, rolls back through undos, runs finally-steps, and resumes an
// interrupted run. A step's deadline is its runbook timeout, plus the time its
// kind asks for when what it waits for grows (Budgeter; journaled with the
// step's start). It knows no vendor API: step kinds are Go values registered
// by name (internal/steps), and everything they need from the outside world
// reaches them through Env.Deps. The engine is generic over that
// dependency type D (Runner[D], Registry[D], Kind[D], Env[D]): the caller
// picks it (internal/steps uses *steps.Deps), so a kind gets its
// dependencies typed and a runner built with the wrong type does not compile.
package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kind is a step kind: Go code registered under a dotted name (units.stop),
// run with dependencies of type D.
type Kind[D any] interface {
	// Name is the dotted name runbooks use in `kind:`.
	Name() string
	// Decode turns a step's `with:` into typed parameters, strictly: unknown
	// keys and wrong types are errors (see DecodeStrict). Validate is called
	// by the planner afterwards.
	Decode(with map[string]any) (Params, error)
	// Run performs the step. A gate that is not satisfied yet returns
	// Pending(...) and is polled until its timeout; a definitive no-go
	// returns NoGo(...). Outcome is journaled.
	Run(ctx context.Context, env Env[D], p Params) (Outcome, error)
}

// Params are a step's decoded parameters.
type Params interface {
	// Describe lists every command and API call the step would make, for
	// plans and --dry-run ("POST /_flush", "apt-get install siem-indexer=<target>").
	// pc is the planning context the plan was made with (see PlanContext).
	Describe(pc PlanContext) []string
	// Validate checks the parameters' values.
	Validate() error
}

// PlanContext is what the kinds know at plan time, beyond their parameters:
// the caller's value handed to the planner (ParsePlan, PlanRunbook,
// LoadPlan, Runner.Planning), which the engine passes to every Describe.
// The engine never looks inside it; internal/steps uses *steps.Planning
// (the configuration and the versions involved). It may be nil.
type PlanContext any

// Verifier is implemented by kinds that can tell whether an interrupted
// attempt already took effect; on resume the interrupted step is verified
// first and only re-run when Verify says it is not done.
type Verifier[D any] interface {
	Verify(ctx context.Context, env Env[D], p Params) (done bool, err error)
}

// Skipper is implemented by kinds with a run-time condition (kubeadm RunIf):
// skip must come with a reason, which is journaled and shown.
type Skipper[D any] interface {
	Skip(ctx context.Context, env Env[D], p Params) (reason string, skip bool, err error)
}

// Budgeter is implemented by kinds whose deadline grows with what they wait
// for (a node bringing back thousands of shards): before the step or undo
// starts the runner asks for extra time on top of its runbook timeout; why
// says where the extra comes from ("500ms × 1001 primary shards, recorded
// before the indexer stopped"). A failed ask leaves the runbook timeout.
type Budgeter[D any] interface {
	Budget(ctx context.Context, env Env[D], p Params) (extra time.Duration, why string, err error)
}

// Estimator is implemented by kinds that estimate their own share of a
// plan's time budget (beside Budgeter, which grows a deadline): from the
// decoded parameters (nil: the kind's empty ones) and the facts the caller
// gathered (internal/steps.EstimateFacts: earlier runs, the data volume).
// ok false leaves the caller's generic estimate (history, then a default).
type Estimator interface {
	Estimate(p Params, facts any) (d time.Duration, source string, ok bool)
}

// Traited is implemented by kinds that declare traits of their own for
// callers beyond the engine (internal/steps.BudgetRole: a kind's part in
// the time budget); the engine does not read them.
type Traited interface {
	Traits() any
}

// Deadline is the time a step or undo gets: its runbook timeout (or the
// runner's default) plus a Budgeter kind's extra.
type Deadline struct {
	Timeout time.Duration `json:"timeout_ns"`
	Extra   time.Duration `json:"extra_ns,omitempty"`
	Why     string        `json:"why,omitempty"`
}

// Total is the deadline's length.
func (d Deadline) Total() time.Duration { return d.Timeout + d.Extra }

// String reads "13m20s: timeout 5m0s + 8m20s (500ms × 1001 primary shards, …)".
func (d Deadline) String() string {
	s := fmt.Sprintf("%s: timeout %s", d.Total(), d.Timeout)
	switch {
	case d.Extra > 0:
		s += fmt.Sprintf(" + %s (%s)", d.Extra, d.Why)
	case d.Why != "":
		s += " (" + d.Why + ")"
	}
	return s
}

// BudgetOf is the deadline of kind k with parameters p and runbook timeout
// timeout: the runner uses it for every step and undo, plans to show it.
func BudgetOf[D any](ctx context.Context, env Env[D], k Kind[D], p Params, timeout time.Duration) Deadline {
	dl := Deadline{Timeout: timeout}
	b, ok := k.(Budgeter[D])
	if !ok || p == nil {
		return dl
	}
	extra, why, err := b.Budget(ctx, env, p)
	switch {
	case err != nil:
		dl.Why = "no extra time: " + err.Error()
	case extra > 0:
		dl.Extra, dl.Why = extra, why
	default:
		dl.Why = why
	}
	return dl
}

// ReadOnlyKind is implemented by kinds that change nothing (gates, snapshot
// capture). A failure before any changing step completed is a clean no-go
// (exit 3), and read-only steps are interrupted at once on cancel; changing
// steps in flight are allowed to finish (bounded by their timeout), which is
// the engine's safe point. Kinds that do not implement it count as changing.
type ReadOnlyKind interface {
	ReadOnly() bool
}

// Outcome is what a step reports; it is journaled as JSON.
type Outcome struct {
	Message string         `json:"message,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
}

// Env is what a step kind gets from the engine; D is the caller's
// dependency type.
type Env[D any] interface {
	// RunID is the run's id; StepID the running step's (or undo's) id.
	RunID() string
	StepID() string
	// Get decodes the run value key into v (a pointer) and reports whether it
	// was set. Set records a JSON-able value in the journal at once, so a
	// resumed run and a later rollback see it (e.g. previous_versions).
	// Values under secret-looking keys are redacted: never store secrets.
	Get(key string, v any) (bool, error)
	Set(key string, v any) error
	// Waiting reports what the step is waiting for, shown as progress.
	Waiting(format string, args ...any)
	// Report tells how far a long step has come (measure progress); call it
	// as often as convenient, the renderer limits what it shows.
	Report(m Measure)
	// Logger is the run's logger.
	Logger() *slog.Logger
	// Deps is the caller's dependencies (clients, config) as given in
	// Runner.Deps.
	Deps() D
}

// PendingError means "not yet": a gate's condition is not met, poll again.
type PendingError struct{ Reason string }

func (e *PendingError) Error() string { return "not yet: " + e.Reason }

// Pending returns a *PendingError.
func Pending(format string, args ...any) error {
	return &PendingError{Reason: fmt.Sprintf(format, args...)}
}

// NoGoError is a gate's definitive no-go (e.g. the cluster is red).
type NoGoError struct{ Reason string }

func (e *NoGoError) Error() string { return "no-go: " + e.Reason }

// NoGo returns a *NoGoError.
func NoGo(format string, args ...any) error {
	return &NoGoError{Reason: fmt.Sprintf(format, args...)}
}

// VerdictOf is a gate error's verdict as an operator sees it and its
// reason: VerdictNoGo for a *NoGoError, VerdictWait for a *PendingError. ok
// is false for nil and any other error (a failure, not a verdict).
func VerdictOf(err error) (verdict, reason string, ok bool) {
	var (
		pe *PendingError
		ng *NoGoError
	)
	switch {
	case errors.As(err, &ng):
		return VerdictNoGo, ng.Reason, true
	case errors.As(err, &pe):
		return VerdictWait, pe.Reason, true
	}
	return "", "", false
}

// Registry holds the step kinds by name.
type Registry[D any] struct {
	kinds map[string]Kind[D]
}

// NewRegistry returns a registry holding kinds; duplicate or badly named
// kinds are an error.
func NewRegistry[D any](kinds ...Kind[D]) (*Registry[D], error) {
	r := &Registry[D]{kinds: map[string]Kind[D]{}}
	var errs []error
	for _, k := range kinds {
		errs = append(errs, r.Register(k))
	}
	return r, errors.Join(errs...)
}

var kindNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

// Register adds a kind.
func (r *Registry[D]) Register(k Kind[D]) error {
	if r.kinds == nil {
		r.kinds = map[string]Kind[D]{}
	}
	name := k.Name()
	if !kindNameRE.MatchString(name) {
		return fmt.Errorf("register kind %q: name must be dotted lowercase", name)
	}
	if _, dup := r.kinds[name]; dup {
		return fmt.Errorf("register kind %q: already registered", name)
	}
	r.kinds[name] = k
	return nil
}

// Lookup returns the kind registered as name.
func (r *Registry[D]) Lookup(name string) (Kind[D], bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Names lists the registered kinds, sorted.
func (r *Registry[D]) Names() []string {
	out := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func readOnly[D any](k Kind[D]) bool {
	ro, ok := k.(ReadOnlyKind)
	return ok && ro.ReadOnly()
}

var (
	yamlLineRE  = regexp.MustCompile(`line \d+: `)
	notFoundRE  = regexp.MustCompile(`field (\S+) not found in type \S+`)
	unmarshalRE = regexp.MustCompile(`cannot unmarshal !!(\w+) ` + "`" + `([^` + "`" + `]*)` + "`" + ` into (\S+)`)
)

// DecodeStrict decodes a step's `with:` map into dst (a pointer to a struct
// with yaml tags): unknown keys and wrong types are errors, all listed.
// time.Duration fields accept "90s".
func DecodeStrict(with map[string]any, dst any) error {
	if with == nil {
		with = map[string]any{}
	}
	b, err := yaml.Marshal(with)
	if err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return fmt.Errorf("parameters: %w", err)
		}
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			m = yamlLineRE.ReplaceAllString(m, "")
			m = notFoundRE.ReplaceAllString(m, "unknown parameter $1")
			m = unmarshalRE.ReplaceAllString(m, "$2 is not a valid $3")
			msgs[i] = m
		}
		return fmt.Errorf("parameters: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// Spec defines a kind from typed parameters P, run with dependencies D;
// Define turns it into a Kind. P is usually a pointer to a struct with yaml
// tags.
type Spec[P Params, D any] struct {
	Name string
	// ReadOnly marks kinds that change nothing (gates).
	ReadOnly bool
	// New returns an empty P to decode into; defaults apply from it.
	New func() P
	Run func(ctx context.Context, env Env[D], p P) (Outcome, error)
	// Verify, Skip, Budget and Estimate are optional.
	Verify   func(ctx context.Context, env Env[D], p P) (bool, error)
	Skip     func(ctx context.Context, env Env[D], p P) (string, bool, error)
	Budget   func(ctx context.Context, env Env[D], p P) (time.Duration, string, error)
	Estimate func(p P, facts any) (time.Duration, string, bool)
	// Traits are what the kind declares for callers beyond the engine
	// (Traited); nil: none.
	Traits any
}

// ErrCannotVerify is returned by Verify of a kind that has no verification;
// the engine re-runs such a step on resume.
var ErrCannotVerify = errors.New("step kind cannot verify an interrupted attempt")

// Define builds a Kind from a Spec.
func Define[P Params, D any](s Spec[P, D]) Kind[D] { return &defined[P, D]{s: s} }

type defined[P Params, D any] struct{ s Spec[P, D] }

func (d *defined[P, D]) Name() string   { return d.s.Name }
func (d *defined[P, D]) ReadOnly() bool { return d.s.ReadOnly }

func (d *defined[P, D]) Decode(with map[string]any) (Params, error) {
	p := d.s.New()
	if err := DecodeStrict(with, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *defined[P, D]) params(p Params) (P, error) {
	tp, ok := p.(P)
	if !ok {
		var zero P
		return zero, fmt.Errorf("kind %s: params of type %T", d.s.Name, p)
	}
	return tp, nil
}

func (d *defined[P, D]) Run(ctx context.Context, env Env[D], p Params) (Outcome, error) {
	tp, err := d.params(p)
	if err != nil {
		return Outcome{}, err
	}
	return d.s.Run(ctx, env, tp)
}

func (d *defined[P, D]) Verify(ctx context.Context, env Env[D], p Params) (bool, error) {
	if d.s.Verify == nil {
		return false, ErrCannotVerify
	}
	tp, err := d.params(p)
	if err != nil {
		return false, err
	}
	return d.s.Verify(ctx, env, tp)
}

func (d *defined[P, D]) Skip(ctx context.Context, env Env[D], p Params) (string, bool, error) {
	if d.s.Skip == nil {
		return "", false, nil
	}
	tp, err := d.params(p)
	if err != nil {
		return "", false, err
	}
	return d.s.Skip(ctx, env, tp)
}

func (d *defined[P, D]) Budget(ctx context.Context, env Env[D], p Params) (time.Duration, string, error) {
	if d.s.Budget == nil {
		return 0, "", nil
	}
	tp, err := d.params(p)
	if err != nil {
		return 0, "", err
	}
	return d.s.Budget(ctx, env, tp)
}

func (d *defined[P, D]) Traits() any { return d.s.Traits }

func (d *defined[P, D]) Estimate(p Params, facts any) (time.Duration, string, bool) {
	if d.s.Estimate == nil {
		return 0, "", false
	}
	if p == nil {
		p = d.s.New()
	}
	tp, err := d.params(p)
	if err != nil {
		return 0, "", false
	}
	return d.s.Estimate(tp, facts)
}
