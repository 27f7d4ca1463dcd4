package runs

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// waitEvery limits how often the same step's "waiting" line repeats.
const waitEvery = 10 * time.Second

// measureEvery is how often one step's measure is written as JSON at most.
const measureEvery = 500 * time.Millisecond

// Progress renders engine progress on stderr: one line per transition,
// "[3/27] indexer/allocation-primaries … 0.4s", what a step waits for, and
// in JSON mode one JSON object per line. DryRun lines (the commands a step
// would run) go to Out, as data.
//
// Measures (bytes copied, snapshot percent, shards recovered) are a live
// bar on a terminal (TTY), one JSON object per update with JSON (at most
// one per measureEvery per step, and the last), nothing otherwise.
type Progress struct {
	Out, ErrOut io.Writer
	JSON        bool
	// TTY: ErrOut is a terminal (live bars).
	TTY    bool
	Colors *output.Palette
	Now    func() time.Time

	mu       sync.Mutex
	lastWait map[string]time.Time
	lastMsg  map[string]string
	meters   map[string]*meterState
	// bar is the live bar of barKey (step and what), if any.
	bar    *output.ProgressBar
	barKey string
	// hook is called for every event (test builds: kill/exec at a step).
	hook func(engine.Progress)
}

// meterState is what the renderer remembers of a step's measure: when it
// began (for the rate) and when it was last written.
type meterState struct {
	first     time.Time
	firstDone int64
	lastOut   time.Time
	lastDone  int64
	written   bool
}

// NewProgress returns a renderer for the streams.
func NewProgress(io *output.IOStreams, jsonMode bool, now func() time.Time) *Progress {
	if now == nil {
		now = time.Now
	}
	return &Progress{Out: io.Out, ErrOut: io.ErrOut, JSON: jsonMode, TTY: io.IsStderrTTY(), Colors: io.ErrColors(), Now: now,
		lastWait: map[string]time.Time{}, lastMsg: map[string]string{}, meters: map[string]*meterState{}, hook: testHook()}
}

// measureLine is the JSON object of one measure update.
type measureLine struct {
	RunID   string         `json:"run_id,omitempty"`
	Type    string         `json:"type"`
	Step    string         `json:"step"`
	Measure engine.Measure `json:"measure"`
	Percent *float64       `json:"percent,omitempty"`
	// Rate is units (bytes, shards) per second since the measure began.
	Rate    float64 `json:"rate_per_s"`
	Elapsed float64 `json:"elapsed_s"`
}

// measure renders a measure (r.mu held).
func (r *Progress) measure(p engine.Progress) {
	if p.Measure == nil || (!r.JSON && !r.TTY) {
		return
	}
	m := *p.Measure
	key := p.Step + "\x00" + m.What
	now := r.Now()
	st := r.meters[key]
	if st == nil {
		st = &meterState{first: now, firstDone: m.Done}
		r.meters[key] = st
	}
	final := m.Total > 0 && m.Done >= m.Total
	if r.JSON {
		if st.written {
			switch {
			case final && st.lastDone >= m.Total:
				return // the last one is written once
			case !final && (m.Done == st.lastDone || now.Sub(st.lastOut) < measureEvery):
				return
			}
		}
		st.written, st.lastOut, st.lastDone = true, now, m.Done
		l := measureLine{RunID: p.RunID, Type: p.Type, Step: p.Step, Measure: m, Elapsed: p.Elapsed.Seconds()}
		if m.Total > 0 {
			pc := m.Percent()
			l.Percent = &pc
		}
		if d := now.Sub(st.first).Seconds(); d > 0 {
			l.Rate = float64(m.Done-st.firstDone) / d
		}
		b, _ := json.Marshal(l)
		fmt.Fprintln(r.ErrOut, string(b))
		return
	}
	if r.bar != nil && r.barKey != key {
		r.closeBar()
	}
	if r.bar == nil {
		desc := p.Step + " " + m.What
		r.bar, r.barKey = output.NewProgressBar(r.ErrOut, desc, m.Total, m.Unit == engine.UnitBytes, m.Unit), key
	}
	r.bar.Set(m.Done, m.Total)
}

func (r *Progress) closeBar() {
	if r.bar != nil {
		r.bar.Close()
		r.bar, r.barKey = nil, ""
	}
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
	if p.Type == engine.ProgressMeasure {
		r.measure(p)
		return
	}
	switch p.Type {
	case engine.EvStepOK, engine.EvStepFail, engine.EvStepSkip, engine.EvUndoOK, engine.EvUndoFail, engine.EvRunStop, engine.EvRunEnd:
		// The step is over: its bar goes, and its measures are forgotten.
		r.closeBar()
		for k := range r.meters {
			if strings.HasPrefix(k, p.Step+"\x00") {
				delete(r.meters, k)
			}
		}
	case engine.ProgressWait:
		if r.bar != nil && strings.HasPrefix(r.barKey, p.Step+"\x00") && !r.JSON {
			return // the bar shows how far the step has come
		}
		fallthrough
	default:
		if r.bar != nil {
			r.bar.Clear() // a line is printed where the bar was; the next measure redraws it
		}
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
		fmt.Fprintf(r.ErrOut, "%s%s …%s\n", pos(p), p.Step, note(p.Message))
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
		fmt.Fprintf(r.ErrOut, "%sundo %s (%s) …%s\n", pos(p), p.Step, p.Kind, note(p.Message))
	case engine.EvUndoOK:
		fmt.Fprintf(r.ErrOut, "%sundo %s %s %s%s\n", pos(p), p.Step, c.Green("ok"), secs(p.Elapsed), note(p.Message))
	case engine.EvUndoFail:
		fmt.Fprintf(r.ErrOut, "%sundo %s %s %s%s\n", pos(p), p.Step, c.Red("FAILED"), secs(p.Elapsed), note(p.Message))
	case engine.EvRunStop:
		fmt.Fprintf(r.ErrOut, "run %s %s at %s%s\n", p.RunID, p.Status, output.Dash(p.Step), errNote(p.Err))
	case engine.EvRunEnd:
		fmt.Fprintf(r.ErrOut, "run %s %s%s\n", p.RunID, upgrade.PaintStatus(c, p.Status), errNote(p.Err))
	}
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
