package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Guided mode: the runner pauses at phase boundaries and asks an operator
// (Runner.Pause) what to do; every answer is journaled with the operator's
// name.

// Journal event types of guided mode.
const (
	EvDecision = "decision"     // an operator's answer at a phase boundary
	EvRecheck  = "gate-recheck" // a gate re-evaluated on "wait"
)

// Operator decisions at a phase boundary.
const (
	DecisionContinue = "continue"
	DecisionWait     = "wait"     // re-evaluate the phase's gates and ask again
	DecisionRollback = "rollback" // undo what was done (nothing changed yet: no-go)
	DecisionStop     = "stop"     // stop here, resumable
)

// Gate verdicts shown at a boundary.
const (
	VerdictGo      = "GO"
	VerdictNoGo    = "NO-GO"
	VerdictWait    = "WAIT"
	VerdictSkipped = "SKIPPED"
)

// Decision is an operator's answer.
type Decision struct {
	Choice   string
	Operator string
}

// GateVerdict is a gate step's verdict as an operator sees it at a boundary.
type GateVerdict struct {
	Step    string `json:"step"`
	Kind    string `json:"kind"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail,omitempty"`
	// Rechecked: evaluated again at the boundary ("wait"), not the run's verdict.
	Rechecked bool `json:"rechecked,omitempty"`
}

// Boundary is the evidence at a phase boundary.
type Boundary struct {
	RunID string
	// Phase is the Runner.PauseAfter entry that just ended: a step-id
	// prefix (indexer for indexer/*) or prefixes joined by "+".
	Phase string
	// Step is the phase's last step.
	Step string
	// Gates are the verdicts of the gate steps (isGate) run so far, in
	// run order; after "wait" the ended phase's gates are the re-evaluated ones.
	Gates []GateVerdict
	// Done are the completed (ok) step ids, in order.
	Done []string
	// Data is the run data so far (snapshot diff, backups, …).
	Data map[string]json.RawMessage
	// Now is the runner clock's time.
	Now time.Time
	// Failure is set when Step failed and the run would roll back (a
	// breach of the watch window, a gate that says no-go after a change):
	// the operator chooses roll back, wait (run the step again) or stop
	// here; continue is not offered.
	Failure string
}

// Pauser asks the operator at a boundary. An error (no answer) stops the
// run there, resumable.
type Pauser func(ctx context.Context, b Boundary) (Decision, error)

// DecisionInfo is one journaled decision.
type DecisionInfo struct {
	Time     time.Time `json:"time"`
	Phase    string    `json:"phase"`
	Step     string    `json:"after_step"`
	Decision string    `json:"decision"`
	Operator string    `json:"operator"`
}

// OperatorRollbackError is the cause of a rollback an operator chose.
type OperatorRollbackError struct {
	Operator, Phase string
}

func (e *OperatorRollbackError) Error() string {
	return fmt.Sprintf("operator %s chose to roll back after phase %s", e.Operator, e.Phase)
}

// StoppedError: an operator stopped the run at a phase boundary; it is
// resumable (exit 130, like an interruption).
type StoppedError struct {
	RunID, Step, Phase, Operator string
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("run %s stopped by operator %s after phase %s (step %s); continue it with 'siemctl upgrade resume %s'",
		e.RunID, e.Operator, e.Phase, e.Step, e.RunID)
}

// Phase is a step id's phase: the part before the first slash.
func Phase(stepID string) string {
	p, _, _ := strings.Cut(stepID, "/")
	return p
}

// boundaries maps the last main step of each phase in Runner.PauseAfter to
// its entry. An entry may join phases with "+" ("validate+post"): the
// boundary is after the last step of any of them.
func (x *execution[D]) boundaries(main []*PlannedStep[D]) map[string]string {
	out := map[string]string{}
	if x.r.Pause == nil {
		return out
	}
	for _, entry := range x.r.PauseAfter {
		last := ""
		for _, s := range main {
			if inPhase(s.ID, entry) {
				last = s.ID
			}
		}
		if last != "" {
			out[last] = entry
		}
	}
	return out
}

