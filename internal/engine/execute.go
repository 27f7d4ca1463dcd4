package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// execution is one run in progress (new, resumed, aborted or rolled back).
type execution[D any] struct {
	r      *Runner[D]
	id     string
	plan   *Plan[D]
	j      *journal
	status string // as loaded (reopen) or "" for a new run
	phase  string // abort or rollback once begun (reopen)

	mu    sync.Mutex
	state map[string]string // step id → Step* status
	msgs  map[string]string // step id → outcome message or skip reason
	data  map[string]json.RawMessage
}

// stopped: interrupted or failed, not ended.
func (x *execution[D]) stopped() bool {
	return x.status == StatusInterrupted || x.status == StatusFailed
}

func (x *execution[D]) resumable() bool { return x.phase == "" && x.stopped() }

// interruption marks an attempt stopped by the caller's cancellation.
type interruption struct{ err error }

func (e *interruption) Error() string { return "interrupted: " + e.err.Error() }
func (e *interruption) Unwrap() error { return e.err }

func (x *execution[D]) progress(p Progress) {
	p.RunID = x.id
	x.r.observe(p)
}

func (x *execution[D]) split() (main, finally []*PlannedStep[D]) {
	for _, s := range x.plan.Selected() {
		if s.Always {
			finally = append(finally, s)
		} else {
			main = append(main, s)
		}
	}
	return main, finally
}

// main runs the not yet completed main steps, then finishes the run.
func (x *execution[D]) main(ctx context.Context) error {
	steps, _ := x.split()
	bounds := x.boundaries(steps)
	for _, ps := range steps {
		st := x.state[ps.ID]
		if st == StepOK || st == StepSkipped {
			continue
		}
		if err := ctx.Err(); err != nil {
			return x.interrupted("", err)
		}
		interrupted := st == StepRunning || st == StepFailed || st == StepInterrupted
		if err := x.step(ctx, ps, interrupted); err != nil {
			var in *interruption
			if errors.As(err, &in) {
				return x.stepInterrupted(ps, in.err)
			}
			// nil only in guided mode: the operator chose wait and the
			// step passed on a later attempt.
			if err := x.failed(ctx, ps, err); err != nil {
				return err
			}
		}
		if phase, ok := bounds[ps.ID]; ok {
			if err := x.pause(ctx, ps, phase); err != nil {
				return err
			}
		}
	}
	if errs := x.finally(ctx); len(errs) > 0 {
		if err := x.end(StatusFinallyFailed, errs[0].Err); err != nil {
			return err
		}
		return &FinallyError{RunID: x.id, Status: StatusSucceeded, Errs: errs}
	}
	return x.end(StatusSucceeded, nil)
}

