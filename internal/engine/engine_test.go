package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/lock"
)

const testRunbook = `name: test
description: engine test runbook
steps:
  - {id: pre/gate, kind: fake.gate}
  - {id: a/one, kind: fake.change, undo: {kind: fake.change, with: {note: undo-one}}}
  - {id: a/two, kind: fake.change, undo: {kind: fake.change, with: {note: undo-two}}, retries: 2}
  - {id: b/three, kind: fake.change, needs: [a/one]}
  - {id: b/gate, kind: fake.gate, on_fail: rollback, timeout: 1m}
  - {id: c/four, kind: fake.change, undo: {kind: fake.change, with: {note: undo-four}}}
  - {id: final/check, kind: fake.gate, always: true}
`

type fixture struct {
	rec   *recorder
	reg   *Registry[string]
	log   *progressLog
	clock *fakeClock
	r     *Runner[string]
	dir   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{rec: newRecorder(), log: &progressLog{}, clock: newFakeClock(), dir: t.TempDir()}
	f.reg = fakeRegistry(t, f.rec, "fake.gate", "fake.change")
	f.r = &Runner[string]{StateDir: f.dir, Registry: f.reg, Observer: f.log, Clock: f.clock, Command: "siemctl test", Deps: "deps", Planning: "plan-ctx"}
	return f
}

// again runs op (the runner's Resume, Rollback or Abort) on run id with the
// recorder cleared; the run must end with status and the kinds called in
// order.
func (f *fixture) again(t *testing.T, what string, op func(context.Context, string) (*RunInfo, error), id, status string, calls ...string) *RunInfo {
	t.Helper()
	f.rec.calls = nil
	ri, err := op(context.Background(), id)
	if err != nil || ri.Status != status {
		t.Fatalf("%s: %v %+v", what, err, ri)
	}
	if got := f.rec.got(); !slices.Equal(got, calls) {
		t.Errorf("%s calls %q, want %q", what, got, calls)
	}
	return ri
}

func (f *fixture) plan(t *testing.T, sel Selection) *Plan[string] {
	t.Helper()
	p, err := ParsePlan([]byte(testRunbook), "test.yaml", f.reg, sel, "plan-ctx")
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

func events(t *testing.T, dir, id string) []Event {
	t.Helper()
	evs, torn, err := ReadJournal(dir, id)
	if err != nil || torn {
		t.Fatalf("journal: %v torn=%v", err, torn)
	}
	return evs
}

// exitCode is the documented exit code of a run's error (cli.ExitCode maps the same types; cli
// imports engine, so this test cannot import it).
func exitCode(err error) int {
	var (
		gate     *GateError
		rolled   *RolledBackError
		rbFailed *RollbackFailedError
		stopped  *StoppedError
		plan     *PlanError
	)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &rbFailed):
		return 11
	case errors.As(err, &rolled):
		return 10
	case errors.As(err, &stopped):
		return 130
	case errors.As(err, &plan):
		return 2
	case errors.As(err, new(*FailedError)), errors.As(err, new(*FinallyError)):
		return 1
	case errors.As(err, &gate):
		return 3
	case errors.Is(err, context.Canceled):
		return 130
	}
	return 1
}

