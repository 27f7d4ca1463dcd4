package runs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/output"
)

// fakeClock is a renderer clock moved by the test.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// copyRun is a data copy of 10 MiB measured every 100 ms for 2 s, with
// the step lines around it and a wait line in between.
func copyRun(clk *fakeClock, obs engine.Observer) {
	const step, total = "backup/indexer-data", 10 << 20
	obs.Observe(engine.Progress{RunID: "r1", Type: engine.EvStepStart, Step: step, Kind: "backup.indexer_data", N: 7, M: 27})
	obs.Observe(engine.Progress{RunID: "r1", Type: engine.ProgressWait, Step: step, Message: "copying /var/lib/siem-indexer (12 files, 10.0 MiB)"})
	for i := 0; i <= 20; i++ {
		clk.t = clk.t.Add(100 * time.Millisecond)
		done := int64(total) * int64(i) / 20
		obs.Observe(engine.Progress{RunID: "r1", Type: engine.ProgressMeasure, Step: step, Elapsed: time.Duration(i) * 100 * time.Millisecond,
			Measure: &engine.Measure{What: "copy", Unit: engine.UnitBytes, Done: done, Total: total}})
	}
	obs.Observe(engine.Progress{RunID: "r1", Type: engine.EvStepOK, Step: step, Kind: "backup.indexer_data", N: 7, M: 27, Elapsed: 2 * time.Second,
		Message: "copied /var/lib/siem-indexer → /var/backups/siemctl/r1/indexer-data: 12 files, 10.0 MiB, verified"})
}

func newTestProgress(jsonMode, tty bool) (*Progress, *fakeClock, *bytes.Buffer) {
	ios, _, _, errOut := output.Test()
	ios.SetTTY(false, tty, tty)
	clk := &fakeClock{t: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)}
	return NewProgress(ios, jsonMode, clk.now), clk, errOut
}

// Off a terminal a measure shows nothing: the step lines only.
func TestProgressOffTerminalShowsStepLinesOnly(t *testing.T) {
	p, clk, errOut := newTestProgress(false, false)
	copyRun(clk, p)
	golden.Assert(t, "progress-no-tty", errOut.Bytes())
}

// With -o json: one object per update, at most one per 500 ms per step,
// and the last one (the total) always.
func TestProgressJSONMeasures(t *testing.T) {
	p, clk, errOut := newTestProgress(true, false)
	copyRun(clk, p)
	var measures []measureLine
	for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		var l measureLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		if l.Type == engine.ProgressMeasure {
			measures = append(measures, l)
		}
	}
	// 2 s of updates every 100 ms: the first, then every 500 ms, and the last.
	if len(measures) != 5 {
		t.Fatalf("%d measure lines, want 5:\n%s", len(measures), errOut)
	}
	for i, want := range []float64{0, 25, 50, 75, 100} {
		m := measures[i]
		if m.Percent == nil || *m.Percent != want || m.Step != "backup/indexer-data" || m.Measure.Unit != "bytes" || m.Measure.Total != 10<<20 || m.RunID != "r1" {
			t.Errorf("measure %d = %+v, want %.0f%%", i, m, want)
		}
	}
	// 10 MiB in 2 s since the first measure (done 0 at 100 ms): 5 MiB/s.
	if last := measures[4]; last.Rate != float64(10<<20)/2 || last.Elapsed != 2 {
		t.Errorf("last measure rate %.0f B/s elapsed %.1fs", last.Rate, last.Elapsed)
	}
	golden.Assert(t, "progress-json", errOut.Bytes())
}

// On a terminal the measure is a live bar with bytes, rate and time; the
// step's own wait lines give way to it, and it is gone when the step ends.
func TestProgressTerminalBar(t *testing.T) {
	p, clk, errOut := newTestProgress(false, true)
	copyRun(clk, p)
	s := errOut.String()
	// The bar's rate is the library's own (wall clock): its digits are not checked.
	for _, want := range []string{"\rbackup/indexer-data copy ", "backup/indexer-data copy 100% |████", "(10/10 MiB, ", "B/s)", "\x1b[2K\r[ 7/27] backup/indexer-data",
		"2.0s  copied /var/lib/siem-indexer"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in %q", want, s)
		}
	}
	if n := strings.Count(s, "waiting"); n != 1 {
		t.Errorf("%d wait lines, want the one before the bar", n)
	}
}