// step runs one step: verify (when resuming it), skip check, attempts.
// Its journal lines are written here; failure handling is the caller's.
func (x *execution[D]) step(ctx context.Context, ps *PlannedStep[D], resumed bool) error {
	m := x.plan.Total()
	env := x.env(ps.ID)
	base := Progress{Step: ps.ID, Kind: ps.Step.Kind, N: ps.N, M: m}
	if v, ok := ps.Kind.(Verifier[D]); ok && resumed {
		done, err := v.Verify(ctx, env, ps.Params)
		ev := Event{Type: EvStepVerify, Step: ps.ID, Kind: ps.Step.Kind, Done: done}
		if err != nil && !errors.Is(err, ErrCannotVerify) {
			ev.Error = err.Error()
		}
		if jerr := x.j.append(ev); jerr != nil {
			return jerr
		}
		p := base
		p.Type, p.Message = EvStepVerify, "re-running: not done"
		if done && err == nil {
			p.Message = "already done"
			x.progress(p)
			return x.ok(ps, Outcome{Message: "verified after an interrupted attempt"}, 0, true)
		}
		x.progress(p)
	}
	if sk, ok := ps.Kind.(Skipper[D]); ok {
		reason, skip, err := sk.Skip(ctx, env, ps.Params)
		if err != nil {
			if ctx.Err() != nil {
				return &interruption{err: ctx.Err()}
			}
			return x.fail(ps, fmt.Errorf("skip check: %w", err), 0)
		}
		if skip {
			if reason == "" {
				reason = "condition not met"
			}
			if err := x.j.append(Event{Type: EvStepSkip, Step: ps.ID, Kind: ps.Step.Kind, Reason: reason}); err != nil {
				return err
			}
			x.set(ps.ID, StepSkipped)
			x.setNote(ps.ID, reason)
			p := base
			p.Type, p.Message = EvStepSkip, reason
			x.progress(p)
			return nil
		}
	}
	dl := BudgetOf(ctx, env, ps.Kind, ps.Params, x.r.timeout(ps.Timeout.D()))
	if err := x.j.append(Event{Type: EvStepStart, Step: ps.ID, Kind: ps.Step.Kind, Params: ps.With, Deadline: budgeted(dl)}); err != nil {
		return err
	}
	x.set(ps.ID, StepRunning)
	p := base
	p.Type, p.Describe, p.Message = EvStepStart, ps.Describe, deadlineNote(dl)
	x.progress(p)
	out, dur, err := x.attempt(ctx, env, base, ps.Kind, ps.Params, ps.ReadOnly, dl.Total(), ps.Retries)
	if err != nil {
		var in *interruption
		if errors.As(err, &in) {
			return err
		}
		return x.fail(ps, err, dur)
	}
	return x.ok(ps, out, dur, false)
}

// budgeted is the deadline a start event journals: only one a kind asked
// extra time for (the runbook timeout alone is in the runbook).
func budgeted(dl Deadline) *Deadline {
	if dl.Extra <= 0 && dl.Why == "" {
		return nil
	}
	return &dl
}

// deadlineNote is the start progress line's note of a budgeted deadline.
func deadlineNote(dl Deadline) string {
	if budgeted(dl) == nil {
		return ""
	}
	return "deadline " + dl.String()
}

func (x *execution[D]) ok(ps *PlannedStep[D], out Outcome, dur time.Duration, verified bool) error {
	if err := x.j.append(Event{Type: EvStepOK, Step: ps.ID, Kind: ps.Step.Kind, Outcome: &out, Duration: millis(dur), Verified: verified}); err != nil {
		return err
	}
	x.set(ps.ID, StepOK)
	x.setNote(ps.ID, out.Message)
	x.progress(Progress{Type: EvStepOK, Step: ps.ID, Kind: ps.Step.Kind, N: ps.N, M: x.plan.Total(), Elapsed: dur, Message: out.Message})
	return nil
}

// stepFailure is a failure already journaled.
type stepFailure struct{ err error }

func (e *stepFailure) Error() string { return e.err.Error() }
func (e *stepFailure) Unwrap() error { return e.err }

func (x *execution[D]) fail(ps *PlannedStep[D], err error, dur time.Duration) error {
	var ge *GateError
	nogo := errors.As(err, &ge)
	if ge != nil {
		ge.RunID, ge.Step, ge.Kind = x.id, ps.ID, ps.Step.Kind
	}
	if jerr := x.j.append(Event{Type: EvStepFail, Step: ps.ID, Kind: ps.Step.Kind, Error: err.Error(), NoGo: nogo, Duration: millis(dur)}); jerr != nil {
		return errors.Join(err, jerr)
	}
	x.set(ps.ID, StepFailed)
	x.progress(Progress{Type: EvStepFail, Step: ps.ID, Kind: ps.Step.Kind, N: ps.N, M: x.plan.Total(), Elapsed: dur, Err: err, Message: err.Error()})
	return &stepFailure{err: err}
}

