package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/siemctl/siemctl/internal/lock"
)

// Run statuses.
const (
	StatusRunning        = "running"
	StatusInterrupted    = "interrupted" // cancelled or crashed; resumable
	StatusFailed         = "failed"      // a step failed with on_fail abort; resumable
	StatusSucceeded      = "succeeded"
	StatusNoGo           = "no-go" // a gate said no before anything changed
	StatusAborted        = "aborted"
	StatusRolledBack     = "rolled-back"
	StatusRollbackFailed = "rollback-failed"
	StatusFinallyFailed  = "finally-failed" // succeeded, but a finally-step failed
	StatusDryRun         = "dry-run"
)

// Step statuses.
const (
	StepPending     = "pending"
	StepRunning     = "running"
	StepOK          = "ok"
	StepSkipped     = "skipped"
	StepFailed      = "failed"
	StepInterrupted = "interrupted"
	StepUndone      = "undone"
	StepUndoFailed  = "undo-failed"
)

// RunInfo is a run's state, reduced from its journal.
type RunInfo struct {
	ID        string                     `json:"id"`
	Runbook   RunbookRef                 `json:"runbook"`
	Selection Selection                  `json:"selection"`
	Parent    string                     `json:"parent,omitempty"`
	Command   string                     `json:"command,omitempty"`
	Status    string                     `json:"status"`
	Started   time.Time                  `json:"started"`
	Ended     time.Time                  `json:"ended,omitzero"`
	Steps     []StepInfo                 `json:"steps"`
	Data      map[string]json.RawMessage `json:"data"`
	// Torn is true when the journal's last line was cut off by a crash.
	Torn bool `json:"torn,omitempty"`
	// Holder is the lock holder while the run is running.
	Holder *lock.Holder `json:"holder,omitempty"`
	// Error is the error that stopped or ended the run, if any.
	Error string `json:"error,omitempty"`
	// Phase is "abort" or "rollback" once one of them began; such a run can
	// only be finished by repeating it, not resumed.
	Phase string `json:"phase,omitempty"`
	// Decisions are the operator's answers at phase boundaries (guided mode).
	Decisions []DecisionInfo `json:"decisions,omitempty"`
}

