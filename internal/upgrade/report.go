package upgrade

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/steps"
)

// KeyWindow is the run data key of the journaled maintenance window.
const KeyWindow = "window"

// WindowRecord is the journaled maintenance window.
type WindowRecord struct {
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Length string    `json:"length"`
}

// PhaseLabel names a guided phase for operators ("validate+post" is
// "validation").
func PhaseLabel(p string) string {
	switch p {
	case "validate", "post", "validate+post":
		return "validation"
	}
	return p
}

// RunReport is a run's report (stdout of apply, resume, abort, rollback and
// status; -o json prints it as is).
type RunReport struct {
	RunID    string            `json:"run_id"`
	Runbook  string            `json:"runbook"`
	Parent   string            `json:"parent,omitempty"`
	Status   string            `json:"status"`
	Error    string            `json:"error,omitempty"`
	Started  time.Time         `json:"started"`
	Ended    time.Time         `json:"ended,omitzero"`
	Target   string            `json:"target,omitempty"`
	Previous map[string]string `json:"previous_versions"`
	Targets  map[string]string `json:"target_versions"`
	Backups  steps.Backups     `json:"backups"`
	// DataSafety is how the run made the indexer data safe and what a
	// rollback brings back (absent before the mode was chosen).
	DataSafety *DataSafetyReport  `json:"data_safety,omitempty"`
	Diff       *steps.DiffSummary `json:"diff,omitempty"`
	Fleet      *FleetReport       `json:"fleet,omitempty"`
	Watch      *watch.State       `json:"watch,omitempty"`
	Time       TimeReport         `json:"time"`
	Steps      []StepReport       `json:"steps"`
	Holder     string             `json:"held_by,omitempty"`
	// Window and Decisions: the maintenance window and the operator's
	// decisions at phase boundaries (apply --window, --guided).
	Window    *WindowRecord         `json:"window,omitempty"`
	Decisions []engine.DecisionInfo `json:"decisions,omitempty"`
	// Roll is the whole rolling upgrade's evidence, every entry of the record (upgrade finish
	// --cluster).
	Roll *rollout.Summary `json:"roll,omitempty"`
}

// DataSafetyReport is the run's data safety mode, why it was chosen, and
// what a rollback of the run will and will not bring back.
type DataSafetyReport struct {
	Mode     string `json:"mode"`
	Why      string `json:"why,omitempty"`
	Rollback string `json:"rollback_brings"`
}

// dataSafetyReport reads it from the run's backups.
func dataSafetyReport(b steps.Backups) *DataSafetyReport {
	mode := b.Mode()
	if mode == "" {
		return nil
	}
	b.IndexerDataMode = mode
	return &DataSafetyReport{Mode: mode, Why: b.DataSafetyWhy, Rollback: steps.RollbackBrings(b)}
}

// FleetReport is the agents by status and version before the manager
// stopped and after it came back (as the agents gate last saw them).
type FleetReport struct {
	Before *snapshot.Agents `json:"before,omitempty"`
	After  *snapshot.Agents `json:"after,omitempty"`
}

// TimeReport is the run's wall time and how it splits (seconds).
type TimeReport struct {
	Wall       float64            `json:"wall_s"`
	Components float64            `json:"waiting_on_components_s"`
	Own        float64            `json:"siemctl_own_work_s"`
	Overhead   float64            `json:"overhead_s"`
	ByKind     map[string]float64 `json:"by_kind_s"`
}

// StepReport is one step of a run.
type StepReport struct {
	N        int     `json:"n"`
	ID       string  `json:"id"`
	Kind     string  `json:"kind"`
	Status   string  `json:"status"`
	Duration float64 `json:"duration_s"`
	Note     string  `json:"note,omitempty"`
	Undo     string  `json:"undo,omitempty"`
}

