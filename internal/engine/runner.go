package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"

	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/runbook"
)

// EvRollback marks an explicit rollback of a stopped run in its journal.
const EvRollback = "rollback"

// Defaults for Runner fields left zero.
const (
	DefaultPollInterval = 5 * time.Second
	DefaultStepTimeout  = 10 * time.Minute
)

// Clock is the runner's time source; tests inject a fake one so that gates
// poll without sleeping.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Progress types that are not journal event types.
const (
	ProgressDryRun = "dry-run"
	ProgressWait   = "wait"
	ProgressRetry  = "retry"
	// ProgressMeasure carries a long step's Measure (bytes copied, snapshot
	// percent, shards recovered).
	ProgressMeasure = "measure"
)

// Measure units.
const (
	UnitBytes  = "bytes"
	UnitShards = "shards"
)

// Measure is how far a long step has come: Done of Total in Unit, for What
// ("copy", "snapshot", "restore", "recovery"). Total 0 means not known yet.
// Detail is a short free text ("12/40 shards").
type Measure struct {
	What   string `json:"what"`
	Unit   string `json:"unit"`
	Done   int64  `json:"done"`
	Total  int64  `json:"total"`
	Detail string `json:"detail,omitempty"`
}

// Percent is Done of Total in percent (0 while Total is not known).
func (m Measure) Percent() float64 {
	if m.Total <= 0 {
		return 0
	}
	return min(100, 100*float64(m.Done)/float64(m.Total))
}

// Progress is one progress notification for the observer (the CLI renders
// it on stderr as "[n/m] step-id ... elapsed, waiting for ...", or as JSON).
type Progress struct {
	RunID string `json:"run_id,omitempty"`
	// Type is a journal event type (step-start, step-ok, step-skip,
	// step-fail, step-verify, undo-start, undo-ok, undo-fail, run-end,
	// run-stop) or dry-run, wait, retry.
	Type     string        `json:"type"`
	Step     string        `json:"step,omitempty"`
	Kind     string        `json:"kind,omitempty"`
	N        int           `json:"n,omitempty"`
	M        int           `json:"m,omitempty"`
	Elapsed  time.Duration `json:"elapsed_ns,omitempty"`
	Attempt  int           `json:"attempt,omitempty"`
	Message  string        `json:"message,omitempty"`
	Describe []string      `json:"describe,omitempty"`
	Status   string        `json:"status,omitempty"`
	// Measure is set on measure progress.
	Measure *Measure `json:"measure,omitempty"`
	Err     error    `json:"-"`
}

// Observer receives progress. It must not block for long.
type Observer interface {
	Observe(Progress)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Progress)

// Observe calls f.
func (f ObserverFunc) Observe(p Progress) { f(p) }

// Runner executes plans. Zero fields get defaults; StateDir and Registry are
// required (Registry for Resume, Abort and Rollback, which re-plan from the
// run's stored runbook).
type Runner[D any] struct {
	// StateDir holds runs/<id>/{journal.jsonl,runbook.yaml}, runs/latest and the lock.
	StateDir string
	Registry *Registry[D]
	// Planning is the planning context a re-plan hands to every Describe
	// (see PlanContext).
	Planning PlanContext
	// Deps is handed to every step through Env.Deps (clients, config).
	Deps     D
	Observer Observer
	Clock    Clock
	Logger   *slog.Logger
	// PollInterval is a gate's poll period and the delay between retries.
	PollInterval time.Duration
	// DefaultTimeout bounds steps without a timeout.
	DefaultTimeout time.Duration
	// LockRetry waits that long for a held lock (0: fail at once).
	LockRetry time.Duration
	// Command is recorded in the lock holder and the journal ("siemctl upgrade apply --to 4.10.0").
	Command string
	// DryRun: no lock, no journal, no step runs; every step's Describe lines
	// go to the observer as dry-run progress.
	DryRun bool
	// Pause, when set, is asked after the last step of each phase named in
	// PauseAfter (step-id prefixes: preflight, indexer, …): guided mode.
	Pause      Pauser
	PauseAfter []string
}