// failed decides what a failed main step means for the run.
func (x *execution[D]) failed(ctx context.Context, ps *PlannedStep[D], err error) error {
	var sf *stepFailure
	if !errors.As(err, &sf) {
		// A journal write failed: stop without claiming anything.
		return err
	}
	cause := sf.err
	if ps.ReadOnly && !x.changed() {
		ge := &GateError{}
		if !errors.As(cause, &ge) {
			ge = &GateError{RunID: x.id, Step: ps.ID, Kind: ps.Step.Kind, Reason: cause.Error(), Err: cause}
		}
		if err := x.end(StatusNoGo, cause); err != nil {
			return err
		}
		return ge
	}
	if ps.FailMode() == "rollback" {
		if x.r.Pause != nil {
			return x.askOnFailure(ctx, ps, cause)
		}
		return x.rollback(ctx, ps.ID, cause)
	}
	if err := x.runStop(ps.ID, StatusFailed, cause); err != nil {
		return err
	}
	return &FailedError{RunID: x.id, Step: ps.ID, Err: cause}
}

// changed reports whether a completed step may have changed something.
func (x *execution[D]) changed() bool {
	for _, s := range x.plan.Selected() {
		if !s.ReadOnly && !s.Always && x.get(s.ID) == StepOK {
			return true
		}
	}
	return false
}

// rollback runs the undos of completed steps in reverse order, then the
// finally-steps. It is not interruptible: each undo is bounded by its timeout.
func (x *execution[D]) rollback(ctx context.Context, failedStep string, cause error) error {
	ctx = context.WithoutCancel(ctx)
	// Mark the phase first: a crash from here on is finished by Rollback, never by Resume.
	ev := Event{Type: EvRollback, Step: failedStep, Command: x.r.Command, PID: os.Getpid()}
	if cause != nil {
		ev.Error = cause.Error()
	}
	if err := x.j.append(ev); err != nil {
		return err
	}
	steps, _ := x.split()
	var undone []string
	var failures []StepErr
	for i := len(steps) - 1; i >= 0; i-- {
		ps := steps[i]
		// completed steps, and undos that failed in an earlier attempt
		if st := x.get(ps.ID); ps.Undo == nil || st != StepOK && st != StepUndoFailed {
			continue
		}
		base := Progress{Step: ps.ID, Kind: ps.Undo.Kind.Name(), N: ps.N, M: x.plan.Total()}
		env := x.env(ps.ID)
		dl := BudgetOf(ctx, env, ps.Undo.Kind, ps.Undo.Params, x.r.timeout(ps.Undo.Timeout))
		if err := x.j.append(Event{Type: EvUndoStart, Step: ps.ID, Kind: ps.Undo.Kind.Name(), Params: ps.Step.Undo.With, Deadline: budgeted(dl)}); err != nil {
			return err
		}
		p := base
		p.Type, p.Describe, p.Message = EvUndoStart, ps.Undo.Describe, deadlineNote(dl)
		x.progress(p)
		out, dur, err := x.attempt(ctx, env, base, ps.Undo.Kind, ps.Undo.Params, false, dl.Total(), 0)
		p = base
		p.Elapsed = dur
		if err != nil {
			if jerr := x.j.append(Event{Type: EvUndoFail, Step: ps.ID, Kind: ps.Undo.Kind.Name(), Error: err.Error(), Duration: millis(dur)}); jerr != nil {
				return jerr
			}
			x.set(ps.ID, StepUndoFailed)
			failures = append(failures, StepErr{Step: ps.ID, Err: err})
			p.Type, p.Err, p.Message = EvUndoFail, err, err.Error()
			x.progress(p)
			continue
		}
		if err := x.j.append(Event{Type: EvUndoOK, Step: ps.ID, Kind: ps.Undo.Kind.Name(), Outcome: &out, Duration: millis(dur)}); err != nil {
			return err
		}
		x.set(ps.ID, StepUndone)
		undone = append(undone, ps.ID)
		p.Type, p.Message = EvUndoOK, out.Message
		x.progress(p)
	}
	failures = append(failures, x.finally(ctx)...)
	if len(failures) > 0 {
		if err := x.end(StatusRollbackFailed, failures[0].Err); err != nil {
			return err
		}
		return &RollbackFailedError{RunID: x.id, Step: failedStep, Cause: cause, Failed: failures}
	}
	if err := x.end(StatusRolledBack, cause); err != nil {
		return err
	}
	return &RolledBackError{RunID: x.id, Step: failedStep, Cause: cause, Undone: undone}
}