var all = []string{"run pre/gate", "run a/one", "run a/two", "run b/three", "run b/gate", "run c/four", "run final/check"}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		sel      Selection
		setup    func(f *fixture)
		want     []string
		status   string
		exit     int
		errAs    any
		resumabl bool
	}{
		{name: "all ok in order", want: all, status: StatusSucceeded},
		{name: "skip subtree", sel: Selection{Skip: []string{"b"}},
			want: []string{"run pre/gate", "run a/one", "run a/two", "run c/four", "run final/check"}, status: StatusSucceeded},
		{name: "only subtree keeps finally", sel: Selection{Only: []string{"a"}},
			want: []string{"run a/one", "run a/two", "run final/check"}, status: StatusSucceeded},
		{name: "skip wins over only", sel: Selection{Only: []string{"a", "pre"}, Skip: []string{"a/two"}},
			want: []string{"run pre/gate", "run a/one", "run final/check"}, status: StatusSucceeded},
		{name: "skip check with reason", setup: func(f *fixture) { f.rec.skip["b/three"] = "already there" },
			want: slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "run b/three" }), status: StatusSucceeded},
		{name: "retries then ok", setup: func(f *fixture) { f.rec.on("run a/two", fails("flaky"), fails("flaky"), nil) },
			want: []string{"run pre/gate", "run a/one", "run a/two", "run a/two", "run a/two", "run b/three", "run b/gate", "run c/four", "run final/check"}, status: StatusSucceeded},
		{name: "gate pending then ok", setup: func(f *fixture) { f.rec.on("run b/gate", pending("relocating"), pending("relocating"), nil) },
			want: []string{"run pre/gate", "run a/one", "run a/two", "run b/three", "run b/gate", "run b/gate", "run b/gate", "run c/four", "run final/check"}, status: StatusSucceeded},
		{name: "preflight gate no-go, nothing changed", setup: func(f *fixture) { f.rec.on("run pre/gate", nogo("cluster red")) },
			want: []string{"run pre/gate"}, status: StatusNoGo, exit: 3, errAs: new(*GateError)},
		{name: "fail with abort stops resumable", setup: func(f *fixture) { f.rec.on("run b/three", fails("boom")) },
			want: []string{"run pre/gate", "run a/one", "run a/two", "run b/three"}, status: StatusFailed, exit: 1, errAs: new(*FailedError), resumabl: true},
		{name: "retries exhausted", setup: func(f *fixture) { f.rec.on("run a/two", fails("down")) },
			want: []string{"run pre/gate", "run a/one", "run a/two", "run a/two", "run a/two"}, status: StatusFailed, exit: 1, errAs: new(*FailedError), resumabl: true},
		{name: "gate timeout rolls back completed undos in reverse", setup: func(f *fixture) { f.rec.on("run b/gate", pending("cluster red")) },
			want: append(append([]string{"run pre/gate", "run a/one", "run a/two", "run b/three"}, slices.Repeat([]string{"run b/gate"}, 13)...),
				"undo a/two", "undo a/one", "run final/check"),
			status: StatusRolledBack, exit: 10, errAs: new(*RolledBackError)},
		{name: "undo failure: rollback failed, other undos still run", setup: func(f *fixture) {
			f.rec.on("run b/gate", nogo("red"))
			f.rec.on("undo a/two", fails("cannot"))
		},
			want:   []string{"run pre/gate", "run a/one", "run a/two", "run b/three", "run b/gate", "undo a/two", "undo a/one", "run final/check"},
			status: StatusRollbackFailed, exit: 11, errAs: new(*RollbackFailedError)},
		{name: "finally fails after success", setup: func(f *fixture) { f.rec.on("run final/check", nogo("allocation left at primaries")) },
			want: all, status: StatusFinallyFailed, exit: 1, errAs: new(*FinallyError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			ri, err := f.r.Run(context.Background(), f.plan(t, tt.sel), RunOptions{Seed: map[string]any{"target": "4.10.0"}})
			if got := f.rec.got(); !slices.Equal(got, tt.want) {
				t.Errorf("calls:\n got %q\nwant %q", got, tt.want)
			}
			if exitCode(err) != tt.exit {
				t.Errorf("exit %d, want %d (err %v)", exitCode(err), tt.exit, err)
			}
			if tt.errAs != nil && !errors.As(err, tt.errAs) {
				t.Errorf("error %T %v is not %T", err, err, tt.errAs)
			}
			if ri == nil {
				t.Fatal("no RunInfo")
			}
			if ri.Status != tt.status || ri.Resumable() != tt.resumabl {
				t.Errorf("status %s resumable %v, want %s %v", ri.Status, ri.Resumable(), tt.status, tt.resumabl)
			}
			// The journal on disk says the same, and so does "latest".
			st, serr := Status(f.dir, "latest")
			if serr != nil || st.ID != ri.ID || st.Status != tt.status {
				t.Errorf("Status(latest) = %+v, %v", st, serr)
			}
			if _, state, _ := lock.Inspect(f.r.LockPath()); state != lock.Free {
				t.Errorf("lock not released: %v", state)
			}
		})
	}
}

