package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/services"
)

// --- gate.units_active ---------------------------------------------------------------------

type unitsActiveParams struct {
	componentsParam `yaml:",inline"`
}

func (p *unitsActiveParams) comps() []string { return p.or(Components) }

func (p *unitsActiveParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	var us []string
	for _, c := range p.comps() {
		us = append(us, pl.unit(c))
	}
	return []string{"systemd: ActiveState of " + strings.Join(us, ", ") + " is active"}
}

func (p *unitsActiveParams) Validate() error { return p.validate(Components) }

func runUnitsActive(ctx context.Context, env Env, p *unitsActiveParams) (engine.Outcome, error) {
	d := env.Deps()
	bad, err := inactiveUnits(ctx, d, p.comps())
	if err != nil {
		return engine.Outcome{}, err
	}
	if len(bad) > 0 {
		return engine.Outcome{}, engine.Pending("not active: %s", strings.Join(bad, ", "))
	}
	return engine.Outcome{Message: fmt.Sprintf("%d units active", len(p.comps()))}, nil
}

// inactiveUnits describes the units of comps that are not active, each with its state and its fix
// (the services "units inactive" verdict).
func inactiveUnits(ctx context.Context, d *Deps, comps []string) ([]string, error) {
	u, err := d.units(ctx)
	if err != nil {
		return nil, err
	}
	cs := make([]services.Component, len(comps))
	for i, c := range comps {
		cs[i] = services.Component{Name: c, Unit: d.Config.Units()[c]}
	}
	sts, err := (&services.Runner{Units: u}).Status(ctx, cs)
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, s := range services.Inactive(sts) {
		bad = append(bad, s.Describe()+" (fix: "+s.Fix()+")")
	}
	return bad, nil
}

// --- gate.ports ------------------------------------------------------------------------------

func runPorts(ctx context.Context, env Env, p *noParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Ports == nil {
		return engine.Outcome{}, errors.New("port listing is not available")
	}
	have, err := d.Ports(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	if d.Config == nil {
		return engine.Outcome{}, errors.New("no configuration: the stack's ports are not known")
	}
	want, remote := hostfacts.ExpectedOf(d.Config)
	v := hostfacts.JudgePorts(want, remote, have)
	if !v.OK() {
		return engine.Outcome{}, engine.Pending("%s", v.Summary)
	}
	// who holds them: the port-owner verdict health's ports check gives
	if d.Units != nil {
		if u, err := d.Units(ctx); err == nil {
			um := d.Config.Units()
			_ = v.Owners(ctx, portHolders, func(ctx context.Context, c string) ([]int, bool) {
				if um[c] == "" {
					return nil, false
				}
				ps, err := u.Processes(ctx, um[c])
				return ps, err == nil
			})
		}
	}
	if foreign := v.Foreign(); len(foreign) > 0 {
		fs := make([]string, len(foreign))
		for i, p := range foreign {
			fs[i] = fmt.Sprintf("%s held by %s, not its unit's (stop it or move it to another port, then siemctl services restart %s)", p.ExpectedPort, p.Holder.Describe(), p.Component())
		}
		return engine.Outcome{}, engine.Pending("%s", strings.Join(fs, "; "))
	}
	return engine.Outcome{Message: v.Summary}, nil
}

// portHolders names who listens on TCP ports of this host (tests replace it).
var portHolders = hostfacts.HostHolders