// inPhase reports whether step id belongs to entry (phases joined by "+").
func inPhase(id, entry string) bool {
	for _, p := range strings.Split(entry, "+") {
		if Phase(id) == p {
			return true
		}
	}
	return false
}

// isGate: a read-only step of a gate kind (gate.* or *.gate); other
// read-only steps (a snapshot capture) are not re-run on "wait".
func isGate[D any](s *PlannedStep[D]) bool {
	return s.ReadOnly && (strings.HasPrefix(s.Step.Kind, "gate.") || strings.HasSuffix(s.Step.Kind, ".gate"))
}

// boundary collects the evidence so far.
func (x *execution[D]) boundary(ps *PlannedStep[D], phase string, rechecked []GateVerdict) Boundary {
	b := Boundary{RunID: x.id, Phase: phase, Step: ps.ID, Now: x.r.clock().Now(), Data: map[string]json.RawMessage{}}
	main, _ := x.split()
	x.mu.Lock()
	for k, v := range x.data {
		b.Data[k] = v
	}
	x.mu.Unlock()
	for _, s := range main {
		st := x.get(s.ID)
		if st == StepOK {
			b.Done = append(b.Done, s.ID)
		}
		if !isGate(s) || st != StepOK && st != StepSkipped {
			continue
		}
		if len(rechecked) > 0 && inPhase(s.ID, phase) {
			continue
		}
		v := GateVerdict{Step: s.ID, Kind: s.Step.Kind, Verdict: VerdictGo, Detail: x.note(s.ID)}
		if st == StepSkipped {
			v.Verdict = VerdictSkipped
		}
		b.Gates = append(b.Gates, v)
	}
	b.Gates = append(b.Gates, rechecked...)
	return b
}

// pause asks the operator after ps, the last step of phase, until the
// answer is continue (nil), roll back, or stop.
func (x *execution[D]) pause(ctx context.Context, ps *PlannedStep[D], phase string) error {
	var rechecked []GateVerdict
	for {
		d, err := x.ask(ctx, ps, x.boundary(ps, phase, rechecked), phase)
		if err != nil {
			return err
		}
		if err := x.decided(ps, phase, phase, d); err != nil {
			return err
		}
		switch d.Choice {
		case DecisionContinue:
			return nil
		case DecisionWait:
			rechecked = x.recheck(ctx, phase)
			if ctx.Err() != nil {
				return x.interrupted(ps.ID, ctx.Err())
			}
		case DecisionRollback:
			cause := &OperatorRollbackError{Operator: d.Operator, Phase: phase}
			if !x.changed() {
				if err := x.end(StatusNoGo, cause); err != nil {
					return err
				}
				return &GateError{RunID: x.id, Step: ps.ID, Reason: cause.Error(), Err: cause}
			}
			return x.rollback(ctx, ps.ID, cause)
		case DecisionStop:
			return x.stoppedBy(ps, phase, d.Operator)
		default:
			return fmt.Errorf("guided pause after %s: unknown decision %q", phase, d.Choice)
		}
	}
}

// askOnFailure: in guided mode a failed step whose on_fail is rollback asks
// the operator first: roll back (what the run would do unattended), wait
// (run the step again, e.g. keep watching), or stop here (resumable: resume
// runs the step again). Every answer is journaled.
func (x *execution[D]) askOnFailure(ctx context.Context, ps *PlannedStep[D], cause error) error {
	for {
		b := x.boundary(ps, Phase(ps.ID), nil)
		b.Failure = cause.Error()
		after := "the failure of " + ps.ID
		d, err := x.ask(ctx, ps, b, after)
		if err != nil {
			return err
		}
		if d.Choice == DecisionContinue {
			// Not offered: a failure is never waved through.
			continue
		}
		if err := x.decided(ps, "failure", after, d); err != nil {
			return err
		}
		switch d.Choice {
		case DecisionRollback:
			return x.rollback(ctx, ps.ID, cause)
		case DecisionStop:
			return x.stoppedBy(ps, Phase(ps.ID), d.Operator)
		case DecisionWait:
			err := x.step(ctx, ps, false)
			if err == nil {
				return nil
			}
			var in *interruption
			if errors.As(err, &in) {
				return x.stepInterrupted(ps, in.err)
			}
			var sf *stepFailure
			if !errors.As(err, &sf) {
				return err
			}
			cause = sf.err
		default:
			return fmt.Errorf("guided pause after %s: unknown decision %q", after, d.Choice)
		}
	}
}

