// Package upgrade is `siemctl upgrade`: plan, apply, resume, status and
// abort of the upgrade runbook (runbooks/upgrade.yaml) through the engine,
// with the step kinds of internal/steps. Package rollback reuses its
// progress renderer and run report.
package upgrade

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/runbooks"
)

// DepsFunc returns the step kinds' dependencies (real clients from the
// stack; fakes in tests).
type DepsFunc func(ctx context.Context) (*steps.Deps, error)

// FactoryDeps builds DepsFunc from the Factory's client set.
func FactoryDeps(f *cli.Factory) DepsFunc {
	return f.StepDeps
}

// Common are the inputs every verb shares.
type Common struct {
	IO     *output.IOStreams
	Deps   DepsFunc
	Logger *slog.Logger
	Now    func() time.Time
	Output string
	Yes    bool
	// Poll is the gates' poll interval (default 2s).
	Poll time.Duration
	// Getenv reads the operator's name for guided decisions (os.Getenv when nil).
	Getenv func(string) string
	// Health runs the health checks (guided mode's evidence at each phase
	// boundary); nil: not shown.
	Health func(ctx context.Context) (health.Report, error)
}

func common(f *cli.Factory) Common {
	return Common{IO: f.IO, Deps: FactoryDeps(f), Logger: f.Logger, Now: f.Now, Health: FactoryHealth(f)}
}

// FactoryHealth runs the default health checks (those `siemctl health`
// runs) against the Factory's stack, under its own 10 s deadline.
func FactoryHealth(f *cli.Factory) func(ctx context.Context) (health.Report, error) {
	return func(ctx context.Context) (health.Report, error) {
		hs, err := f.HealthStack(ctx)
		if err != nil {
			return health.Report{}, err
		}
		checks, err := health.Select(health.Catalogue(), health.Selection{})
		if err != nil {
			return health.Report{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return health.Run(ctx, &health.Env{Now: f.Now, Stack: hs}, checks), nil
	}
}

// fill copies the global flags at run time.
func (c *Common) fill(f *cli.Factory) {
	c.Output, c.Yes = f.Global.Output, f.Global.Yes
}

// NewCmdUpgrade wires the upgrade verbs.
func NewCmdUpgrade(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Plan, apply, resume and inspect an upgrade of the stack",
		Long: `Upgrade the stack to one exact version with the ordered runbook: preflight gates,
backups (configs, indexer security, a cold copy of the indexer data), a stop in reverse
order, the indexer first, then manager, shipper and dashboard, validation, and a
pre/post snapshot diff. Every transition is journaled under state_dir/runs/<run-id>/;
a crashed or interrupted run is resumed where it stopped; a gate marked on_fail:
rollback that says no-go rolls the stack back automatically.

Exit codes: 0 ok, 2 usage, 3 no-go (nothing changed), 6 locked, 10 failed and rolled
back, 11 rollback failed (manual action), 130 interrupted (resumable).`,
		Example: `  siemctl upgrade plan --to 4.10.0
  siemctl upgrade apply --to 4.10.0 --yes
  siemctl upgrade status -o json
  siemctl upgrade resume --yes`,
	}
	cmd.AddCommand(NewCmdPlan(f, nil), NewCmdApply(f, nil), NewCmdResume(f, nil), NewCmdStatus(f, nil), NewCmdAbort(f, nil), NewCmdReport(f, nil), NewCmdPrune(f, nil))
	return cmd
}

// loadRunbook returns the runbook text: the embedded one, or a site's file.
func loadRunbook(path, embedded string) ([]byte, string, error) {
	if path == "" {
		b, err := runbooks.FS.ReadFile(embedded)
		return b, embedded, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("runbook: %w", err)
	}
	return b, path, nil
}

// Runner builds the engine runner for a session.
func Runner(c Common, deps *steps.Deps, reg *engine.Registry, retry time.Duration, command string, dry bool) *engine.Runner {
	poll := c.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	return &engine.Runner{
		StateDir: deps.Config.StateDir, Registry: reg, Deps: deps,
		Observer: NewProgress(c.IO, c.Output == "json", c.Now), Logger: c.Logger,
		PollInterval: poll, LockRetry: retry, Command: command, DryRun: dry,
	}
}

// Finish renders the run's report (unless dry) and passes err on.
func Finish(c Common, stateDir string, ri *engine.RunInfo, err error) error {
	if ri == nil || ri.ID == "" {
		return err
	}
	evs, _, jerr := engine.ReadJournal(stateDir, ri.ID)
	if jerr != nil {
		return errors.Join(err, jerr)
	}
	rep := NewRunReport(ri, evs)
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

// confirm asks on a TTY; without one --yes is required.
func confirm(c Common, question string) error {
	return c.IO.Confirm(question, c.Yes)
}

func commandLine(args ...string) string {
	return "siemctl " + strings.Join(args, " ")
}

// RunRegistry rebuilds the registry of a recorded run (its versions).
func RunRegistry(deps *steps.Deps, ri *engine.RunInfo) (*engine.Registry, steps.RunData, error) {
	rd, err := steps.DecodeRunData(ri.Data)
	if err != nil {
		return nil, rd, err
	}
	reg, err := steps.NewRegistry(steps.PlanningFor(deps.Config, rd))
	return reg, rd, err
}
