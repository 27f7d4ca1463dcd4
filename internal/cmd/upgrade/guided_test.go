package upgrade

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runs"
)

// operatorTerm is an operator at a pseudo-terminal: stdin and stderr of the
// command are its slave side; answers are typed at each prompt.
type operatorTerm struct {
	ptmx, tty *os.File
	screen    *clitest.Tap // what the command wrote to the terminal
}

const promptMark = "[c/w/r/s] "

// failurePromptMark ends the question after a failure (no continue).
const failurePromptMark = "[r/w/s] "

func newOperatorTerm(t *testing.T, c *runs.Common) *operatorTerm {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	o := &operatorTerm{ptmx: ptmx, tty: tty, screen: clitest.NewTap(ptmx)}
	c.IO.In, c.IO.ErrOut = tty, tty
	c.IO.SetTTY(true, false, true)
	c.IO.DisableColor()
	c.Getenv = func(k string) string {
		if k == "USER" {
			return "alice"
		}
		return ""
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	return o
}

func (o *operatorTerm) prompts() int {
	s := o.screen.String()
	return strings.Count(s, promptMark) + strings.Count(s, failurePromptMark)
}

// drive runs f, typing answers[i] at the i-th prompt; it returns f's error
// and the terminal's transcript.
func (o *operatorTerm) drive(t *testing.T, f func() error, answers ...string) (string, error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	typed := 0
	deadline := time.After(60 * time.Second)
	var err error
loop:
	for {
		select {
		case err = <-errc:
			break loop
		case <-deadline:
			t.Fatalf("no end after 60s; transcript:\n%s", o.transcript())
		case <-time.After(5 * time.Millisecond):
			if n := o.prompts(); n > typed {
				if typed >= len(answers) {
					t.Fatalf("prompt %d has no answer; transcript:\n%s", n, o.transcript())
				}
				if _, werr := o.ptmx.Write([]byte(answers[typed] + "\n")); werr != nil {
					t.Fatal(werr)
				}
				typed++
			}
		}
	}
	if typed != len(answers) {
		t.Errorf("%d answers typed, %d scripted", typed, len(answers))
	}
	o.tty.Close() // the reader sees EIO once everything is read
	select {
	case <-o.screen.Done():
	case <-time.After(5 * time.Second):
	}
	return o.transcript(), err
}

func (o *operatorTerm) transcript() string {
	return strings.ReplaceAll(o.screen.String(), "\r\n", "\n")
}

var (
	runIDRE   = regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{6}`)
	elapsedRE = regexp.MustCompile(`(ok|Time:|waiting) \d+(\.\d+)?(ms|s)`)
	clockRE   = regexp.MustCompile(`\d\d:\d\d:\d\d UTC`)
	inRE      = regexp.MustCompile(`\(in [0-9hms]+`)
	// the time line's clock-derived parts: working, waiting and what is left
	timeRE = regexp.MustCompile(`used: \S+ working, \S+ waiting for the operator; (.*) about \S+ left`)
)

func normalize(s string) string {
	s = runIDRE.ReplaceAllString(s, "RUN-ID")
	s = elapsedRE.ReplaceAllString(s, "$1 T")
	s = clockRE.ReplaceAllString(s, "HH:MM:SS UTC")
	s = timeRE.ReplaceAllString(s, "used: T working, T waiting for the operator; $1 about T left")
	return inRE.ReplaceAllString(s, "(in T")
}

func TestGuidedPromptsGolden(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	term := newOperatorTerm(t, &fx.common)
	// the live health checks: the shipper down mid-upgrade, all OK at the end
	calls := 0
	fx.common.Health = func(context.Context) (health.Report, error) {
		calls++
		if calls < 4 {
			return health.Report{Verdict: health.Crit, Results: []health.Result{
				{ID: "units", Status: health.Crit, Summary: "shipper.service inactive (dead)"},
				{ID: "ports", Status: health.OK}, {ID: "indexer.health", Status: health.Warn, Summary: "yellow: 1 replica unassigned (single node)"}}}, nil
		}
		return health.Report{Verdict: health.OK, Results: []health.Result{{ID: "units", Status: health.OK}, {ID: "ports", Status: health.OK}}}, nil
	}
	opts := &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, Guided: true}
	// continue after preflight, indexer and manager; after validation wait
	// once (its gate is evaluated again), then continue
	out, err := term.drive(t, func() error { return runApply(context.Background(), opts) }, "c", "c", "c", "w", "continue")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	golden.Assert(t, "guided-continue", []byte(normalize(out)))
	if fx.apt.installed["siem-manager"] != "4.10.0-1" {
		t.Fatal("not upgraded")
	}
	ri, err := engine.Status(fx.state, "latest")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ri.Decisions {
		got = append(got, d.Decision+"@"+d.Phase+"/"+d.Operator)
	}
	if want := "continue@preflight/alice continue@indexer/alice continue@manager/alice wait@validate+post/alice continue@validate+post/alice"; strings.Join(got, " ") != want {
		t.Errorf("decisions %q", got)
	}
	// upgrade status shows them
	fx.out.Reset()
	if err := runStatus(context.Background(), &StatusOptions{Common: fx.common}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fx.out.String(), "wait after validation (validate/versions) by alice at") {
		t.Errorf("status lacks the decisions:\n%s", fx.out)
	}
}

func TestGuidedStopHereThenResume(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	term := newOperatorTerm(t, &fx.common)
	opts := &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, Guided: true, Window: 4 * time.Hour}
	out, err := term.drive(t, func() error { return runApply(context.Background(), opts) }, "x", "c", "s")
	var st *engine.StoppedError
	if !errors.As(err, &st) || st.Phase != "indexer" {
		t.Fatalf("%v\n%s", err, out)
	}
	golden.Assert(t, "guided-stop", []byte(normalize(out)))
	if fx.apt.installed["siem-indexer"] != "4.10.0-1" || fx.apt.installed["siem-manager"] != "4.9.0-1" {
		t.Fatalf("stopped in the wrong place: %v", fx.apt.installed)
	}
	// a guided run resumes only where someone can answer
	plain := fx.common
	plain.IO, _, _, _ = output.Test()
	if err := runResume(context.Background(), &ResumeOptions{Common: plain}); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "was started with --guided") {
		t.Fatalf("resume without a terminal: %v (exit %d)", err, cli.ExitCode(err))
	}
	// resume keeps the window and guided mode: it asks after the manager and validation
	term2 := newOperatorTerm(t, &fx.common)
	out, err = term2.drive(t, func() error {
		return runResume(context.Background(), &ResumeOptions{Common: fx.common})
	}, "c", "c")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "== manager done") || !strings.Contains(out, "window: ") || !strings.Contains(out, "Window: ends at") {
		t.Errorf("resume lost guided mode or the window:\n%s", out)
	}
	if fx.apt.installed["siem-manager"] != "4.10.0-1" {
		t.Fatal("resume did not finish")
	}
}

func TestGuidedRollBack(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	term := newOperatorTerm(t, &fx.common)
	opts := &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, Guided: true}
	out, err := term.drive(t, func() error { return runApply(context.Background(), opts) }, "c", "r")
	var rb *engine.RolledBackError
	if !errors.As(err, &rb) {
		t.Fatalf("%v\n%s", err, out)
	}
	if fx.apt.installed["siem-indexer"] != "4.9.0-1" || !strings.Contains(out, "undo indexer/install ok") {
		t.Fatalf("not rolled back: %v\n%s", fx.apt.installed, out)
	}
}

// TestGuidedAsksAtAFailure: a gate that fails after a change (unattended: an
// automatic rollback) asks in guided mode; wait runs it again, roll back
// rolls back; continue is not an answer there.
func TestGuidedAsksAtAFailure(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	term := newOperatorTerm(t, &fx.common)
	rb := filepath.Join(t.TempDir(), "partial.yaml")
	clitest.WriteFile(t, rb, partialRunbook, 0o600)
	opts := &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: rb, Guided: true}
	out, err := term.drive(t, func() error { return runApply(context.Background(), opts) }, "c", "c", "c", "w", "r")
	var rbe *engine.RolledBackError
	if !errors.As(err, &rbe) {
		t.Fatalf("%v\n%s", err, out)
	}
	shows(t, "output", out, "== validate/versions failed: unattended, the run would roll back now ==",
		"answer r (roll back), w (wait: run the step again) or s (stop here)", "running validate/versions again")
	if fx.apt.installed["siem-indexer"] != "4.9.0-1" {
		t.Fatalf("not rolled back: %v", fx.apt.installed)
	}
	ri, err := engine.Status(fx.state, "latest")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ri.Decisions {
		got = append(got, d.Decision+"@"+d.Phase)
	}
	if want := "continue@preflight continue@indexer wait@failure rollback@failure"; strings.Join(got, " ") != want {
		t.Errorf("decisions %q, want %q", got, want)
	}
}