// NewRunReport builds a report from a run's state and journal.
func NewRunReport(ri *engine.RunInfo, evs []engine.Event) RunReport {
	rd, _ := DecodeRunData(ri.Data)
	r := RunReport{RunID: ri.ID, Runbook: ri.Runbook.Name, Parent: ri.Parent, Status: ri.Status, Error: ri.Error,
		Started: ri.Started, Ended: ri.Ended, Target: rd.Target, Previous: rd.Previous, Targets: rd.Targets,
		Backups: rd.Backups, DataSafety: dataSafetyReport(rd.Backups), Diff: rd.Diff, Watch: rd.Watch, Steps: []StepReport{}}
	if rd.AgentsBefore != nil || rd.AgentsAfter != nil {
		r.Fleet = &FleetReport{After: rd.AgentsAfter}
		if rd.AgentsBefore != nil {
			r.Fleet.Before = &rd.AgentsBefore.Fleet
		}
	}
	if ri.Holder != nil {
		r.Holder = ri.Holder.String()
	}
	r.Decisions = ri.Decisions
	if raw, ok := ri.Data[KeyWindow]; ok {
		var w WindowRecord
		if json.Unmarshal(raw, &w) == nil {
			r.Window = &w
		}
	}
	if raw, ok := ri.Data[steps.KeyRoll]; ok {
		var s rollout.Summary
		if json.Unmarshal(raw, &s) == nil {
			r.Roll = &s
		}
	}
	ts := SplitTime(evs)
	r.Time = TimeReport{Wall: ts.Wall.Seconds(), Components: ts.Components.Seconds(), Own: ts.Own.Seconds(), Overhead: ts.Overhead.Seconds(), ByKind: map[string]float64{}}
	for k, d := range ts.ByKind {
		r.Time.ByKind[k] = d.Seconds()
	}
	for i, s := range ri.Steps {
		sr := StepReport{N: i + 1, ID: s.ID, Kind: s.Kind, Status: s.Status, Duration: s.Duration.Seconds(), Undo: s.Undo}
		switch {
		case s.Error != "":
			sr.Note = s.Error
		case s.Reason != "":
			sr.Note = s.Reason
		case s.UndoErr != "":
			sr.Note = "undo: " + s.UndoErr
		case s.Outcome != nil:
			sr.Note = s.Outcome.Message
		}
		r.Steps = append(r.Steps, sr)
	}
	return r
}