// RunOptions are per-run inputs.
type RunOptions struct {
	// Seed is initial run data for the kinds (e.g. "target": "4.10.0", or a
	// rollback's "previous_versions" taken from the upgrade run's data).
	Seed map[string]any
	// Parent is a related run (the upgrade run a rollback undoes).
	Parent string
}

func (r *Runner[D]) clock() Clock {
	if r.Clock == nil {
		return realClock{}
	}
	return r.Clock
}

func (r *Runner[D]) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r *Runner[D]) observe(p Progress) {
	if r.Observer != nil {
		r.Observer.Observe(p)
	}
}

func (r *Runner[D]) poll() time.Duration {
	if r.PollInterval <= 0 {
		return DefaultPollInterval
	}
	return r.PollInterval
}

func (r *Runner[D]) timeout(d time.Duration) time.Duration {
	switch {
	case d > 0:
		return d
	case r.DefaultTimeout > 0:
		return r.DefaultTimeout
	}
	return DefaultStepTimeout
}

// LockPath is the host lock's path.
func (r *Runner[D]) LockPath() string { return lock.HostPath(r.StateDir) }

func (r *Runner[D]) lock(ctx context.Context, runID string) (*lock.Lock, error) {
	l, err := lock.Acquire(ctx, r.LockPath(), lock.Holder{RunID: runID, Command: r.Command, Started: r.clock().Now().UTC()}, r.LockRetry)
	if err != nil {
		return nil, err
	}
	if l.Stale != nil {
		r.logger().Warn("previous holder of the host lock died without releasing it", "holder", l.Stale.String())
	}
	return l, nil
}

// Run executes plan as a new run: lock, journal, steps, rollback or
// finally-steps as the outcome requires. The returned RunInfo is the run's
// journaled state (also on error, when the run got that far).
func (r *Runner[D]) Run(ctx context.Context, plan *Plan[D], opts RunOptions) (*RunInfo, error) {
	if r.DryRun {
		return r.dryRun(plan, plan.Selected()), nil
	}
	if r.StateDir == "" {
		return nil, errors.New("runner: no state directory")
	}
	l, err := r.lock(ctx, "")
	if err != nil {
		return nil, err
	}
	defer l.Release()

	now := r.clock().Now()
	id := newRunID(now)
	if err := l.SetRunID(id); err != nil {
		return nil, err
	}
	dir := filepath.Join(runsDir(r.StateDir), id)
	j, err := createJournal(dir, r.clock().Now)
	if err != nil {
		return nil, err
	}
	defer j.close()
	if err := renameio.WriteFile(filepath.Join(dir, runbookName), plan.Runbook.Raw, 0o600); err != nil {
		return nil, fmt.Errorf("store runbook: %w", err)
	}
	if err := setLatest(r.StateDir, id); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	ids := make([]string, 0, len(plan.Steps))
	for _, s := range plan.Selected() {
		ids = append(ids, s.ID)
	}
	sel := plan.Selection
	if err := j.append(Event{
		Type:      EvRunStart,
		Runbook:   &RunbookRef{Name: plan.Runbook.Name, Source: plan.Runbook.Source, Hash: runbook.Hash(plan.Runbook.Raw)},
		Selection: &sel, Steps: ids, Seed: opts.Seed, Parent: opts.Parent,
		Command: r.Command, PID: os.Getpid(), Host: host,
	}); err != nil {
		return nil, err
	}
	x := &execution[D]{r: r, id: id, plan: plan, j: j, state: map[string]string{}, msgs: map[string]string{}, data: map[string]json.RawMessage{}}
	for k, v := range opts.Seed {
		raw, err := redactJSON(k, v)
		if err != nil {
			return nil, fmt.Errorf("seed %s: %w", k, err)
		}
		x.data[k] = raw
	}
	return x.finish(x.main(ctx))
}

