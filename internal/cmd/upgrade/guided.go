package upgrade

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// The operator's cockpit of `upgrade apply` (issue 16 §1-§3): the
// maintenance window with its point of no return, and guided mode's pauses
// at phase boundaries. Both are journaled in the run's seed data, so
// `upgrade resume` keeps them.

// KeyGuided is the run data key of guided mode (upgrade.KeyWindow holds the
// window).
const KeyGuided = "guided"

// guidedPhases are the boundaries guided mode pauses at: after preflight,
// the indexer, the manager, and validation (after its post snapshot diff;
// "wait" re-runs the validate/* gates).
var guidedPhases = []string{"preflight", "indexer", "manager", "validate+post"}

// operatorName is who answers: SUDO_USER, else USER.
func operatorName(getenv func(string) string) string {
	for _, k := range []string{"SUDO_USER", "USER"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return "unknown"
}

// needTerminal refuses guided mode without someone to ask.
func needTerminal(io *output.IOStreams) error {
	if !io.CanPrompt() {
		return cli.FlagErrorf("--guided asks the operator at each phase boundary and needs a terminal (stdin and stderr are not terminals): run it from a terminal, or without --guided")
	}
	return nil
}

// cockpit wires the window watch and the guided pauses into a runner.
type cockpit struct {
	budget  upgrade.Budget
	started time.Time
	now     func() time.Time
	win     *windowWatch
	guide   *guide
}

func (c *cockpit) apply(r *engine.Runner[*steps.Deps]) {
	if c.win != nil {
		c.win.inner = r.Observer
		r.Observer = c.win
	}
	if c.guide != nil {
		r.Pause, r.PauseAfter = c.guide.pause, guidedPhases
	}
}

// estimateFor is the budget of plan for a run: this host's history and the
// data volume gate.data_safety measures now (bounded: it walks the data
// directory).
func estimateFor(ctx context.Context, p *upgrade.Session) (upgrade.Budget, error) {
	hist, err := upgrade.LoadHistory(p.Deps.Config.StateDir, "upgrade")
	if err != nil {
		return upgrade.Budget{}, err
	}
	only := *p.Plan
	only.Steps = nil
	for _, s := range p.Plan.Steps {
		if s.Step.Kind == "gate.data_safety" {
			only.Steps = append(only.Steps, s)
		}
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	gates := upgrade.PreflightGates(gctx, &only, p.Deps, p.Seed)
	vol := upgrade.VolumeFromGates(p.Deps.Config, gates)
	vol.Primaries, vol.PrimariesFrom = upgrade.Primaries(gctx, p.Deps, p.Seed) // the deadlines' count
	return upgrade.EstimateBudget(p.Plan, hist, vol, steps.WatchOf(p.Seed)), nil
}

// checkWindow is the go/no-go of --window: the upgrade and a full rollback
// must fit.
func checkWindow(window time.Duration, b upgrade.Budget) error {
	need := (b.Total + b.Rollback).D()
	if need <= window {
		return nil
	}
	return &cli.ExitError{Code: cli.ExitNoGo, Reason: fmt.Sprintf(
		"no-go: the %s window does not hold the estimated upgrade (%s) plus a full rollback (%s) = %s; plan a window of at least %s (with a 50–100%% buffer: %s), see 'siemctl upgrade plan'",
		output.Duration(window), output.Duration(b.Total.D()), output.Duration(b.Rollback.D()), output.Duration(need), output.Duration(need), b.Window())}
}

// windowWarnLead is how long before the point of no return the warning comes.
func windowWarnLead(length time.Duration) time.Duration {
	return min(15*time.Minute, length/4)
}

// windowWatch follows the run against the window: at each phase it shows the
// point of no return (window end minus the estimated rollback of what is
// done), warns once when it comes near and then at each phase, and says so
// once it has passed.
type windowWatch struct {
	inner  engine.Observer
	w      io.Writer
	json   bool
	now    func() time.Time
	rec    upgrade.WindowRecord
	lead   time.Duration
	budget upgrade.Budget

	mu                          sync.Mutex
	done                        map[string]bool
	phase                       string
	seen                        map[string]bool // phases entered
	warned, passed, rollingBack bool
}

func newWindowWatch(w io.Writer, jsonMode bool, now func() time.Time, rec upgrade.WindowRecord, b upgrade.Budget, done []string) *windowWatch {
	ww := &windowWatch{w: w, json: jsonMode, now: now, rec: rec, budget: b, done: map[string]bool{}, seen: map[string]bool{}}
	if d, err := time.ParseDuration(rec.Length); err == nil {
		ww.lead = windowWarnLead(d)
	} else {
		ww.lead = windowWarnLead(rec.End.Sub(rec.Start))
	}
	for _, s := range done {
		ww.done[s] = true
	}
	return ww
}

// PointOfNoReturn is the last moment a rollback of what is done still fits.
func (ww *windowWatch) PointOfNoReturn() (time.Time, time.Duration) {
	rb := ww.budget.RollbackFor(ww.done)
	return ww.rec.End.Add(-rb), rb
}

// Observe implements engine.Observer.
func (ww *windowWatch) Observe(p engine.Progress) {
	if ww.inner != nil {
		ww.inner.Observe(p)
	}
	ww.mu.Lock()
	defer ww.mu.Unlock()
	switch p.Type {
	case engine.EvUndoStart, engine.EvRunEnd, engine.EvRunStop:
		ww.rollingBack = true // the window's question is answered
		return
	case engine.EvStepOK:
		ww.done[p.Step] = true
	}
	if ww.rollingBack || p.Step == "" {
		return
	}
	newPhase := false
	if p.Type == engine.EvStepStart || p.Type == engine.EvStepSkip {
		// the first step of each phase (the data-safety steps of
		// "backups" run between the indexer's and the manager's)
		if ph := upgrade.PhaseOf(p.Step, p.Kind); !ww.seen[ph] {
			ww.seen[ph], ww.phase, newPhase = true, ph, true
		}
	}
	if msg := ww.line(newPhase); msg != "" {
		ww.say(msg)
	}
}

// line is what to say now ("" for nothing).
func (ww *windowWatch) line(newPhase bool) string {
	now := ww.now()
	ponr, rb := ww.PointOfNoReturn()
	clock := func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") }
	switch {
	case !now.Before(ponr):
		if ww.passed && !newPhase {
			return ""
		}
		ww.passed = true
		return fmt.Sprintf("window: PAST the point of no return (%s): a rollback of what is done (est. %s) no longer fits before the window ends at %s (in %s)",
			clock(ponr), output.Duration(rb), clock(ww.rec.End), output.Duration(max(ww.rec.End.Sub(now), 0)))
	case ponr.Sub(now) <= ww.lead:
		if ww.warned && !newPhase {
			return ""
		}
		ww.warned = true
		return fmt.Sprintf("window: WARNING the point of no return is at %s, in %s: after it a rollback (est. %s) no longer fits the window ending at %s",
			clock(ponr), output.Duration(ponr.Sub(now)), output.Duration(rb), clock(ww.rec.End))
	case newPhase:
		return fmt.Sprintf("window: %s ends at %s (in %s); point of no return %s (in %s; rollback of what is done: est. %s)",
			ww.phase, clock(ww.rec.End), output.Duration(ww.rec.End.Sub(now)), clock(ponr), output.Duration(ponr.Sub(now)), output.Duration(rb))
	}
	return ""
}

func (ww *windowWatch) say(msg string) {
	if ww.json {
		b, _ := json.Marshal(map[string]string{"type": "window", "message": msg})
		fmt.Fprintln(ww.w, string(b))
		return
	}
	fmt.Fprintln(ww.w, msg)
}

// guide asks the operator at phase boundaries.
type guide struct {
	w        io.Writer
	in       *bufio.Reader
	colors   *output.Palette
	operator string
	budget   upgrade.Budget
	started  time.Time
	now      func() time.Time
	win      *windowWatch
	health   func(ctx context.Context) (health.Report, error)
	// plan and unitOf (component → unit) judge the health checks against
	// what the runbook stopped on purpose.
	plan   *steps.Plan
	unitOf map[string]string
	// waited is the time spent at this process's prompts, waiting for the
	// operator: not the upgrade's.
	waited time.Duration
}

type readResult struct {
	line string
	err  error
}

func (g *guide) readLine(ctx context.Context) (string, error) {
	ch := make(chan readResult, 1)
	go func() {
		l, err := g.in.ReadString('\n')
		ch <- readResult{l, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-ch:
		if r.err != nil && r.line == "" {
			if errors.Is(r.err, io.EOF) {
				return "", errors.New("no answer (end of input)")
			}
			return "", r.err
		}
		return r.line, nil
	}
}

func (g *guide) pause(ctx context.Context, b engine.Boundary) (engine.Decision, error) {
	if b.Failure != "" {
		return g.pauseOnFailure(ctx, b)
	}
	g.render(ctx, b)
	return g.ask(ctx, "Continue, wait (re-evaluate the gates), roll back, or stop here (resumable)? [c/w/r/s] ",
		"answer c (continue), w (wait), r (roll back) or s (stop here)",
		answer{engine.DecisionContinue, []string{"c", "continue"}, ""},
		answer{engine.DecisionWait, []string{"w", "wait"}, fmt.Sprintf("re-evaluating the gates of %s …", upgrade.PhaseLabel(b.Phase))},
		answer{engine.DecisionRollback, []string{"r", "roll back", "rollback"}, ""},
		answer{engine.DecisionStop, []string{"s", "stop", "stop here"}, ""})
}

// answer is one choice of a guided prompt: the words that pick it and
// what is printed when it is picked.
type answer struct {
	choice string
	words  []string
	note   string
}

// ask prompts until one of answers is picked (help after any other input).
func (g *guide) ask(ctx context.Context, prompt, help string, answers ...answer) (engine.Decision, error) {
	asked := g.now()
	defer func() { g.waited += max(g.now().Sub(asked), 0) }()
	for {
		fmt.Fprint(g.w, prompt)
		line, err := g.readLine(ctx)
		if err != nil {
			fmt.Fprintln(g.w)
			return engine.Decision{}, err
		}
		in := strings.ToLower(strings.TrimSpace(line))
		for _, a := range answers {
			if slices.Contains(a.words, in) {
				if a.note != "" {
					fmt.Fprintln(g.w, a.note)
				}
				return engine.Decision{Choice: a.choice, Operator: g.operator}, nil
			}
		}
		fmt.Fprintln(g.w, help)
	}
}

// pauseOnFailure asks after a step failed that would roll the run back
// unattended (a watch-window breach, a no-go gate after a change): roll
// back, wait (run the step again: keep watching, re-judge the gate), or stop
// here (resumable). Continue is not offered.
func (g *guide) pauseOnFailure(ctx context.Context, b engine.Boundary) (engine.Decision, error) {
	fmt.Fprintf(g.w, "\n== %s failed: unattended, the run would roll back now ==\n%s\n", b.Step, oneLine(b.Failure))
	if g.health != nil {
		g.renderHealth(ctx, b.Done)
	}
	return g.ask(ctx, "Roll back, wait (run the step again), or stop here (resumable)? [r/w/s] ",
		"answer r (roll back), w (wait: run the step again) or s (stop here)",
		answer{engine.DecisionRollback, []string{"r", "roll back", "rollback"}, ""},
		answer{engine.DecisionWait, []string{"w", "wait"}, fmt.Sprintf("running %s again …", b.Step)},
		answer{engine.DecisionStop, []string{"s", "stop", "stop here"}, ""})
}

// renderHealth runs the health checks now and shows the verdict and every
// check that is not OK, judged against the plan with the steps done: what
// the runbook stopped on purpose is EXPECTED (listed after the rest), the
// verdict is that of the other checks.
func (g *guide) renderHealth(ctx context.Context, done []string) {
	rep, err := g.health(ctx)
	if err != nil {
		fmt.Fprintf(g.w, "Health now: not available: %v\n", err)
		return
	}
	down := upgrade.StoppedByPlan(g.plan, done)
	counts := map[health.Status]int{}
	verdict := health.OK
	var real, expected [][]string
	for _, r := range rep.Results {
		if why := upgrade.ExpectedBy(r, down, g.unitOf); why != "" {
			expected = append(expected, []string{"", "EXPECTED", r.ID, oneLine(r.Summary) + ": " + why})
			continue
		}
		counts[r.Status]++
		verdict = max(verdict, r.Status)
		if r.Status != health.OK {
			real = append(real, []string{"", g.colors.Status(r.Status.String()), r.ID, oneLine(r.Summary)})
		}
	}
	line := fmt.Sprintf("%s: %d OK", g.colors.Status(verdict.String()), counts[health.OK])
	for _, s := range []health.Status{health.Warn, health.Crit, health.Unknown} {
		if counts[s] > 0 {
			line += fmt.Sprintf(", %d %s", counts[s], s)
		}
	}
	how := "siemctl health"
	if len(expected) > 0 {
		line += fmt.Sprintf(", %d expected (stopped by the runbook)", len(expected))
		how += ", judged against the plan"
	}
	fmt.Fprintf(g.w, "Health now (%s): %s\n", how, line)
	t := output.NewTable(g.w, true) // indented: the first column is empty
	for _, row := range append(real, expected...) {
		t.Row(row...)
	}
	_ = t.Render()
}

// render writes the evidence at a boundary.
func (g *guide) render(ctx context.Context, b engine.Boundary) {
	w, c := g.w, g.colors
	fmt.Fprintf(w, "\n== %s done (after %s): go/no-go for the next phase ==\n", upgrade.PhaseLabel(b.Phase), b.Step)
	fmt.Fprintln(w, "Gate verdicts:")
	counts := map[string]int{}
	t := output.NewTable(w, true) // indented: the first column is empty
	for _, v := range b.Gates {
		counts[v.Verdict]++
		again := ""
		if v.Rechecked {
			again = " (re-evaluated now)"
		}
		t.Row("", c.Status(v.Verdict), v.Step, oneLine(v.Detail)+again)
	}
	_ = t.Render()
	if len(b.Gates) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	sum := fmt.Sprintf("%d gates GO", counts[engine.VerdictGo])
	for _, k := range []string{engine.VerdictNoGo, engine.VerdictWait, engine.VerdictSkipped} {
		if counts[k] > 0 {
			sum += fmt.Sprintf(", %d %s", counts[k], k)
		}
	}
	rd, _ := upgrade.DecodeRunData(b.Data)
	if vl := upgrade.VersionsLine(upgrade.RunReport{Previous: rd.Previous, Targets: rd.Targets}); vl != "" && len(rd.Previous) > 0 {
		sum += "; versions " + vl
	} else if vl != "" {
		sum += "; target versions " + vl
	}
	fmt.Fprintf(w, "Summary: %s\n", sum)
	if g.health != nil {
		g.renderHealth(ctx, b.Done)
	}
	if rd.Diff != nil {
		fmt.Fprintf(w, "Snapshot diff: %s → %s: documents %d → %d; %d critical, %d warning\n",
			rd.Diff.From, rd.Diff.To, rd.Diff.DocsFrom, rd.Diff.DocsTo, rd.Diff.Counts["critical"], rd.Diff.Counts["warning"])
	} else {
		fmt.Fprintln(w, "Snapshot diff: not yet (post/diff compares with the pre-upgrade snapshot after validation)")
	}
	done := map[string]bool{}
	for _, s := range b.Done {
		done[s] = true
	}
	var estDone time.Duration
	for _, s := range g.budget.Steps {
		if done[s.Step] {
			estDone += s.Estimate.D()
		}
	}
	// What is left comes from the clock: the budget less the time the run
	// worked (the time used less the time waiting for the operator).
	used := b.Now.Sub(g.started)
	working := max(used-g.waited, 0)
	left := fmt.Sprintf("about %s left", output.Duration(g.budget.Total.D()-working))
	if working > g.budget.Total.D() {
		left = fmt.Sprintf("none left: %s over", output.Duration(working-g.budget.Total.D()))
	}
	fmt.Fprintf(w, "Time: %s used: %s working, %s waiting for the operator; the steps done were estimated at %s; budget %s in all, %s\n",
		output.Duration(used), output.Duration(working), output.Duration(g.waited), output.Duration(estDone), output.Duration(g.budget.Total.D()), left)
	if g.win != nil {
		g.win.mu.Lock()
		ponr, rb := g.win.PointOfNoReturn()
		g.win.mu.Unlock()
		state := "in " + output.Duration(ponr.Sub(b.Now))
		if !b.Now.Before(ponr) {
			state = "PASSED"
		}
		fmt.Fprintf(w, "Window: ends at %s; point of no return %s (%s; rollback of what is done: est. %s)\n",
			g.win.rec.End.UTC().Format("15:04:05 UTC"), ponr.UTC().Format("15:04:05 UTC"), state, output.Duration(rb))
	}
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// newCockpit builds the cockpit of a new run (apply) and records it in seed.
func newCockpit(ctx context.Context, c runs.Common, p *upgrade.Session, window time.Duration, guided bool) (*cockpit, error) {
	b, err := estimateFor(ctx, p)
	if err != nil {
		return nil, err
	}
	if window > 0 {
		if err := checkWindow(window, b); err != nil {
			return nil, err
		}
	}
	now := c.Clock()
	ck := &cockpit{budget: b, started: now, now: c.Clock}
	if window > 0 {
		rec := upgrade.WindowRecord{Start: now.UTC(), End: now.Add(window).UTC(), Length: window.String()}
		p.Seed[upgrade.KeyWindow] = rec
		ck.win = newWindowWatch(c.IO.ErrOut, c.Output == "json", c.Clock, rec, b, nil)
	}
	if guided {
		p.Seed[KeyGuided] = true
		ck.guide = newGuide(c, b, now, ck.win)
		ck.guide.plan, ck.guide.unitOf = p.Plan, p.Deps.Config.Units()
	}
	return ck, nil
}

func newGuide(c runs.Common, b upgrade.Budget, started time.Time, win *windowWatch) *guide {
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return &guide{w: c.IO.ErrOut, in: bufio.NewReader(c.IO.In), colors: c.IO.ErrColors(), operator: operatorName(getenv),
		budget: b, started: started, now: c.Clock, win: win, health: c.Health}
}

// resumeCockpit rebuilds the cockpit a run was started with (its journaled
// window and guided mode); nil when it had none.
func resumeCockpit(c runs.Common, deps *steps.Deps, r *engine.Runner[*steps.Deps], ri *engine.RunInfo) (*cockpit, error) {
	var rec upgrade.WindowRecord
	_, hasWin := ri.Data[upgrade.KeyWindow]
	if hasWin {
		if err := json.Unmarshal(ri.Data[upgrade.KeyWindow], &rec); err != nil {
			return nil, fmt.Errorf("run data window: %w", err)
		}
	}
	guided := string(ri.Data[KeyGuided]) == "true"
	if !hasWin && !guided {
		return nil, nil
	}
	if guided {
		if err := needTerminal(c.IO); err != nil {
			return nil, fmt.Errorf("run %s was started with --guided: %w", ri.ID, err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(engine.JournalPath(deps.Config.StateDir, ri.ID)), "runbook.yaml"))
	if err != nil {
		return nil, fmt.Errorf("run %s: stored runbook: %w", ri.ID, err)
	}
	plan, err := engine.ParsePlan(raw, ri.Runbook.Source, r.Registry, ri.Selection, r.Planning)
	if err != nil {
		return nil, err
	}
	hist, err := upgrade.LoadHistory(deps.Config.StateDir, "upgrade")
	if err != nil {
		return nil, err
	}
	// The data volume as preflight measured it (the indexer may be stopped now).
	vol := upgrade.DataVolume{Mode: steps.DataSafetyMode(deps.Config)}
	var done []string
	for _, s := range ri.Steps {
		if s.Status == engine.StepOK {
			done = append(done, s.ID)
		}
		if s.Kind == "gate.data_safety" && s.Outcome != nil {
			vol = upgrade.VolumeFromGates(deps.Config, []upgrade.GateResult{{Kind: s.Kind, Data: s.Outcome.Data}})
		}
	}
	b := upgrade.EstimateBudget(plan, hist, vol, watchOfRun(ri))
	ck := &cockpit{budget: b, started: ri.Started, now: c.Clock}
	if hasWin {
		ck.win = newWindowWatch(c.IO.ErrOut, c.Output == "json", c.Clock, rec, b, done)
	}
	if guided {
		ck.guide = newGuide(c, b, ri.Started, ck.win)
		ck.guide.plan, ck.guide.unitOf = plan, deps.Config.Units()
	}
	return ck, nil
}

// watchOfRun is the watch window a journaled run requested (0: none).
func watchOfRun(ri *engine.RunInfo) time.Duration {
	var req watch.Request
	if raw, ok := ri.Data[rundata.KeyWatch]; !ok || json.Unmarshal(raw, &req) != nil {
		return 0
	}
	d, err := time.ParseDuration(req.Window)
	if err != nil {
		return 0
	}
	return d
}