// finally runs every selected always-step, whatever fails; they are not
// interruptible (bounded by their timeouts).
func (x *execution[D]) finally(ctx context.Context) []StepErr {
	ctx = context.WithoutCancel(ctx)
	_, steps := x.split()
	var errs []StepErr
	for _, ps := range steps {
		if err := x.step(ctx, ps, false); err != nil {
			var sf *stepFailure
			if errors.As(err, &sf) {
				err = sf.err
			}
			errs = append(errs, StepErr{Step: ps.ID, Err: err})
		}
	}
	return errs
}

// stepInterrupted journals that ps's attempt was interrupted, then stops the run.
func (x *execution[D]) stepInterrupted(ps *PlannedStep[D], cause error) error {
	_ = x.j.append(Event{Type: EvStepInterrupted, Step: ps.ID, Kind: ps.Step.Kind, Error: cause.Error()})
	return x.interrupted(ps.ID, cause)
}

func (x *execution[D]) interrupted(step string, cause error) error {
	if err := x.runStop(step, StatusInterrupted, cause); err != nil {
		return errors.Join(cause, err)
	}
	return &InterruptedError{RunID: x.id, Step: step, Err: cause}
}

// runStop journals and shows that the run stopped at step (interrupted,
// failed) because of cause.
func (x *execution[D]) runStop(step, status string, cause error) error {
	if err := x.j.append(Event{Type: EvRunStop, Status: status, Step: step, Error: cause.Error()}); err != nil {
		return err
	}
	x.progress(Progress{Type: EvRunStop, Status: status, Step: step, Err: cause})
	return nil
}

func (x *execution[D]) end(status string, cause error) error {
	ev := Event{Type: EvRunEnd, Status: status}
	if cause != nil {
		ev.Error = cause.Error()
	}
	if err := x.j.append(ev); err != nil {
		return err
	}
	x.progress(Progress{Type: EvRunEnd, Status: status, Err: cause})
	return nil
}

// finish pairs the run's journaled state with err.
func (x *execution[D]) finish(err error) (*RunInfo, error) {
	ri, serr := Status(x.r.StateDir, x.id)
	if serr != nil {
		return nil, errors.Join(err, serr)
	}
	return ri, err
}