func TestRunJournalAndProgress(t *testing.T) {
	f := newFixture(t)
	f.rec.on("run a/one", func(ctx context.Context, env Env[string]) (Outcome, error) {
		var target string
		if ok, err := env.Get("target", &target); !ok || err != nil || target != "4.10.0" {
			t.Errorf("Get(target) = %q %v %v", target, ok, err)
		}
		if env.Deps() != "deps" || env.RunID() == "" {
			t.Errorf("env deps/run id: %v %q", env.Deps(), env.RunID())
		}
		if err := env.Set("previous_versions", map[string]string{"indexer": "4.9.0-1"}); err != nil {
			return Outcome{}, err
		}
		if err := env.Set("creds", map[string]any{"user": "admin", "password": "hunter2"}); err != nil {
			return Outcome{}, err
		}
		env.Waiting("cluster %s", "yellow")
		return Outcome{Message: "set", Data: map[string]any{"backup": "/b/1.tar", "api_token": "abc"}}, nil
	})
	f.rec.on("run b/three", func(ctx context.Context, env Env[string]) (Outcome, error) {
		var pv map[string]string
		if ok, err := env.Get("previous_versions", &pv); !ok || err != nil || pv["indexer"] != "4.9.0-1" {
			t.Errorf("later step does not see recorded data: %v %v %v", pv, ok, err)
		}
		return Outcome{}, nil
	})
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{Seed: map[string]any{"target": "4.10.0", "token": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ri.ID, "20250301T100000Z-") || !runIDRE.MatchString(ri.ID) {
		t.Errorf("run id %q", ri.ID)
	}
	raw, err := os.ReadFile(filepath.Join(f.dir, "runs", ri.ID, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "s3cret", `"abc"`} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("journal contains secret %q", secret)
		}
	}
	stored, _ := os.ReadFile(filepath.Join(f.dir, "runs", ri.ID, "runbook.yaml"))
	if string(stored) != testRunbook {
		t.Error("runbook copy differs")
	}
	var types []string
	for _, e := range events(t, f.dir, ri.ID) {
		types = append(types, e.Type+":"+e.Step)
	}
	want := []string{"run-start:", "step-start:pre/gate", "step-ok:pre/gate", "step-start:a/one", "data:a/one", "data:a/one", "step-ok:a/one"}
	if !slices.Equal(types[:len(want)], want) || types[len(types)-1] != "run-end:" {
		t.Errorf("journal types %q", types)
	}
	if string(ri.Data["previous_versions"]) != `{"indexer":"4.9.0-1"}` || string(ri.Data["target"]) != `"4.10.0"` {
		t.Errorf("data %s", ri.Data)
	}
	// Progress: n/m on every step start, the wait note, the end.
	starts := f.log.of(EvStepStart)
	if len(starts) != 7 || starts[0].N != 1 || starts[6].N != 7 || starts[3].M != 7 || len(starts[0].Describe) != 1 {
		t.Errorf("step-start progress %+v", starts)
	}
	if w := f.log.of(ProgressWait); len(w) != 1 || w[0].Message != "cluster yellow" || w[0].Step != "a/one" {
		t.Errorf("wait progress %+v", w)
	}
	if e := f.log.of(EvRunEnd); len(e) != 1 || e[0].Status != StatusSucceeded {
		t.Errorf("run-end progress %+v", e)
	}
	latest, _ := os.ReadFile(filepath.Join(f.dir, "runs", "latest"))
	if strings.TrimSpace(string(latest)) != ri.ID {
		t.Errorf("latest = %q", latest)
	}
	// the pointer is replaced by rename: no temp files are left behind
	ents, _ := os.ReadDir(filepath.Join(f.dir, "runs"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{ri.ID, "latest"}) {
		t.Errorf("runs dir holds %q", names)
	}
	if fi, err := os.Stat(filepath.Join(f.dir, "runs", ri.ID, "journal.jsonl")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode: %v %v", fi, err)
	}
}

func TestDryRun(t *testing.T) {
	f := newFixture(t)
	f.r.DryRun = true
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{Skip: []string{"c"}}), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.rec.got(); len(got) != 0 {
		t.Errorf("dry-run called kinds: %q", got)
	}
	if ri.Status != StatusDryRun || len(ri.Steps) != 6 {
		t.Errorf("dry-run info %+v", ri)
	}
	dr := f.log.of(ProgressDryRun)
	if len(dr) != 6 || dr[0].Step != "pre/gate" || dr[5].Step != "final/check" || dr[5].N != 6 || dr[5].M != 6 {
		t.Fatalf("dry-run progress %+v", dr)
	}
	for _, p := range dr {
		if len(p.Describe) == 0 || !strings.Contains(p.Describe[0], "fake call") || !strings.HasSuffix(p.Describe[0], " in plan-ctx") {
			t.Errorf("no describe lines for %s", p.Step)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "runs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry-run wrote state: %v", err)
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name string
		// the step during which the context is cancelled
		step      string
		readOnly  bool
		firstRun  []string
		resumeRun []string
		stopStep  string
	}{
		{name: "read-only gate is interrupted at once", step: "b/gate", readOnly: true,
			firstRun:  []string{"run pre/gate", "run a/one", "run a/two", "run b/three", "run b/gate"},
			resumeRun: []string{"verify b/gate", "run b/gate", "run c/four", "run final/check"}, stopStep: "b/gate"},
		{name: "changing step finishes, run stops after it", step: "a/two",
			firstRun:  []string{"run pre/gate", "run a/one", "run a/two"},
			resumeRun: []string{"run b/three", "run b/gate", "run c/four", "run final/check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.rec.on("run "+tt.step, func(sctx context.Context, env Env[string]) (Outcome, error) {
				cancel()
				if tt.readOnly {
					<-sctx.Done() // a gate waiting server-side
					return Outcome{}, sctx.Err()
				}
				if sctx.Err() != nil {
					t.Error("a changing step saw the cancellation")
				}
				return Outcome{Message: "installed"}, nil
			}, nil)
			ri, err := f.r.Run(ctx, f.plan(t, Selection{}), RunOptions{})
			var ie *InterruptedError
			if !errors.As(err, &ie) || !errors.Is(err, context.Canceled) || exitCode(err) != 130 || ie.Step != tt.stopStep {
				t.Fatalf("want InterruptedError at %q, got %v", tt.stopStep, err)
			}
			if ri.Status != StatusInterrupted || !ri.Resumable() {
				t.Fatalf("status %s", ri.Status)
			}
			if got := f.rec.got(); !slices.Equal(got, tt.firstRun) {
				t.Errorf("first run calls %q", got)
			}
			f.again(t, "resume", f.r.Resume, ri.ID, StatusSucceeded, tt.resumeRun...)
		})
	}
}

