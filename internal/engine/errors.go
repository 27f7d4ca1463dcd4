package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// GateError is a gate's no-go: its condition was not met within its timeout,
// or it said no definitively. Returned as is (a no-go) when nothing had been
// changed yet; otherwise it is the cause inside FailedError/RolledBackError.
type GateError struct {
	RunID  string
	Step   string
	Kind   string
	Reason string
	// Waited is how long the gate polled.
	Waited time.Duration
	Err    error
}

func (e *GateError) Error() string {
	return fmt.Sprintf("gate %s: no-go: %s", e.Step, e.Reason)
}

func (e *GateError) Unwrap() error { return e.Err }

// FailedError is a step failure with on_fail abort after something changed:
// the run stopped and is resumable (fix, then resume; or abort; or rollback).
type FailedError struct {
	RunID string
	Step  string
	Err   error
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("run %s stopped at step %s: %v", e.RunID, e.Step, e.Err)
}

func (e *FailedError) Unwrap() error { return e.Err }

// FinallyError is a finally-step failure after an otherwise successful run
// or an abort.
type FinallyError struct {
	RunID  string
	Status string
	Errs   []StepErr
}

// StepErr is one step's (or undo's) error.
type StepErr struct {
	Step string
	Err  error
}

func (e *FinallyError) Error() string {
	return fmt.Sprintf("run %s %s, but finally-steps failed: %s", e.RunID, e.Status, joinStepErrs(e.Errs))
}

func (e *FinallyError) Unwrap() []error { return stepErrs(e.Errs) }

// RolledBackError: a step failed with on_fail rollback and every completed
// step's undo succeeded (exit 10).
type RolledBackError struct {
	RunID  string
	Step   string
	Cause  error
	Undone []string
}

func (e *RolledBackError) Error() string {
	return fmt.Sprintf("run %s failed at step %s and was rolled back (%d undone): %v", e.RunID, e.Step, len(e.Undone), e.Cause)
}

func (e *RolledBackError) Unwrap() error { return e.Cause }

// RollbackFailedError: the rollback itself failed; manual action (exit 11).
type RollbackFailedError struct {
	RunID  string
	Step   string // the step whose failure started the rollback ("" for an explicit rollback)
	Cause  error
	Failed []StepErr // undos and finally-steps that failed
}

func (e *RollbackFailedError) Error() string {
	what := "rollback"
	if e.Step != "" {
		what = fmt.Sprintf("failed at step %s (%v); rollback", e.Step, e.Cause)
	}
	return fmt.Sprintf("run %s %s failed: %s", e.RunID, what, joinStepErrs(e.Failed))
}

func (e *RollbackFailedError) Unwrap() []error {
	errs := stepErrs(e.Failed)
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// InterruptedError: the context was cancelled; the run stopped at a safe
// point and is resumable. It unwraps to the context's error, so
// errors.Is(err, context.Canceled) holds (exit 130).
type InterruptedError struct {
	RunID string
	Step  string
	Err   error
}

func (e *InterruptedError) Error() string {
	at := ""
	if e.Step != "" {
		at = " at step " + e.Step
	}
	return fmt.Sprintf("run %s interrupted%s; resume it with the run id: %v", e.RunID, at, e.Err)
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// ErrNotResumable is returned by Resume, Abort and Rollback for a run in the
// wrong state.
var ErrNotResumable = errors.New("run cannot be continued")

// ErrRunbookChanged means a run's stored runbook no longer matches its journal.
var ErrRunbookChanged = errors.New("runbook changed since the run started")

func joinStepErrs(es []StepErr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%s: %v", e.Step, e.Err)
	}
	return strings.Join(parts, "; ")
}

func stepErrs(es []StepErr) []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e.Err
	}
	return out
}