// StepInfo is one step's state in a run.
type StepInfo struct {
	ID       string        `json:"id"`
	Kind     string        `json:"kind,omitempty"`
	Status   string        `json:"status"`
	Attempts int           `json:"attempts,omitempty"`
	Duration time.Duration `json:"-"`
	Millis   Millis        `json:"duration_ms,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Error    string        `json:"error,omitempty"`
	NoGo     bool          `json:"no_go,omitempty"`
	Verified bool          `json:"verified,omitempty"`
	Outcome  *Outcome      `json:"outcome,omitempty"`
	Undo     string        `json:"undo,omitempty"` // "", ok, failed
	UndoErr  string        `json:"undo_error,omitempty"`
}

// Resumable reports whether Resume can continue the run.
func (ri *RunInfo) Resumable() bool {
	return ri.Phase == "" && (ri.Status == StatusInterrupted || ri.Status == StatusFailed)
}

// Terminal reports whether the run has ended for good.
func (ri *RunInfo) Terminal() bool {
	switch ri.Status {
	case StatusRunning, StatusInterrupted, StatusFailed, StatusRollbackFailed:
		return false
	}
	return true
}

// Step returns the step with id.
func (ri *RunInfo) Step(id string) (*StepInfo, bool) {
	for i := range ri.Steps {
		if ri.Steps[i].ID == id {
			return &ri.Steps[i], true
		}
	}
	return nil, false
}

// Status reads a run's journal ("" or "latest" for the latest run).
func Status(stateDir, runID string) (*RunInfo, error) {
	id, err := ResolveRun(stateDir, runID)
	if err != nil {
		return nil, err
	}
	evs, torn, err := ReadJournal(stateDir, id)
	if err != nil {
		return nil, err
	}
	ri, err := reduce(id, evs)
	if err != nil {
		return nil, err
	}
	ri.Torn = torn
	if ri.Status == StatusRunning {
		// No end and no stop recorded: running if its process holds the
		// lock for it, otherwise it crashed.
		h, st, _ := lock.Inspect(lock.HostPath(stateDir))
		if st == lock.Held && h != nil && h.RunID == id {
			ri.Holder = h
		} else {
			ri.Status = StatusInterrupted
		}
	}
	return ri, nil
}

// reduce folds events into a RunInfo. Status "running" means no stop/end
// after the last start or resume.
func reduce(id string, evs []Event) (*RunInfo, error) {
	if len(evs) == 0 || evs[0].Type != EvRunStart {
		return nil, fmt.Errorf("journal of run %s does not begin with %s", id, EvRunStart)
	}
	ri := &RunInfo{ID: id, Data: map[string]json.RawMessage{}, Steps: []StepInfo{}}
	idx := map[string]int{}
	step := func(e Event) *StepInfo {
		i, ok := idx[e.Step]
		if !ok {
			idx[e.Step] = len(ri.Steps)
			ri.Steps = append(ri.Steps, StepInfo{ID: e.Step, Status: StepPending})
			i = len(ri.Steps) - 1
		}
		s := &ri.Steps[i]
		if e.Kind != "" && s.Kind == "" {
			s.Kind = e.Kind
		}
		return s
	}
	for _, e := range evs {
		switch e.Type {
		case EvRunStart:
			if e.Runbook != nil {
				ri.Runbook = *e.Runbook
			}
			if e.Selection != nil {
				ri.Selection = *e.Selection
			}
			ri.Parent, ri.Command, ri.Started = e.Parent, e.Command, e.Time
			for _, s := range e.Steps {
				step(Event{Step: s})
			}
			for k, v := range e.Seed {
				b, err := json.Marshal(v)
				if err == nil {
					ri.Data[k] = b
				}
			}
			ri.Status = StatusRunning
		case EvRunResume:
			ri.Status, ri.Error = StatusRunning, ""
		case EvAbort, EvRollback:
			ri.Status, ri.Error, ri.Phase = StatusRunning, "", e.Type
		case EvRunStop, EvRunEnd:
			ri.Status, ri.Error = e.Status, e.Error
			if e.Type == EvRunEnd {
				ri.Ended = e.Time
			}
		case EvData:
			ri.Data[e.Key] = e.Value
		case EvStepStart:
			s := step(e)
			s.Status, s.Attempts, s.Error, s.NoGo = StepRunning, s.Attempts+1, "", false
		case EvStepOK:
			s := step(e)
			s.Status, s.Outcome, s.Verified, s.Error = StepOK, e.Outcome, e.Verified, ""
			s.Duration, s.Millis = e.Duration.D(), e.Duration
		case EvStepSkip:
			s := step(e)
			s.Status, s.Reason = StepSkipped, e.Reason
		case EvStepFail:
			s := step(e)
			s.Status, s.Error, s.NoGo = StepFailed, e.Error, e.NoGo
			s.Duration, s.Millis = e.Duration.D(), e.Duration
		case EvStepInterrupted:
			s := step(e)
			s.Status, s.Error = StepInterrupted, e.Error
		case EvStepVerify:
			step(e)
		case EvDecision:
			ri.Decisions = append(ri.Decisions, DecisionInfo{Time: e.Time, Phase: e.Phase, Step: e.Step, Decision: e.Status, Operator: e.Operator})
		case EvUndoStart:
			step(e).Undo = StepRunning
		case EvUndoOK:
			s := step(e)
			s.Undo, s.UndoErr, s.Status = StepOK, "", StepUndone
		case EvUndoFail:
			s := step(e)
			s.Undo, s.UndoErr, s.Status = StepFailed, e.Error, StepUndoFailed
		}
	}
	return ri, nil
}