// TestResumeAfterCrash cuts the journal after a step-start and tears the
// last line, as a crash mid-write would.
func TestResumeAfterCrash(t *testing.T) {
	tests := []struct {
		name     string
		verified bool
		want     []string
	}{
		{"interrupted step verified done", true, []string{"verify b/three", "run b/gate", "run c/four", "run final/check"}},
		{"interrupted step not done is re-run", false, []string{"verify b/three", "run b/three", "run b/gate", "run c/four", "run final/check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(f.dir, "runs", ri.ID, "journal.jsonl")
			raw, _ := os.ReadFile(path)
			lines := strings.SplitAfter(string(raw), "\n")
			cut := slices.IndexFunc(lines, func(l string) bool {
				return strings.Contains(l, `"type":"step-start"`) && strings.Contains(l, `"step":"b/three"`)
			})
			crashed := strings.Join(lines[:cut+1], "") + `{"seq":99,"time":"2025-03-01T10:00:00Z","ty`
			if err := os.WriteFile(path, []byte(crashed), 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := Status(f.dir, ri.ID)
			if err != nil || st.Status != StatusInterrupted || !st.Torn {
				t.Fatalf("crashed status %+v %v", st, err)
			}
			if s, _ := st.Step("b/three"); s.Status != StepRunning {
				t.Errorf("b/three = %+v", s)
			}
			f.rec.verify["b/three"] = tt.verified
			ri2 := f.again(t, "resume", f.r.Resume, "latest", StatusSucceeded, tt.want...)
			if ri2.Torn {
				t.Fatalf("resumed run still torn: %+v", ri2)
			}
			// the re-planned steps are described with the runner's planning context
			starts := f.log.of(EvStepStart)
			if last := starts[len(starts)-1]; last.Step != "final/check" || len(last.Describe) != 1 || !strings.HasSuffix(last.Describe[0], " in plan-ctx") {
				t.Errorf("resumed step-start %+v", last)
			}
			s, _ := ri2.Step("b/three")
			if s.Status != StepOK || s.Verified != tt.verified {
				t.Errorf("b/three after resume %+v", s)
			}
			// the torn line was cut, every remaining line parses
			if _, torn, err := ReadJournal(f.dir, ri.ID); err != nil || torn {
				t.Errorf("journal after resume: %v torn=%v", err, torn)
			}
			// finished runs are not resumable
			if _, err := f.r.Resume(context.Background(), ri.ID); !errors.Is(err, ErrNotResumable) {
				t.Errorf("second resume: %v", err)
			}
		})
	}
}

func TestAbortAndRollbackOfStoppedRun(t *testing.T) {
	tests := []struct {
		name   string
		do     func(r *Runner[string], id string) (*RunInfo, error)
		want   []string
		status string
		exit   int
	}{
		{"abort runs finally only", func(r *Runner[string], id string) (*RunInfo, error) { return r.Abort(context.Background(), id) },
			[]string{"run final/check"}, StatusAborted, 0},
		{"rollback undoes completed steps in reverse", func(r *Runner[string], id string) (*RunInfo, error) { return r.Rollback(context.Background(), id) },
			[]string{"undo c/four", "undo a/two", "undo a/one", "run final/check"}, StatusRolledBack, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			// stop the run after c/four by failing a later changing step
			rb := strings.Replace(testRunbook, "  - {id: final/check", "  - {id: d/five, kind: fake.change}\n  - {id: final/check", 1)
			plan, err := ParsePlan([]byte(rb), "test.yaml", f.reg, Selection{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			f.rec.on("run d/five", fails("apt locked"))
			ri, err := f.r.Run(context.Background(), plan, RunOptions{})
			if exitCode(err) != 1 || ri.Status != StatusFailed {
				t.Fatalf("setup run: %v %s", err, ri.Status)
			}
			f.rec.calls = nil
			dry := *f.r
			dry.DryRun = true
			if _, err := dry.Rollback(context.Background(), ri.ID); err != nil {
				t.Fatalf("dry-run rollback: %v", err)
			}
			if len(f.rec.got()) != 0 {
				t.Fatalf("dry-run rollback called kinds")
			}
			ri, err = tt.do(f.r, ri.ID)
			if exitCode(err) != tt.exit || ri.Status != tt.status {
				t.Fatalf("got %v %s", err, ri.Status)
			}
			if got := f.rec.got(); !slices.Equal(got, tt.want) {
				t.Errorf("calls %q, want %q", got, tt.want)
			}
			if _, err := tt.do(f.r, ri.ID); !errors.Is(err, ErrNotResumable) {
				t.Errorf("second time: %v", err)
			}
		})
	}
}

func TestLockContention(t *testing.T) {
	f := newFixture(t)
	other := &Runner[string]{StateDir: f.dir, Registry: f.reg, Clock: f.clock, Command: "siemctl upgrade apply"}
	f.rec.on("run a/one", func(ctx context.Context, env Env[string]) (Outcome, error) {
		_, err := other.Run(ctx, f.plan(t, Selection{}), RunOptions{})
		var he *lock.HeldError
		if !errors.As(err, &he) || he.Holder == nil || he.Holder.RunID != env.RunID() || he.Holder.Command != "siemctl test" {
			t.Errorf("second run while locked: %T %v", err, err)
		}
		st, serr := Status(f.dir, "latest")
		if serr != nil || st.Status != StatusRunning || st.Holder == nil || st.Holder.PID != os.Getpid() {
			t.Errorf("status while running: %+v %v", st, serr)
		}
		return Outcome{}, nil
	})
	if _, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if runs, _ := Runs(f.dir); len(runs) != 1 {
		t.Errorf("refused run left a run dir: %v", runs)
	}
}

func TestPlanProblemsAllAtOnce(t *testing.T) {
	rec := newRecorder()
	reg := fakeRegistry(t, rec, "fake.gate", "fake.change")
	const bad = `name: bad
steps:
  - {id: one, kind: fake.change, with: {count: -1}}
  - {id: two, kind: fake.nope}
  - {id: three, kind: fake.change, needs: [four], with: {colour: red}}
  - {id: four, kind: fake.change, undo: {kind: fake.missing}}
  - {id: four, kind: fake.gate, with: {wait: soon}}
`
	_, err := ParsePlan([]byte(bad), "bad.yaml", reg, Selection{Only: []string{"ghost"}}, nil)
	var pe *PlanError
	if !errors.As(err, &pe) || exitCode(err) != 2 {
		t.Fatalf("want PlanError, got %v", err)
	}
	msg := err.Error()
	for _, w := range []string{
		"bad.yaml:3: step one: fake.change: count must not be negative",
		"bad.yaml:4: step two: unknown kind fake.nope",
		"bad.yaml:5: step three: needs four, which comes later",
		"bad.yaml:5: step three: fake.change: parameters: unknown parameter colour",
		"bad.yaml:6: step four: undo: unknown kind fake.missing",
		"bad.yaml:7: step four: duplicate id",
		"bad.yaml:7: step four: fake.gate: parameters:",
		`no step matches "ghost"`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("missing %q in:\n%s", w, msg)
		}
	}
	if len(pe.Problems) != 8 {
		t.Errorf("got %d problems:\n%s", len(pe.Problems), msg)
	}

	// a selection that drops a needed step
	f := newFixture(t)
	_, err = ParsePlan([]byte(testRunbook), "test.yaml", f.reg, Selection{Only: []string{"b"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "step b/three: needs a/one, which the selection leaves out") {
		t.Errorf("needs vs selection: %v", err)
	}
	// a YAML-level problem is reported with the kind problems
	_, err = ParsePlan([]byte("name: x\nsteps:\n  - {id: a, kind: fake.nope, tiemout: 1m}\n"), "x.yaml", reg, Selection{}, nil)
	if err == nil || !strings.Contains(err.Error(), "field tiemout not found") || !strings.Contains(err.Error(), "unknown kind fake.nope") {
		t.Errorf("yaml + kind problems: %v", err)
	}
}

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		with map[string]any
		want string
	}{
		{map[string]any{"note": "x", "count": 2, "wait": "90s"}, ""},
		{map[string]any{"cuont": 2}, "unknown parameter cuont"},
		{map[string]any{"count": "many"}, "many is not a valid int"},
		{nil, ""},
	}
	for _, tt := range tests {
		var p fakeParams
		err := DecodeStrict(tt.with, &p)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("DecodeStrict(%v) = %v, want %q", tt.with, err, tt.want)
		}
		if tt.want == "" && tt.with != nil && (p.Wait != 90*time.Second || p.Count != 2) {
			t.Errorf("decoded %+v", p)
		}
	}
}

