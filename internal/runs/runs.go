// Package runs is what `siemctl upgrade` and `siemctl rollback` share around
// a run of the engine: the inputs every verb takes (Common), the engine
// runner of a prepared session (NewRunner; internal/upgrade prepares it),
// the progress renderer on stderr, the run report printed when a run ends (Finish) and the
// completion of run ids. Both commands are thin doors onto it; neither
// imports the other.
package runs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// DefaultPoll is the gates' poll interval when Common.Poll is zero: short, since a gate that
// waits (the manager's daemons restarting, the dashboard starting) is ready up to one interval
// before the next poll sees it, and each poll is one cheap request.
const DefaultPoll = 500 * time.Millisecond

// DepsFunc returns the step kinds' dependencies (real clients from the
// stack; fakes in tests).
type DepsFunc func(ctx context.Context) (*steps.Deps, error)

// FactoryDeps builds DepsFunc from the Factory's client set.
func FactoryDeps(f *cli.Factory) DepsFunc {
	return cli.FromClients(f, stepDepsSource.StepDeps)
}

// stepDepsSource assembles the step kinds' dependencies from the client set
// (internal/factory's Clients).
type stepDepsSource interface {
	StepDeps() *steps.Deps
}

// Common are the inputs every upgrade and rollback verb shares.
type Common struct {
	IO     *output.IOStreams
	Deps   DepsFunc
	Logger *slog.Logger
	Now    func() time.Time
	Output string
	Yes    bool
	// Poll is the gates' poll interval (default DefaultPoll).
	Poll time.Duration
	// Getenv reads the operator's name for guided decisions (os.Getenv when nil).
	Getenv func(string) string
	// Health runs the health checks (guided mode's evidence at each phase
	// boundary); nil: not shown.
	Health func(ctx context.Context) (health.Report, error)
}

// Fill copies the global flags at run time.
func (c *Common) Fill(f *cli.Factory) {
	c.Output, c.Yes = f.Global.Output, f.Global.Yes
}

// FillRun is the RunE preamble of the verbs that take an optional RUN
// argument (upgrade status|resume|abort, rollback): Fill, check -o,
// and put the argument in *run; a RUN that differs from one already given
// (rollback's hidden --run) is a usage error.
func (c *Common) FillRun(f *cli.Factory, args []string, run *string) error {
	c.Fill(f)
	if err := cli.CheckOutput(f, "table", "json"); err != nil {
		return err
	}
	if len(args) == 1 {
		if *run != "" && *run != args[0] {
			return cli.FlagErrorf("two runs named: %s and --run %s", args[0], *run)
		}
		*run = args[0]
	}
	return nil
}

// Confirm asks on a TTY; without one --yes is required.
func (c Common) Confirm(question string) error {
	return c.IO.Confirm(question, c.Yes)
}

// Clock is Now, or the wall clock when Now is nil.
func (c Common) Clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// NewRunner builds the engine runner of session s (its dependencies,
// registry and planning context): journal under the configured state_dir,
// progress rendered on stderr (JSON with -o json).
func NewRunner(c Common, s *upgrade.Session, retry time.Duration, command string, dry bool) *engine.Runner[*steps.Deps] {
	poll := c.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	return &engine.Runner[*steps.Deps]{
		StateDir: s.Deps.Config.StateDir, Registry: s.Registry, Planning: s.Planning, Deps: s.Deps,
		Observer: NewProgress(c.IO, c.Output == "json", c.Now), Logger: c.Logger,
		PollInterval: poll, LockRetry: retry, Command: command, DryRun: dry,
	}
}

// Finish renders the run's report (unless the run has no id) and passes
// err on.
func Finish(c Common, stateDir string, ri *engine.RunInfo, err error) error {
	if ri == nil || ri.ID == "" {
		return err
	}
	evs, _, jerr := engine.ReadJournal(stateDir, ri.ID)
	if jerr != nil {
		return errors.Join(err, jerr)
	}
	rep := upgrade.NewRunReport(ri, evs)
	if c.Output == "json" {
		if rerr := output.JSON(c.IO.Out, rep); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	if rerr := rep.Render(c.IO.Out, c.IO.IsStdoutTTY(), c.IO.Colors()); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// CommandLine is the command line a run journals ("siemctl upgrade node --to 4.10.0").
func CommandLine(args ...string) string {
	return "siemctl " + strings.Join(args, " ")
}