// Resume continues an interrupted or failed run ("" or "latest" for the
// latest run). The interrupted step is verified first when its kind can;
// completed steps are not run again.
func (r *Runner[D]) Resume(ctx context.Context, runID string) (*RunInfo, error) {
	return r.onStopped(ctx, runID, opResume, func(x *execution[D]) (*RunInfo, error) {
		return x.finish(x.main(ctx))
	})
}

// Abort ends an interrupted or failed run without undoing it: the run is
// marked aborted and its finally-steps run (the "no trace left" guarantee).
func (r *Runner[D]) Abort(ctx context.Context, runID string) (*RunInfo, error) {
	return r.onStopped(ctx, runID, opAbort, func(x *execution[D]) (*RunInfo, error) {
		errs := x.finally(ctx)
		if err := x.end(StatusAborted, nil); err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			return x.finish(&FinallyError{RunID: x.id, Status: StatusAborted, Errs: errs})
		}
		return x.finish(nil)
	})
}

// Rollback undoes a stopped run (interrupted, failed, or rollback-failed for
// another try): completed steps' undos in reverse order, then finally-steps.
func (r *Runner[D]) Rollback(ctx context.Context, runID string) (*RunInfo, error) {
	return r.onStopped(ctx, runID, opRollback, func(x *execution[D]) (*RunInfo, error) {
		err := x.rollback(ctx, "", nil)
		var rb *RolledBackError
		if errors.As(err, &rb) {
			err = nil // an explicit rollback that succeeded is a success
		}
		return x.finish(err)
	})
}

// stopOp is what Resume, Abort and Rollback do to a stopped run.
type stopOp int

const (
	opResume stopOp = iota
	opRollback
	opAbort
)

func (op stopOp) String() string {
	return [...]string{"resume", "rollback", "abort"}[op]
}

// allows reports whether op may continue the run: resume a stopped run
// not yet aborted or rolled back; abort or roll back a stopped run not in
// the other phase, or one whose rollback failed.
func (x *execution[D]) allows(op stopOp) bool {
	switch op {
	case opResume:
		return x.resumable()
	case opAbort:
		return x.stopped() && x.phase != EvRollback || x.status == StatusRollbackFailed
	}
	return x.stopped() && x.phase != EvAbort || x.status == StatusRollbackFailed
}

// onStopped is the frame of Resume, Abort and Rollback: a dry run only
// describes what op would do; otherwise the run is reopened under the lock
// and, when its state allows op (ErrNotResumable otherwise), op is
// journaled (a rollback journals its own phase mark) and handed to do.
func (r *Runner[D]) onStopped(ctx context.Context, runID string, op stopOp, do func(x *execution[D]) (*RunInfo, error)) (*RunInfo, error) {
	if r.DryRun {
		return r.dryRunStopped(runID, op)
	}
	x, l, err := r.reopen(ctx, runID)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	defer x.j.close()
	if !x.allows(op) {
		return nil, fmt.Errorf("%s %s: status %s: %w", op, x.id, x.status, ErrNotResumable)
	}
	if ev := map[stopOp]string{opResume: EvRunResume, opAbort: EvAbort}[op]; ev != "" {
		if err := x.j.append(Event{Type: ev, Command: r.Command, PID: os.Getpid()}); err != nil {
			return nil, err
		}
	}
	return do(x)
}