// ask asks the operator at b, after ps ("after" names what just ended);
// no answer stops the run there, resumable.
func (x *execution[D]) ask(ctx context.Context, ps *PlannedStep[D], b Boundary, after string) (Decision, error) {
	d, err := x.r.Pause(ctx, b)
	switch {
	case err != nil && ctx.Err() != nil:
		return d, x.interrupted(ps.ID, ctx.Err())
	case err != nil:
		return d, x.interrupted(ps.ID, fmt.Errorf("guided pause after %s: %w", after, err))
	}
	return d, nil
}

// decided journals the operator's decision d at ps (under phase) and shows it.
func (x *execution[D]) decided(ps *PlannedStep[D], phase, after string, d Decision) error {
	if err := x.j.append(Event{Type: EvDecision, Step: ps.ID, Phase: phase, Status: d.Choice, Operator: d.Operator}); err != nil {
		return err
	}
	x.progress(Progress{Type: EvDecision, Step: ps.ID, Status: d.Choice, Message: fmt.Sprintf("%s after %s by %s", d.Choice, after, d.Operator)})
	return nil
}

// stoppedBy stops the run after ps as operator chose: resumable.
func (x *execution[D]) stoppedBy(ps *PlannedStep[D], phase, operator string) error {
	stop := &StoppedError{RunID: x.id, Step: ps.ID, Phase: phase, Operator: operator}
	if err := x.runStop(ps.ID, StatusInterrupted, stop); err != nil {
		return errors.Join(stop, err)
	}
	return stop
}

// recheck runs each gate step of phase once more (one attempt under its
// timeout; pending is WAIT). Run data it sets is not kept; the verdicts are
// journaled.
func (x *execution[D]) recheck(ctx context.Context, phase string) []GateVerdict {
	main, _ := x.split()
	var out []GateVerdict
	for _, s := range main {
		if !inPhase(s.ID, phase) || !isGate(s) || x.get(s.ID) != StepOK && x.get(s.ID) != StepSkipped {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, x.r.timeout(s.Timeout.D()))
		start := x.r.clock().Now()
		o, err := s.Kind.Run(sctx, &recheckEnv[D]{stepEnv: x.env(s.ID), data: map[string]json.RawMessage{}}, s.Params)
		cancel()
		v := GateVerdict{Step: s.ID, Kind: s.Step.Kind, Verdict: VerdictGo, Detail: o.Message, Rechecked: true}
		if err != nil {
			var ok bool
			if v.Verdict, v.Detail, ok = VerdictOf(err); !ok {
				v.Verdict, v.Detail = VerdictNoGo, err.Error()
			}
		}
		ev := Event{Type: EvRecheck, Step: s.ID, Kind: s.Step.Kind, Status: v.Verdict, Duration: millis(x.r.clock().Now().Sub(start))}
		if v.Verdict != VerdictGo {
			ev.Error, ev.NoGo = v.Detail, v.Verdict == VerdictNoGo
		}
		_ = x.j.append(ev)
		out = append(out, v)
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// recheckEnv keeps what a re-evaluated gate sets to itself: a recheck
// changes no run data.
type recheckEnv[D any] struct {
	*stepEnv[D]
	data map[string]json.RawMessage
}

func (e *recheckEnv[D]) Set(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.data[key] = raw
	return nil
}

func (e *recheckEnv[D]) Get(key string, v any) (bool, error) {
	if raw, ok := e.data[key]; ok {
		return true, json.Unmarshal(raw, v)
	}
	return e.stepEnv.Get(key, v)
}
