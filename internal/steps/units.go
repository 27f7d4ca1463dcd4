package steps

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/units"
)

type unitParams struct {
	Component string           `yaml:"component"`
	Wait      runbook.Duration `yaml:"wait"`
}

func (p *unitParams) Validate() error { return validComponent(p.Component, true) }

// stopOrder is the reverse start order.
func (p *unitParams) stopOrder() []string {
	c := componentsOf(p.Component)
	slices.Reverse(c)
	return c
}

// wait is a start's limit for comp: the step's wait, lengthened to the
// host's start wait where that is longer (the config's start_wait keys: a
// site whose indexer needs 3 min to answer raises indexer.start_wait once
// instead of every runbook step); no step wait and no config: the spec's.
func (p *unitParams) wait(cfg *config.Config, comp string) time.Duration {
	w := p.Wait.D()
	if cfg != nil {
		w = max(w, cfg.StartWaits()[comp])
	}
	if w == 0 {
		w = config.DefaultStartWaits[comp]
	}
	return w
}

// startBudget lengthens a start's deadline by what the host's start waits
// add to the step's own (the step's timeout was written for the step's wait).
func startBudget(_ context.Context, env Env, p *startParams) (time.Duration, string, error) {
	d, err := depsOf(env)
	if err != nil || d.Config == nil {
		return 0, "", err
	}
	var extra time.Duration
	var why []string
	for _, c := range componentsOf(p.Component) {
		if base, w := p.wait(nil, c), p.wait(d.Config, c); w > base {
			extra += w - base
			why = append(why, fmt.Sprintf("%s.start_wait %s", c, w))
		}
	}
	return extra, strings.Join(why, ", "), nil
}

type stopParams struct {
	unitParams `yaml:",inline"`
}

func (p *stopParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	var out []string
	for _, c := range p.stopOrder() {
		out = append(out, fmt.Sprintf("systemctl stop %s; wait until no process is left in its cgroup", pl.unit(c)))
	}
	return out
}

type startParams struct {
	unitParams `yaml:",inline"`
}

func (p *startParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	var out []string
	for _, c := range componentsOf(p.Component) {
		out = append(out, fmt.Sprintf("systemctl start %s; wait ≤%s for active (then settle)", pl.unit(c), p.wait(pl.cfg(), c)))
	}
	return out
}

type goneParams struct {
	Component string `yaml:"component"`
}

func (p *goneParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	return []string{"systemd: no process left in the cgroup of " + pl.unit(p.Component)}
}

func (p *goneParams) Validate() error { return validComponent(p.Component, false) }

func unitKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*stopParams]{Name: "units.stop", Estimate: fixed[*stopParams](10 * time.Second),
			New: func() *stopParams { return &stopParams{unitParams{}} }, Run: runStop,
			Skip: func(ctx context.Context, env Env, p *stopParams) (string, bool, error) {
				return stoppedSkip(ctx, env, p.stopOrder())
			},
			Verify: func(ctx context.Context, env Env, p *stopParams) (bool, error) {
				return allStopped(ctx, env, p.stopOrder())
			}}),
		engine.Define(Spec[*startParams]{Name: "units.start", Estimate: estimateStart, Budget: startBudget,
			New: func() *startParams { return &startParams{unitParams{}} }, Run: runStart,
			Skip: func(ctx context.Context, env Env, p *startParams) (string, bool, error) {
				return activeSkip(ctx, env, componentsOf(p.Component))
			},
			Verify: func(ctx context.Context, env Env, p *startParams) (bool, error) {
				_, done, err := activeSkip(ctx, env, componentsOf(p.Component))
				return done, err
			}}),
		engine.Define(Spec[*noParams]{Name: "units.daemon_reload", Estimate: fixed[*noParams](time.Second), Run: runDaemonReload,
			New: simple(func(*Planning) []string { return []string{"systemctl daemon-reload"} })}),
		engine.Define(Spec[*goneParams]{Name: "units.verify_gone", Estimate: fixed[*goneParams](2 * time.Second), ReadOnly: true,
			New: func() *goneParams { return &goneParams{} }, Run: runVerifyGone}),
	}
}

func unitOf(d *Deps, comp string) string { return d.Config.Units()[comp] }