// Render writes the report as a table (or tab-separated off a TTY).
func (r RunReport) Render(w io.Writer, tty bool, c *output.Palette) error {
	kv := [][2]string{
		{"run", r.RunID + " (" + r.Runbook + ")"},
		{"status", PaintStatus(c, r.Status)},
	}
	if r.Parent != "" {
		kv = append(kv, [2]string{"undoes", r.Parent})
	}
	if r.Error != "" {
		kv = append(kv, [2]string{"error", r.Error})
	}
	if len(r.Previous) > 0 || len(r.Targets) > 0 {
		kv = append(kv, [2]string{"versions", VersionsLine(r)})
	}
	if r.Backups.Dir != "" {
		kv = append(kv, [2]string{"backups", r.Backups.Dir})
	}
	if ds := r.DataSafety; ds != nil {
		mode := ds.Mode
		if ds.Why != "" {
			mode += " (" + ds.Why + ")"
		}
		kv = append(kv, [2]string{"data safety", mode}, [2]string{"rollback", ds.Rollback})
	}
	if r.Diff != nil {
		kv = append(kv, [2]string{"diff", fmt.Sprintf("%s → %s: documents %d → %d; %d critical, %d warning, %d info",
			r.Diff.From, r.Diff.To, r.Diff.DocsFrom, r.Diff.DocsTo, r.Diff.Counts["critical"], r.Diff.Counts["warning"], r.Diff.Counts["info"])})
		for _, ch := range r.Diff.Changes {
			kv = append(kv, [2]string{"  " + ch.Severity.String(), ch.Message})
		}
	}
	if r.Fleet != nil {
		kv = append(kv, [2]string{"agents before", fleetLine(r.Fleet.Before)}, [2]string{"agents after", fleetLine(r.Fleet.After)})
	}
	if w := r.Watch; w != nil {
		verdict := fmt.Sprintf("%d intervals, no breach", w.Intervals)
		if w.Breach != nil {
			verdict = fmt.Sprintf("breach after %d intervals: %s: %s", w.Intervals, w.Breach.Criterion, w.Breach.Reason)
		}
		kv = append(kv, [2]string{"watch", fmt.Sprintf("%s from %s: %s", w.Window, w.Start.UTC().Format(time.RFC3339), verdict)})
	}
	kv = append(kv, [2]string{"time", fmt.Sprintf("%.1fs wall: %.1fs waiting on components, %.1fs siemctl's own work, %.1fs engine and pauses",
		r.Time.Wall, r.Time.Components, r.Time.Own, r.Time.Overhead)})
	if r.Window != nil {
		kv = append(kv, [2]string{"window", fmt.Sprintf("%s, %s to %s", r.Window.Length, r.Window.Start.Format(time.RFC3339), r.Window.End.Format(time.RFC3339))})
	}
	for _, d := range r.Decisions {
		kv = append(kv, [2]string{"decision", fmt.Sprintf("%s after %s (%s) by %s at %s", d.Decision, PhaseLabel(d.Phase), d.Step, d.Operator, d.Time.UTC().Format(time.RFC3339))})
	}
	if r.Holder != "" {
		kv = append(kv, [2]string{"running", r.Holder})
	}
	if r.Roll != nil {
		kv = append(kv, [2]string{"roll", r.Roll.Line()})
	}
	if err := output.KV(w, kv...); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if r.Roll != nil {
		if err := renderRoll(w, tty, c, r.Roll); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	t := output.NewTable(w, tty, "N", "STEP", "KIND", "STATUS", "TIME", "NOTE")
	for _, s := range r.Steps {
		dur := ""
		if s.Duration > 0 {
			dur = fmt.Sprintf("%.1fs", s.Duration)
		}
		note := s.Note
		if tty && len(note) > 100 {
			note = note[:97] + "..."
		}
		t.Row(fmt.Sprint(s.N), s.ID, s.Kind, PaintStatus(c, s.Status), dur, note)
	}
	return t.Render()
}

// renderRoll is the roll's table: every entry of the record, who took it, when, how long, the result.
func renderRoll(w io.Writer, tty bool, c *output.Palette, s *rollout.Summary) error {
	t := output.NewTable(w, tty, "ENTRY", "ROLE", "HOST", "STARTED", "TIME", "RESULT", "ATTEMPTS", "NOTE")
	for _, e := range s.Entries {
		started, dur := "-", "-"
		if !e.Started.IsZero() {
			started = e.Started.UTC().Format(time.RFC3339)
		}
		if e.Duration > 0 {
			dur = fmt.Sprintf("%.1fs", e.Duration)
		}
		t.Row(e.Name, string(e.Role), output.Dash(e.Host), started, dur, PaintStatus(c, string(e.State)), fmt.Sprint(e.Attempts), e.LastError)
	}
	return t.Render()
}

// fleetLine prints "20 agents: active 10, disconnected 5; Wazuh v4.9.0 15, unknown 5".
func fleetLine(a *snapshot.Agents) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%d agents: %s; by version: %s", a.Total, fleet.CountsLine(a.ByStatus), fleet.CountsLine(a.ByVersion))
}

func VersionsLine(r RunReport) string {
	var parts []string
	for _, comp := range steps.Components {
		from, to := r.Previous[comp], r.Targets[comp]
		switch {
		case from != "" && to != "" && from != to:
			parts = append(parts, fmt.Sprintf("%s %s → %s", comp, from, to))
		case to != "":
			parts = append(parts, fmt.Sprintf("%s %s", comp, to))
		case from != "":
			parts = append(parts, fmt.Sprintf("%s %s", comp, from))
		}
	}
	return strings.Join(parts, ", ")
}

// PaintStatus colours a run or step status (green ok, yellow undone or stopped, gray pending, red failed).
func PaintStatus(c *output.Palette, s string) string {
	switch s {
	case engine.StatusSucceeded, engine.StepOK:
		return c.Green(s)
	case engine.StatusRolledBack, engine.StatusAborted, engine.StepSkipped, engine.StepUndone, engine.StatusInterrupted:
		return c.Yellow(s)
	case engine.StepPending, engine.StatusDryRun:
		return c.Gray(s)
	}
	return c.Red(s)
}
