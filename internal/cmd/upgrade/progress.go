package upgrade

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
)

// waitEvery limits how often the same step's "waiting" line repeats.
const waitEvery = 10 * time.Second

// Progress renders engine progress on stderr: one line per transition,
// "[3/27] indexer/allocation-primaries … 0.4s", what a step waits for, and
// in JSON mode one JSON object per line. DryRun lines (the commands a step
// would run) go to Out, as data.
type Progress struct {
	Out, ErrOut io.Writer
	JSON        bool
	Colors      *output.Palette
	Now         func() time.Time

	mu       sync.Mutex
	lastWait map[string]time.Time
	lastMsg  map[string]string
	// hook is called for every event (test builds: kill/exec at a step).
	hook func(engine.Progress)
}

// NewProgress returns a renderer for the streams.
func NewProgress(io *output.IOStreams, jsonMode bool, now func() time.Time) *Progress {
	if now == nil {
		now = time.Now
	}
	return &Progress{Out: io.Out, ErrOut: io.ErrOut, JSON: jsonMode, Colors: io.ErrColors(), Now: now,
		lastWait: map[string]time.Time{}, lastMsg: map[string]string{}, hook: testHook()}
}

func pos(p engine.Progress) string {
	if p.M == 0 {
		return ""
	}
	w := len(fmt.Sprint(p.M))
	return fmt.Sprintf("[%*d/%d] ", w, p.N, p.M)
}

func secs(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// Observe implements engine.Observer.
func (r *Progress) Observe(p engine.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hook != nil {
		r.hook(p)
	}
	if p.Type == engine.ProgressDryRun {
		fmt.Fprintf(r.Out, "%s%s (%s)\n", pos(p), p.Step, p.Kind)
		for _, d := range p.Describe {
			fmt.Fprintf(r.Out, "    %s\n", d)
		}
		return
	}
	if r.JSON {
		type line struct {
			engine.Progress
			Elapsed float64 `json:"elapsed_s,omitempty"`
			Error   string  `json:"error,omitempty"`
		}
		l := line{Progress: p, Elapsed: p.Elapsed.Seconds()}
		l.Progress.Elapsed = 0
		if p.Err != nil {
			l.Error = p.Err.Error()
		}
		b, _ := json.Marshal(l)
		fmt.Fprintln(r.ErrOut, string(b))
		return
	}
	c := r.Colors
	switch p.Type {
	case engine.EvStepStart:
		fmt.Fprintf(r.ErrOut, "%s%s …\n", pos(p), p.Step)
	case engine.EvStepOK:
		fmt.Fprintf(r.ErrOut, "%s%s %s %s%s\n", pos(p), p.Step, c.Green("ok"), secs(p.Elapsed), note(p.Message))
	case engine.EvStepSkip:
		fmt.Fprintf(r.ErrOut, "%s%s %s%s\n", pos(p), p.Step, c.Gray("skipped"), note(p.Message))
	case engine.EvStepFail:
		fmt.Fprintf(r.ErrOut, "%s%s %s %s%s\n", pos(p), p.Step, c.Red("FAILED"), secs(p.Elapsed), note(p.Message))
	case engine.EvStepVerify:
		fmt.Fprintf(r.ErrOut, "%s%s resumed: %s\n", pos(p), p.Step, p.Message)
	case engine.ProgressWait:
		key := p.Step
		now := r.Now()
		if r.lastMsg[key] == p.Message && now.Sub(r.lastWait[key]) < waitEvery {
			return
		}
		r.lastMsg[key], r.lastWait[key] = p.Message, now
		fmt.Fprintf(r.ErrOut, "%s%s   waiting %s: %s\n", pos(p), p.Step, secs(p.Elapsed), p.Message)
	case engine.ProgressRetry:
		fmt.Fprintf(r.ErrOut, "%s%s   retry %d after %s: %s\n", pos(p), p.Step, p.Attempt, secs(p.Elapsed), p.Message)
	case engine.EvUndoStart:
		fmt.Fprintf(r.ErrOut, "%sundo %s (%s) …\n", pos(p), p.Step, p.Kind)
	case engine.EvUndoOK:
		fmt.Fprintf(r.ErrOut, "%sundo %s %s %s%s\n", pos(p), p.Step, c.Green("ok"), secs(p.Elapsed), note(p.Message))
	case engine.EvUndoFail:
		fmt.Fprintf(r.ErrOut, "%sundo %s %s %s%s\n", pos(p), p.Step, c.Red("FAILED"), secs(p.Elapsed), note(p.Message))
	case engine.EvRunStop:
		fmt.Fprintf(r.ErrOut, "run %s %s at %s%s\n", p.RunID, p.Status, orDash(p.Step), errNote(p.Err))
	case engine.EvRunEnd:
		fmt.Fprintf(r.ErrOut, "run %s %s%s\n", p.RunID, paintStatus(c, p.Status), errNote(p.Err))
	}
}

func paintStatus(c *output.Palette, s string) string {
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

func note(m string) string {
	if m == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(m, "\n", " ")
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