func TestRegistry(t *testing.T) {
	rec := newRecorder()
	_, err := NewRegistry(fakeKind(rec, "a.b", false), fakeKind(rec, "a.b", false), fakeKind(rec, "Bad", false))
	if err == nil || !strings.Contains(err.Error(), "already registered") || !strings.Contains(err.Error(), "dotted lowercase") {
		t.Errorf("NewRegistry: %v", err)
	}
}

func TestJournalTornAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	j, err := createJournal(filepath.Join(dir, "run"), newFakeClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{EvRunStart, EvStepStart} {
		if err := j.append(Event{Type: typ, Params: map[string]any{"Password": "x", "nested": map[string]any{"client_secret": "y", "ok": 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	path := filepath.Join(dir, "run", journalName)
	good, _ := os.ReadFile(path)
	if strings.Contains(string(good), `"x"`) || strings.Contains(string(good), `"y"`) || !strings.Contains(string(good), `"ok":1`) {
		t.Errorf("redaction: %s", good)
	}
	tests := []struct {
		name    string
		content string
		n       int
		torn    bool
		wantErr bool
	}{
		{"clean", string(good), 2, false, false},
		{"torn tail", string(good) + `{"seq":3,"ty`, 2, true, false},
		{"complete but unparsable tail", string(good) + "garbage", 2, true, false},
		{"corrupt middle", "garbage\n" + string(good), 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			evs, n, torn, err := readJournal(path)
			if (err != nil) != tt.wantErr || len(evs) != tt.n || torn != tt.torn {
				t.Fatalf("got %d events torn=%v err=%v", len(evs), torn, err)
			}
			if err == nil && n != int64(len(good)) {
				t.Errorf("good prefix %d, want %d", n, len(good))
			}
		})
	}
	// reopening cuts the torn tail and appends after the last good line
	if err := os.WriteFile(path, append(good, `{"seq":3,"ty`...), 0o600); err != nil {
		t.Fatal(err)
	}
	j, evs, err := openJournal(filepath.Join(dir, "run"), newFakeClock().Now)
	if err != nil || len(evs) != 2 {
		t.Fatalf("openJournal: %v %d", err, len(evs))
	}
	if err := j.append(Event{Type: EvRunEnd}); err != nil {
		t.Fatal(err)
	}
	j.close()
	evs, _, torn, err := readJournal(path)
	if err != nil || torn || len(evs) != 3 || evs[2].Seq != 3 {
		t.Errorf("after reopen: %d events torn=%v err=%v", len(evs), torn, err)
	}
	var e Event
	if err := json.Unmarshal([]byte(strings.Split(string(good), "\n")[0]), &e); err != nil || e.Seq != 1 {
		t.Errorf("first line: %+v %v", e, err)
	}
}

func TestResolveRun(t *testing.T) {
	dir := t.TempDir()
	if _, err := ResolveRun(dir, ""); !errors.Is(err, ErrNoRuns) {
		t.Errorf("empty: %v", err)
	}
	if _, err := ResolveRun(dir, "../../etc"); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("path traversal: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := setLatest(dir, "20250301T100000Z-abcdef"); err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveRun(dir, "latest"); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("dangling latest: %v", err)
	}
}

func TestRollbackRetryAndCrash(t *testing.T) {
	f := newFixture(t)
	f.rec.on("run b/gate", nogo("red"))
	f.rec.on("undo a/two", fails("cannot"), nil)
	ri, err := f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	if exitCode(err) != 11 || ri.Status != StatusRollbackFailed || ri.Phase != EvRollback {
		t.Fatalf("first: %v %s %q", err, ri.Status, ri.Phase)
	}
	if s, _ := ri.Step("a/two"); s.Status != StepUndoFailed || s.UndoErr != "cannot" {
		t.Errorf("a/two %+v", s)
	}
	if _, err := f.r.Resume(context.Background(), ri.ID); !errors.Is(err, ErrNotResumable) {
		t.Errorf("resume of a rollback: %v", err)
	}
	f.again(t, "retry", f.r.Rollback, ri.ID, StatusRolledBack, "undo a/two", "run final/check")

	// A crash in the middle of an on_fail rollback: only Rollback finishes it.
	f = newFixture(t)
	f.rec.on("run b/gate", nogo("red"))
	ri, _ = f.r.Run(context.Background(), f.plan(t, Selection{}), RunOptions{})
	path := filepath.Join(f.dir, "runs", ri.ID, "journal.jsonl")
	raw, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(raw), "\n")
	cut := slices.IndexFunc(lines, func(l string) bool {
		return strings.Contains(l, `"type":"undo-start"`) && strings.Contains(l, `"step":"a/one"`)
	})
	if err := os.WriteFile(path, []byte(strings.Join(lines[:cut+1], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ := Status(f.dir, ri.ID)
	if st.Status != StatusInterrupted || st.Phase != EvRollback || st.Resumable() {
		t.Fatalf("crashed rollback: %s %q resumable=%v", st.Status, st.Phase, st.Resumable())
	}
	if _, err := f.r.Resume(context.Background(), ri.ID); !errors.Is(err, ErrNotResumable) {
		t.Errorf("resume of a crashed rollback: %v", err)
	}
	if _, err := f.r.Abort(context.Background(), ri.ID); !errors.Is(err, ErrNotResumable) {
		t.Errorf("abort of a crashed rollback: %v", err)
	}
	f.again(t, "finish rollback", f.r.Rollback, ri.ID, StatusRolledBack, "undo a/one", "run final/check")
}
