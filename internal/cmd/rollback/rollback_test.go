package rollback

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/steps"
)

type okParams struct{}

func (okParams) Describe(engine.PlanContext) []string { return []string{"nothing"} }
func (okParams) Validate() error                      { return nil }

// fakeKind succeeds, or fails when fail is set, or cancels the run.
func fakeKind(name string, run func(ctx context.Context) error) steps.Kind {
	return engine.Define(steps.Spec[okParams]{Name: name, ReadOnly: strings.HasPrefix(name, "test.gate"), New: func() okParams { return okParams{} },
		Run: func(ctx context.Context, _ steps.Env, _ okParams) (engine.Outcome, error) {
			return engine.Outcome{}, run(ctx)
		}})
}

// tickClock advances a second per reading, so run ids (UTC second +
// random) sort in creation order without sleeping.
type tickClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

func (c *tickClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now().Add(d)
	return ch
}

// makeRun records a run of a two-step runbook named name in state;
// cancelAfter interrupts it after its first step.
func makeRun(t *testing.T, state string, clock *tickClock, name string, behave func(ctx context.Context) error, cancelAfter bool) string {
	t.Helper()
	kind := "test.step"
	if name == "upgrade-nogo" {
		name, kind = "upgrade", "test.gate"
	}
	reg, err := engine.NewRegistry(fakeKind(kind, behave))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := engine.ParsePlan([]byte("name: "+name+"\nsteps:\n  - {id: a/b, kind: "+kind+"}\n  - {id: a/c, kind: "+kind+"}\n"), name, reg, engine.Selection{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &engine.Runner[*steps.Deps]{StateDir: state, Registry: reg, Clock: clock}
	if cancelAfter {
		r.Observer = engine.ObserverFunc(func(p engine.Progress) {
			if p.Type == engine.EvStepStart {
				cancel()
			}
		})
	}
	ri, _ := r.Run(ctx, plan, engine.RunOptions{})
	if ri == nil {
		t.Fatal("no run")
	}
	return ri.ID
}

func TestFindRuns(t *testing.T) {
	ok := func(context.Context) error { return nil }
	nogoErr := func(context.Context) error { return engine.NoGo("no") }

	t.Run("no runs", func(t *testing.T) {
		_, _, err := findRuns(t.TempDir(), "")
		if !errors.Is(err, ErrNothingToRollBack) || cli.ExitCode(err) != cli.ExitNoGo || !strings.Contains(err.Error(), "siemctl upgrade status") {
			t.Fatalf("%v (exit %d), want nothing to roll back, exit 3, naming the fix", err, cli.ExitCode(err))
		}
	})
	t.Run("latest upgrade, no-go ones skipped", func(t *testing.T) {
		state, clock := t.TempDir(), &tickClock{now: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
		want := makeRun(t, state, clock, "upgrade", ok, false)
		makeRun(t, state, clock, "upgrade-nogo", nogoErr, false)
		up, pending, err := findRuns(state, "")
		if err != nil || pending != nil || up.ID != want {
			t.Fatalf("up %v pending %v err %v, want %s", up, pending, err, want)
		}
	})
	t.Run("a stopped rollback run is continued first", func(t *testing.T) {
		state, clock := t.TempDir(), &tickClock{now: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
		makeRun(t, state, clock, "upgrade", ok, false)
		rb := makeRun(t, state, clock, "rollback", ok, true)
		up, pending, err := findRuns(state, "")
		if err != nil || up != nil || pending == nil || pending.ID != rb {
			t.Fatalf("up %v pending %v err %v", up, pending, err)
		}
	})
	t.Run("explicit run", func(t *testing.T) {
		state, clock := t.TempDir(), &tickClock{now: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
		first := makeRun(t, state, clock, "upgrade", ok, false)
		makeRun(t, state, clock, "upgrade", ok, false)
		up, _, err := findRuns(state, first)
		if err != nil || up.ID != first {
			t.Fatalf("%v %v", up, err)
		}
	})
}

func TestRollbackErrExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{&engine.FailedError{RunID: "r", Step: "s", Err: errors.New("x")}, 11},
		{&engine.RollbackFailedError{RunID: "r"}, 11},
		{&engine.InterruptedError{RunID: "r", Err: context.Canceled}, 130},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := cli.ExitCode(rollbackErr(tt.err)); got != tt.want {
			t.Errorf("%v: exit %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestNewCmdRollback(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		run     string
		dry     bool
	}{
		{[]string{"--run", "20250301T100000Z-a1b2c3", "--dry-run"}, "", "20250301T100000Z-a1b2c3", true},
		{[]string{"--retry-lock", "-5s"}, `invalid duration "-5s"`, "", false},
		{[]string{"run-a", "run-b"}, "accepts at most 1 arg", "", false},
		{[]string{"20250301T100000Z-a1b2c3"}, "", "20250301T100000Z-a1b2c3", false},
		{[]string{"run-a", "--run", "run-b"}, "two runs named: run-a and --run run-b", "", false},
		{[]string{"run-a", "--run", "run-a"}, "", "run-a", false},
		{[]string{"run-a", "-o", "nagios"}, "-o nagios is not supported here", "", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := clitest.Parse(NewCmdRollback, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Run != tt.run || got.DryRun != tt.dry {
				t.Fatalf("%+v %v", got, err)
			}
		})
	}
}