// unitRunner is the services runner as the runbook uses it: a unit already
// in the wanted state is left alone (a step run again on --resume changes
// nothing), waits are reported as progress and the processes-gone proof
// waits until the step's deadline.
func unitRunner(ctx context.Context, env Env) (*services.Runner, *Deps, error) {
	d, u, err := unitsOf(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	r := &services.Runner{Units: u, SkipDone: true, ProcessPoll: d.poll(), Now: d.now, Waiting: env.Waiting, Diagnose: d.Diagnose}
	if d.Ready != nil {
		r.Ready = d.Ready.Ready
	}
	if dl, ok := ctx.Deadline(); ok {
		r.ProcessWait = time.Until(dl)
	}
	return r, d, nil
}

// components are the runbook step's components with its per-call wait
// limit (a start: wait, the step's or the host's). With toDeadline, a
// component without a wait is bounded by the step's timeout instead: a
// stop (the unit's own stop timeout may be longer than the start wait) and
// a wait for a started service to answer.
func (p *unitParams) components(ctx context.Context, d *Deps, names []string, toDeadline bool) []services.Component {
	limit := p.Wait.D()
	if dl, ok := ctx.Deadline(); ok && limit == 0 && toDeadline {
		limit = time.Until(dl)
	}
	out := make([]services.Component, len(names))
	for i, c := range names {
		w := limit
		if !toDeadline {
			w = p.wait(d.Config, c)
		}
		out[i] = services.Component{Name: c, Unit: units.Normalize(unitOf(d, c)), Wait: w}
	}
	return out
}

// unitDown: inactive (or failed) with no process left.
func unitDown(ctx context.Context, u UnitsAPI, unit string) (bool, string, error) {
	return (&services.Runner{Units: u}).Stopped(ctx, unit)
}

func stoppedSkip(ctx context.Context, env Env, comps []string) (string, bool, error) {
	done, err := allStopped(ctx, env, comps)
	if err != nil || !done {
		return "", false, err
	}
	return "already stopped, no process left", true, nil
}

func allStopped(ctx context.Context, env Env, comps []string) (bool, error) {
	d, u, err := unitsOf(ctx, env)
	if err != nil {
		return false, err
	}
	for _, c := range comps {
		down, _, err := unitDown(ctx, u, unitOf(d, c))
		if err != nil || !down {
			return false, err
		}
	}
	return true, nil
}

// runUnits runs the services operation (Start or Stop) on the step's
// components and records one line per unit.
func runUnits(ctx context.Context, env Env, p *unitParams, stop bool) (engine.Outcome, error) {
	r, d, err := unitRunner(ctx, env)
	if err != nil {
		return engine.Outcome{}, err
	}
	r.Progress = func(o services.Outcome, done bool) {
		if !done {
			env.Waiting("%s %s", map[bool]string{true: "stopping", false: "starting"}[stop], o.Unit)
		}
	}
	var outs []services.Outcome
	if stop {
		outs, err = r.Stop(ctx, p.components(ctx, d, p.stopOrder(), true))
	} else {
		outs, err = r.Start(ctx, p.components(ctx, d, componentsOf(p.Component), false))
	}
	if err != nil {
		return engine.Outcome{}, explained(err, outs)
	}
	msgs := make([]string, 0, len(outs))
	for _, o := range outs {
		switch {
		case o.Already && stop:
			msgs = append(msgs, o.Unit+" already stopped")
		case o.Already:
			msgs = append(msgs, o.Unit+" already active")
		case stop:
			msgs = append(msgs, fmt.Sprintf("%s stopped in %s", o.Unit, o.Took.Round(time.Millisecond)))
		default:
			msgs = append(msgs, fmt.Sprintf("%s active in %s", o.Unit, o.Took.Round(time.Millisecond)))
		}
	}
	return engine.Outcome{Message: strings.Join(msgs, "; ")}, nil
}

// explained adds the failed unit's systemd result and last log lines to
// the operation's error, for the journal.
func explained(err error, outs []services.Outcome) error {
	for _, o := range outs {
		if o.Result != services.ResultFailed {
			continue
		}
		var why []string
		if o.Diagnosis != nil {
			return err // a *services.DiagnosedError: its cause and fix are in err
		}
		if o.Failure != "" {
			why = append(why, "systemd result "+o.Failure)
		}
		if len(o.LogLines) > 0 {
			why = append(why, "last log lines: "+strings.Join(o.LogLines, " | "))
		}
		if len(why) > 0 {
			return fmt.Errorf("%w (%s)", err, strings.Join(why, "; "))
		}
	}
	return err
}

func runStop(ctx context.Context, env Env, p *stopParams) (engine.Outcome, error) {
	return runUnits(ctx, env, &p.unitParams, true)
}

// stopUnit stops comp's unit with the services operation before a step
// touches its files (why), bounded by the step's deadline; a unit already
// stopped is left alone.
func stopUnit(ctx context.Context, env Env, comp, why string) error {
	r, d, err := unitRunner(ctx, env)
	if err != nil {
		return err
	}
	r.Progress = func(o services.Outcome, done bool) {
		if !done {
			env.Waiting("stopping %s %s", o.Unit, why)
		}
	}
	outs, err := r.Stop(ctx, (&unitParams{}).components(ctx, d, []string{comp}, true))
	return explained(err, outs)
}

func activeSkip(ctx context.Context, env Env, comps []string) (string, bool, error) {
	d := env.Deps()
	bad, err := inactiveUnits(ctx, d, comps)
	if err != nil || len(bad) > 0 {
		return "", false, err
	}
	return "already active", true, nil
}

func runStart(ctx context.Context, env Env, p *startParams) (engine.Outcome, error) {
	return runUnits(ctx, env, &p.unitParams, false)
}

func runDaemonReload(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	_, u, err := unitsOf(ctx, env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := u.DaemonReload(ctx); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: "unit files reloaded"}, nil
}

// runVerifyGone is the processes-gone proof as a gate: pending while the
// unit runs or any process is left in its control group.
func runVerifyGone(ctx context.Context, env Env, p *goneParams) (engine.Outcome, error) {
	d, u, err := unitsOf(ctx, env)
	if err != nil {
		return engine.Outcome{}, err
	}
	unit := unitOf(d, p.Component)
	down, state, err := unitDown(ctx, u, unit)
	if err != nil {
		return engine.Outcome{}, err
	}
	if !down {
		return engine.Outcome{}, engine.Pending("%s is %s", unit, state)
	}
	return engine.Outcome{Message: unit + ": no process left"}, nil
}

// unitsOf returns the step's deps and its systemd connection.
func unitsOf(ctx context.Context, env Env) (*Deps, UnitsAPI, error) {
	d := env.Deps()
	u, err := d.units(ctx)
	return d, u, err
}