// reopen takes the lock and rebuilds a stopped run from its directory.
func (r *Runner[D]) reopen(ctx context.Context, runID string) (*execution[D], *lock.Lock, error) {
	id, err := ResolveRun(r.StateDir, runID)
	if err != nil {
		return nil, nil, err
	}
	l, err := r.lock(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	x, err := r.load(id, true)
	if err != nil {
		l.Release()
		return nil, nil, err
	}
	return x, l, nil
}

// load rebuilds an execution from a run's journal and stored runbook.
// With write it opens the journal for appending (cutting a torn tail).
func (r *Runner[D]) load(id string, write bool) (*execution[D], error) {
	dir := filepath.Join(runsDir(r.StateDir), id)
	var (
		j   *journal
		evs []Event
		err error
	)
	if write {
		j, evs, err = openJournal(dir, r.clock().Now)
	} else {
		evs, _, _, err = readJournal(filepath.Join(dir, journalName))
	}
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*execution[D], error) {
		j.close()
		return nil, err
	}
	info, err := reduce(id, evs)
	if err != nil {
		return fail(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, runbookName))
	if err != nil {
		return fail(fmt.Errorf("run %s: stored runbook: %w", id, err))
	}
	if runbook.Hash(raw) != info.Runbook.Hash {
		return fail(fmt.Errorf("run %s: %w", id, ErrRunbookChanged))
	}
	plan, err := ParsePlan(raw, info.Runbook.Source, r.Registry, info.Selection, r.Planning)
	if err != nil {
		return fail(fmt.Errorf("run %s: re-plan: %w", id, err))
	}
	x := &execution[D]{r: r, id: id, plan: plan, j: j, state: map[string]string{}, msgs: map[string]string{}, data: info.Data, status: info.Status, phase: info.Phase}
	if x.status == StatusRunning {
		// We hold the lock, so nobody runs it: it crashed.
		x.status = StatusInterrupted
	}
	for _, s := range info.Steps {
		x.state[s.ID] = s.Status
		if s.Outcome != nil {
			x.msgs[s.ID] = s.Outcome.Message
		} else if s.Reason != "" {
			x.msgs[s.ID] = s.Reason
		}
	}
	return x, nil
}

func (r *Runner[D]) dryRun(plan *Plan[D], steps []*PlannedStep[D]) *RunInfo {
	m := plan.Total()
	ri := &RunInfo{Runbook: RunbookRef{Name: plan.Runbook.Name, Source: plan.Runbook.Source, Hash: runbook.Hash(plan.Runbook.Raw)},
		Selection: plan.Selection, Status: StatusDryRun, Data: map[string]json.RawMessage{}, Steps: []StepInfo{}}
	for _, s := range steps {
		r.observe(Progress{Type: ProgressDryRun, Step: s.ID, Kind: s.Step.Kind, N: s.N, M: m, Describe: s.Describe})
		ri.Steps = append(ri.Steps, StepInfo{ID: s.ID, Kind: s.Step.Kind, Status: StepPending})
	}
	return ri
}

// dryRunStopped describes what Resume (remaining steps), Rollback (undos in
// reverse, then finally-steps) or Abort (finally-steps) would do for a
// stopped run, without lock or journal writes.
func (r *Runner[D]) dryRunStopped(runID string, op stopOp) (*RunInfo, error) {
	id, err := ResolveRun(r.StateDir, runID)
	if err != nil {
		return nil, err
	}
	x, err := r.load(id, false)
	if err != nil {
		return nil, err
	}
	sel := x.plan.Selected()
	var steps []*PlannedStep[D]
	if op == opRollback {
		for i := len(sel) - 1; i >= 0; i-- {
			if s := sel[i]; s.Undo != nil && (x.state[s.ID] == StepOK || x.state[s.ID] == StepUndoFailed) {
				steps = append(steps, &PlannedStep[D]{Step: runbook.Step{ID: s.ID, Kind: s.Undo.Kind.Name()}, N: s.N, Describe: s.Undo.Describe})
			}
		}
	}
	for _, s := range sel {
		st := x.state[s.ID]
		switch {
		case op == opResume && st != StepOK && st != StepSkipped,
			op != opResume && s.Always:
			steps = append(steps, s)
		}
	}
	ri := r.dryRun(x.plan, steps)
	ri.ID = id
	return ri, nil
}