// attempt runs a kind until it succeeds, a gate times out or says no-go, or
// retries are used up. Read-only kinds see the caller's cancellation at once;
// changing kinds run on a context that only their timeout ends (the safe
// point is after them).
func (x *execution[D]) attempt(ctx context.Context, env *stepEnv[D], base Progress, k Kind[D], p Params, readOnly bool, timeout time.Duration, retries int) (Outcome, time.Duration, error) {
	clock := x.r.clock()
	parent := ctx
	if !readOnly {
		parent = context.WithoutCancel(ctx)
	}
	sctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	start := clock.Now()
	deadline := start.Add(timeout)
	env.start = start
	failures := 0
	var lastPending string
	for attempt := 1; ; attempt++ {
		out, err := k.Run(sctx, env, p)
		elapsed := clock.Now().Sub(start)
		if err == nil {
			return out, elapsed, nil
		}
		if readOnly && ctx.Err() != nil {
			return Outcome{}, elapsed, &interruption{err: ctx.Err()}
		}
		var (
			pe *PendingError
			ng *NoGoError
		)
		switch {
		case errors.As(err, &ng):
			return Outcome{}, elapsed, &GateError{Reason: ng.Reason, Waited: elapsed, Err: err}
		case errors.As(err, &pe):
			lastPending = pe.Reason
			if !clock.Now().Before(deadline) || sctx.Err() != nil {
				return Outcome{}, elapsed, &GateError{Reason: fmt.Sprintf("still %s after %s", pe.Reason, timeout), Waited: elapsed, Err: err}
			}
			pr := base
			pr.Type, pr.Elapsed, pr.Attempt, pr.Message = ProgressWait, elapsed, attempt, pe.Reason
			x.progress(pr)
		case sctx.Err() != nil:
			return Outcome{}, elapsed, fmt.Errorf("timed out after %s: %w", timeout, err)
		default:
			failures++
			if failures > retries {
				return Outcome{}, elapsed, err
			}
			pr := base
			pr.Type, pr.Elapsed, pr.Attempt, pr.Err, pr.Message = ProgressRetry, elapsed, attempt, err, err.Error()
			x.progress(pr)
		}
		select {
		case <-clock.After(x.r.poll()):
		case <-sctx.Done():
			elapsed = clock.Now().Sub(start)
			if readOnly && ctx.Err() != nil {
				return Outcome{}, elapsed, &interruption{err: ctx.Err()}
			}
			if lastPending != "" {
				return Outcome{}, elapsed, &GateError{Reason: fmt.Sprintf("still %s after %s", lastPending, timeout), Waited: elapsed, Err: err}
			}
			return Outcome{}, elapsed, fmt.Errorf("timed out after %s: %w", timeout, err)
		}
	}
}

func (x *execution[D]) set(id, status string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.state[id] = status
}

func (x *execution[D]) setNote(id, msg string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.msgs[id] = msg
}

func (x *execution[D]) note(id string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.msgs[id]
}

func (x *execution[D]) get(id string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.state[id]
}

func (x *execution[D]) env(step string) *stepEnv[D] { return &stepEnv[D]{x: x, step: step} }

// stepEnv is the Env a step gets.
type stepEnv[D any] struct {
	x     *execution[D]
	step  string
	start time.Time
}

func (e *stepEnv[D]) RunID() string        { return e.x.id }
func (e *stepEnv[D]) StepID() string       { return e.step }
func (e *stepEnv[D]) Deps() D              { return e.x.r.Deps }
func (e *stepEnv[D]) Logger() *slog.Logger { return e.x.r.logger().With("run", e.x.id, "step", e.step) }

func (e *stepEnv[D]) Get(key string, v any) (bool, error) {
	e.x.mu.Lock()
	raw, ok := e.x.data[key]
	e.x.mu.Unlock()
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("run data %s: %w", key, err)
	}
	return true, nil
}

func (e *stepEnv[D]) Set(key string, v any) error {
	raw, err := redactJSON(key, v)
	if err != nil {
		return fmt.Errorf("run data %s: %w", key, err)
	}
	if err := e.x.j.append(Event{Type: EvData, Step: e.step, Key: key, Value: raw}); err != nil {
		return err
	}
	e.x.mu.Lock()
	e.x.data[key] = raw
	e.x.mu.Unlock()
	return nil
}

func (e *stepEnv[D]) Report(m Measure) {
	var elapsed time.Duration
	if !e.start.IsZero() {
		elapsed = e.x.r.clock().Now().Sub(e.start)
	}
	e.x.progress(Progress{Type: ProgressMeasure, Step: e.step, Elapsed: elapsed, Measure: &m})
}

func (e *stepEnv[D]) Waiting(format string, args ...any) {
	var elapsed time.Duration
	if !e.start.IsZero() {
		elapsed = e.x.r.clock().Now().Sub(e.start)
	}
	e.x.progress(Progress{Type: ProgressWait, Step: e.step, Elapsed: elapsed, Message: fmt.Sprintf(format, args...)})
}
