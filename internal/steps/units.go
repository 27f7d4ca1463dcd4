package steps

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/units"
)

// StartWaits are the spec's start waits per component (shipper: 30 s).
var StartWaits = map[string]time.Duration{"indexer": 60 * time.Second, "manager": 30 * time.Second, "dashboard": 60 * time.Second, "shipper": 30 * time.Second}

type unitParams struct {
	pl        *Planning
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

func (p *unitParams) wait(comp string) time.Duration {
	if p.Wait.D() > 0 {
		return p.Wait.D()
	}
	return StartWaits[comp]
}

type stopParams struct {
	unitParams `yaml:",inline"`
}

func (p *stopParams) Describe() []string {
	var out []string
	for _, c := range p.stopOrder() {
		out = append(out, fmt.Sprintf("systemctl stop %s; wait until no process is left in its cgroup", p.pl.unit(c)))
	}
	return out
}

type startParams struct {
	unitParams `yaml:",inline"`
}

func (p *startParams) Describe() []string {
	var out []string
	for _, c := range componentsOf(p.Component) {
		out = append(out, fmt.Sprintf("systemctl start %s; wait ≤%s for active (then settle)", p.pl.unit(c), p.wait(c)))
	}
	return out
}

type goneParams struct {
	pl        *Planning
	Component string `yaml:"component"`
}

func (p *goneParams) Describe() []string {
	return []string{"systemd: no process left in the cgroup of " + p.pl.unit(p.Component)}
}

func (p *goneParams) Validate() error { return validComponent(p.Component, false) }

func unitKinds(pl *Planning) []Kind {
	return []Kind{
		engine.Define(Spec[*stopParams]{Name: "units.stop",
			New: func() *stopParams { return &stopParams{unitParams{pl: pl}} }, Run: runStop,
			Skip: func(ctx context.Context, env Env, p *stopParams) (string, bool, error) {
				return stoppedSkip(ctx, env, p.stopOrder())
			},
			Verify: func(ctx context.Context, env Env, p *stopParams) (bool, error) {
				return allStopped(ctx, env, p.stopOrder())
			}}),
		engine.Define(Spec[*startParams]{Name: "units.start",
			New: func() *startParams { return &startParams{unitParams{pl: pl}} }, Run: runStart,
			Skip: func(ctx context.Context, env Env, p *startParams) (string, bool, error) {
				return activeSkip(ctx, env, componentsOf(p.Component))
			},
			Verify: func(ctx context.Context, env Env, p *startParams) (bool, error) {
				_, done, err := activeSkip(ctx, env, componentsOf(p.Component))
				return done, err
			}}),
		engine.Define(Spec[*noParams]{Name: "units.daemon_reload", Run: runDaemonReload,
			New: simple(pl, func(*Planning) []string { return []string{"systemctl daemon-reload"} })}),
		engine.Define(Spec[*goneParams]{Name: "units.verify_gone", ReadOnly: true,
			New: func() *goneParams { return &goneParams{pl: pl} }, Run: runVerifyGone}),
	}
}

func unitOf(d *Deps, comp string) string { return d.Config.Units()[comp] }

// unitDown: inactive (or failed) with no process left.
func unitDown(ctx context.Context, u UnitsAPI, unit string) (bool, string, error) {
	sts, err := u.Status(ctx, unit)
	if err != nil {
		return false, "", err
	}
	st := sts[0]
	if st.IsActive() || st.ActiveState == units.Activating || st.ActiveState == units.Deactivating {
		return false, st.ActiveState, nil
	}
	pids, err := u.Processes(ctx, unit)
	if err != nil {
		return false, "", err
	}
	if len(pids) > 0 {
		return false, fmt.Sprintf("%s with %d processes left", st.ActiveState, len(pids)), nil
	}
	return true, st.ActiveState, nil
}

func stoppedSkip(ctx context.Context, env Env, comps []string) (string, bool, error) {
	done, err := allStopped(ctx, env, comps)
	if err != nil || !done {
		return "", false, err
	}
	return "already stopped, no process left", true, nil
}

func allStopped(ctx context.Context, env Env, comps []string) (bool, error) {
	d, err := depsOf(env)
	if err != nil {
		return false, err
	}
	u, err := d.units(ctx)
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

func runStop(ctx context.Context, env Env, p *stopParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	u, err := d.units(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	var msgs []string
	for _, c := range p.stopOrder() {
		unit := unitOf(d, c)
		if down, _, err := unitDown(ctx, u, unit); err != nil {
			return engine.Outcome{}, err
		} else if down {
			msgs = append(msgs, unit+" already stopped")
			continue
		}
		start := d.now()
		env.Waiting("stopping %s", unit)
		if err := u.Stop(ctx, unit); err != nil {
			return engine.Outcome{}, fmt.Errorf("stop %s: %w", unit, err)
		}
		if err := waitGone(ctx, env, d, u, unit); err != nil {
			return engine.Outcome{}, err
		}
		// A service killed by its stop signal may be left "failed": clean it.
		if err := u.ResetFailed(ctx, unit); err != nil {
			return engine.Outcome{}, err
		}
		msgs = append(msgs, fmt.Sprintf("%s stopped in %s", unit, d.now().Sub(start).Round(time.Millisecond)))
	}
	return engine.Outcome{Message: strings.Join(msgs, "; ")}, nil
}

func waitGone(ctx context.Context, env Env, d *Deps, u UnitsAPI, unit string) error {
	return wait(ctx, env, d.poll(), "processes of "+unit+" to exit", func() (bool, error) {
		pids, err := u.Processes(ctx, unit)
		return len(pids) == 0, err
	})
}

func activeSkip(ctx context.Context, env Env, comps []string) (string, bool, error) {
	d, err := depsOf(env)
	if err != nil {
		return "", false, err
	}
	bad, err := inactiveUnits(ctx, d, comps)
	if err != nil || len(bad) > 0 {
		return "", false, err
	}
	return "already active", true, nil
}

func runStart(ctx context.Context, env Env, p *startParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	u, err := d.units(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	var msgs []string
	for _, c := range componentsOf(p.Component) {
		unit := unitOf(d, c)
		sts, err := u.Status(ctx, unit)
		if err != nil {
			return engine.Outcome{}, err
		}
		if sts[0].IsActive() {
			msgs = append(msgs, unit+" already active")
			continue
		}
		if err := u.ResetFailed(ctx, unit); err != nil {
			return engine.Outcome{}, err
		}
		start := d.now()
		env.Waiting("starting %s (up to %s)", unit, p.wait(c))
		st, err := u.StartAndWait(ctx, unit, p.wait(c))
		if err != nil {
			why := st.Failure()
			if why != "" {
				return engine.Outcome{}, fmt.Errorf("start %s: %w (%s)", unit, err, why)
			}
			return engine.Outcome{}, fmt.Errorf("start %s: %w", unit, err)
		}
		msgs = append(msgs, fmt.Sprintf("%s active in %s", unit, d.now().Sub(start).Round(time.Millisecond)))
	}
	return engine.Outcome{Message: strings.Join(msgs, "; ")}, nil
}

func runDaemonReload(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	u, err := d.units(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := u.DaemonReload(ctx); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: "unit files reloaded"}, nil
}

func runVerifyGone(ctx context.Context, env Env, p *goneParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	u, err := d.units(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	unit := unitOf(d, p.Component)
	pids, err := u.Processes(ctx, unit)
	if err != nil {
		return engine.Outcome{}, err
	}
	if len(pids) > 0 {
		return engine.Outcome{}, engine.Pending("%d processes of %s still running: %v", len(pids), unit, pids[:min(len(pids), 8)])
	}
	sts, err := u.Status(ctx, unit)
	if err != nil {
		return engine.Outcome{}, err
	}
	if sts[0].IsActive() {
		return engine.Outcome{}, engine.Pending("%s is %s", unit, sts[0].ActiveState)
	}
	return engine.Outcome{Message: unit + ": no process left"}, nil
}
